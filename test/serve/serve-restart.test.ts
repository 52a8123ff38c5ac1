/**
 * `mcpx serve` as a pipe across the daemon's deaths (each daemon killed with SIGKILL, as a crash):
 * - between two calls, a legacy client on the wire sees only its own answers: the next request finds a
 *   fresh daemon, the stream opened again with the client's initialize, whose answer it never sees;
 * - a 2026-07-28 client (the SDK v2 client) goes on calling, and its subscriptions/listen stream, sent
 *   again on the next stream, hears the next daemon's changes;
 * - a listing in flight is sent again to a fresh daemon and answered;
 * - a question open when its daemon dies is cancelled at the client, the call answered (not retried),
 *   and a late answer to it is dropped; the next call's question is answered as usual;
 * - when no daemon can start, the client's requests are answered saying why, and the next request
 *   after the cause is fixed is served.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { methodsReceived, readWireLog } from '../fixtures/wire-log-read.js';
import { isGone, writeConfig, type ServerEntry } from '../server/helpers.js';
import { tempDir } from '../support/real.js';
import { cleanEnv, killAll, MCPX, readJson, trackPid, until } from '../cli/helpers.js';
import { stdioCaller, textOf } from './clients.js';

const dirs: Array<{ remove: () => Promise<void> }> = [];
const serves = new Set<ChildProcessWithoutNullStreams>();

afterAll(async () => {
  for (const s of serves) if (s.exitCode === null && s.signalCode === null) s.kill('SIGKILL');
  await killAll();
  for (const d of dirs) await d.remove();
});

async function setup(prefix: string, servers: Record<string, ServerEntry>) {
  const dir = await tempDir(prefix);
  dirs.push(dir);
  const state = join(dir.path, 'state');
  const config = writeConfig(dir.path, servers);
  const env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: config });
  /** The running daemon's pid (from daemon.json), tracked so the suite stops it. */
  const daemonPid = async (): Promise<number> => {
    await until(() => existsSync(join(state, 'daemon.json')), 20_000, 'daemon.json');
    const pid = readJson(join(state, 'daemon.json')).pid as number;
    trackPid(pid);
    return pid;
  };
  const killDaemon = async (): Promise<number> => {
    const pid = await daemonPid();
    process.kill(pid, 'SIGKILL');
    await until(() => isGone(pid), 10_000, 'the daemon gone');
    return pid;
  };
  return { dir: dir.path, state, config, env, daemonPid, killDaemon };
}

/**
 * `mcpx serve` on raw JSON-RPC lines: every message it wrote, `answer(id)` waits for the one answering `id`;
 * `noticed()` waits until serve has seen its daemon stream close (its info line), so what the test sends
 * next is sent after that (a request sent before serve sees the daemon die is one in flight).
 */
function rawServe(env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [MCPX, 'serve'], { env: { ...env, MCPX_LOG_LEVEL: 'info' }, stdio: ['pipe', 'pipe', 'pipe'] });
  serves.add(child);
  const messages: Array<Record<string, any>> = [];
  let buf = '';
  let stderr = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (c: string) => {
    buf += c;
    let i: number;
    while ((i = buf.indexOf('\n')) !== -1) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line.trim() !== '') messages.push(JSON.parse(line));
    }
  });
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const find = (pred: (m: Record<string, any>) => boolean) => messages.find(pred);
  return {
    messages,
    exited,
    send: (msg: unknown) => child.stdin.write(`${JSON.stringify(msg)}\n`),
    noticed: (times = 1) => until(() => stderr.split('the daemon stream closed').length > times, 10_000, 'serve noticing its daemon stream closed'),
    end: () => child.stdin.end(),
    async answer(id: unknown, ms = 30_000): Promise<Record<string, any>> {
      const is = (m: Record<string, any>) => m['id'] === id && ('result' in m || 'error' in m);
      await until(
        () => find(is) !== undefined,
        ms,
        `an answer to ${JSON.stringify(id)}; got ${JSON.stringify(messages).slice(0, 800)}; stderr ${stderr.slice(0, 500)}`,
      );
      return find(is)!;
    },
    async message(pred: (m: Record<string, any>) => boolean, what: string, ms = 30_000): Promise<Record<string, any>> {
      await until(() => find(pred) !== undefined, ms, `${what}; got ${JSON.stringify(messages).slice(0, 800)}`);
      return find(pred)!;
    },
  };
}

