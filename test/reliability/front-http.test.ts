/**
 * The daemon's HTTP fronts under hostile and crowded use, through the built binary (`npm run build` first),
 * all on 127.0.0.1:
 *
 * - #1 `DELETE /mcp` with `Content-Type: application/json` and no body (what the Python SDK and fastmcp
 *   send when they close) ends the session; an empty body is accepted whatever the content type says.
 * - #19 500 legacy `/mcp` clients at once at the real bound (256): every `initialize` is answered (200, or
 *   503 with a JSON-RPC error and Retry-After), sessions in use are never evicted, a call in flight is
 *   never dropped, and only idle sessions make room.
 * - #20 a local user without the token cannot exhaust the daemon's descriptors (daemon run under
 *   `ulimit -n`): a 401 closes its connection, each TCP listener is bounded, the Unix socket stays reachable.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { api, cleanEnv, healthy, killAll, MCPX, mcpx, readJson, until } from '../cli/helpers.js';
import { freePort, startServeDaemon, type ServeDaemon } from '../serve/clients.js';
import { writeConfig } from '../server/helpers.js';
import { tempDir } from '../support/real.js';

const TOOLS = { tools: { fixture: 'serve-tools' as const } };
const removers: Array<() => Promise<void>> = [];
const children = new Set<ChildProcess>();
const sockets = new Set<Socket>();
/** Every undici connection a test opens, closed at the end. */
const agent = new Agent({ connections: null, pipelining: 0, headersTimeout: 60_000, bodyTimeout: 60_000 });

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await agent.close().catch(() => undefined);
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await killAll();
  for (const r of removers) await r().catch(() => undefined);
});

async function daemon(prefix: string, extraEnv: Record<string, string> = {}): Promise<ServeDaemon> {
  const d = await startServeDaemon(prefix, TOOLS, { MCPX_LOG_LEVEL: 'warn', ...extraEnv });
  removers.push(d.remove);
  return d;
}

interface McpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The JSON-RPC messages of the body (JSON or SSE). */
  messages: Array<Record<string, any>>;
  text: string;
}

function parseMessages(text: string, type: string): Array<Record<string, any>> {
  const out: Array<Record<string, any>> = [];
  if (type.includes('text/event-stream')) {
    for (const line of text.split(/\r?\n/)) {
      if (!line.startsWith('data:')) continue;
      try {
        out.push(JSON.parse(line.slice(5).trim()));
      } catch {
        // not JSON
      }
    }
    return out;
  }
  try {
    const v = JSON.parse(text);
    return Array.isArray(v) ? v : [v];
  } catch {
    return out;
  }
}

async function mcpHttp(d: ServeDaemon, method: 'POST' | 'DELETE' | 'GET', body: unknown, headers: Record<string, string> = {}): Promise<McpAnswer> {
  const res = await request(d.url, {
    dispatcher: agent,
    method,
    headers: {
      authorization: `Bearer ${d.token}`,
      accept: 'application/json, text/event-stream',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, messages: parseMessages(text, String(res.headers['content-type'] ?? '')) };
}

const INIT = (id: number | string) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'front-test', version: '1.0.0' } },
});

/** A legacy session: initialize, then notifications/initialized. */
async function openSession(d: ServeDaemon, id: number | string = 1): Promise<{ res: McpAnswer; session?: string }> {
  const res = await mcpHttp(d, 'POST', INIT(id));
  const session = res.headers['mcp-session-id'];
  if (res.status !== 200 || typeof session !== 'string') return { res };
  const ack = await mcpHttp(
    d,
    'POST',
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' },
  );
  expect(ack.status).toBe(202);
  return { res, session };
}

const sessionHeaders = (session: string) => ({ 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });

/** One raw HTTP/1.1 exchange on its own socket: the status line and whether the server closed the connection. */
function rawExchange(port: number, head: string): Promise<{ status: number; closedByServer: boolean; text: string }> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port });
    sockets.add(s);
    let text = '';
    s.setEncoding('utf8');
    s.on('data', (c: string) => {
      text += c;
    });
    s.on('error', reject);
    s.on('end', () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), closedByServer: true, text }));
    s.write(head);
  });
}

