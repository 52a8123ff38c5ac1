/**
 * The logger shape mcpx code depends on: pino's, reduced to what we call, so tests and
 * library users can pass any compatible logger. `silentLogger` drops everything.
 */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  child(bindings: Record<string, unknown>): Logger;
}

/** Drops everything; plain code, so what only needs a silent logger does not load pino. */
export const silentLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child: () => silentLogger,
};

type Level = 'debug' | 'info' | 'warn' | 'error';

const write = (l: Logger, level: Level, obj: object, msg: string | undefined): void => (msg === undefined ? l[level](obj) : l[level](obj, msg));

/**
 * A logger whose real one comes later (`mcpx serve` loads pino while it connects to the daemon): lines
 * logged before it comes are kept and written, in order, when it does. `drop()` instead: none will come.
 */
export class LateLogger implements Logger {
  private readonly root: {
    real: Logger | undefined;
    dropped: boolean;
    queue: Array<{ bindings: Record<string, unknown>[]; level: Level; obj: object; msg: string | undefined }>;
  };
  private readonly bindings: Record<string, unknown>[];
  /** This logger's real counterpart (the real one's child with these bindings), made once it is here. */
  private resolved: Logger | undefined;

  constructor(root?: LateLogger['root'], bindings: Record<string, unknown>[] = []) {
    this.root = root ?? { real: undefined, dropped: false, queue: [] };
    this.bindings = bindings;
  }

  /** The real logger: what was kept is written to it now. */
  set(real: Logger): void {
    this.root.real = real;
    for (const q of this.root.queue.splice(0)) write(this.target(q.bindings), q.level, q.obj, q.msg);
  }

  /** No real logger will come: what was kept is dropped, and so is what comes. */
  drop(): void {
    this.root.dropped = true;
    this.root.queue.length = 0;
  }

  private target(bindings: Record<string, unknown>[]): Logger {
    let l = this.root.real!;
    for (const b of bindings) l = l.child(b);
    return l;
  }

  private log(level: Level, obj: object, msg?: string): void {
    if (this.root.real) write((this.resolved ??= this.target(this.bindings)), level, obj, msg);
    else if (!this.root.dropped) this.root.queue.push({ bindings: this.bindings, level, obj, msg });
  }

  debug(obj: object, msg?: string): void {
    this.log('debug', obj, msg);
  }
  info(obj: object, msg?: string): void {
    this.log('info', obj, msg);
  }
  warn(obj: object, msg?: string): void {
    this.log('warn', obj, msg);
  }
  error(obj: object, msg?: string): void {
    this.log('error', obj, msg);
  }
  child(bindings: Record<string, unknown>): Logger {
    return new LateLogger(this.root, [...this.bindings, bindings]);
  }
}
