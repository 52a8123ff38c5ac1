/**
 * The attacker-minded review (items 5–9, 21, 22, 23) through the built binary (`npm run build` first), in
 * temp state folders. Tests run as root: "another user" is uid 65534 (nobody) by chown, or a mode that
 * lets others write.
 *
 * - #5 a socket another user planted: the CLI and `mcpx serve` refuse to speak on it, naming what is wrong.
 * - #6 a shared sticky state folder is refused (not chmod-ed); `--state-dir .` keeps the project folder's mode.
 * - #7 a full disk (a tiny tmpfs) under the daemon's log and state: the daemon serves on, says what it
 *   dropped once it can, and a lock made but not written is not "held by another process" later.
 * - #8 FIFOs and a dangling symlink as state files: the start never hangs; the lock says what it is.
 * - #9 `<state>/daemon.log` as a symlink: refused, its target untouched.
 * - #21 a FIFO as the config file: `mcpx config` returns; swapped in under a daemon, reload answers and recovers.
 * - #22 a forged process ledger naming a stranger that leads its own group: not signalled.
 * - #23 a lock dated in the future is stale; an era record from the future says so.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROCESS_LEDGER } from '../../src/daemon/orphans.js';
import { api, cleanEnv, ForegroundDaemon, killAll, mcpx, trackPid, until } from '../cli/helpers.js';
import { tempDir } from '../support/real.js';
import { faultyEntry, isGone } from './helpers.js';

const NOBODY = 65534;
const isRoot = process.getuid?.() === 0;
const linux = process.platform === 'linux';

let root: { path: string; remove: () => Promise<void> };
const strays = new Set<number>();
const mounts: string[] = [];
beforeAll(async () => {
  root = await tempDir('mcpx-sec-');
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
  for (const m of mounts) spawnSync('umount', ['-l', m]);
  await root?.remove();
});

function home(name: string): { home: string; state: string; socket: string; env: NodeJS.ProcessEnv; config: string } {
  const h = join(root.path, name);
  mkdirSync(h, { recursive: true });
  const state = join(h, 'state');
  const config = join(h, 'mcpx.json');
  writeFileSync(config, JSON.stringify({ mcpServers: { plain: faultyEntry('plain'), other: faultyEntry('plain', { env: { OTHER_SERVER: '1' } }) } }));
  return { home: h, state, socket: join(state, 'daemon.sock'), config, env: cleanEnv(h, { MCPX_STATE_DIR: state, MCPX_CONFIG: config }) };
}

/** Ends the daemon of `state` (auto-started) after a test, whatever happened. */
async function stopDaemon(env: NodeJS.ProcessEnv, state: string): Promise<void> {
  const info = join(state, 'daemon.json');
  try {
    if (existsSync(info)) trackPid(JSON.parse(readFileSync(info, 'utf8')).pid);
  } catch {
    // unreadable: killAll has what it has
  }
  await mcpx(['stop'], { env, timeoutMs: 40_000 }).catch(() => undefined);
}

/** A fake daemon: answers every HTTP request on `socket` with 200 `{}` and keeps what it was sent. */
function fakeDaemon(socket: string): Promise<{ server: Server; received: string[] }> {
  const received: string[] = [];
  const server = createServer((c) => {
    c.on('data', (d: Buffer) => {
      received.push(d.toString());
      c.end('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}');
    });
  });
  return new Promise((resolve) => server.listen(socket, () => resolve({ server, received })));
}

const startTicks = (pid: number): number => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[19]);