describe('#1 an empty body with a content type', () => {
  it('DELETE /mcp with Content-Type: application/json and no body ends the session (what the Python SDK sends)', async () => {
    const d = await daemon('mcpx-front-delete-');
    const { session } = await openSession(d);
    expect(session).toBeDefined();
    // What httpx sends for terminate_session: the content type of the client's headers, no body.
    const del = await mcpHttp(d, 'DELETE', undefined, { ...sessionHeaders(session!), 'content-type': 'application/json', 'content-length': '0' });
    expect(del.text).not.toContain('MCPX_BAD_REQUEST');
    expect(del.status).toBe(200);
    // The session is gone: the spec's 404.
    const after = await mcpHttp(d, 'POST', { jsonrpc: '2.0', id: 2, method: 'tools/list' }, sessionHeaders(session!));
    expect(after.status).toBe(404);

    // The same with no Content-Length at all, and with an empty chunked body, and with other content types.
    const url = new URL(d.url);
    for (const [label, extra] of [
      ['json, no length', 'Content-Type: application/json\r\n'],
      ['json, chunked', 'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n'],
      ['form', 'Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 0\r\n'],
      ['text', 'Content-Type: text/plain\r\nContent-Length: 0\r\n'],
    ] as const) {
      const s = (await openSession(d)).session!;
      const chunked = extra.includes('chunked');
      const r = await rawExchange(
        Number(url.port),
        `DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:${url.port}\r\nAuthorization: Bearer ${d.token}\r\nMcp-Session-Id: ${s}\r\nMcp-Protocol-Version: 2025-11-25\r\n${extra}Connection: close\r\n\r\n${chunked ? '0\r\n\r\n' : ''}`,
      );
      expect({ label, status: r.status, bad: r.text.includes('MCPX_BAD_REQUEST') }).toEqual({ label, status: 200, bad: false });
      expect((await mcpHttp(d, 'POST', { jsonrpc: '2.0', id: 3, method: 'tools/list' }, sessionHeaders(s))).status).toBe(404);
    }

    // A /v1 route that takes no body, over the Unix socket, with the same headers.
    const servers = await api(d.socket, 'GET', '/v1/servers', undefined, { 'content-type': 'application/json', 'content-length': '0' });
    expect(servers.status).toBe(200);
    const reload = await api(d.socket, 'POST', '/v1/reload', undefined, { 'content-type': 'application/json', 'content-length': '0' });
    expect(reload.status).toBe(200);
    // A route that needs a body still says which part is missing.
    const call = await api(d.socket, 'POST', '/v1/call', undefined, { 'content-type': 'application/json', 'content-length': '0' });
    expect(call.status).toBe(400);
    expect(call.body.error.code).toBe('MCPX_BAD_REQUEST');
    // And a body of a type no route reads is still 415.
    const odd = await api(d.socket, 'POST', '/v1/call', 'x=1', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(odd.status).toBe(415);
  }, 120_000);
});

/** Counts what the `initialize` answers were. */
function tally(answers: McpAnswer[]) {
  const t = { ok: 0, refused: 0, other: 0, others: [] as string[], retryAfter: new Set<string>() };
  for (const a of answers) {
    const msg = a.messages.find((m) => 'result' in m || 'error' in m);
    if (a.status === 200 && typeof a.headers['mcp-session-id'] === 'string' && msg?.result?.protocolVersion) t.ok++;
    else if (a.status === 503 && typeof msg?.error?.code === 'number' && /^\d+$/.test(String(a.headers['retry-after'] ?? ''))) {
      t.refused++;
      t.retryAfter.add(String(a.headers['retry-after']));
    } else {
      t.other++;
      if (t.others.length < 5) t.others.push(`${a.status} ${a.text.slice(0, 200)}`);
    }
  }
  return t;
}

describe('#19 many legacy /mcp clients at once', () => {
  it('500 at once at the real bound (256): every initialize answered; sessions in use are never evicted', async () => {
    const d = await daemon('mcpx-front-crowd-');
    const t0 = Date.now();
    const first = await Promise.all(Array.from({ length: 500 }, (_, i) => mcpHttp(d, 'POST', INIT(i))));
    const fresh = tally(first);
    const freshMs = Date.now() - t0;
    console.log(
      `fresh daemon: 500 initialize in ${freshMs} ms: ${fresh.ok} sessions, ${fresh.refused} refused (503, Retry-After ${[...fresh.retryAfter].join('/')}), ${fresh.other} other ${fresh.others.join(' | ')}`,
    );
    expect(fresh.other).toBe(0);
    expect(fresh.ok).toBe(256);
    expect(fresh.refused).toBe(244);

    // Warm: every session makes its first call while 244 more clients try to start one.
    const sessions = first.map((a) => a.headers['mcp-session-id']).filter((s): s is string => typeof s === 'string');
    const t1 = Date.now();
    const [calls, late] = await Promise.all([
      Promise.all(
        sessions.map((s, i) =>
          mcpHttp(
            d,
            'POST',
            { jsonrpc: '2.0', id: 1000 + i, method: 'tools/call', params: { name: 'tools__echo', arguments: { text: `c${i}` } } },
            sessionHeaders(s),
          ),
        ),
      ),
      Promise.all(Array.from({ length: 244 }, (_, i) => mcpHttp(d, 'POST', INIT(5000 + i)))),
    ]);
    const warmMs = Date.now() - t1;
    const answered = calls.filter(
      (c) => c.status === 200 && c.messages.some((m) => m.result && !m.result.isError && JSON.stringify(m.result).includes('c')),
    ).length;
    const notFound = calls.filter((c) => c.status === 404).length;
    const lateT = tally(late);
    console.log(
      `warm daemon: ${sessions.length} first calls + 244 initialize in ${warmMs} ms: ${answered} calls answered, ${notFound} "Session not found"; new clients: ${lateT.ok} sessions, ${lateT.refused} refused, ${lateT.other} other`,
    );
    expect(notFound).toBe(0);
    expect(answered).toBe(256);
    expect(lateT).toMatchObject({ ok: 0, refused: 244, other: 0 });
    // A refusal is a JSON-RPC error naming the bound.
    const refusal = late[0]!.messages[0]!;
    expect(refusal.error.message).toMatch(/256/);
    expect(refusal.id).toBe(5000);

    // Clients that leave (DELETE) make room at once.
    for (const s of sessions.slice(0, 10)) expect((await mcpHttp(d, 'DELETE', undefined, sessionHeaders(s))).status).toBe(200);
    expect(tally(await Promise.all(Array.from({ length: 12 }, (_, i) => mcpHttp(d, 'POST', INIT(9000 + i)))))).toMatchObject({ ok: 10, refused: 2, other: 0 });
  }, 180_000);

  it('only idle sessions make room; a call in flight is never dropped', async () => {
    // 4 sessions; a tenth of a 30 s idle timeout (3 s) unused makes a session idle enough to close for a new one.
    const d = await daemon('mcpx-front-evict-', { MCPX_SERVE_MAX_SESSIONS: '4', MCPX_SERVE_SESSION_IDLE_TIMEOUT: '30s' });
    const opened = await Promise.all([1, 2, 3, 4].map((i) => openSession(d, i)));
    const [a, ...rest] = opened.map((o) => o.session!);
    expect(rest).toHaveLength(3);
    // A's call runs for 8 s: longer than the idle time that lets the others be closed.
    const t0 = Date.now();
    const slow = mcpHttp(
      d,
      'POST',
      { jsonrpc: '2.0', id: 'slow', method: 'tools/call', params: { name: 'tools__sleep', arguments: { ms: 8000 } } },
      sessionHeaders(a!),
    );
    // Over the bound with every session just used: refused.
    const refusedNow = await mcpHttp(d, 'POST', INIT('e0'));
    expect(refusedNow.status).toBe(503);
    expect(Number(refusedNow.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // Once B, C, D are idle, three new clients get sessions (each closing one of them) …
    const newcomers: string[] = [];
    await until(
      async () => {
        const r = await mcpHttp(d, 'POST', INIT(`n${newcomers.length}`));
        if (r.status === 200) newcomers.push(String(r.headers['mcp-session-id']));
        else expect(r.status).toBe(503);
        return newcomers.length === 3;
      },
      20_000,
      'three idle sessions to make room',
    );
    // … and a fourth is refused: A is the least recently used, but its call is in flight.
    const fourth = await mcpHttp(d, 'POST', INIT('n3'));
    expect(fourth.status).toBe(503);
    const done = await slow;
    const ms = Date.now() - t0;
    console.log(`eviction: 3 idle sessions closed for newcomers, the busy one kept; its 8 s call answered after ${ms} ms: ${done.status}`);
    expect(done.status).toBe(200);
    expect(done.messages.find((m) => m.id === 'slow')?.result?.isError).not.toBe(true);
    // The evicted sessions get the spec's 404 (the client starts again); A still works.
    for (const s of rest) expect((await mcpHttp(d, 'POST', { jsonrpc: '2.0', id: 7, method: 'tools/list' }, sessionHeaders(s))).status).toBe(404);
    expect((await mcpHttp(d, 'POST', { jsonrpc: '2.0', id: 8, method: 'tools/list' }, sessionHeaders(a!))).status).toBe(200);
  }, 120_000);
});

/** Opens `n` connections to 127.0.0.1:port, each sending one request without a token and keeping the connection. */
async function holdUnauthorized(
  port: number,
  n: number,
): Promise<{ statuses: Record<string, number>; closedByServer: number; held: Socket[]; open: () => string[] }> {
  const statuses: Record<string, number> = {};
  let closedByServer = 0;
  const held: Socket[] = [];
  const texts = new Map<Socket, string>();
  await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<void>((resolve) => {
          const s = connect({ host: '127.0.0.1', port });
          sockets.add(s);
          held.push(s);
          let text = '';
          texts.set(s, '');
          let counted = false;
          const count = (status: string) => {
            if (counted) return;
            counted = true;
            statuses[status] = (statuses[status] ?? 0) + 1;
            resolve();
          };
          s.setEncoding('utf8');
          s.on('connect', () => s.write(`GET /v1/servers HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: keep-alive\r\n\r\n`));
          s.on('data', (c: string) => {
            text += c;
            texts.set(s, text);
            const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
            if (m && text.includes('\r\n\r\n')) count(m[1]!);
          });
          s.on('error', () => count('error'));
          s.on('close', () => {
            closedByServer++;
            count(text === '' ? 'closed unanswered' : 'closed');
          });
          // No answer and no close: the connection is held open (the attack).
          s.setTimeout(5_000, () => count('held, unanswered'));
        }),
    ),
  );
  return {
    statuses,
    get closedByServer() {
      return closedByServer;
    },
    held,
    open: () => held.filter((s) => !s.closed).map((s) => `${s.readyState} ${JSON.stringify(texts.get(s)?.slice(0, 300))}`),
  };
}

/** Opens `n` connections that send nothing at all. */
async function holdSilent(port: number, n: number): Promise<Socket[]> {
  const held: Socket[] = [];
  await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<void>((resolve) => {
          const s = connect({ host: '127.0.0.1', port }, () => resolve());
          sockets.add(s);
          held.push(s);
          s.on('error', () => resolve());
        }),
    ),
  );
  return held;
}

