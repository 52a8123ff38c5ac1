/**
 * Issue 37 item 1: one caller that stops reading must not take the daemon down for everyone. Through the
 * built binary, with `daemon.unreadTimeout` at 3 s:
 *
 * - a client of `mcpx serve` that writes 64 KB `tools/call`s as fast as they are taken and never reads:
 *   the daemon stops reading its stream (`serve.maxInFlight`, then its full socket), its RSS stays
 *   bounded, a second serve client and `/v1/call` keep being answered meanwhile, and the stream is cut
 *   off with a log line in the daemon and an error line on that serve's stderr;
 * - raw connections on the daemon's socket that send one request for a 2 MB answer and never read:
 *   `POST /v1/call` (a plain answer), `POST /v1/request` as an event stream, and a legacy `/mcp`
 *   session's `tools/call` (an SSE response): each is cut off alone, with a log line, and what it got
 *   is short of the answer.
 *
 * Figures (RSS, writes taken, time to cut off) are printed as `[unread] …` for docs/reliability.md.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { Client } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeConfig } from '../server/helpers.js';
import { readWireLog, type WireRecvEvent } from '../fixtures/wire-log-read.js';
import { tempDir } from '../support/real.js';
import { api, cleanEnv, ForegroundDaemon, healthy, killAll, MCPX, until } from '../cli/helpers.js';

const BIG = 2_000_000;
const UNREAD_TIMEOUT_S = 3;
const MAX_IN_FLIGHT = 16;

let dir: { path: string; remove: () => Promise<void> };
let env: NodeJS.ProcessEnv;
let socket: string;
let daemon: ForegroundDaemon;
const children = new Set<ChildProcessWithoutNullStreams>();
const sockets = new Set<Socket>();

beforeAll(async () => {
  dir = await tempDir('mcpx-unread-');
  const state = join(dir.path, 'state');
  socket = join(state, 'daemon.sock');
  const config = writeConfig(dir.path, { h: { fixture: 'raw', mode: 'huge', env: { HUGE_BYTES: String(BIG) } }, slow: { fixture: 'serve-tools' } });
  env = cleanEnv(dir.path, {
    MCPX_STATE_DIR: state,
    MCPX_CONFIG: config,
    MCPX_DAEMON_UNREAD_TIMEOUT: `${UNREAD_TIMEOUT_S}s`,
    MCPX_SERVE_MAX_IN_FLIGHT: String(MAX_IN_FLIGHT),
  });
  daemon = await ForegroundDaemon.start(socket, [], { env });
}, 60_000);
afterAll(async () => {
  for (const s of sockets) s.destroy();
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await killAll();
  await dir?.remove();
});

const rssKb = (): number => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${daemon.pid}/status`, 'utf8'))![1]);
const logged = (text: string): number => daemon.stdout.split(text).length - 1;

const INIT = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};
const INITIALIZED = { jsonrpc: '2.0', method: 'notifications/initialized' };

function serve(): { child: ChildProcessWithoutNullStreams; stderr: () => string } {
  const child = spawn(process.execPath, [MCPX, 'serve'], { env, cwd: dir.path, stdio: ['pipe', 'pipe', 'pipe'] });
  children.add(child);
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  child.stdin.on('error', () => undefined);
  return { child, stderr: () => stderr };
}

/** A serve client that reads: each `call` waits for its answer. */
function politeClient() {
  const s = serve();
  const answers = new Map<number, Record<string, any>>();
  let buf = '';
  s.child.stdout.setEncoding('utf8');
  s.child.stdout.on('data', (c: string) => {
    buf += c;
    for (let i: number; (i = buf.indexOf('\n')) !== -1; buf = buf.slice(i + 1)) {
      const m = JSON.parse(buf.slice(0, i)) as Record<string, any>;
      if (typeof m['id'] === 'number') answers.set(m['id'], m);
    }
  });
  const send = (m: unknown) => s.child.stdin.write(`${JSON.stringify(m)}\n`);
  let next = 1;
  return {
    ...s,
    async start(): Promise<void> {
      send(INIT);
      await until(() => answers.has(0), 20_000, 'the polite client initialized');
      send(INITIALIZED);
    },
    async call(text: string): Promise<string> {
      const id = next++;
      send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'h__echo', arguments: { text } } });
      await until(() => answers.has(id), 20_000, `the answer to ${text}`);
      return answers.get(id)!['result'].content[0].text as string;
    },
    /** Sends `n` calls of `name` at once; resolves with their answers' texts. */
    async burst(n: number, name: string, args: Record<string, unknown>): Promise<string[]> {
      const ids = Array.from({ length: n }, () => next++);
      s.child.stdin.write(ids.map((id) => `${JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } })}\n`).join(''));
      await until(() => ids.every((id) => answers.has(id)), 60_000, `${n} answers`);
      return ids.map((id) => answers.get(id)!['result'].content[0].text as string);
    },
  };
}

