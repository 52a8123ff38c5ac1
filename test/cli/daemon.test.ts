/**
 * End to end through the built binary: auto-start, the state folder and socket modes, TCP with and
 * without the token, a second daemon refused, secrets absent from every output and log, bad config
 * and bad API bodies, live config edits, a crashed daemon's leftovers, and the progress line.
 */
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Client } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixturePids, isGone, writeConfig, type ServerEntry } from '../server/helpers.js';
import { tempDir } from '../support/real.js';
import { collectEvents } from '../support/sse-events.js';
import { api, cleanEnv, ForegroundDaemon as Foreground, killAll, mcpx as runMcpx, readJson, trackPid, until } from './helpers.js';

/*
 * Room under load (issue 10 #12): these tests start real daemons and upstreams, several at once, and on a
 * busy machine (a second test suite beside this one) each step can take seconds. Nothing here races a
 * timer: every wait is for a condition (a file, an event, a process gone), and the deadlines below are
 * only there so a real hang fails instead of stalling the run.
 */
const E2E_TIMEOUT = 180_000;
const CONDITION_MS = 60_000;
/** `mcpx …` with room: a command that auto-starts a daemon on a loaded machine is slow, not stuck. */
const mcpx: typeof runMcpx = (args, opts) =>
  runMcpx(args, { timeoutMs: 90_000, ...opts, env: { MCPX_DAEMON_START_TIMEOUT: String(CONDITION_MS), ...opts.env } });