describe.runIf(isRoot && linux)('#5 a socket nobody checked', () => {
  it('a state folder and socket owned by another user: mcpx call and mcpx serve refuse, naming the folder; the fake hears nothing', async () => {
    const { state, socket, env } = home('planted');
    mkdirSync(state, { mode: 0o755 });
    const fake = await fakeDaemon(socket);
    try {
      chownSync(state, NOBODY, NOBODY);
      chownSync(socket, NOBODY, NOBODY);
      const r = await mcpx(['call', 'plain', 'echo', '{"text":"my-secret-argument"}'], { env, timeoutMs: 20_000 });
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(`the socket folder ${state} belongs to another user (uid ${NOBODY})`);
      const serve = await mcpx(['serve'], {
        env,
        timeoutMs: 20_000,
        input: `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } })}\n`,
      });
      expect(serve.stderr).toContain(`belongs to another user (uid ${NOBODY})`);
      expect(fake.received).toEqual([]);
    } finally {
      fake.server.close();
    }
  });

  it('a folder of our own that its group can write: refused, naming the mode', async () => {
    const { state, socket, env } = home('group-writable');
    mkdirSync(state);
    chmodSync(state, 0o770);
    const fake = await fakeDaemon(socket);
    try {
      const r = await mcpx(['servers'], { env, timeoutMs: 20_000 });
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(`the socket folder ${state} is writable by its group (mode 0770)`);
      expect(fake.received).toEqual([]);
    } finally {
      fake.server.close();
    }
  });
});

describe.runIf(isRoot && linux)('#6 a state folder mcpx did not create keeps its mode', () => {
  it('a shared sticky folder is refused, named, with a folder of our own to use; its mode stays 1777', async () => {
    const { home: h, env } = home('sticky');
    const shared = join(h, 'tmp');
    mkdirSync(shared);
    chmodSync(shared, 0o1777);
    const r = await mcpx(['daemon'], { env: { ...env, MCPX_STATE_DIR: shared }, timeoutMs: 20_000 });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`the state folder ${shared} is a shared folder (mode 1777`);
    expect(r.stderr).toContain(join(shared, `mcpx-${process.getuid!()}`));
    expect(statSync(shared).mode & 0o7777).toBe(0o1777);
    // the folder it names works, and is made 0700
    const own = join(shared, `mcpx-${process.getuid!()}`);
    const d = await ForegroundDaemon.start(join(own, 'daemon.sock'), [], { env: { ...env, MCPX_STATE_DIR: own } });
    expect(statSync(own).mode & 0o777).toBe(0o700);
    expect(statSync(shared).mode & 0o7777).toBe(0o1777);
    await d.stop();
  });

  it('--state-dir . in a project folder (0755): the daemon runs there and leaves the mode alone', async () => {
    const { home: h, env } = home('project');
    const project = join(h, 'project');
    mkdirSync(project);
    chmodSync(project, 0o755);
    const d = await ForegroundDaemon.start(join(project, 'daemon.sock'), ['--state-dir', '.'], { env: { ...env, MCPX_STATE_DIR: undefined }, cwd: project });
    expect(statSync(project).mode & 0o777).toBe(0o755);
    await d.stop();
  });
});

