import { describe, it, expect } from 'vitest';
import { McpxError, RequestTimeoutError, TransportClosedError, UpstreamRpcError } from '../../src/errors.js';
import { RpcPeer } from '../../src/transports/rpc-peer.js';
import type { Channel, CloseInfo, JsonRpcMessage } from '../../src/transports/types.js';
import { recordingLogger } from '../support/recording-logger.js';

/** An in-memory Channel: records what the peer sends, lets the test play the server. */
class FakeChannel implements Channel {
  readonly sent: Array<{ message: JsonRpcMessage; context: unknown }> = [];
  private messageListeners: Array<(m: JsonRpcMessage, context?: unknown) => void> = [];
  private closeListeners: Array<(info: CloseInfo) => void> = [];
  private isClosed = false;
  readonly pid = undefined;

  get closed(): boolean {
    return this.isClosed;
  }
  start(): Promise<void> {
    return Promise.resolve();
  }
  send(message: JsonRpcMessage, context?: unknown): void {
    if (this.isClosed) throw new TransportClosedError('fake channel closed');
    this.sent.push({ message, context });
  }
  close(): Promise<void> {
    this.fireClose({ reason: 'stopped' });
    return Promise.resolve();
  }
  onMessage(listener: (m: JsonRpcMessage, context?: unknown) => void): void {
    this.messageListeners.push(listener);
  }
  onClose(listener: (info: CloseInfo) => void): void {
    this.closeListeners.push(listener);
  }
  deliver(message: JsonRpcMessage, context?: unknown): void {
    for (const l of this.messageListeners) l(message, context);
  }
  fireClose(info: CloseInfo): void {
    if (this.isClosed) return;
    this.isClosed = true;
    for (const l of this.closeListeners) l(info);
  }
  messages(): JsonRpcMessage[] {
    return this.sent.map((s) => s.message);
  }
}

const tick = () => new Promise((r) => setTimeout(r, 0));

