/**
 * Issue 10 through the built binary (`npm run build` first), in temp state folders:
 *
 * - #2 `kill -9` of the daemon: the next daemon on the folder sweeps what it left — an upstream that
 *   ignores stdin EOF and SIGTERM, and an upstream's own child (`sh -c "sleep N & exec node …"`) whose
 *   leader is gone — and never a process that is not the one recorded (a reused pid, a stranger).
 * - #1 `mcpx call` on a fresh state folder of a server that exits on any request before initialize.
 * - #5 `mcpx config`, the daemon's log and `POST /v1/reload` with an unparsable URL holding a secret.
 * - #8 a state folder whose socket path is past the Unix socket limit: refused, nothing bound.
 * - #9 `mcpx config` with a server named `__proto__`.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_SOCKET_PATH_BYTES } from '../../src/daemon/state-dir.js';
import { PROCESS_LEDGER } from '../../src/daemon/orphans.js';
import { fixtureCommand } from '../fixtures/index.js';
import { api, cleanEnv, ForegroundDaemon, killAll, mcpx, trackPid, until } from '../cli/helpers.js';
import { tempDir } from '../support/real.js';
import { FAULTY, faultyEntry, isGone, pidOf } from './helpers.js';

let root: { path: string; remove: () => Promise<void> };
/** Every process a test may leave behind when it fails half-way; ended in afterAll. */
const strays = new Set<number>();
beforeAll(async () => {
  root = await tempDir('mcpx-rel-e2e-');
});
afterAll(async () => {
  await killAll();
  for (const pid of strays) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  await root?.remove();
});

async function home(name: string): Promise<{ home: string; state: string; socket: string; env: NodeJS.ProcessEnv }> {
  const h = join(root.path, name);
  await mkdir(h, { recursive: true });
  const state = join(h, 'state');
  return { home: h, state, socket: join(state, 'daemon.sock'), env: cleanEnv(h, { MCPX_STATE_DIR: state }) };
}

function writeJson(file: string, value: unknown): string {
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
  return file;
}

/** Pids of live processes whose command line is exactly `argv`. */
function pidsRunning(argv: string[]): number[] {
  const want = `${argv.join('\0')}\0`;
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8') === want && !isGone(Number(name))) out.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

const startTicks = (pid: number): number => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[19]);

