/**
 * A simulated upstream behind the real Channel interface: it records what mcpx sends and answers
 * only when the test tells it to, per a Profile. The model-based test steers it step by step.
 */
import type { WireTransport } from '../../src/machines/session.machine.js';
import { McpxError } from '../../src/errors.js';
import type { Answer } from '../../src/machines/verdict.js';
import type { Channel, CloseInfo, JsonRpcId, JsonRpcMessage, JsonRpcRequest } from '../../src/transports/types.js';
import type { PinnedBy, Profile } from './profiles.js';

export interface WireRecord {
  process: number;
  transport: WireTransport;
  method: string;
  id?: string | number;
  version?: string;
  /** How many requests of this method the process had received before this one. */
  nth?: number;
  /** The JSON-RPC answer the process gave, once it gave one. */
  answer?: Answer;
}

export class SimulatedUpstream {
  readonly processes: SimulatedChannel[] = [];
  readonly wire: WireRecord[] = [];
  constructor(readonly profile: Profile) {}

  /** A channel for any context type: nothing a simulated process delivers carries one. */
  readonly factory = <C>(attempt: number, transport: WireTransport = 'stdio'): Channel<C> => {
    const channel = new SimulatedChannel(this, attempt, transport);
    this.processes.push(channel);
    return channel;
  };

  get current(): SimulatedChannel {
    const c = this.processes[this.processes.length - 1];
    if (!c) throw new Error('no process was started');
    return c;
  }
}

export class SimulatedChannel implements Channel {
  readonly pending: JsonRpcRequest[] = [];
  private messageListeners: Array<(m: JsonRpcMessage) => void> = [];
  private closeListeners: Array<(info: CloseInfo) => void> = [];
  private requestErrorListeners: Array<(id: JsonRpcId, error: Error) => void> = [];
  private startResolve: (() => void) | undefined;
  private startReject: ((e: Error) => void) | undefined;
  private isClosed = false;
  private expiredHandlers: Array<() => Promise<void>> = [];
  /** The server expired this connection's legacy session: its next initialize is answered per `profile.expires`. */
  private expired = false;
  /** This process's record of each request it received, by id. */
  private readonly records = new Map<string | number, WireRecord>();
  /** The request this process first answered with success (a pinning server keeps that era). */
  private pinnedBy: PinnedBy | undefined;
  readonly pid: number;

  constructor(
    private readonly upstream: SimulatedUpstream,
    readonly attempt: number,
    readonly transport: WireTransport = 'stdio',
  ) {
    this.pid = 10_000 + attempt;
  }

  get closed(): boolean {
    return this.isClosed;
  }

  start(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.startResolve = resolve;
      this.startReject = reject;
    });
  }

  /** The process came up (or, for a profile whose command is missing, failed to). */
  ready(): void {
    const fails = this.upstream.profile.spawnFails;
    if (fails === true || (Array.isArray(fails) && fails.includes(this.transport))) this.startReject?.(new Error('spawn ENOENT'));
    else this.startResolve?.();
  }

  send(message: JsonRpcMessage): void {
    if (this.isClosed) throw new Error('send on a closed simulated channel');
    if (!('method' in message)) return;
    const params = (message.params ?? {}) as Record<string, unknown>;
    const meta = (params._meta ?? {}) as Record<string, unknown>;
    const version = (meta['io.modelcontextprotocol/protocolVersion'] ?? params.protocolVersion) as string | undefined;
    const record: WireRecord = { process: this.attempt, transport: this.transport, method: message.method, ...(version ? { version } : {}) };
    if ('id' in message) {
      record.id = message.id;
      record.nth = [...this.records.values()].filter((r) => r.method === message.method).length;
      this.records.set(message.id, record);
      this.pending.push(message);
    }
    this.upstream.wire.push(record);
  }

  /** Answer the request with this id the way the profile says. Returns false when the profile stays silent. */
  answer(id: string | number): 'answered' | 'failed' | 'exited' | 'silent' {
    const idx = this.pending.findIndex((r) => r.id === id);
    if (idx < 0) throw new Error(`process ${this.attempt} has no pending request ${id}; pending: ${this.pending.map((r) => r.id).join(', ')}`);
    const req = this.pending[idx]!;
    const record = this.records.get(req.id)!;
    const renewal = this.expired && req.method === 'initialize' ? this.upstream.profile.expires : undefined;
    const reaction =
      renewal ??
      this.upstream.profile.react(req.method as 'server/discover' | 'initialize', record.version ?? '', this.transport, record.nth ?? 0, this.pinnedBy);
    if (reaction.kind === 'silent') return 'silent';
    if (reaction.kind === 'exit') {
      this.exit(1);
      return 'exited';
    }
    this.pending.splice(idx, 1);
    if (reaction.kind === 'fail') {
      const f = reaction.failure;
      const code = f.kind === 'unauthorized' ? 'MCPX_UPSTREAM_UNAUTHORIZED' : f.kind === 'status' ? 'MCPX_HTTP_STATUS' : 'MCPX_TRANSPORT_CLOSED';
      const error = new McpxError(code, f.message, f.status ? { data: { status: f.status } } : undefined);
      for (const l of this.requestErrorListeners) l(req.id, error);
      return 'failed';
    }
    record.answer = reaction.answer;
    if ('result' in reaction.answer) this.pinnedBy ??= req.method as PinnedBy;
    const message = { jsonrpc: '2.0' as const, id: req.id, ...reaction.answer } as JsonRpcMessage;
    for (const l of this.messageListeners) l(message);
    return 'answered';
  }

  /** The server says the legacy session is gone (as a 404 would): the owner is asked to open it again. */
  expire(): void {
    this.expired = true;
    for (const h of this.expiredHandlers) h().catch(() => undefined);
  }

  onSessionExpired(handler: () => Promise<void>): void {
    this.expiredHandlers.push(handler);
  }

  exit(code: number): void {
    if (this.isClosed) return;
    this.isClosed = true;
    for (const l of this.closeListeners) l({ reason: 'exit', code, signal: null, stderrTail: ['simulated exit'] });
  }

  async close(): Promise<void> {
    if (this.isClosed) return;
    this.isClosed = true;
    for (const l of this.closeListeners) l({ reason: 'stopped', code: 0, signal: null });
  }

  onMessage(listener: (m: JsonRpcMessage) => void): void {
    this.messageListeners.push(listener);
  }

  onClose(listener: (info: CloseInfo) => void): void {
    this.closeListeners.push(listener);
  }

  onRequestError(listener: (id: JsonRpcId, error: Error) => void): void {
    this.requestErrorListeners.push(listener);
  }
}
