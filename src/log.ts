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

/** pino's numbers for the levels, so a line reads the same whichever logger wrote it. */
const LEVELS: Record<Level, number> = { debug: 20, info: 30, warn: 40, error: 50 };

/** What an error says in a log line: its kind, message and code (a stack is for the daemon's log). */
function plain(value: unknown): unknown {
  if (!(value instanceof Error)) return value;
  const code = (value as { code?: unknown }).code;
  return { type: value.name, message: value.message, ...(typeof code === 'string' ? { code } : {}) };
}

/**
 * One JSON line per entry at `level` and above, in pino's shape (`level`, `time`, the bindings, the
 * object, `msg`), written by `write`: for a process that logs a few lines and should not load pino
 * (`mcpx serve` on stderr). `silent` (or an unknown level) logs nothing.
 */
export function lineLogger(level: string, write: (line: string) => void, bindings: Record<string, unknown> = {}): Logger {
  const min = ({ trace: 10, ...LEVELS, fatal: 60 } as Record<string, number>)[level];
  if (min === undefined) return silentLogger;
  const make = (base: Record<string, unknown>): Logger => {
    const at =
      (l: Level) =>
      (obj: object, msg?: string): void => {
        if (LEVELS[l] < min) return;
        const fields: Record<string, unknown> = { level: LEVELS[l], time: Date.now(), ...base };
        for (const [k, v] of Object.entries(obj)) fields[k] = plain(v);
        if (msg !== undefined) fields['msg'] = msg;
        write(`${JSON.stringify(fields)}\n`);
      };
    return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (b) => make({ ...base, ...b }) };
  };
  return make(bindings);
}