describe('RpcPeer', () => {
  it('correlates out-of-order responses by id (counter starts at 1)', async () => {
    const ch = new FakeChannel();
    const peer = new RpcPeer(ch);
    const a = peer.request('a', { n: 1 });
    const b = peer.request('b');
    const c = peer.request('c', { n: 3 }, { id: 'custom-id', context: 'ctx-c' });
    expect(ch.messages()).toEqual([
      { jsonrpc: '2.0', id: 1, method: 'a', params: { n: 1 } },
      { jsonrpc: '2.0', id: 2, method: 'b' },
      { jsonrpc: '2.0', id: 'custom-id', method: 'c', params: { n: 3 } },
    ]);
    expect(ch.sent[2]!.context).toBe('ctx-c');
    expect(peer.pendingCount).toBe(3);
    ch.deliver({ jsonrpc: '2.0', id: 'custom-id', result: 'C' });
    ch.deliver({ jsonrpc: '2.0', id: 2, result: { b: true } });
    ch.deliver({ jsonrpc: '2.0', id: 1, result: null });
    expect(await Promise.all([a, b, c])).toEqual([null, { b: true }, 'C']);
    expect(peer.pendingCount).toBe(0);
    // the custom id did not consume a counter value
    void peer.request('d').catch(() => undefined);
    expect(ch.messages()[3]).toMatchObject({ id: 3 });
  });

  it('keeps numeric and string ids apart', async () => {
    const ch = new FakeChannel();
    const peer = new RpcPeer(ch);
    const num = peer.request('x', undefined, { id: 5 });
    const str = peer.request('y', undefined, { id: '5' });
    ch.deliver({ jsonrpc: '2.0', id: '5', result: 'string' });
    ch.deliver({ jsonrpc: '2.0', id: 5, result: 'number' });
    expect(await Promise.all([num, str])).toEqual(['number', 'string']);
  });

  it('rejects with UpstreamRpcError on a JSON-RPC error response', async () => {
    const ch = new FakeChannel();
    const peer = new RpcPeer(ch);
    const p = peer.request('tools/call', { name: 'x' });
    ch.deliver({ jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'Unknown tool', data: { name: 'x' } } });
    const err = await p.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamRpcError);
    expect((err as UpstreamRpcError).code).toBe('MCPX_UPSTREAM_ERROR');
    expect((err as UpstreamRpcError).rpc).toEqual({ code: -32602, message: 'Unknown tool', data: { name: 'x' } });
    expect((err as UpstreamRpcError).message).toContain('tools/call');
  });

  it('times out with RequestTimeoutError, sends notifications/cancelled, and drops the late answer', async () => {
    const ch = new FakeChannel();
    const { logger, records } = recordingLogger();
    const peer = new RpcPeer(ch, { logger });
    const t0 = Date.now();
    const err = await peer.request('tools/list', {}, { timeoutMs: 50 }).catch((e: unknown) => e);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(45);
    expect(err).toBeInstanceOf(RequestTimeoutError);
    expect((err as RequestTimeoutError).code).toBe('MCPX_REQUEST_TIMEOUT');
    expect((err as RequestTimeoutError).data).toEqual({ method: 'tools/list', timeoutMs: 50 });
    expect(peer.pendingCount).toBe(0);
    expect(ch.messages()[1]).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 1, reason: 'timed out after 50 ms' },
    });
    ch.deliver({ jsonrpc: '2.0', id: 1, result: 'too late' });
    expect(records.filter((r) => r.level === 'debug' && r.obj.id === 1)).toHaveLength(1);
  });

  it('a response in time clears the timeout', async () => {
    const ch = new FakeChannel();
    const peer = new RpcPeer(ch);
    const p = peer.request('ping', undefined, { timeoutMs: 30 });
    ch.deliver({ jsonrpc: '2.0', id: 1, result: {} });
    expect(await p).toEqual({});
    await new Promise((r) => setTimeout(r, 50));
    expect(ch.messages()).toHaveLength(1); // no cancellation went out
  });

  it('abort rejects with MCPX_REQUEST_CANCELLED and sends notifications/cancelled with the reason', async () => {
    const ch = new FakeChannel();
    const peer = new RpcPeer(ch);
    const ac = new AbortController();
    const p = peer.request('tools/call', { name: 'slow' }, { signal: ac.signal, context: 'ctx-1' });
    ac.abort('user pressed ctrl-c');
    const err = await p.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(McpxError);
    expect((err as McpxError).code).toBe('MCPX_REQUEST_CANCELLED');
    expect((err as McpxError).message).toContain('user pressed ctrl-c');
    expect(peer.pendingCount).toBe(0);
    expect(ch.sent[1]).toEqual({
      message: { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, reason: 'user pressed ctrl-c' } },
      context: 'ctx-1',
    });
  });

  it('never sends notifications/cancelled for initialize', async () => {
    const ch = new FakeChannel();
    const peer = new RpcPeer(ch);
    const ac = new AbortController();
    const p = peer.request('initialize', { protocolVersion: '2025-11-25' }, { signal: ac.signal });
    ac.abort();
    await expect(p).rejects.toMatchObject({ code: 'MCPX_REQUEST_CANCELLED' });
    const t = peer.request('initialize', {}, { timeoutMs: 10 });
    await expect(t).rejects.toBeInstanceOf(RequestTimeoutError);
    expect(ch.messages().map((m) => ('method' in m ? m.method : '?'))).toEqual(['initialize', 'initialize']);
  });

  it('an already aborted signal rejects without sending anything', async () => {
    const ch = new FakeChannel();
    const peer = new RpcPeer(ch);
    const err = await peer.request('x', {}, { signal: AbortSignal.abort(new Error('gone')) }).catch((e: unknown) => e);
    expect((err as McpxError).code).toBe('MCPX_REQUEST_CANCELLED');
    expect(ch.sent).toHaveLength(0);
  });

  it('answers server→client requests through the handler, passing the channel context', async () => {
    const ch = new FakeChannel();
    const peer = new RpcPeer(ch);
    const seen: Array<{ method: string; context: unknown }> = [];
    peer.onRequest(async (req, ctx) => {
      seen.push({ method: req.method, context: ctx.context });
      if (req.method === 'roots/list') return { roots: [{ uri: 'file:///w' }] };
      if (req.method === 'ping') return undefined;
      if (req.method === 'sampling/createMessage') throw { code: -32602, message: 'no model', data: { hint: 'x' } };
      if (req.method === 'upstream') throw new UpstreamRpcError('elicitation/create', { code: -1, message: 'declined' });
      throw new Error('kaboom');
    });
    ch.deliver({ jsonrpc: '2.0', id: 's1', method: 'roots/list' }, 'ctx-A');
    ch.deliver({ jsonrpc: '2.0', id: 's2', method: 'ping' });
    ch.deliver({ jsonrpc: '2.0', id: 's3', method: 'sampling/createMessage', params: {} }, 'ctx-B');
    ch.deliver({ jsonrpc: '2.0', id: 's4', method: 'upstream' });
    ch.deliver({ jsonrpc: '2.0', id: 7, method: 'elicitation/create' });
    await tick();
    expect(seen).toEqual([
      { method: 'roots/list', context: 'ctx-A' },
      { method: 'ping', context: undefined },
      { method: 'sampling/createMessage', context: 'ctx-B' },
      { method: 'upstream', context: undefined },
      { method: 'elicitation/create', context: undefined },
    ]);
    const byId = new Map(ch.sent.map((s) => [(s.message as { id: unknown }).id, s]));
    expect(byId.get('s1')).toEqual({ message: { jsonrpc: '2.0', id: 's1', result: { roots: [{ uri: 'file:///w' }] } }, context: 'ctx-A' });
    expect(byId.get('s2')!.message).toEqual({ jsonrpc: '2.0', id: 's2', result: {} });
    expect(byId.get('s3')).toEqual({
      message: { jsonrpc: '2.0', id: 's3', error: { code: -32602, message: 'no model', data: { hint: 'x' } } },
      context: 'ctx-B',
    });
    expect(byId.get('s4')!.message).toEqual({ jsonrpc: '2.0', id: 's4', error: { code: -1, message: 'declined' } });
    expect(byId.get(7)!.message).toEqual({ jsonrpc: '2.0', id: 7, error: { code: -32603, message: 'kaboom' } });
  });

  it('answers -32601 Method not found when no handler is registered', async () => {
    const ch = new FakeChannel();
    new RpcPeer(ch);
    ch.deliver({ jsonrpc: '2.0', id: 9, method: 'sampling/createMessage', params: {} });
    await tick();
    expect(ch.messages()).toEqual([{ jsonrpc: '2.0', id: 9, error: { code: -32601, message: 'Method not found' } }]);
  });

  it('delivers notifications to listeners with their context', () => {
    const ch = new FakeChannel();
    const peer = new RpcPeer(ch);
    const got: unknown[] = [];
    peer.onNotification((n, ctx) => got.push([n.method, n.params, ctx.context]));
    ch.deliver({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }, 'ctx');
    ch.deliver({ jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 1 } });
    expect(got).toEqual([
      ['notifications/tools/list_changed', undefined, 'ctx'],
      ['notifications/progress', { progress: 1 }, undefined],
    ]);
  });

  it('drops (and logs at debug) a response that matches nothing pending', async () => {
    const ch = new FakeChannel();
    const { logger, records } = recordingLogger();
    const peer = new RpcPeer(ch, { logger });
    const p = peer.request('a');
    ch.deliver({ jsonrpc: '2.0', id: 42, result: 'stray' });
    ch.deliver({ jsonrpc: '2.0', id: '1', result: 'wrong type of id' });
    expect(peer.pendingCount).toBe(1);
    expect(records.filter((r) => r.level === 'debug').map((r) => r.obj.id)).toEqual([42, '1']);
    ch.deliver({ jsonrpc: '2.0', id: 1, result: 'right' });
    expect(await p).toBe('right');
  });

  it('rejects every pending request with TransportClosedError when the channel closes', async () => {
    const ch = new FakeChannel();
    const peer = new RpcPeer(ch);
    const a = peer.request('tools/list');
    const b = peer.request('resources/list', {}, { timeoutMs: 10_000 });
    ch.fireClose({ reason: 'exit', code: null, signal: 'SIGSEGV', stderrTail: ['Segmentation fault'] });
    const [ea, eb] = await Promise.all([a.catch((e: unknown) => e), b.catch((e: unknown) => e)]);
    expect(ea).toBeInstanceOf(TransportClosedError);
    expect((ea as TransportClosedError).message).toBe(
      'transport closed (exit, signal SIGSEGV) while waiting for tools/list; stderr tail:\n  Segmentation fault',
    );
    expect((eb as TransportClosedError).data).toMatchObject({ method: 'resources/list', reason: 'exit', signal: 'SIGSEGV' });
    expect(peer.pendingCount).toBe(0);
    await expect(peer.request('ping')).rejects.toBeInstanceOf(TransportClosedError);
    expect(() => peer.notify('notifications/initialized')).toThrow(TransportClosedError);
  });
});