/** `mcpx … --json`, parsed; fails with the output when the command fails. */
async function mcpxJson<T = any>(args: string[], opts: { env: NodeJS.ProcessEnv; cwd?: string }): Promise<T> {
  const r = await mcpx([...args, '--json'], opts);
  if (r.code !== 0) throw new Error(`mcpx ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}
const ForegroundDaemon = {
  start: (socket: string, args: string[], opts: { env: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number }) =>
    Foreground.start(socket, args, { timeoutMs: CONDITION_MS, ...opts }),
};

const SECRET_ENV = 's3cr3t-value';
const SECRET_HEADER = 's3cr3t-header';

let root: { path: string; remove: () => Promise<void> };
beforeAll(async () => {
  root = await tempDir('mcpx-e2e-daemon-');
});
afterAll(async () => {
  await killAll();
  await root?.remove();
});

async function home(name: string): Promise<string> {
  const h = join(root.path, name);
  await mkdir(h, { recursive: true });
  return h;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

describe.concurrent('a daemon started by a client command', { timeout: E2E_TIMEOUT }, () => {
  let h: string;
  let state: string;
  let socket: string;
  let config: string;
  let env: NodeJS.ProcessEnv;
  let port: number;
  const outputs: string[] = [];

  beforeAll(async () => {
    h = await home('auto');
    state = join(h, 'state');
    socket = join(state, 'daemon.sock');
    await mkdir(state, { mode: 0o755 });
    chmodSync(state, 0o755); // a folder the user made: others may read it, none may write; the daemon leaves its mode alone
    const servers: Record<string, ServerEntry> = {
      echoer: { fixture: 'dual-v2' },
      secretive: { fixture: 'dual-v2', env: { SECRET_TOKEN: SECRET_ENV } },
      remote: { url: 'http://127.0.0.1:9/mcp', headers: { Authorization: `Bearer ${SECRET_HEADER}` } },
      slow: { fixture: 'raw', mode: 'slow-modern', env: { SLOW_MS: '1200' } },
      slow2: { fixture: 'raw', mode: 'slow-modern', env: { SLOW_MS: '1200', OTHER: '1' } },
    };
    config = writeConfig(h, servers);
    port = await freePort();
    env = cleanEnv(h, { MCPX_STATE_DIR: state, MCPX_DAEMON_PORT: String(port), MCPX_LOG_LEVEL: 'debug' });
    // the first client command finds no daemon and starts one (with this --config)
    const first = await mcpx(['tools', 'echoer', '--config', config], { env });
    outputs.push(first.stdout, first.stderr);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^SERVER\s+TOOL\s+MCP NAME\s+DESCRIPTION\n/);
    expect(first.stdout).toMatch(/\nechoer\s+echo\s+echoer__echo\s+Echo the text back/);
    trackPid(readJson(join(state, 'daemon.json')).pid);
  }, E2E_TIMEOUT);
  afterAll(async () => {
    const r = await mcpx(['stop'], { env });
    expect(r.code).toBe(0);
  }, E2E_TIMEOUT);

  it('the state folder keeps its mode (mcpx did not create it), the socket and daemon.json 0600, daemon.log 0600', async () => {
    expect(statSync(state).mode & 0o777).toBe(0o755);
    const sock = statSync(socket);
    expect(sock.isSocket()).toBe(true);
    expect(sock.mode & 0o777).toBe(0o600);
    expect(statSync(join(state, 'daemon.json')).mode & 0o777).toBe(0o600);
    expect(statSync(join(state, 'daemon.log')).mode & 0o777).toBe(0o600);
    const info = readJson(join(state, 'daemon.json'));
    expect(info).toMatchObject({ pid: expect.any(Number), socket, stateDir: state, port, host: '127.0.0.1', auth: 'token', token: expect.any(String) });
    expect(info.token.length).toBeGreaterThanOrEqual(32);
  });

  it('TCP: no token 401, a non-loopback Host or Origin 403 even with the token, the token accepted', async () => {
    const { token } = readJson(join(state, 'daemon.json'));
    const client = new Client(`http://127.0.0.1:${port}`);
    const get = async (headers: Record<string, string>) => {
      const res = await client.request({ path: '/v1/status', method: 'GET', headers });
      const text = await res.body.text();
      outputs.push(text);
      return { status: res.statusCode, text };
    };
    try {
      const none = await get({});
      expect(none.status).toBe(401);
      expect(JSON.parse(none.text).error.code).toBe('MCPX_UNAUTHORIZED');
      expect((await get({ authorization: 'Bearer nope' })).status).toBe(401);
      expect((await get({ host: 'evil.example', authorization: `Bearer ${token}` })).status).toBe(403);
      expect((await get({ origin: 'https://evil.example', authorization: `Bearer ${token}` })).status).toBe(403);
      const ok = await get({ authorization: `Bearer ${token}` });
      expect(ok.status).toBe(200);
      expect(JSON.parse(ok.text).daemon.tcp).toEqual({ host: '127.0.0.1', port, auth: 'token' });
    } finally {
      await client.close();
    }
  });

  it('a second daemon on the same state folder refuses, naming the pid and the socket', async () => {
    const { pid } = readJson(join(state, 'daemon.json'));
    const r = await mcpx(['daemon', '--config', config], { env });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^mcpx: another mcpx daemon \(pid \d+\) owns the state folder .* and listens on .*\n$/);
    expect(r.stderr).toContain(`pid ${pid}`);
    expect(r.stderr).toContain(socket);
    expect(await api(socket, 'GET', '/v1/health')).toMatchObject({ status: 200 }); // the first one is untouched
  });

  it('bad API bodies get 400 naming the field; bad CLI usage exits 2', async () => {
    const r = await api(socket, 'POST', '/v1/call', { server: 'echoer', args: {} });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'MCPX_BAD_REQUEST', path: ['tool'] });
    const s = await api(socket, 'PUT', '/v1/settings/pool.max', { value: 'many' });
    expect(s.status).toBe(400);
    expect(s.body.error).toMatchObject({ code: 'MCPX_BAD_SETTING', path: ['value'] });
    const usage = await mcpx(['call', 'echoer', 'echo', '[1]'], { env });
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/^mcpx: the arguments must be a JSON object/);
    const unknown = await mcpx(['frobnicate'], { env });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^mcpx: unknown command 'frobnicate'/);
    const help = await mcpx(['call', '--help'], { env });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--caller-protocol');
  });

  it('a slow start shows a progress line naming the server and, in words, where its start is (forced on); nothing when not a TTY', async () => {
    const [quiet, shown] = await Promise.all([
      mcpx(['call', 'slow', 'echo', '{"text":"q"}'], { env }),
      mcpx(['call', 'slow2', 'echo', '{"text":"p"}'], { env: { ...env, MCPX_PROGRESS: '1' } }),
    ]);
    expect(quiet.stdout).toBe('q era=modern\n');
    expect(quiet.stderr).toBe('');
    expect(shown.stdout).toBe('p era=modern\n');
    expect(shown.stderr).toMatch(/slow2: (?:starting the server|waiting for its first answer) \(/); // in words, not chart states
    expect(shown.stderr.endsWith('\r\x1b[K')).toBe(true); // the line is cleared at the end
  });

  it('secrets from env and headers appear in no output and no log line', async () => {
    const runs = [
      ['config', '--config', config],
      ['config', '--config', config, '--json'],
      ['servers', '--json'],
      ['servers'],
      ['status', '--json'],
      ['protocol', '--json'],
      ['settings', '--json'],
      ['call', 'secretive', 'echo', '{"text":"hello"}'],
      ['call', 'remote', 'anything'],
      ['tools', '--json'],
    ];
    for (const args of runs) {
      const r = await mcpx(args, { env });
      outputs.push(r.stdout, r.stderr);
    }
    const cfg = await mcpxJson(['config', '--config', config], { env });
    const secretEnv = cfg.servers.find((s: any) => s.server === 'secretive').env;
    expect(secretEnv.SECRET_TOKEN).toBe('<redacted>');
    for (const v of Object.values(secretEnv)) expect(v).toBe('<redacted>');
    expect(cfg.servers.find((s: any) => s.server === 'remote').headers).toEqual({ Authorization: '<redacted>' });
    const log = readFileSync(join(state, 'daemon.log'), 'utf8');
    expect(log).toContain('"msg":"mcpx daemon ready"');
    expect(log).toContain('"level":20'); // debug lines too
    for (const text of [...outputs, log]) {
      expect(text).not.toContain(SECRET_ENV);
      expect(text).not.toContain(SECRET_HEADER);
      expect(text).not.toContain(readJson(join(state, 'daemon.json')).token);
    }
  });
});

