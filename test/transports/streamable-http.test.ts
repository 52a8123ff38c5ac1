import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { pino } from 'pino';
import { request } from 'undici';
import { McpxError, MessageTooLargeError, TransportClosedError, UpstreamRpcError } from '../../src/errors.js';
import { HTTPStatusError, UnauthorizedError } from '../../src/transports/http-errors.js';
import type { TransportLogger } from '../../src/transports/jsonrpc.js';
import { discoverParams, initializeParams, requestParams } from '../../src/transports/mcp-messages.js';
import { RpcPeer } from '../../src/transports/rpc-peer.js';
import { SseDecoder, type SseEvent } from '../../src/transports/sse.js';
import { StreamableHttpChannel, encodeMcpHeaderValue, type StreamableHttpChannelOptions } from '../../src/transports/streamable-http.js';
import type { CloseInfo, JsonRpcNotification, JsonRpcRequest } from '../../src/transports/types.js';
import { startHttpFixture, type HttpFixture, type RawHttpMode } from '../fixtures/http/index.js';
import { httpRequests, readHttpLog, responseTo, waitForHttpLog, type HttpRequestEvent, type HttpResponseEvent } from '../fixtures/http/log.js';
import { recordingLogger } from '../support/recording-logger.js';

const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';
const TOKEN = 'secret-token-123';

// ------------------------------------------------------------------------------------ fixtures

const fx = {} as Record<'dual' | 'modern' | 'sessions' | 'sse' | RawHttpMode, HttpFixture>;

beforeAll(async () => {
  const started = await Promise.all(
    [
      startHttpFixture('v2-dual').then((f) => (fx.dual = f)),
      startHttpFixture('v2-modern').then((f) => (fx.modern = f)),
      startHttpFixture('v1-legacy-sessions').then((f) => (fx.sessions = f)),
      startHttpFixture('v1-sse-legacy').then((f) => (fx.sse = f)),
      ...(['405', '500', '401', 'drop', 'huge', 'legacy-400', 'modern-400-32022'] as const).map((m) =>
        startHttpFixture('raw-http', [m]).then((f) => (fx[m] = f)),
      ),
      startHttpFixture('raw-http', ['slow'], { SLOW_MS: '1200' }).then((f) => (fx.slow = f)),
    ].map((p) =>
      p.then(
        () => undefined,
        (err: unknown) => err,
      ),
    ),
  );
  const failed = started.find((r) => r !== undefined);
  if (failed) throw failed;
});

afterAll(async () => {
  await Promise.all(Object.values(fx).map((f) => f.stop()));
});

const channels: StreamableHttpChannel[] = [];
afterEach(async () => {
  await Promise.all(channels.splice(0).map((c) => c.close()));
});

// ------------------------------------------------------------------------------------- helpers

function open(url: string, extra: Partial<StreamableHttpChannelOptions> = {}) {
  const channel = new StreamableHttpChannel({ url, ...extra });
  channels.push(channel);
  const peer = new RpcPeer(channel);
  const closes: CloseInfo[] = [];
  channel.onClose((info) => closes.push(info));
  return { channel, peer, closes };
}

/** initialize + notifications/initialized over a peer (the legacy handshake the session machine runs). */
async function handshake(peer: RpcPeer, capabilities: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const result = (await peer.request('initialize', initializeParams(LEGACY, capabilities))) as Record<string, unknown>;
  peer.notify('notifications/initialized');
  return result;
}

function textOf(result: unknown): string {
  const content = (result as { content?: Array<{ type: string; text?: string }> }).content ?? [];
  return content.map((c) => c.text ?? '').join('');
}