describe.runIf(isRoot && linux)('#7 a full disk', () => {
  it('the log and the state folder on a full file system: the daemon serves on, says what it dropped, and no empty lock stands in the way', async () => {
    const { home: h, env, config } = home('full');
    const mnt = join(h, 'mnt');
    mkdirSync(mnt);
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=512k', 'tmpfs', mnt]);
    } catch {
      console.warn('#7 skipped: cannot mount a tmpfs here');
      return;
    }
    mounts.push(mnt);
    const state = join(mnt, 'state');
    const e = { ...env, MCPX_STATE_DIR: state };
    try {
      expect((await mcpx(['servers'], { env: e, timeoutMs: 30_000 })).code).toBe(0); // auto-started: its log is <state>/daemon.log
      const pid = JSON.parse(readFileSync(join(state, 'daemon.json'), 'utf8')).pid as number;
      trackPid(pid);
      // fill it: the next log line, era record and lock token have nowhere to go
      spawnSync('dd', ['if=/dev/zero', `of=${join(mnt, 'filler')}`, 'bs=4k'], { stdio: 'ignore' });
      for (let i = 0; i < 3; i += 1) {
        const r = await mcpx(['call', 'plain', 'echo', '{"text":"full"}', '--config', config], { env: e, timeoutMs: 30_000 });
        expect(r.stderr).toBe('');
        expect(r.code).toBe(0);
      }
      expect(isGone(pid)).toBe(false);
      expect(existsSync(join(state, 'upstream-eras.json.lock'))).toBe(false); // made, not written: removed
      rmSync(join(mnt, 'filler'));
      // room again: the next line says what was dropped; the era records kept in memory land
      expect((await mcpx(['call', 'other', 'echo', '{"text":"room"}', '--config', config], { env: e, timeoutMs: 30_000 })).code).toBe(0);
      await until(
        () => readFileSync(join(state, 'daemon.log'), 'utf8').includes('log line(s): the log could not be written (ENOSPC'),
        10_000,
        'the dropped-lines note',
      );
      await until(
        () => {
          try {
            return Object.keys(JSON.parse(readFileSync(join(state, 'upstream-eras.json'), 'utf8')).servers).length === 2;
          } catch {
            return false;
          }
        },
        10_000,
        'both era records on disk',
      );
      expect(readFileSync(join(state, 'daemon.log'), 'utf8')).not.toContain('another process held');
    } finally {
      rmSync(join(mnt, 'filler'), { force: true });
      await stopDaemon(e, state);
      spawnSync('umount', ['-l', mnt]);
      mounts.splice(mounts.indexOf(mnt), 1);
    }
  });
});

describe.runIf(linux)('#8 state files that are not regular files', () => {
  it('FIFOs as the era cache, the catalogue and the process ledger: the daemon starts, and says what it ignored', async () => {
    const { state, socket, env } = home('fifos');
    mkdirSync(state, { mode: 0o700 });
    for (const f of ['upstream-eras.json', 'tool-catalog.json', PROCESS_LEDGER]) execFileSync('mkfifo', [join(state, f)]);
    const d = await ForegroundDaemon.start(socket, [], { env, timeoutMs: 15_000 });
    try {
      expect(d.stdout).toContain('upstream-eras.json');
      expect(d.stdout).toContain('it is a FIFO (named pipe), not a regular file');
      expect(d.stdout).toContain(`${join(state, PROCESS_LEDGER)} is a FIFO (named pipe), not a regular file`);
      expect((await mcpx(['stop'], { env, timeoutMs: 20_000 })).code).toBe(0);
    } finally {
      await d.stop();
    }
  });

  it('a FIFO, a dangling symlink and an empty file as daemon.lock: refused or taken over, each named for what it is', async () => {
    const { state, socket, env } = home('lock-kinds');
    mkdirSync(state, { mode: 0o700 });
    const lock = join(state, 'daemon.lock');
    execFileSync('mkfifo', [lock]);
    const fifo = await mcpx(['daemon'], { env, timeoutMs: 15_000 });
    expect(fifo.code).toBe(1);
    expect(fifo.stderr).toContain(`the daemon lock ${lock} is a FIFO (named pipe), not a lock file mcpx made; remove it`);
    rmSync(lock);
    symlinkSync(join(state, 'nowhere'), lock);
    const link = await mcpx(['daemon'], { env, timeoutMs: 15_000 });
    expect(link.code).toBe(1);
    expect(link.stderr).toContain(`the daemon lock ${lock} is a symbolic link (to "${join(state, 'nowhere')}"), not a lock file mcpx made`);
    rmSync(lock);
    writeFileSync(lock, '');
    const old = Date.now() / 1000 - 60;
    utimesSync(lock, old, old);
    const d = await ForegroundDaemon.start(socket, [], { env, timeoutMs: 15_000 });
    await d.stop();
  });
});