const initialize = (id: number, capabilities: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities, clientInfo: { name: 'wire', version: '1' } },
});
const call = (id: number, name: string, args: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args },
});

describe('mcpx serve across daemon restarts', () => {
  it('a legacy client on the wire sees only its own answers: the handshake goes again to the fresh daemon, its answer swallowed', async () => {
    const t = await setup('mcpx-restart-wire-', { tools: { fixture: 'serve-tools' } });
    const s = rawServe(t.env);
    s.send(initialize(0));
    expect((await s.answer(0)).result.serverInfo.name).toBe('mcpx');
    s.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    s.send(call(1, 'tools__echo', { text: 'one' }));
    expect(textOf((await s.answer(1)).result)).toBe('one era=modern');
    const first = await t.killDaemon();
    await s.noticed();

    // The fresh daemon's front refuses any request before initialize (-32000): this call is served only
    // because serve opened the stream with the client's initialize again.
    s.send(call(2, 'tools__echo', { text: 'two' }));
    expect(textOf((await s.answer(2)).result)).toBe('two era=modern');
    expect(await t.daemonPid()).not.toBe(first);
    s.send({ jsonrpc: '2.0', id: 3, method: 'ping' });
    await s.answer(3);
    const answered = s.messages.filter((m) => 'id' in m).map((m) => m['id']);
    expect(answered).toEqual([0, 1, 2, 3]);
    expect(s.messages.filter((m) => m['result']?.serverInfo)).toHaveLength(1);
    s.end();
    expect(await s.exited).toBe(0);
  }, 90_000);

  it("a 2026-07-28 client goes on calling, and its listen stream hears the next daemon's changes", async () => {
    const t = await setup('mcpx-restart-modern-', { tools: { fixture: 'serve-tools' } });
    const changes: unknown[] = [];
    const { Client } = await import('@modelcontextprotocol/client');
    const { StdioClientTransport } = await import('@modelcontextprotocol/client/stdio');
    const c = new Client({ name: 'listener', version: '1' }, {
      versionNegotiation: { mode: { pin: '2026-07-28' } },
      listChanged: { tools: { onChanged: (_err: unknown, tools: unknown) => changes.push(tools) } },
    } as never);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [MCPX, 'serve'],
      env: { ...t.env, MCPX_LOG_LEVEL: 'info' } as Record<string, string>,
      stderr: 'pipe',
    });
    let stderr = '';
    await c.connect(transport);
    transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    try {
      const echo = async (text: string) => textOf((await c.callTool({ name: 'tools__echo', arguments: { text } })) as Record<string, any>);
      expect(await echo('one')).toBe('one era=modern');
      const first = await t.killDaemon();
      await until(() => stderr.includes('the daemon stream closed'), 10_000, 'serve noticing its daemon stream closed');
      expect(await echo('two')).toBe('two era=modern');
      expect(await t.daemonPid()).not.toBe(first);
      // The listen stream was sent again with the stream the call opened: a server added now is announced on it.
      writeConfig(t.dir, { tools: { fixture: 'serve-tools' }, added: { fixture: 'legacy-v1' } }, {}, t.config);
      await until(() => changes.length > 0, 20_000, "list_changed on the client's listen stream, from the second daemon");
      expect((await c.listTools()).tools.map((x) => x.name)).toContain('added__echo');
    } finally {
      await c.close();
    }
  }, 90_000);

  it('a listing in flight when the daemon dies is sent again to a fresh daemon and answered', async () => {
    const t = await setup('mcpx-restart-listing-', { slow: { fixture: 'raw', mode: 'slow-modern', env: { SLOW_MS: '3000' } } });
    const c = await stdioCaller('legacy', { env: t.env });
    try {
      const log = join(t.dir, 'slow.wire.log');
      // No catalogue yet: the listing starts the server, which takes 3 s to answer its discover.
      const listed = c.listTools();
      await until(() => existsSync(log) && methodsReceived(readWireLog(log)).includes('server/discover'), 20_000, 'the server starting for the listing');
      const first = await t.killDaemon();
      expect((await listed).tools.map((x) => x['name'])).toEqual(['slow__echo']);
      expect(await t.daemonPid()).not.toBe(first);
    } finally {
      await c.close();
    }
  }, 90_000);

  it('a question open when its daemon dies: cancelled at the client, the call answered and not retried, a late answer dropped', async () => {
    const t = await setup('mcpx-restart-question-', { old: { fixture: 'asking-v2', protocol: 'force-initialize' } });
    const s = rawServe(t.env);
    s.send(initialize(0, { elicitation: {} }));
    await s.answer(0);
    s.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    s.send(call(1, 'old__ask_name'));
    const asked = await s.message((m) => m['method'] === 'elicitation/create', 'the question');
    const first = await t.killDaemon();
    const cancelled = await s.message((m) => m['method'] === 'notifications/cancelled', 'the question cancelled');
    expect(cancelled['params'].requestId).toBe(asked['id']);
    const r = await s.answer(1);
    expect(r.result.isError).toBe(true);
    expect(textOf(r.result)).toMatch(/^mcpx: old: MCPX_DAEMON_UNAVAILABLE: the mcpx daemon went away .*not retried/);
    // The person answers the withdrawn question anyway: nobody is given it.
    s.send({ jsonrpc: '2.0', id: asked['id'], result: { action: 'accept', content: { name: 'Stale' } } });
    s.send(call(2, 'old__ask_name'));
    const again = await s.message((m) => m['method'] === 'elicitation/create' && m !== asked, 'the next question, from the next daemon');
    s.send({ jsonrpc: '2.0', id: again['id'], result: { action: 'accept', content: { name: 'Fresh' } } });
    expect(textOf((await s.answer(2)).result)).toBe('hello Fresh era=legacy');
    // The daemon serve started is tracked, so the suite stops it.
    expect(await t.daemonPid()).not.toBe(first);
    s.end();
    expect(await s.exited).toBe(0);
  }, 90_000);

  it('no daemon can start: the requests are answered saying why; once the config is fixed the next request is served', async () => {
    const t = await setup('mcpx-restart-broken-', { tools: { fixture: 'serve-tools' } });
    const s = rawServe(t.env);
    s.send(initialize(0));
    await s.answer(0);
    s.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    s.send(call(1, 'tools__echo', { text: 'one' }));
    await s.answer(1);
    await t.killDaemon();
    await s.noticed();
    const { writeFileSync } = await import('node:fs');
    writeFileSync(t.config, '{ "mcpServers": { "tools": { "command": 7 } } }\n');
    s.send(call(2, 'tools__echo', { text: 'two' }));
    const failed = await s.answer(2, 60_000);
    expect(failed.result.isError).toBe(true);
    expect(textOf(failed.result), textOf(failed.result)).toMatch(/^mcpx: tools: MCPX_DAEMON_UNAVAILABLE: the daemon did not start: .*command/);
    s.send({ jsonrpc: '2.0', id: 3, method: 'tools/list' });
    expect((await s.answer(3, 60_000)).error).toMatchObject({
      code: -32603,
      message: expect.stringMatching(/MCPX_DAEMON_UNAVAILABLE: the daemon did not start/),
    });
    writeConfig(t.dir, { tools: { fixture: 'serve-tools' } }, {}, t.config);
    s.send(call(4, 'tools__echo', { text: 'four' }));
    expect(textOf((await s.answer(4)).result)).toBe('four era=modern');
    await t.daemonPid();
    s.end();
    expect(await s.exited).toBe(0);
  }, 120_000);
});
