import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { McpxError, MessageTooLargeError, TransportClosedError } from '../../src/errors.js';
import { HTTPStatusError, UnauthorizedError } from '../../src/transports/http-errors.js';
import { initializeParams } from '../../src/transports/mcp-messages.js';
import { RpcPeer } from '../../src/transports/rpc-peer.js';
import { LegacySseChannel, type LegacySseChannelOptions } from '../../src/transports/sse-legacy.js';
import type { CloseInfo, JsonRpcMessage } from '../../src/transports/types.js';
import { startHttpFixture, type HttpFixture } from '../fixtures/http/index.js';
import { httpRequests } from '../fixtures/http/log.js';

const LEGACY = '2025-11-25';
const TOKEN = 'sse-secret-token-456';

let shared: HttpFixture;
const stopLater: HttpFixture[] = [];
const channels: LegacySseChannel[] = [];
const rawServers: Server[] = [];

beforeAll(async () => {
  shared = await startHttpFixture('v1-sse-legacy');
});

afterEach(async () => {
  await Promise.all(channels.splice(0).map((c) => c.close()));
  await Promise.all(
    rawServers.splice(0).map(
      (s) =>
        new Promise<void>((r) => {
          s.closeAllConnections();
          s.close(() => r());
        }),
    ),
  );
});

afterAll(async () => {
  await Promise.all([shared, ...stopLater].filter(Boolean).map((f) => f.stop()));
});

function open(url: string, extra: Partial<LegacySseChannelOptions> = {}) {
  const channel = new LegacySseChannel({ url, ...extra });
  channels.push(channel);
  const peer = new RpcPeer(channel);
  const closes: CloseInfo[] = [];
  let onClosed: (() => void) | undefined;
  const closed = new Promise<void>((r) => (onClosed = r));
  channel.onClose((info) => {
    closes.push(info);
    onClosed?.();
  });
  return { channel, peer, closes, closed };
}

function textOf(result: unknown): string {
  const content = (result as { content?: Array<{ text?: string }> }).content ?? [];
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

/** A hand-written SSE server on 127.0.0.1: `onGet` writes whatever the test wants on the stream. */
async function rawSseServer(onGet: (res: ServerResponse, port: number) => void): Promise<{ url: string; port: number; posts: string[] }> {
  const posts: string[] = [];
  let port = 0;
  const server = createServer((req, res) => {
    if (req.method === 'GET') {
      onGet(res, port);
      return;
    }
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      posts.push(body);
      res.writeHead(202).end();
    });
  });
  rawServers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}/sse`, port, posts };
}

describe('LegacySseChannel against SDK v1 SSEServerTransport', () => {
  it('connects, finds the endpoint, initializes and calls echo', async () => {
    const { channel, peer } = open(shared.url, { headers: { Authorization: `Bearer ${TOKEN}` } });
    await channel.start();
    expect(channel.pid).toBeUndefined();
    expect(channel.endpointUrl).toMatch(new RegExp(`^${shared.origin}/messages\\?`));
    const init = (await peer.request('initialize', initializeParams(LEGACY))) as { protocolVersion: string };
    expect(init.protocolVersion).toBe(LEGACY);
    peer.notify('notifications/initialized');
    expect(textOf(await peer.request('tools/call', { name: 'echo', arguments: { text: 'via sse' } }))).toBe('via sse era=legacy');

    const log = httpRequests(shared.log);
    const get = log.find((e) => e.httpMethod === 'GET' && e.path === '/sse');
    expect(get?.accept).toBe('text/event-stream');
    expect(get?.authorization).toBe(true);
    const posts = log.filter((e) => e.httpMethod === 'POST' && e.path.startsWith('/messages?sessionId='));
    expect(posts.map((e) => e.rpcMethod)).toEqual(expect.arrayContaining(['initialize', 'notifications/initialized', 'tools/call']));
    expect(posts.every((e) => e.authorization && e.contentType === 'application/json')).toBe(true);
  });

  it('server requests and answers arrive with context undefined (this transport cannot attribute)', async () => {
    const { channel } = open(shared.url);
    const seen: Array<{ m: JsonRpcMessage; context: unknown }> = [];
    channel.onMessage((m, context) => seen.push({ m, context }));
    await channel.start();
    channel.send({ jsonrpc: '2.0', id: 'x1', method: 'initialize', params: initializeParams(LEGACY) }, { caller: 'me' });
    for (let i = 0; i < 100 && seen.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(seen[0]).toMatchObject({ m: { id: 'x1' }, context: undefined });
  });

  it('reports connection-lost when the server stops, and fails what was pending', async () => {
    const own = await startHttpFixture('v1-sse-legacy');
    stopLater.push(own);
    const { channel, peer, closes, closed } = open(own.url);
    await channel.start();
    await peer.request('initialize', initializeParams(LEGACY));
    await own.stop();
    await closed;
    expect(closes).toHaveLength(1);
    expect(closes[0]!.reason).toBe('connection-lost');
    expect(channel.closed).toBe(true);
    await expect(peer.request('tools/list', {})).rejects.toBeInstanceOf(TransportClosedError);
    await channel.close();
    expect(closes).toHaveLength(1); // close() after a loss does not fire again
  });

  it('an SSE event larger than maxMessageBytes closes the channel with MessageTooLargeError', async () => {
    const server = await rawSseServer((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: endpoint\ndata: /messages\n\n');
      setTimeout(() => res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'n', params: { x: 'y'.repeat(5000) } })}\n\n`), 20);
    });
    const { channel, closes, closed } = open(server.url, { maxMessageBytes: 1000 });
    await channel.start();
    await closed;
    expect(closes).toHaveLength(1);
    expect(closes[0]!.reason).toBe('error');
    expect(closes[0]!.error).toBeInstanceOf(MessageTooLargeError);
  });

  it('close() aborts the stream and fires onClose stopped once', async () => {
    const { channel, closes } = open(shared.url);
    await channel.start();
    await Promise.all([channel.close(), channel.close()]);
    expect(closes).toEqual([{ reason: 'stopped' }]);
    expect(() => channel.send({ jsonrpc: '2.0', method: 'notifications/initialized' })).toThrow(TransportClosedError);
  });
});