describe.runIf(process.platform === 'linux')('#2 a daemon killed with SIGKILL: the next one sweeps what it left, and nothing else', () => {
  it('an upstream ignoring EOF and SIGTERM and an orphaned grandchild are stopped; a stranger and a reused pid are not', async () => {
    const { home: h, state, socket, env } = await home('crash');
    const sleepSecs = String(4000 + Math.floor(Math.random() * 900));
    const config = writeJson(join(h, 'mcpx.json'), {
      mcpServers: {
        // The leader (node) exits on stdin EOF when the daemon dies; its `sleep` stays in the group.
        spawner: { command: 'sh', args: ['-c', `sleep ${sleepSecs} & exec ${process.execPath} ${FAULTY} plain`], mcpx: { startTimeout: '20s' } },
        stubborn: faultyEntry('stubborn'),
        plain: faultyEntry('plain'),
      },
    });
    // A stranger: same user, same command as the orphan, never started by mcpx.
    const stranger = spawn('sleep', [sleepSecs], { detached: true, stdio: 'ignore' });
    strays.add(stranger.pid!);
    const first = await ForegroundDaemon.start(socket, ['--config', config], { env });
    const pids: Record<string, number> = {};
    try {
      for (const server of ['spawner', 'stubborn', 'plain']) {
        const r = await api(socket, 'POST', '/v1/call', { server, tool: 'whoami', args: {} });
        pids[server] = pidOf(r.body.result.content[0].text);
        strays.add(pids[server]!);
      }
      const sleeps = pidsRunning(['sleep', sleepSecs]).filter((p) => p !== stranger.pid);
      expect(sleeps).toHaveLength(1);
      pids.sleep = sleeps[0]!;
      strays.add(pids.sleep);

      // What the daemon started is on record, 0600: pid, group, start time.
      const ledgerFile = join(state, PROCESS_LEDGER);
      await until(() => existsSync(ledgerFile) && JSON.parse(readFileSync(ledgerFile, 'utf8')).processes.length === 3, 5_000, 'the ledger');
      expect(statSync(ledgerFile).mode & 0o777).toBe(0o600);
      const ledger = JSON.parse(readFileSync(ledgerFile, 'utf8'));
      expect(ledger.daemon.pid).toBe(first.pid);
      expect(ledger.processes.map((p: { pid: number }) => p.pid).sort()).toEqual([pids.spawner, pids.stubborn, pids.plain].sort());
      for (const p of ledger.processes) expect(p).toMatchObject({ pgid: p.pid, start: startTicks(p.pid) });

      expect(await first.stop('SIGKILL')).toMatchObject({ signal: 'SIGKILL' });
      await until(() => isGone(pids.spawner!) && isGone(pids.plain!), 10_000, 'the upstreams that end on stdin EOF');
      // Left running: the stubborn upstream, and the spawner's sleep (its leader gone).
      expect(isGone(pids.stubborn!)).toBe(false);
      expect(isGone(pids.sleep)).toBe(false);

      // A pid on record that now belongs to someone else (same pid, another start time): never signalled.
      const reused = JSON.parse(readFileSync(ledgerFile, 'utf8'));
      reused.processes.push({ pid: stranger.pid, pgid: stranger.pid, start: startTicks(stranger.pid!) - 1, command: 'sleep' });
      writeJson(ledgerFile, reused);
    } finally {
      if (first.child.exitCode === null && first.child.signalCode === null) await first.stop('SIGKILL');
    }

    const second = await ForegroundDaemon.start(socket, ['--config', config], { env });
    try {
      // The sweep runs before the new daemon listens: by now both are gone.
      expect(isGone(pids.stubborn!)).toBe(true);
      expect(isGone(pids.sleep!)).toBe(true);
      expect(isGone(stranger.pid!)).toBe(false);
      expect(second.stdout + second.stderr).toContain('left running by a daemon that did not stop cleanly');
      const r = await api(socket, 'POST', '/v1/call', { server: 'stubborn', tool: 'echo', args: { text: 'again' } });
      expect(r.body.result.content[0].text).toBe('again era=legacy');
      pids.stubborn2 = pidOf((await api(socket, 'POST', '/v1/call', { server: 'stubborn', tool: 'whoami', args: {} })).body.result.content[0].text);
      strays.add(pids.stubborn2);
    } finally {
      expect(await second.stop('SIGTERM')).toMatchObject({ code: 0 });
    }
    // A clean stop stops even the stubborn upstream, and leaves no ledger behind.
    expect(isGone(pids.stubborn2!)).toBe(true);
    expect(existsSync(join(state, PROCESS_LEDGER))).toBe(false);
    expect(isGone(stranger.pid!)).toBe(false);
    stranger.kill('SIGKILL');
  });
});