async function caught(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

function modernCall(name: string, args: Record<string, unknown> = {}): Record<string, unknown> {
  return requestParams('modern', MODERN, { name, arguments: args })!;
}

function lastRequest(log: string, rpcMethod: string): HttpRequestEvent {
  const all = httpRequests(log, rpcMethod);
  const last = all.at(-1);
  if (!last) throw new Error(`no ${rpcMethod} in ${JSON.stringify(readHttpLog(log))}`);
  return last;
}

/** The fixture logs a response when its socket closes, which may be just after the client saw the answer. */
async function responseOf(log: string, req: HttpRequestEvent): Promise<HttpResponseEvent> {
  await waitForHttpLog(log, () => responseTo(log, req) !== undefined);
  return responseTo(log, req)!;
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

// ---------------------------------------------------------------------------------- pure parts

describe('encodeMcpHeaderValue', () => {
  it('passes safe visible ASCII through and wraps anything else as =?base64?…?=', () => {
    expect(encodeMcpHeaderValue('echo')).toBe('echo');
    expect(encodeMcpHeaderValue('file:///tmp/a b.txt')).toBe('file:///tmp/a b.txt');
    expect(encodeMcpHeaderValue('écho')).toBe(`=?base64?${Buffer.from('écho').toString('base64')}?=`);
    expect(encodeMcpHeaderValue(' padded')).toMatch(/^=\?base64\?/);
    expect(encodeMcpHeaderValue('a\nb')).toMatch(/^=\?base64\?/);
    expect(encodeMcpHeaderValue('')).toBe('=?base64??=');
    expect(encodeMcpHeaderValue('=?base64?abc?=')).toBe(`=?base64?${Buffer.from('=?base64?abc?=').toString('base64')}?=`);
  });
});

describe('SseDecoder', () => {
  function decode(chunks: Array<string | Buffer>, max?: number) {
    const events: SseEvent[] = [];
    let overflow = false;
    const d = new SseDecoder({ onEvent: (e) => events.push(e), ...(max !== undefined ? { maxEventBytes: max } : {}), onOverflow: () => (overflow = true) });
    for (const c of chunks) d.push(typeof c === 'string' ? Buffer.from(c) : c);
    d.end();
    return { events, overflow };
  }

  it('handles comments, event names, multi-line data, CRLF/CR endings and split chunks', () => {
    const { events } = decode([': keep-alive\n\nevent: endpoint\r\ndata: /messages?x=1\r', '\n\r\ndata: {"a":\ndata:  1}\n', '\nid: 7\ndata: last']);
    expect(events).toEqual([
      { event: 'endpoint', data: '/messages?x=1' },
      { event: 'message', data: '{"a":\n 1}' },
      { event: 'message', data: 'last', id: '7' },
    ]);
  });

  it('decodes a UTF-8 character split across chunks and drops a leading BOM', () => {
    const bytes = Buffer.from('\uFEFFdata: é\n\n');
    const { events } = decode([bytes.subarray(0, 9), bytes.subarray(9)]);
    expect(events).toEqual([{ event: 'message', data: 'é' }]);
  });

  it('reports an event larger than the limit, whole or still arriving', () => {
    expect(decode([`data: ${'x'.repeat(200)}\n\n`], 100).overflow).toBe(true);
    expect(decode([`data: ${'x'.repeat(60)}\n`, `data: ${'x'.repeat(60)}\n\n`], 100).overflow).toBe(true);
    expect(decode([`data: ${'x'.repeat(300)}`], 100).overflow).toBe(true);
    expect(decode([`data: ${'x'.repeat(100)}\n\n`], 100).overflow).toBe(false);
  });
});

describe('construction', () => {
  it('refuses URLs that are not http: or https:', () => {
    expect(() => new StreamableHttpChannel({ url: 'ftp://127.0.0.1/mcp' })).toThrow(expect.objectContaining({ code: 'MCPX_BAD_CONFIG' }));
    expect(() => new StreamableHttpChannel({ url: 'not a url' })).toThrow(expect.objectContaining({ code: 'MCPX_BAD_CONFIG' }));
  });

  it('refuses a header value with a line break without echoing it', () => {
    const err = (() => {
      try {
        new StreamableHttpChannel({ url: 'http://127.0.0.1/mcp', headers: { Authorization: `Bearer ${TOKEN}\r\nX: y` } });
      } catch (e) {
        return e as McpxError;
      }
      throw new Error('no throw');
    })();
    expect(err.code).toBe('MCPX_BAD_CONFIG');
    expect(err.message).not.toContain(TOKEN);
  });

  it('starts at once, has no pid, and close() fires onClose stopped exactly once', async () => {
    const { channel, closes } = open(fx.dual.url);
    await channel.start();
    expect(channel.pid).toBeUndefined();
    await Promise.all([channel.close(), channel.close()]);
    await channel.close();
    expect(closes).toEqual([{ reason: 'stopped' }]);
    expect(() => channel.send({ jsonrpc: '2.0', method: 'notifications/initialized' })).toThrow(TransportClosedError);
  });
});

// ------------------------------------------------------------------------------------- modern

describe('modern requests (SDK v2 createMcpHandler)', () => {
  it('posts server/discover with exactly MCP-Protocol-Version and Mcp-Method, and no session id', async () => {
    const { peer } = open(fx.dual.url, { headers: { 'X-Api-Key': 'k-123456' } });
    const result = (await peer.request('server/discover', discoverParams(MODERN))) as { supportedVersions: string[] };
    expect(result.supportedVersions).toContain(MODERN);
    const req = lastRequest(fx.dual.log, 'server/discover');
    expect(req.httpMethod).toBe('POST');
    expect(req.headers).toEqual({ 'mcp-protocol-version': MODERN, 'mcp-method': 'server/discover' });
    expect(req.accept).toBe('application/json, text/event-stream');
    expect(req.contentType).toBe('application/json');
    expect((await responseOf(fx.dual.log, req)).status).toBe(200);
  });

  it('tools/call carries Mcp-Name (and still no session id)', async () => {
    const { peer } = open(fx.dual.url);
    const result = await peer.request('tools/call', modernCall('echo', { text: 'hi' }));
    expect(textOf(result)).toBe('hi era=modern');
    const req = lastRequest(fx.dual.log, 'tools/call');
    expect(req.headers).toEqual({ 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'echo' });
  });

  it('a non-ASCII name travels base64-encoded and the SDK server decodes it (no -32020 header mismatch)', async () => {
    const { peer } = open(fx.dual.url);
    const err = await caught(peer.request('tools/call', modernCall('écho', { text: 'hi' })));
    expect(err).toBeInstanceOf(UpstreamRpcError);
    expect((err as UpstreamRpcError).rpc.code).not.toBe(-32020);
    expect(lastRequest(fx.dual.log, 'tools/call').headers['mcp-name']).toBe(encodeMcpHeaderValue('écho'));
  });

  it('resources/read carries its uri as Mcp-Name', async () => {
    const { peer } = open(fx.dual.url);
    const err = await caught(peer.request('resources/read', requestParams('modern', MODERN, { uri: 'test://nowhere' })));
    expect(err).toBeInstanceOf(UpstreamRpcError);
    expect((err as UpstreamRpcError).rpc.code).not.toBe(-32020);
    expect(lastRequest(fx.dual.log, 'resources/read').headers).toEqual({
      'mcp-protocol-version': MODERN,
      'mcp-method': 'resources/read',
      'mcp-name': 'test://nowhere',
    });
  });

  it('a 400 carrying -32022 with the request id is a JSON-RPC answer (so the version retry can see it)', async () => {
    const { peer } = open(fx['modern-400-32022'].url);
    const err = await caught(peer.request('server/discover', discoverParams('2027-01-01')));
    expect(err).toBeInstanceOf(UpstreamRpcError);
    expect((err as UpstreamRpcError).rpc).toMatchObject({ code: -32022, data: { supported: [MODERN], requested: '2027-01-01' } });
    expect(lastRequest(fx['modern-400-32022'].log, 'server/discover').headers['mcp-protocol-version']).toBe('2027-01-01');
    // The retry at a supported version succeeds on the same channel.
    const result = (await peer.request('server/discover', discoverParams(MODERN))) as { supportedVersions: string[] };
    expect(result.supportedVersions).toEqual([MODERN]);
  });

  it('a modern-only server refuses initialize with 400 -32022, delivered as the answer (not a bare status)', async () => {
    const { peer } = open(fx.modern.url);
    const err = await caught(peer.request('initialize', initializeParams(LEGACY)));
    expect(err).toBeInstanceOf(UpstreamRpcError);
    expect((err as UpstreamRpcError).rpc).toMatchObject({ code: -32022, data: { supported: [MODERN] } });
  });
});

// ------------------------------------------------------------------------------------- legacy

describe('legacy requests', () => {
  it('a stateless legacy server (v2 dual): initialize answered over SSE, no session id, negotiated version sent after', async () => {
    const { peer, channel } = open(fx.dual.url);
    const init = await handshake(peer);
    expect(init.protocolVersion).toBe(LEGACY);
    expect(channel.legacySession).toEqual({ version: LEGACY, hasSessionId: false });
    expect(textOf(await peer.request('tools/call', { name: 'echo', arguments: { text: 'old' } }))).toBe('old era=legacy');
    const initReq = lastRequest(fx.dual.log, 'initialize');
    expect(initReq.headers).toEqual({});
    expect((await responseOf(fx.dual.log, initReq)).contentType).toContain('text/event-stream');
    expect(lastRequest(fx.dual.log, 'tools/call').headers).toEqual({ 'mcp-protocol-version': LEGACY });
  });

  it('a 400 with id:null from a legacy server is delivered as the answer to discover', async () => {
    const { peer } = open(fx.sessions.url);
    const err = await caught(peer.request('server/discover', discoverParams(MODERN)));
    expect(err).toBeInstanceOf(UpstreamRpcError);
    expect((err as UpstreamRpcError).rpc).toMatchObject({ code: -32000, message: 'Bad Request: Server not initialized' });

    const { peer: p2 } = open(fx['legacy-400'].url);
    const err2 = await caught(p2.request('server/discover', discoverParams(MODERN)));
    expect((err2 as UpstreamRpcError).rpc.code).toBe(-32000);
    await handshake(p2);
    expect(textOf(await p2.request('tools/call', { name: 'echo', arguments: { text: 'a' } }))).toBe('a era=legacy');
    expect(lastRequest(fx['legacy-400'].log, 'tools/call').headers).toEqual({ 'mcp-protocol-version': LEGACY, 'mcp-session-id': 'raw-session-1' });
  });

  it('a sessionful server: the minted session id and the negotiated version go on every later message, not on initialize', async () => {
    const { peer, channel } = open(fx.sessions.url);
    await handshake(peer);
    expect(channel.legacySession).toEqual({ version: LEGACY, hasSessionId: true });
    expect(textOf(await peer.request('tools/call', { name: 'echo', arguments: { text: 'x' } }))).toBe('x era=legacy');

    const events = await waitForHttpLog(fx.sessions.log, () => httpRequests(fx.sessions.log, 'notifications/initialized').length > 0);
    expect(events.length).toBeGreaterThan(0);
    const init = lastRequest(fx.sessions.log, 'initialize');
    expect(init.headers).toEqual({});
    const sid = lastRequest(fx.sessions.log, 'tools/call').headers['mcp-session-id'];
    expect(sid).toMatch(/^[0-9a-f-]{36}$/);
    for (const m of ['notifications/initialized', 'tools/call']) {
      expect(lastRequest(fx.sessions.log, m).headers).toEqual({ 'mcp-session-id': sid, 'mcp-protocol-version': LEGACY });
    }
    expect((await responseOf(fx.sessions.log, lastRequest(fx.sessions.log, 'tools/call'))).contentType).toContain('text/event-stream');
  });

  it('two ask calls in flight on one session each get their own elicitation/create, with their own context', async () => {
    const { peer } = open(fx.sessions.url);
    await handshake(peer, { elicitation: {} });
    const questions: Array<{ message: string; tag: string }> = [];
    let release!: () => void;
    const bothAsked = new Promise<void>((r) => (release = r));
    peer.onRequest(async (req: JsonRpcRequest, ctx) => {
      expect(req.method).toBe('elicitation/create');
      const tag = (ctx.context as { tag: string }).tag;
      questions.push({ message: String(req.params?.message), tag });
      if (questions.length === 2) release();
      await bothAsked; // answer only once both calls are waiting: they really are concurrent
      return { action: 'accept', content: { name: `name-of-${tag}` } };
    });
    const [a, b] = await Promise.all([
      peer.request('tools/call', { name: 'ask', arguments: { tag: 'A' } }, { context: { tag: 'A' } }),
      peer.request('tools/call', { name: 'ask', arguments: { tag: 'B' } }, { context: { tag: 'B' } }),
    ]);
    expect(textOf(a)).toBe('answer=name-of-A to=A');
    expect(textOf(b)).toBe('answer=name-of-B to=B');
    expect(questions.sort((x, y) => x.tag.localeCompare(y.tag))).toEqual([
      { message: 'question for A', tag: 'A' },
      { message: 'question for B', tag: 'B' },
    ]);
    // The answers were POSTed as responses on the session.
    const answers = httpRequests(fx.sessions.log).filter((e) => e.rpc[0]?.kind === 'response');
    expect(answers.length).toBeGreaterThanOrEqual(2);
    for (const e of answers.slice(-2)) expect(e.headers['mcp-session-id']).toBeDefined();
  });

  // Whether and how to open an expired session again is the session chart's decision (renewing); the
  // channel reports the 404, holds the requests that met it, and sends them once more when the owner is done.
  it('a 404 on the session goes to the owner once (however many requests met it), then each request is sent once more', async () => {
    const { peer, channel } = open(fx.sessions.url);
    await handshake(peer);
    expect(textOf(await peer.request('tools/call', { name: 'echo', arguments: { text: 'before' } }))).toBe('before era=legacy');
    const oldSid = lastRequest(fx.sessions.log, 'tools/call').headers['mcp-session-id'];
    let renewals = 0;
    // The owner's renewal, as the session chart does it: a fresh initialize and notifications/initialized.
    channel.onSessionExpired(async () => {
      renewals++;
      await handshake(peer);
    });
    const killed = await request(`${fx.sessions.origin}/kill-sessions`, { method: 'POST' });
    expect(await killed.body.json()).toMatchObject({ killed: expect.any(Number) });

    const texts = await Promise.all(['a', 'b', 'c'].map(async (t) => textOf(await peer.request('tools/call', { name: 'echo', arguments: { text: t } }))));
    expect(texts).toEqual(['a era=legacy', 'b era=legacy', 'c era=legacy']);
    expect(renewals).toBe(1);
    const calls = httpRequests(fx.sessions.log, 'tools/call').slice(-6);
    expect(calls.filter((c) => c.headers['mcp-session-id'] === oldSid)).toHaveLength(3);
    const newSid = calls.at(-1)!.headers['mcp-session-id'];
    expect(newSid).toBeDefined();
    expect(newSid).not.toBe(oldSid);
    expect(calls.filter((c) => c.headers['mcp-session-id'] === newSid)).toHaveLength(3);
  });

  it('a 404 on the session with no owner to open it again fails the request with MCPX_SESSION_CLOSED and closes the channel', async () => {
    const { peer, channel, closes } = open(fx.sessions.url);
    await handshake(peer);
    await request(`${fx.sessions.origin}/kill-sessions`, { method: 'POST' });
    const err = await caught(peer.request('tools/call', { name: 'echo', arguments: { text: 'x' } }));
    expect(err).toMatchObject({ code: 'MCPX_SESSION_CLOSED', message: expect.stringMatching(/HTTP 404/) });
    await channel.close();
    expect(closes[0]).toMatchObject({ reason: 'connection-lost' });
  });

  it('close() sends DELETE with the session id', async () => {
    const { peer, channel, closes } = open(fx.sessions.url);
    await handshake(peer);
    await peer.request('tools/list', {});
    const sid = lastRequest(fx.sessions.log, 'tools/list').headers['mcp-session-id'];
    await channel.close();
    expect(closes).toEqual([{ reason: 'stopped' }]);
    const del = httpRequests(fx.sessions.log)
      .filter((e) => e.httpMethod === 'DELETE')
      .at(-1);
    expect(del?.headers['mcp-session-id']).toBe(sid);
    expect(del?.headers['mcp-protocol-version']).toBe(LEGACY);
  });

  it('close() sends no DELETE when the server minted no session id', async () => {
    const { peer, channel } = open(fx.dual.url);
    await handshake(peer);
    await channel.close();
    expect(httpRequests(fx.dual.log).some((e) => e.httpMethod === 'DELETE')).toBe(false);
  });
});

// ------------------------------------------------------------------------------ status errors

describe('HTTP failures', () => {
  // The transport reports the status and the method; what a bare 405 to initialize means (an old HTTP+SSE
  // server) is the verdict table's rule (test/machines/verdict.test.ts), not the transport's.
  it('405 to everything: initialize and discover both reject with an HTTPStatusError naming status and method', async () => {
    const { peer } = open(fx['405'].url);
    const init = await caught(peer.request('initialize', initializeParams(LEGACY)));
    expect(init).toBeInstanceOf(HTTPStatusError);
    expect(init).toMatchObject({ code: 'MCPX_HTTP_STATUS', status: 405, method: 'initialize' });
    const disc = await caught(peer.request('server/discover', discoverParams(MODERN)));
    expect(disc).toBeInstanceOf(HTTPStatusError);
    expect(disc).toMatchObject({ code: 'MCPX_HTTP_STATUS', status: 405 });
  });

  it('a 405 on the HTTP+SSE server (POST /sse) is reported as that status, with no JSON-RPC error', async () => {
    const { peer } = open(fx.sse.url);
    const err = await caught(peer.request('initialize', initializeParams(LEGACY)));
    expect(err).toMatchObject({ code: 'MCPX_HTTP_STATUS', status: 405, method: 'initialize' });
    expect((err as HTTPStatusError).rpcError).toBeUndefined();
  });

  it('500 → HTTPStatusError with status and body', async () => {
    const { peer } = open(fx['500'].url);
    const err = await caught(peer.request('server/discover', discoverParams(MODERN)));
    expect(err).toBeInstanceOf(HTTPStatusError);
    expect(err).toMatchObject({ code: 'MCPX_HTTP_STATUS', status: 500, body: 'Internal Server Error', method: 'server/discover' });
    expect((err as HTTPStatusError).rpcError).toBeUndefined();
    const init = await caught(peer.request('initialize', initializeParams(LEGACY)));
    expect(init).toMatchObject({ code: 'MCPX_HTTP_STATUS', status: 500 });
  });

  it('401 → UnauthorizedError; the configured token never shows in messages, data or logs', async () => {
    const lines: string[] = [];
    const pinoLogger = pino({ level: 'debug' }, { write: (s: string) => void lines.push(s) });
    const { logger, records } = recordingLogger();
    const both: TransportLogger = {
      debug: (o, m) => (logger.debug(o, m), pinoLogger.debug(o, m)),
      info: (o, m) => (logger.info(o, m), pinoLogger.info(o, m)),
      warn: (o, m) => (logger.warn(o, m), pinoLogger.warn(o, m)),
      error: (o, m) => (logger.error(o, m), pinoLogger.error(o, m)),
    };
    const { peer } = open(fx['401'].url, { headers: { Authorization: `Bearer ${TOKEN}` }, logger: both });
    const errors: Error[] = [];
    for (const [method, params] of [
      ['server/discover', discoverParams(MODERN)],
      ['initialize', initializeParams(LEGACY)],
    ] as const) {
      const err = await caught(peer.request(method, params));
      errors.push(err);
      expect(err).toBeInstanceOf(UnauthorizedError);
      expect(err).not.toBeInstanceOf(HTTPStatusError); // never mistaken for era evidence
      expect(err.message).toContain('unauthorized (HTTP 401)');
      expect((err as UnauthorizedError).wwwAuthenticate).toContain('Bearer');
    }
    // The fixture echoes the Authorization header in its body: it must be redacted.
    expect(JSON.stringify((errors[0] as UnauthorizedError).data)).toContain('<redacted>');
    peer.notify('notifications/initialized'); // a failed notification is logged (warn)
    await waitForHttpLog(fx['401'].log, () => httpRequests(fx['401'].log, 'notifications/initialized').length > 0);
    await new Promise((r) => setTimeout(r, 50));
    expect(records.some((r) => r.level === 'warn')).toBe(true);
    for (const err of errors) {
      expect(err.message).not.toContain(TOKEN);
      expect(JSON.stringify((err as McpxError).toJSON())).not.toContain(TOKEN);
      expect(String(err.stack)).not.toContain(TOKEN);
    }
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.join('\n')).not.toContain(TOKEN);
    expect(httpRequests(fx['401'].log).every((e) => e.authorization)).toBe(true);
  });

  it('a refused connection → MCPX_TRANSPORT_CLOSED naming the URL without credentials', async () => {
    const port = await closedPort();
    const { peer } = open(`http://user:pw-secret-1@127.0.0.1:${port}/mcp?key=query-secret-1`);
    const err = await caught(peer.request('server/discover', discoverParams(MODERN)));
    expect(err).toBeInstanceOf(TransportClosedError);
    expect(err).toMatchObject({ code: 'MCPX_TRANSPORT_CLOSED' });
    // One URL rule everywhere (src/redaction.ts): the password and secret-named query values are blanked.
    expect(err.message).toContain(`http://<redacted>@127.0.0.1:${port}/mcp?key=<redacted>`);
    expect(err.message).toMatch(/ECONNREFUSED/);
    const all = `${err.message} ${JSON.stringify((err as McpxError).toJSON())}`;
    expect(all).not.toContain('pw-secret-1');
    expect(all).not.toContain('query-secret-1');
  });
});

// ------------------------------------------------------------------------------------ streams

describe('response streams', () => {
  it('a stream dropped mid-way fails that request with MCPX_TRANSPORT_CLOSED; the channel stays usable', async () => {
    const { peer, channel, closes } = open(fx.drop.url);
    const progress: Array<{ n: JsonRpcNotification; context: unknown }> = [];
    peer.onNotification((n, ctx) => progress.push({ n, context: ctx.context }));
    await handshake(peer);
    const err = await caught(peer.request('tools/call', { name: 'drop', arguments: {} }, { context: 'call-1' }));
    expect(err).toMatchObject({ code: 'MCPX_TRANSPORT_CLOSED' });
    expect(err.message).toContain(fx.drop.url);
    expect(progress.map((p) => [p.n.method, p.context])).toEqual([['notifications/progress', 'call-1']]);
    expect(channel.closed).toBe(false);
    expect(closes).toEqual([]); // HTTP has no process to die: a lost stream fails one request, never the channel
    expect(textOf(await peer.request('tools/call', { name: 'echo', arguments: { text: 'still' } }))).toBe('still era=legacy');
  });

  it('a 200 whose stream ends without the answer fails that request with MCPX_TRANSPORT_CLOSED', async () => {
    const server = createHttpServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x' } })}\n\n`);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { peer, closes } = open(`http://127.0.0.1:${(server.address() as { port: number }).port}/mcp`);
      const seen: string[] = [];
      peer.onNotification((n) => seen.push(n.method));
      const err = await caught(peer.request('tools/list', {}));
      expect(err).toMatchObject({ code: 'MCPX_TRANSPORT_CLOSED' });
      expect(err.message).toMatch(/without answering/);
      expect(seen).toEqual(['notifications/message']);
      expect(closes).toEqual([]);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('a 10 MB JSON answer arrives whole', async () => {
    const { peer } = open(fx.huge.url);
    await handshake(peer);
    const result = await peer.request('tools/call', { name: 'big', arguments: {} });
    expect(textOf(result).length).toBe(10_000_000);
  });

  it('with maxMessageBytes 1 MB a larger JSON body or SSE event → MessageTooLargeError; the channel stays usable', async () => {
    const { peer } = open(fx.huge.url, { maxMessageBytes: 1024 * 1024 });
    await handshake(peer);
    for (const name of ['big', 'big-sse']) {
      const err = await caught(peer.request('tools/call', { name, arguments: {} }));
      expect(err).toBeInstanceOf(MessageTooLargeError);
    }
    expect(textOf(await peer.request('tools/call', { name: 'echo', arguments: { text: 'small' } }))).toBe('small era=legacy');
  });

  it('a slow server is only slow: no timeout in the channel', async () => {
    const { peer } = open(fx.slow.url);
    const t0 = Date.now();
    const init = await peer.request('initialize', initializeParams(LEGACY));
    expect((init as { protocolVersion: string }).protocolVersion).toBe(LEGACY);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1100);
  });

  it('close() fails in-flight requests with TransportClosedError and fires onClose once', async () => {
    const { peer, channel, closes } = open(fx.slow.url);
    const pending = caught(peer.request('tools/list', {}));
    await waitForHttpLog(fx.slow.log, () => httpRequests(fx.slow.log, 'tools/list').length > 0);
    const t0 = Date.now();
    await channel.close();
    const err = await pending;
    expect(err).toBeInstanceOf(TransportClosedError);
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(closes).toEqual([{ reason: 'stopped' }]);
  });

  it('a cancelled modern request closes its stream and posts no notifications/cancelled', async () => {
    const { peer, channel } = open(fx.slow.url);
    const controller = new AbortController();
    const pending = caught(peer.request('tools/list', requestParams('modern', MODERN, {}), { signal: controller.signal }));
    await waitForHttpLog(fx.slow.log, () => httpRequests(fx.slow.log, 'tools/list').some((e) => e.headers['mcp-protocol-version'] === MODERN));
    controller.abort();
    expect(await pending).toMatchObject({ code: 'MCPX_REQUEST_CANCELLED' });
    await new Promise((r) => setTimeout(r, 100));
    expect(channel.inflightCount).toBe(0);
    expect(httpRequests(fx.slow.log, 'notifications/cancelled')).toEqual([]);
  });
});