describe('LegacySseChannel start failures', () => {
  it('refuses an endpoint event pointing at another origin, naming both origins', async () => {
    const server = await rawSseServer((res, port) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`event: endpoint\ndata: http://localhost:${port}/messages?sessionId=1\n\n`);
    });
    const { channel, closes } = open(server.url, { headers: { Authorization: `Bearer ${TOKEN}` } });
    const err = await caught(channel.start());
    expect(err).toBeInstanceOf(McpxError);
    expect(err).toMatchObject({ code: 'MCPX_BAD_UPSTREAM' });
    expect(err.message).toContain(`http://localhost:${server.port}`);
    expect(err.message).toContain(`http://127.0.0.1:${server.port}`);
    expect(closes.map((c) => c.reason)).toEqual(['error']);
    expect(() => channel.send({ jsonrpc: '2.0', method: 'x' })).toThrow(TransportClosedError);
    expect(server.posts).toEqual([]); // nothing (and no token) ever went to the other origin
  });

  it('accepts a relative endpoint and posts there', async () => {
    const server = await rawSseServer((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': hello\n\nevent: endpoint\ndata: /messages?sessionId=abc\n\n');
    });
    const { channel } = open(server.url);
    await channel.start();
    expect(channel.endpointUrl).toBe(`http://127.0.0.1:${server.port}/messages?sessionId=<redacted>`);
    channel.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    for (let i = 0; i < 100 && server.posts.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(JSON.parse(server.posts[0]!)).toEqual({ jsonrpc: '2.0', method: 'notifications/initialized' });
  });

  it('rejects start() when no endpoint event arrives in time', async () => {
    const server = await rawSseServer((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': nothing yet\n\n');
    });
    const { channel } = open(server.url, { timeoutMs: 300 });
    const t0 = Date.now();
    const err = await caught(channel.start());
    expect(err).toMatchObject({ code: 'MCPX_CONNECT_TIMEOUT' });
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it('rejects start() with a typed error when the GET fails', async () => {
    const notFound = await rawSseServer((res) => res.writeHead(404, { 'content-type': 'text/plain' }).end('no such stream'));
    const err = await caught(open(notFound.url).channel.start());
    expect(err).toBeInstanceOf(HTTPStatusError);
    expect(err).toMatchObject({ code: 'MCPX_HTTP_STATUS', status: 404, body: 'no such stream' });

    const denied = await rawSseServer((res) => res.writeHead(401, { 'www-authenticate': 'Bearer' }).end(`bad ${TOKEN}`));
    const err401 = await caught(open(denied.url, { headers: { Authorization: `Bearer ${TOKEN}` } }).channel.start());
    expect(err401).toBeInstanceOf(UnauthorizedError);
    expect(err401.message).toContain('unauthorized (HTTP 401)');
    expect(JSON.stringify((err401 as McpxError).toJSON())).not.toContain(TOKEN);

    const ended = await rawSseServer((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(': bye\n\n');
    });
    expect(await caught(open(ended.url).channel.start())).toMatchObject({ code: 'MCPX_TRANSPORT_CLOSED' });
  });
});
