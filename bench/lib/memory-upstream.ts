/**
 * An in-memory dual-era upstream for the pool-scale benchmark: a Channel that answers at once
 * (server/discover, initialize, tools/list, tools/call echo), no process behind it. `hold` calls are
 * kept until `release()`, so a benchmark can keep every session of a `call`-scoped pool alive at once.
 */
import type { Channel, CloseInfo, JsonRpcMessage, JsonRpcRequest } from '../../src/transports/types.js';

const PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion';
const SERVER_INFO = 'io.modelcontextprotocol/serverInfo';
const TOOLS = [
  { name: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
  { name: 'hold', inputSchema: { type: 'object', properties: {} } },
];

let nextPid = 1_000_000;

export class MemoryUpstream {
  readonly held: Array<() => void> = [];
  started = 0;
  alive = 0;

  /** A channel for any context type: nothing it delivers carries one. */
  channel<C>(): Channel<C> {
    return new MemoryProcess(this);
  }

  release(): number {
    const list = this.held.splice(0);
    for (const answer of list) answer();
    return list.length;
  }
}

class MemoryProcess implements Channel {
  readonly pid = nextPid++;
  private isClosed = false;
  private readonly messageListeners: Array<(m: JsonRpcMessage) => void> = [];
  private readonly closeListeners: Array<(info: CloseInfo) => void> = [];

  constructor(private readonly upstream: MemoryUpstream) {}

  get closed(): boolean {
    return this.isClosed;
  }

  async start(): Promise<void> {
    this.upstream.started += 1;
    this.upstream.alive += 1;
  }

  send(message: JsonRpcMessage): void {
    if (this.isClosed || !('method' in message) || !('id' in message)) return;
    const req = message as JsonRpcRequest;
    const reply = this.react(req);
    if (reply === 'held') {
      this.upstream.held.push(() =>
        this.deliver({ jsonrpc: '2.0', id: req.id, result: this.result(req, { content: [{ type: 'text', text: 'held' }] }) } as JsonRpcMessage),
      );
      return;
    }
    queueMicrotask(() => this.deliver({ jsonrpc: '2.0', id: req.id, ...reply } as JsonRpcMessage));
  }

  async close(): Promise<void> {
    if (this.isClosed) return;
    this.isClosed = true;
    this.upstream.alive -= 1;
    for (const l of this.closeListeners) l({ reason: 'stopped', code: 0, signal: null });
  }

  onMessage(listener: (m: JsonRpcMessage) => void): void {
    this.messageListeners.push(listener);
  }

  onClose(listener: (info: CloseInfo) => void): void {
    this.closeListeners.push(listener);
  }

  private deliver(m: JsonRpcMessage): void {
    if (this.isClosed) return;
    for (const l of this.messageListeners) l(m);
  }

  private modern(req: JsonRpcRequest): boolean {
    const meta = ((req.params ?? {}) as Record<string, unknown>)['_meta'] as Record<string, unknown> | undefined;
    return typeof meta?.[PROTOCOL_VERSION] === 'string';
  }

  private result(req: JsonRpcRequest, r: Record<string, unknown>): Record<string, unknown> {
    return this.modern(req) ? { resultType: 'complete', ...r } : r;
  }

  private react(req: JsonRpcRequest): Record<string, unknown> | 'held' {
    const params = (req.params ?? {}) as Record<string, unknown>;
    switch (req.method) {
      case 'server/discover':
        return {
          result: {
            resultType: 'complete',
            supportedVersions: ['2026-07-28'],
            capabilities: { tools: {} },
            ttlMs: 0,
            cacheScope: 'private',
            _meta: { [SERVER_INFO]: { name: 'memory', version: '1.0.0' } },
          },
        };
      case 'initialize':
        return { result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'memory', version: '1.0.0' } } };
      case 'ping':
        return { result: {} };
      case 'tools/list':
        return { result: this.result(req, { tools: TOOLS }) };
      case 'tools/call': {
        if (params['name'] === 'hold') return 'held';
        const args = (params['arguments'] ?? {}) as Record<string, unknown>;
        return { result: this.result(req, { content: [{ type: 'text', text: String(args['text']) }] }) };
      }
      default:
        return { error: { code: -32601, message: 'Method not found' } };
    }
  }
}