describe('#37 a client of mcpx serve that writes and never reads', () => {
  it('is held back, then cut off alone; the daemon stays small and answers everyone else', async () => {
    const polite = politeClient();
    await polite.start();
    expect(await polite.call('warm')).toBe('warm era=legacy');
    const rssBefore = rssKb();
    let rssMax = rssBefore;
    const sampler = setInterval(() => (rssMax = Math.max(rssMax, rssKb())), 50);

    // The hostile client: 64 KB calls written as fast as serve takes them, its stdout never read.
    const hostile = serve();
    hostile.child.stdout.pause();
    const arg = 'x'.repeat(64 * 1024);
    const line = (id: number) => `${JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'h__echo', arguments: { text: arg } } })}\n`;
    hostile.child.stdin.write(`${JSON.stringify(INIT)}\n${JSON.stringify(INITIALIZED)}\n`);
    const LIMIT = 5_000;
    let written = 0;
    let writing = true;
    const started = Date.now();
    const pump = (): void => {
      while (writing && written < LIMIT) {
        written++;
        if (!hostile.child.stdin.write(line(written))) {
          hostile.child.stdin.once('drain', pump);
          return;
        }
      }
    };
    pump();

    // Meanwhile the others are answered, promptly.
    const latencies: number[] = [];
    let cutOffMs: number | undefined;
    const figures = () => ({
      written,
      offered: LIMIT,
      cutOffMs,
      rssBeforeMB: Math.round(rssBefore / 1024),
      rssMaxMB: Math.round(rssMax / 1024),
      politeCalls: latencies.length,
      politeMaxMs: Math.max(...latencies),
    });
    try {
      while (Date.now() - started < 4_000 || cutOffMs === undefined) {
        if (Date.now() - started > 40_000) break;
        const t = Date.now();
        expect(await polite.call(`during-${latencies.length}`)).toBe(`during-${latencies.length} era=legacy`);
        const v1 = await api(socket, 'POST', '/v1/call', { server: 'h', tool: 'echo', args: { text: 'v1' } });
        expect(v1.body.result.content[0].text).toBe('v1 era=legacy');
        latencies.push(Date.now() - t);
        if (cutOffMs === undefined && logged('closed a serve stream') > 0) cutOffMs = Date.now() - started;
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      writing = false;
      clearInterval(sampler);
      console.log(`[unread] serve: ${JSON.stringify(figures())}`);
    }
    const takenByThen = written;

    // Cut off, with a line in the daemon's log and on that serve's stderr (its client's log).
    expect(daemon.stdout).toContain('closed a serve stream: the caller does not read its answers');
    await until(() => hostile.stderr().includes('did not read its answers'), 20_000, `serve's line on stderr: ${hostile.stderr()}`);
    // Held back: the hostile client could not hand over its 5,000 calls (320 MB).
    expect(takenByThen).toBeLessThan(LIMIT);
    // Bounded: the daemon holds a stream's in-flight bound of answers, not everything it was sent.
    expect(rssMax - rssBefore).toBeLessThan(150 * 1024);
    expect(Math.max(...latencies)).toBeLessThan(5_000);
    expect(await healthy(socket)).toBe(true);
    hostile.child.kill('SIGKILL');
    polite.child.stdin.end();
  }, 90_000);
});

describe('#37 a client of mcpx serve that sends more calls than are answered', () => {
  it(`has at most serve.maxInFlight (${MAX_IN_FLIGHT}) of them in the daemon at once; all are answered`, async () => {
    const client = politeClient();
    await client.start();
    const N = 4 * MAX_IN_FLIGHT;
    const SLEEP_MS = 1_000;
    const started = Date.now();
    const texts = await client.burst(N, 'slow__sleep', { ms: SLEEP_MS });
    const ms = Date.now() - started;
    expect(texts).toEqual(Array.from({ length: N }, () => `slept ${SLEEP_MS}`));
    // When the upstream got each call: the first MAX_IN_FLIGHT at once, the next only after answers went out.
    const got = readWireLog(join(dir.path, 'slow.wire.log'))
      .filter((e): e is WireRecvEvent => e.event === 'recv' && e.method === 'tools/call')
      .map((e) => e.t);
    expect(got).toHaveLength(N);
    const waves = got.map((t) => Math.floor((t - got[0]!) / (SLEEP_MS * 0.9)));
    console.log(`[unread] in flight: ${JSON.stringify({ calls: N, maxInFlight: MAX_IN_FLIGHT, ms, firstWave: waves.filter((w) => w === 0).length })}`);
    expect(waves.filter((w) => w === 0).length).toBeLessThanOrEqual(MAX_IN_FLIGHT);
    client.child.stdin.end();
  }, 90_000);
});

/** One HTTP request on the daemon's socket from a caller that never reads the answer. */
function unreadRequest(head: string, body: string): { socket: Socket; received: () => Promise<number> } {
  const s = connect({ path: socket });
  sockets.add(s);
  s.pause();
  s.on('error', () => undefined);
  s.write(`${head}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  return {
    socket: s,
    // Reads what was left for it, to the end the daemon gave it.
    received: () =>
      new Promise((resolve) => {
        let n = 0;
        s.on('data', (c: Buffer) => (n += c.length));
        s.once('close', () => resolve(n));
        s.resume();
      }),
  };
}

async function cutOff(what: string, head: string, body: string, line: string): Promise<void> {
  const before = logged(line);
  const rssBefore = rssKb();
  const started = Date.now();
  const r = unreadRequest(head, body);
  await until(() => logged(line) > before, 30_000, `the daemon's "${line}" line`);
  const ms = Date.now() - started;
  const got = await r.received();
  console.log(
    `[unread] ${what}: ${JSON.stringify({ cutOffMs: ms, receivedBytes: got, answerBytes: BIG, rssBeforeMB: Math.round(rssBefore / 1024), rssAfterMB: Math.round(rssKb() / 1024) })}`,
  );
  expect(ms).toBeGreaterThanOrEqual(UNREAD_TIMEOUT_S * 1000 - 500);
  expect(got).toBeLessThan(BIG);
  // The others are still answered.
  expect((await api(socket, 'POST', '/v1/call', { server: 'h', tool: 'echo', args: { text: 'after' } })).body.result.content[0].text).toBe('after era=legacy');
}

describe('#37 an HTTP caller that stops reading', () => {
  it('POST /v1/call with a 2 MB answer: the connection is cut off', async () => {
    await cutOff(
      '/v1/call',
      'POST /v1/call HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json',
      JSON.stringify({ server: 'h', tool: 'big', args: {} }),
      'closed a connection: the caller does not read its answers',
    );
  }, 60_000);

  it('POST /v1/request as an event stream: the stream is cut off', async () => {
    await cutOff(
      '/v1/request (SSE)',
      'POST /v1/request HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\naccept: text/event-stream',
      JSON.stringify({ server: 'h', method: 'tools/call', params: { name: 'big', arguments: {} } }),
      'closed an event stream: the caller does not read its answers',
    );
  }, 60_000);

  it("a legacy /mcp session's tools/call (an SSE response): the response is cut off", async () => {
    const client = new Client('http://localhost', { socketPath: socket });
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const init = await client.request({ path: '/mcp', method: 'POST', headers, body: JSON.stringify(INIT) });
    await init.body.text();
    const session = init.headers['mcp-session-id'] as string;
    expect(session).toBeTruthy();
    const sessionHeaders = { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
    await (await client.request({ path: '/mcp', method: 'POST', headers: sessionHeaders, body: JSON.stringify(INITIALIZED) })).body.text();
    await client.close();
    await cutOff(
      '/mcp (SSE)',
      `POST /mcp HTTP/1.1\r\nhost: localhost\r\n${Object.entries(sessionHeaders)
        .map(([k, v]) => `${k}: ${v}`)
        .join('\r\n')}`,
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'h__big', arguments: {} } }),
      'closed a /mcp response: the caller does not read its answers',
    );
  }, 60_000);
});