describe.concurrent('config', { timeout: E2E_TIMEOUT }, () => {
  it('with no config file found, the bundled demo runs: three eras, relative paths working from any directory', async () => {
    const h = await home('demo');
    const state = join(h, 'state');
    const env = cleanEnv(h, { MCPX_STATE_DIR: state });
    const cwd = '/'; // the demo's servers are given relative to its own folder (dist/demo), which must not matter
    try {
      const calls = await Promise.all(['legacy-only', 'dual', 'modern-only'].map((s) => mcpx(['call', s, 'add', '{"a":2,"b":3}'], { env, cwd })));
      expect(calls.map((c) => c.stdout)).toEqual([
        '2 + 3 = 5 (from legacy-only, era=legacy)\n',
        '2 + 3 = 5 (from dual, era=modern)\n',
        '2 + 3 = 5 (from modern-only, era=modern)\n',
      ]);
      trackPid(readJson(join(state, 'daemon.json')).pid);
      const status = await mcpxJson(['status'], { env, cwd });
      expect(status.config).toMatchObject({ demo: true, file: expect.stringMatching(/dist\/demo\/demo\.json$/) });
      const eras = (await mcpxJson(['protocol'], { env, cwd })).servers.map((s: any) => [s.server, s.era]);
      expect(eras).toEqual([
        ['legacy-only', 'legacy'],
        ['dual', 'modern'],
        ['modern-only', 'modern'],
      ]);
      // mcpx serve answers an MCP client on stdout with protocol messages only, and stops when stdin ends.
      const init = {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      };
      const serve = await mcpx(['serve'], { env, cwd, input: `${JSON.stringify(init)}\n` });
      expect(serve.code).toBe(0);
      const lines = serve.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(lines).toEqual([
        expect.objectContaining({
          id: 1,
          result: expect.objectContaining({ protocolVersion: '2025-11-25', serverInfo: expect.objectContaining({ name: 'mcpx' }) }),
        }),
      ]);
    } finally {
      expect((await mcpx(['stop'], { env, cwd })).code).toBe(0);
    }
  });

  it("the demo's servers start with the daemon, so a newcomer's first `mcpx protocol` shows three eras", async () => {
    const h = await home('demo-warm');
    const state = join(h, 'state');
    const env = cleanEnv(h, { MCPX_STATE_DIR: state });
    try {
      expect((await mcpx(['status', '--start'], { env, cwd: h })).code).toBe(0); // starts the daemon; no call is made
      trackPid(readJson(join(state, 'daemon.json')).pid);
      let eras: unknown[] = [];
      await until(
        async () => {
          eras = (await mcpxJson(['protocol'], { env, cwd: h })).servers.map((s: any) => [s.server, s.era, s.eraSource]);
          return eras.every((e: any) => e[1] !== null);
        },
        CONDITION_MS,
        'the demo servers probed',
      );
      expect(eras).toEqual([
        ['legacy-only', 'legacy', 'probe'],
        ['dual', 'modern', 'probe'],
        ['modern-only', 'modern', 'probe'],
      ]);
    } finally {
      expect((await mcpx(['stop'], { env, cwd: h })).code).toBe(0);
    }
  });

  it('a bad config names the file, the server and the key, and exits non-zero (config, daemon, auto-start)', async () => {
    const h = await home('badcfg');
    const file = writeConfig(h, { good: { fixture: 'dual-v2' }, broken: { fixture: 'dual-v2', mcpx: { maxx: 2 } } });
    const env = cleanEnv(h, { MCPX_STATE_DIR: join(h, 'state') });
    const key = 'mcpServers.broken.mcpx.maxx';
    const cfg = await mcpx(['config', '--config', file], { env });
    expect(cfg.code).toBe(1);
    expect(cfg.stderr).toMatch(
      new RegExp(`^mcpx: config ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: ${key.replace(/\./g, '\\.')}: .*did you mean max.*\n$`),
    );
    const daemon = await mcpx(['daemon', '--config', file], { env });
    expect(daemon.code).toBe(1);
    expect(daemon.stderr).toContain(`config ${file}: ${key}`);
    const auto = await mcpx(['status', '--start', '--config', file], { env });
    expect(auto.code).toBe(1);
    expect(auto.stderr).toMatch(/^mcpx: the daemon did not start: /);
    expect(auto.stderr).toContain(key);
    expect(existsSync(join(h, 'state', 'daemon.sock'))).toBe(false);
  });

  it('edits are picked up live: added servers appear, removed ones stop, unchanged ones keep their process, a broken edit keeps the last good config', async () => {
    const h = await home('live');
    const state = join(h, 'state');
    const socket = join(state, 'daemon.sock');
    const servers: Record<string, ServerEntry> = { a: { fixture: 'dual-v2' }, b: { fixture: 'legacy-v1' } };
    const file = writeConfig(h, servers);
    const env = cleanEnv(h, { MCPX_STATE_DIR: state });
    const daemon = await ForegroundDaemon.start(socket, ['--config', file], { env });
    const events: Array<{ type: string; data: any }> = [];
    const sse = new Client('http://localhost', { socketPath: socket });
    const ac = new AbortController();
    try {
      const res = await sse.request({ path: '/v1/events?type=config.', method: 'GET', signal: ac.signal });
      void collectEvents(res.body, events);
      const pidOf = async (server: string) => (await api(socket, 'GET', '/v1/status')).body.servers.find((s: any) => s.server === server)?.instances[0]?.pid;
      const names = async () => (await api(socket, 'GET', '/v1/servers')).body.servers.map((s: any) => s.server);
      const next = async (type: string, after: number) => {
        await until(() => events.length > after && events.slice(after).some((e) => e.type === type), CONDITION_MS, type);
        return events.slice(after).find((e) => e.type === type)!.data;
      };

      expect((await mcpx(['call', 'a', 'echo', '{"text":"1"}'], { env })).stdout).toBe('1 era=modern\n');
      expect((await mcpx(['call', 'b', 'echo', '{"text":"2"}'], { env })).stdout).toBe('2 era=legacy\n');
      const aPid = await pidOf('a');
      const bPids = fixturePids(h, 'b');
      expect(aPid).toEqual(expect.any(Number));

      // add c, remove b, a unchanged
      let n = events.length;
      writeConfig(h, { a: servers.a!, c: { fixture: 'modern-v2' } });
      const reloaded = await next('config.reloaded', n);
      expect(reloaded).toMatchObject({ file, added: ['c'], removed: ['b'], kept: ['a'] });
      expect(await names()).toEqual(['a', 'c']);
      for (const pid of bPids) await until(() => isGone(pid), CONDITION_MS, `b's pid ${pid} to stop`);
      expect(await pidOf('a')).toBe(aPid);
      expect((await mcpx(['call', 'c', 'echo', '{"text":"3"}'], { env })).stdout).toBe('3 era=modern\n');

      // the same content written again: nothing changes, same process
      n = events.length;
      writeFileSync(file, readFileSync(file, 'utf8'));
      expect(await next('config.reloaded', n)).toMatchObject({ added: [], removed: [], replaced: [], kept: ['a', 'c'] });
      expect(await pidOf('a')).toBe(aPid);

      // a broken edit: reported (event, log, reload response), the last good config stays
      n = events.length;
      const good = readFileSync(file, 'utf8');
      writeFileSync(file, good.replace('"probeTimeout": "10s"', '"probeTimeout": "soon"'));
      const error = await next('config.error', n);
      expect(error.file).toBe(file);
      expect(error.message).toContain(`config ${file}: mcpServers.a.mcpx.probeTimeout`);
      expect(error.problems[0]).toMatchObject({ server: 'a', key: 'mcpServers.a.mcpx.probeTimeout' });
      expect(await names()).toEqual(['a', 'c']);
      expect(await pidOf('a')).toBe(aPid);
      expect((await mcpx(['call', 'a', 'echo', '{"text":"4"}'], { env })).stdout).toBe('4 era=modern\n');
      const reload = await mcpx(['reload'], { env });
      expect(reload.code).toBe(1);
      expect(reload.stderr).toMatch(/^mcpx: config not reloaded \(the last good config stays\): config .*mcpServers\.a\.mcpx\.probeTimeout/);
      expect(daemon.stdout).toContain('config not reloaded');

      // fixed again
      writeFileSync(file, good);
      const ok = await mcpxJson(['reload'], { env });
      expect(ok).toMatchObject({ ok: true, kept: ['a', 'c'] });
    } finally {
      ac.abort();
      await sse.destroy();
      expect(await daemon.stop()).toEqual({ code: 0, signal: null });
    }
  });

  it("a crashed daemon's socket and lock are cleaned up by the next start", async () => {
    const h = await home('crash');
    const state = join(h, 'state');
    const socket = join(state, 'daemon.sock');
    const file = writeConfig(h, { a: { fixture: 'dual-v2' } });
    const env = cleanEnv(h, { MCPX_STATE_DIR: state, MCPX_CONFIG: file });
    const first = await ForegroundDaemon.start(socket, [], { env });
    expect(await first.stop('SIGKILL')).toMatchObject({ signal: 'SIGKILL' });
    expect(existsSync(socket)).toBe(true);
    expect(existsSync(join(state, 'daemon.lock'))).toBe(true);
    const second = await ForegroundDaemon.start(socket, [], { env });
    try {
      expect(second.stdout).toContain('cleaned up after a daemon that exited without doing so');
      expect((await mcpx(['call', 'a', 'echo', '{"text":"back"}'], { env })).stdout).toBe('back era=modern\n');
    } finally {
      expect(await second.stop()).toEqual({ code: 0, signal: null });
    }
    expect(existsSync(socket)).toBe(false);
  });
});