describe.runIf(linux)('#8 a write lock that is a dangling symlink', () => {
  it('the era cache write says what the lock is, and the call is served (no endless retry)', async () => {
    const { state, socket, env } = home('era-lock-link');
    mkdirSync(state, { mode: 0o700 });
    const lock = join(state, 'upstream-eras.json.lock');
    symlinkSync(join(state, 'gone'), lock);
    const d = await ForegroundDaemon.start(socket, [], { env, timeoutMs: 15_000 });
    try {
      const r = await mcpx(['call', 'plain', 'echo', '{"text":"x"}'], { env, timeoutMs: 20_000 });
      expect(r.code).toBe(0);
      await until(
        () => d.stdout.includes(`the lock file ${lock} is a symbolic link (to \\"${join(state, 'gone')}\\"), not a lock file mcpx made; remove it`),
        10_000,
        'the lock named',
      );
    } finally {
      await d.stop();
    }
  });
});

describe.runIf(isRoot && linux)('#9 the daemon log through a symlink', () => {
  it('refused, naming it; the target keeps its mode and content', async () => {
    const { home: h, state, env } = home('log-link');
    mkdirSync(state, { mode: 0o700 });
    const target = join(h, 'precious');
    writeFileSync(target, 'keep\n');
    chmodSync(target, 0o644);
    symlinkSync(target, join(state, 'daemon.log'));
    try {
      const r = await mcpx(['servers'], { env, timeoutMs: 20_000 });
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(`the daemon log ${join(state, 'daemon.log')} is a symbolic link, not a regular file`);
      expect(statSync(target).mode & 0o777).toBe(0o644);
      expect(readFileSync(target, 'utf8')).toBe('keep\n');
      expect(lstatSync(join(state, 'daemon.log')).isSymbolicLink()).toBe(true);
    } finally {
      await stopDaemon(env, state);
    }
  });
});

describe.runIf(linux)('#21 a FIFO as the config file', () => {
  it('mcpx config --config FIFO returns, naming it; a pipe with a config in it is read once', async () => {
    const { home: h, env } = home('config-fifo');
    const fifo = join(h, 'config.fifo');
    execFileSync('mkfifo', [fifo]);
    // a writer that holds the pipe open and never writes: only the bound ends the read
    const writer = spawn('sh', ['-c', `exec 3>"${fifo}"; exec sleep 60`], { stdio: 'ignore' });
    strays.add(writer.pid!);
    try {
      const t0 = Date.now();
      const r = await mcpx(['config', '--config', fifo], { env, timeoutMs: 20_000 });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`config ${fifo} (named by --config): is a pipe that did not end within 5 s`);
      expect(Date.now() - t0).toBeLessThan(15_000);
    } finally {
      writer.kill('SIGKILL');
    }
    const feeder = spawn('sh', ['-c', `printf '%s' '{"mcpServers":{"piped":{"command":"node"}}}' > "${fifo}"`], { stdio: 'ignore' });
    strays.add(feeder.pid!);
    const ok = await mcpx(['config', '--config', fifo], { env, timeoutMs: 20_000 });
    expect(ok.stderr).toBe('');
    expect(ok.stdout).toContain('piped');
    expect(ok.code).toBe(0);
  });

  it('swapped in under a running daemon: reload answers at once naming it, a fixed file loads, mcpx stop works', async () => {
    const { home: h, state, socket, env, config } = home('config-swap');
    const d = await ForegroundDaemon.start(socket, [], { env, timeoutMs: 20_000 });
    try {
      const fifo = join(h, 'swap.fifo');
      execFileSync('mkfifo', [fifo]);
      renameSync(fifo, config);
      const t0 = Date.now();
      const bad = await api(socket, 'POST', '/v1/reload');
      expect(Date.now() - t0).toBeLessThan(5_000);
      expect(bad.text).toContain('is a FIFO (named pipe), not a regular file');
      const fixed = join(h, 'fixed.json');
      writeFileSync(fixed, JSON.stringify({ mcpServers: { plain: faultyEntry('plain'), fixed: faultyEntry('plain') } }));
      renameSync(fixed, config);
      const good = await api(socket, 'POST', '/v1/reload');
      expect(good.status).toBe(200);
      await until(async () => JSON.stringify((await api(socket, 'GET', '/v1/servers')).body).includes('"fixed"'), 10_000, 'the fixed config');
      const t1 = Date.now();
      expect((await mcpx(['stop'], { env, timeoutMs: 20_000 })).code).toBe(0);
      expect(Date.now() - t1).toBeLessThan(10_000);
      void state;
    } finally {
      await d.stop();
    }
  });
});

