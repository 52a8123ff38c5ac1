/**
 * Auto-answering simulated upstreams for pool tests: each "process" speaks its server kind at once —
 * the probe (discover / initialize) and then tools — so many sessions can run without a test steering
 * every message. What a test does want to steer is explicit:
 *
 * - `gatedStart`: a process comes up only when the test calls `up()` (or fails with `failSpawn()`);
 * - `gatedStop`: a process asked to stop is gone only when the test calls `finishStop()`;
 * - the `hold` tool answers only when the test calls `release(tag)`; `hang` never answers;
 * - `crash()` makes a process exit on its own.
 *
 * Tools: `echo {text}` → "<text> era=<era>", `whoami` → "era=<era> pid=<pid>", `hold {tag}`, `hang`.
 * The era of a call is the era of its request (a modern request carries the `_meta` envelope).
 */
import type { Channel, CloseInfo, JsonRpcMessage, JsonRpcRequest } from '../../src/transports/types.js';
import { UpstreamSession } from '../../src/upstream/session.js';
import type { PoolSessionOptions } from '../../src/pool/server-pool.js';

export type ServerKind = 'legacy' | 'dual' | 'modern';

export interface AutoUpstreamOptions {
  kind: ServerKind;
  gatedStart?: boolean;
  gatedStop?: boolean;
  /** Spawns fail ("command not found"): always, or when the function says so. */
  spawnFails?: boolean | ((p: AutoProcess) => boolean);
}

const PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion';
const SERVER_INFO = 'io.modelcontextprotocol/serverInfo';
const TOOLS = [
  { name: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
  { name: 'whoami', inputSchema: { type: 'object', properties: {} } },
  { name: 'hold', inputSchema: { type: 'object', properties: { tag: { type: 'string' } } } },
  { name: 'hang', inputSchema: { type: 'object', properties: {} } },
];

let nextPid = 40_000;

export interface CallRecord {
  pid: number;
  instance: string | undefined;
  tool: string;
  era: 'legacy' | 'modern';
  args: Record<string, unknown>;
}

export class AutoUpstream {
  readonly processes: AutoProcess[] = [];
  readonly calls: CallRecord[] = [];
  constructor(readonly opts: AutoUpstreamOptions) {}

  /** A channel factory for one session (tagged with its pool instance id, when given); its channels deliver no context. */
  factoryFor<C>(instance?: string): (attempt: number) => Channel<C> {
    return (attempt) => {
      const p = new AutoProcess(this, instance, attempt);
      this.processes.push(p);
      return p;
    };
  }

  /** A ServerPool `sessionFactory` whose sessions run over this upstream. */
  sessionFactory(extra: Partial<PoolSessionOptions> = {}): (opts: PoolSessionOptions) => UpstreamSession {
    return (opts) => new UpstreamSession({ ...opts, ...extra, channelFactory: this.factoryFor(opts.instanceId) });
  }

  /** Processes started and not gone. */
  alive(): AutoProcess[] {
    return this.processes.filter((p) => p.alive);
  }

  of(instance: string): AutoProcess {
    const list = this.processes.filter((p) => p.instance === instance);
    const p = list[list.length - 1];
    if (!p) throw new Error(`no process for instance ${instance}; known: ${this.processes.map((x) => x.instance).join(', ')}`);
    return p;
  }

  /** Answer every held `hold` call with this tag. Returns how many were answered. */
  release(tag: string): number {
    let n = 0;
    for (const p of this.processes) n += p.releaseHeld(tag);
    return n;
  }

  held(): string[] {
    return this.processes.flatMap((p) => [...p.heldTags()]);
  }
}

export class AutoProcess implements Channel {
  readonly pid = nextPid++;
  alive = false;
  private isClosed = false;
  private started = false;
  private startSettle: { resolve: () => void; reject: (e: Error) => void } | undefined;
  private stopSettle: (() => void) | undefined;
  private readonly messageListeners: Array<(m: JsonRpcMessage) => void> = [];
  private readonly closeListeners: Array<(info: CloseInfo) => void> = [];
  private readonly holding = new Map<string, JsonRpcRequest[]>();
  readonly received: string[] = [];
  stopRequested = false;
  /** What this process speaks; defaults to the upstream's kind (a test may change it before up()). */
  kind: ServerKind;

  constructor(
    private readonly upstream: AutoUpstream,
    readonly instance: string | undefined,
    readonly attempt: number,
  ) {
    this.kind = upstream.opts.kind;
  }

  get closed(): boolean {
    return this.isClosed;
  }

  start(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.startSettle = { resolve, reject };
      if (!this.upstream.opts.gatedStart) queueMicrotask(() => this.up());
    });
  }

  /** The process comes up (or, when spawns fail, does not). */
  up(): void {
    if (this.started || this.isClosed) return;
    this.started = true;
    const fails = this.upstream.opts.spawnFails;
    if (fails === true || (typeof fails === 'function' && fails(this))) return this.failSpawn();
    this.alive = true;
    this.startSettle?.resolve();
  }

  failSpawn(): void {
    this.started = true;
    this.isClosed = true;
    this.startSettle?.reject(new Error('spawn simulated ENOENT'));
  }

  send(message: JsonRpcMessage): void {
    if (this.isClosed) throw new Error('send on a closed simulated process');
    if (!('method' in message)) return;
    this.received.push(message.method);
    if (!('id' in message)) return;
    const req = message as JsonRpcRequest;
    const reply = this.react(req);
    if (reply) queueMicrotask(() => this.deliver({ jsonrpc: '2.0', id: req.id, ...reply } as JsonRpcMessage));
  }

  close(): Promise<void> {
    if (this.isClosed) return Promise.resolve();
    this.isClosed = true;
    this.stopRequested = true;
    if (!this.started) {
      this.started = true;
      this.startSettle?.reject(new Error('closed before it started'));
    }
    if (!this.upstream.opts.gatedStop) {
      this.gone({ reason: 'stopped', code: 0, signal: null });
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      this.stopSettle = resolve;
    });
  }

  /** A gated stop completes: the process has exited. */
  finishStop(): void {
    if (!this.stopSettle) throw new Error(`process ${this.pid} (${this.instance}) is not stopping`);
    const settle = this.stopSettle;
    this.stopSettle = undefined;
    this.gone({ reason: 'stopped', code: 0, signal: null });
    settle();
  }

  get stopping(): boolean {
    return this.stopSettle !== undefined;
  }

  /** The process exits on its own. */
  crash(code = 3): void {
    if (!this.alive || this.isClosed) throw new Error(`process ${this.pid} is not running`);
    this.isClosed = true;
    this.gone({ reason: 'exit', code, signal: null, stderrTail: ['simulated crash'] });
  }

  onMessage(listener: (m: JsonRpcMessage) => void): void {
    this.messageListeners.push(listener);
  }

  onClose(listener: (info: CloseInfo) => void): void {
    this.closeListeners.push(listener);
  }

  releaseHeld(tag: string): number {
    const list = this.holding.get(tag) ?? [];
    this.holding.delete(tag);
    for (const req of list) this.deliver({ jsonrpc: '2.0', id: req.id, result: this.toolResult(req, `held ${tag}`) } as JsonRpcMessage);
    return list.length;
  }

  heldTags(): string[] {
    return [...this.holding.keys()];
  }

  private gone(info: CloseInfo): void {
    this.alive = false;
    this.holding.clear();
    for (const l of this.closeListeners) l(info);
  }

  private deliver(m: JsonRpcMessage): void {
    if (!this.alive) return;
    for (const l of this.messageListeners) l(m);
  }

  private eraOf(req: JsonRpcRequest): 'legacy' | 'modern' {
    const meta = (req.params?._meta ?? {}) as Record<string, unknown>;
    return typeof meta[PROTOCOL_VERSION] === 'string' ? 'modern' : 'legacy';
  }

  private toolResult(req: JsonRpcRequest, text: string): Record<string, unknown> {
    const content = [{ type: 'text', text }];
    return this.eraOf(req) === 'modern' ? { resultType: 'complete', content } : { content };
  }

  private react(req: JsonRpcRequest): Record<string, unknown> | null {
    const kind = this.kind;
    const params = (req.params ?? {}) as Record<string, unknown>;
    switch (req.method) {
      case 'server/discover':
        if (kind === 'legacy') return { error: { code: -32601, message: 'Method not found' } };
        return {
          result: {
            resultType: 'complete',
            supportedVersions: ['2026-07-28'],
            capabilities: { tools: {} },
            ttlMs: 0,
            cacheScope: 'private',
            _meta: { [SERVER_INFO]: { name: 'auto', version: '1.0.0' } },
          },
        };
      case 'initialize':
        if (kind === 'modern')
          return { error: { code: -32022, message: 'Unsupported protocol version', data: { supported: ['2026-07-28'], requested: params.protocolVersion } } };
        return { result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'auto', version: '1.0.0' } } };
      case 'ping':
        return { result: {} };
      case 'tools/list':
        return { result: this.eraOf(req) === 'modern' ? { resultType: 'complete', tools: TOOLS } : { tools: TOOLS } };
      case 'tools/call': {
        const name = String(params.name);
        const args = (params.arguments ?? {}) as Record<string, unknown>;
        const era = this.eraOf(req);
        this.upstream.calls.push({ pid: this.pid, instance: this.instance, tool: name, era, args });
        if (name === 'echo') return { result: this.toolResult(req, `${String(args.text)} era=${era}`) };
        if (name === 'whoami') return { result: this.toolResult(req, `era=${era} pid=${this.pid}`) };
        if (name === 'hold') {
          const tag = String(args.tag);
          this.holding.set(tag, [...(this.holding.get(tag) ?? []), req]);
          return null;
        }
        if (name === 'hang') return null;
        return { error: { code: -32602, message: `Tool ${name} not found` } };
      }
      default:
        return { error: { code: -32601, message: 'Method not found' } };
    }
  }
}

/** The text of the first text content of a tools/call result. */
export function textOf(result: Record<string, unknown>): string {
  const content = result.content as Array<{ type: string; text?: string }> | undefined;
  return content?.find((c) => c.type === 'text')?.text ?? '';
}

/** Let queued microtasks and immediates run (simulated answers, session and pool reactions). */
export async function settle(rounds = 6): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((r) => setImmediate(r));
}