describe.runIf(process.platform === 'linux')('#20 descriptors: connections without the token', () => {
  it('a daemon at `ulimit -n 256`: 600 kept-alive 401 connections and 600 silent ones; the Unix socket and the page listener stay reachable', async () => {
    const dir = await tempDir('mcpx-front-fds-');
    removers.push(dir.remove);
    const state = join(dir.path, 'state');
    const socket = join(state, 'daemon.sock');
    const config = writeConfig(dir.path, TOOLS);
    const port = await freePort();
    const env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: config, MCPX_DAEMON_PORT: String(port), MCPX_LOG_LEVEL: 'warn' });
    // The daemon under a small descriptor limit (soft and hard), so exhaustion comes at a small count.
    const child = spawn('sh', ['-c', 'ulimit -n 256 && exec "$0" "$1" daemon', process.execPath, MCPX], {
      env,
      cwd: dir.path,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    await until(async () => child.exitCode !== null || (await healthy(socket)), 20_000, 'the daemon');
    expect(child.exitCode, out).toBeNull();
    await until(() => existsSync(join(state, 'daemon.json')), 10_000, 'daemon.json');
    expect(readJson(join(state, 'daemon.json')).port).toBe(port);
    expect((await mcpx(['call', 'tools', 'echo', '{"text":"before"}'], { env })).code).toBe(0);

    const t0 = Date.now();
    const unauthorized = await holdUnauthorized(port, 600);
    const silent = await holdSilent(port, 600);
    console.log(
      `600 requests without the token in ${Date.now() - t0} ms: ${JSON.stringify(unauthorized.statuses)}, ${unauthorized.closedByServer} closed by the daemon; 600 silent connections opened`,
    );
    expect(unauthorized.statuses['held, unanswered'] ?? 0).toBe(0);
    // Every 401 ends its connection.
    expect(unauthorized.statuses['401'] ?? 0).toBeGreaterThan(0);
    await until(() => unauthorized.closedByServer === 600, 10_000, 'every 401 connection closed by the daemon').catch((err) => {
      throw new Error(`${err}: ${unauthorized.open().length} still open, the first: ${unauthorized.open()[0]}`);
    });

    // Past the listener's bound (half of 256 descriptors) the daemon closes silent connections at once.
    await until(() => silent.filter((x) => x.closed).length >= 600 - 128, 10_000, 'the connections past the bound closed by the daemon');
    console.log(`silent connections: ${silent.filter((x) => x.closed).length} of 600 closed by the daemon, ${silent.filter((x) => !x.closed).length} held`);

    // While the silent connections are held: the user's own CLI over the Unix socket works.
    const t1 = Date.now();
    const call = await mcpx(['call', 'tools', 'echo', '{"text":"during"}'], { env, timeoutMs: 30_000 });
    console.log(`mcpx call over the Unix socket during the attack: exit ${call.code} in ${Date.now() - t1} ms`);
    expect(call.code, call.stderr).toBe(0);
    expect(call.stdout).toContain('during');
    expect((await api(socket, 'GET', '/v1/health')).status).toBe(200);
    for (const s of silent) s.destroy();
    for (const s of unauthorized.held) s.destroy();
    // With the attacker gone, a token holder gets in again.
    await until(
      async () => {
        const r = await request(`http://127.0.0.1:${port}/v1/health`, {
          dispatcher: agent,
          headers: { authorization: `Bearer ${readJson(join(state, 'daemon.json')).token}` },
        }).catch(() => undefined);
        await r?.body.text();
        return r?.statusCode === 200;
      },
      20_000,
      'TCP reachable again',
    );
    child.kill('SIGTERM');
    await until(() => child.exitCode !== null || child.signalCode !== null, 20_000, 'the daemon to stop');
  }, 180_000);

  it('the page listener (daemon.port off) is bounded the same way', async () => {
    const dir = await tempDir('mcpx-front-ui-fds-');
    removers.push(dir.remove);
    const state = join(dir.path, 'state');
    const socket = join(state, 'daemon.sock');
    const config = writeConfig(dir.path, TOOLS);
    const env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: config, MCPX_LOG_LEVEL: 'warn' });
    const child = spawn('sh', ['-c', 'ulimit -n 256 && exec "$0" "$1" daemon', process.execPath, MCPX], {
      env,
      cwd: dir.path,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    await until(async () => child.exitCode !== null || (await healthy(socket)), 20_000, 'the daemon');
    const login = await api(socket, 'POST', '/v1/ui/login', {});
    expect(login.status).toBe(200);
    const port = Number(new URL(login.body.url).port);
    const unauthorized = await holdUnauthorized(port, 600);
    const silent = await holdSilent(port, 600);
    console.log(
      `page listener: 600 requests without the cookie: ${JSON.stringify(unauthorized.statuses)}, ${unauthorized.closedByServer} closed by the daemon`,
    );
    expect(unauthorized.statuses['held, unanswered'] ?? 0).toBe(0);
    await until(() => unauthorized.closedByServer === 600, 10_000, 'every 401 connection closed by the daemon').catch((err) => {
      throw new Error(`${err}: ${unauthorized.open().length} still open, the first: ${unauthorized.open()[0]}`);
    });
    await until(() => silent.filter((x) => x.closed).length >= 600 - 128, 10_000, 'the connections past the bound closed by the daemon');
    const call = await mcpx(['call', 'tools', 'echo', '{"text":"during"}'], { env, timeoutMs: 30_000 });
    expect(call.code, call.stderr).toBe(0);
    for (const s of silent) s.destroy();
    for (const s of unauthorized.held) s.destroy();
    child.kill('SIGTERM');
    await until(() => child.exitCode !== null || child.signalCode !== null, 20_000, 'the daemon to stop');
  }, 180_000);
});