describe.runIf(linux)('#22 a forged process ledger', () => {
  it('a stranger leading its own group, named with its right start time: not signalled', async () => {
    const { state, socket, env } = home('forged');
    mkdirSync(state, { mode: 0o700 });
    const stranger = spawn('sleep', [String(4000 + Math.floor(Math.random() * 900))], { detached: true, stdio: 'ignore' });
    strays.add(stranger.pid!);
    const pid = stranger.pid!;
    await until(() => existsSync(`/proc/${pid}/stat`), 5_000, 'the stranger');
    const gone = spawnSync('true');
    void gone;
    writeFileSync(
      join(state, PROCESS_LEDGER),
      JSON.stringify({
        version: 1,
        daemon: { pid: 999_999_99, start: null },
        tag: 'forged-tag',
        processes: [{ pid, pgid: pid, start: startTicks(pid), command: 'sleep' }],
      }),
    );
    const d = await ForegroundDaemon.start(socket, [], { env, timeoutMs: 20_000 });
    try {
      expect(isGone(pid)).toBe(false);
    } finally {
      await d.stop();
      stranger.kill('SIGKILL');
    }
  });
});

describe.runIf(linux)('#23 dates in the future', () => {
  it('a daemon.lock of a live non-daemon pid dated tomorrow is stale; an era-cache lock from the future does not block writes', async () => {
    const { state, socket, env, config } = home('future-lock');
    mkdirSync(state, { mode: 0o700 });
    const other = spawn('sleep', ['300'], { stdio: 'ignore' });
    strays.add(other.pid!);
    const tomorrow = Date.now() / 1000 + 86_400;
    const lock = join(state, 'daemon.lock');
    writeFileSync(lock, JSON.stringify({ pid: other.pid, socket }));
    utimesSync(lock, tomorrow, tomorrow);
    const eraLock = join(state, 'upstream-eras.json.lock');
    writeFileSync(eraLock, '12345 someone\n');
    utimesSync(eraLock, tomorrow, tomorrow);
    const d = await ForegroundDaemon.start(socket, [], { env, timeoutMs: 20_000 });
    try {
      expect((await mcpx(['call', 'plain', 'echo', '{"text":"x"}', '--config', config], { env, timeoutMs: 30_000 })).code).toBe(0);
      await until(() => existsSync(join(state, 'upstream-eras.json')), 10_000, 'the era record');
      expect(d.stdout).not.toContain('another process held');
    } finally {
      await d.stop();
      other.kill('SIGKILL');
    }
  });

  it('an era record dated in the future: mcpx protocol says so, not "0s old"', async () => {
    const { state, socket, env } = home('future-era');
    mkdirSync(state, { mode: 0o700 });
    const d = await ForegroundDaemon.start(socket, [], { env, timeoutMs: 20_000 });
    try {
      expect((await mcpx(['call', 'plain', 'echo', '{"text":"x"}'], { env, timeoutMs: 30_000 })).code).toBe(0);
      await until(() => existsSync(join(state, 'upstream-eras.json')), 10_000, 'the era record');
    } finally {
      await d.stop();
    }
    const file = JSON.parse(readFileSync(join(state, 'upstream-eras.json'), 'utf8'));
    const key = Object.keys(file.servers)[0]!;
    file.servers[key].at = new Date(Date.now() + 3 * 86_400_000 + 60_000).toISOString();
    writeFileSync(join(state, 'upstream-eras.json'), JSON.stringify(file));
    const d2 = await ForegroundDaemon.start(socket, [], { env, timeoutMs: 20_000 });
    try {
      const r = await mcpx(['protocol'], { env, timeoutMs: 20_000 });
      expect(r.stdout).toContain('dated 3d in the future (not used)');
      expect(r.stdout).not.toContain('0s old');
    } finally {
      await d2.stop();
    }
  });
});