describe.concurrent('through mcpx commands', () => {
  it('#1 mcpx call on a fresh state folder: a server that exits on the probe is served by its replacement', async () => {
    const { home: h, env } = await home('probe-exit');
    const cmd = fixtureCommand('raw', { mode: 'exit-pre-init' });
    const config = writeJson(join(h, 'mcpx.json'), {
      mcpServers: { quits: { command: cmd.command, args: cmd.args, mcpx: { probeTimeout: '10s', startTimeout: '20s' } } },
    });
    try {
      const r = await mcpx(['call', 'quits', 'echo', '{"text":"hi"}', '--config', config], { env });
      expect(r.stderr).toBe('');
      expect(r.stdout).toBe('hi era=legacy\n');
      expect(r.code).toBe(0);
    } finally {
      const info = join(h, 'state', 'daemon.json');
      if (existsSync(info)) trackPid(JSON.parse(readFileSync(info, 'utf8')).pid);
      expect((await mcpx(['stop'], { env })).code).toBe(0);
    }
  });

  it('#5 an unparsable URL with a secret: mcpx config, the daemon log and the reload answer show it redacted', async () => {
    const { home: h, state, socket, env } = await home('bad-url');
    const secret = 'sentinel-Vv81QpZ';
    const url = `http://127.0.0.1:99999/mcp?api_key=${secret}`;
    const bad = writeJson(join(h, 'bad.json'), { mcpServers: { remote: { url } } });
    const shown = await mcpx(['config', '--config', bad], { env });
    expect(shown.code).toBe(1);
    expect(shown.stderr).toContain('api_key=<redacted>');
    expect(shown.stderr).not.toContain(secret);
    // A daemon started on it refuses, in its log.
    const started = await mcpx(['status', '--start', '--config', bad], { env });
    expect(started.code).toBe(1);
    expect(started.stderr).not.toContain(secret);
    expect(readFileSync(join(state, 'daemon.log'), 'utf8')).toContain('api_key=<redacted>');
    // A running daemon whose file turns bad: the reload answer and the log.
    const good = writeJson(join(h, 'good.json'), { mcpServers: { a: faultyEntry('plain') } });
    const d = await ForegroundDaemon.start(socket, ['--config', good], { env });
    try {
      writeJson(good, { mcpServers: { a: faultyEntry('plain'), remote: { url } } });
      const r = await api(socket, 'POST', '/v1/reload');
      expect(r.body).toMatchObject({ ok: false, error: { code: 'MCPX_BAD_CONFIG' } });
      expect(r.text).toContain('api_key=<redacted>');
      expect(r.text).not.toContain(secret);
    } finally {
      await d.stop();
    }
    expect(d.stdout + d.stderr).toContain('api_key=<redacted>');
    expect(readFileSync(join(state, 'daemon.log'), 'utf8') + d.stdout + d.stderr).not.toContain(secret);
  });

  it('#8 a socket path past the limit is refused naming it, and nothing is bound or created', async () => {
    const { home: h } = await home('long');
    const parent = join(h, 'x'.repeat(40), 'y'.repeat(40));
    const state = join(parent, 'state-folder-with-a-long-name');
    const socket = join(state, 'daemon.sock');
    expect(Buffer.byteLength(socket)).toBeGreaterThan(MAX_SOCKET_PATH_BYTES);
    const env = cleanEnv(h, { MCPX_STATE_DIR: state });
    const fg = await mcpx(['daemon'], { env });
    expect(fg.code).toBe(1);
    expect(fg.stderr).toContain(`at most ${MAX_SOCKET_PATH_BYTES} bytes`);
    expect(fg.stderr).toContain(socket);
    const client = await mcpx(['status', '--start'], { env });
    expect(client.code).toBe(1);
    expect(client.stderr).toContain(`at most ${MAX_SOCKET_PATH_BYTES} bytes`);
    // No stray socket where the cut path would have landed, no folder made.
    expect(existsSync(state)).toBe(false);
    for (let dir = parent; dir.startsWith(h); dir = dirname(dir)) {
      if (existsSync(dir)) for (const f of readdirSync(dir)) expect(statSync(join(dir, f)).isSocket(), join(dir, f)).toBe(false);
    }
    // The way out it names works.
    const ok = await mcpx(['status', '--start'], { env: { ...env, MCPX_DAEMON_SOCKET: join(h, 's.sock') } });
    if (existsSync(join(state, 'daemon.json'))) trackPid(JSON.parse(readFileSync(join(state, 'daemon.json'), 'utf8')).pid);
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    expect((await mcpx(['stop'], { env: { ...env, MCPX_DAEMON_SOCKET: join(h, 's.sock') } })).code).toBe(0);
  });

  it('#9 mcpx config with a server named __proto__: exit 1 naming file, server and key', async () => {
    const { home: h, env } = await home('proto');
    const file = join(h, 'mcpx.json');
    writeFileSync(file, '{\n  "mcpServers": {\n    "__proto__": { "command": "node" }\n  }\n}\n');
    const r = await mcpx(['config', '--config', file], { env });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`mcpx: config ${file}: mcpServers.__proto__: "__proto__" cannot be used as a name here (JavaScript reserves it); rename it\n`);
  });
});
