/**
 * Issue 10 #10: a state folder the daemon cannot write. `mcpx stop` used to leave daemon.lock, the
 * socket and daemon.json behind silently, and the next start said "another daemon keeps taking it"
 * when the cause was EACCES. Now:
 *
 * - taking the lock names the errno and the path (a stale lock that cannot be moved aside, a lock that
 *   cannot be created), at once, with no retry loop;
 * - `removeDaemonFiles` (what `mcpx stop` runs after the daemon exits) names each file it could not
 *   remove and why, and never touches another daemon's files;
 * - end to end (as root only: the daemon and the CLI run as `nobody`, since root ignores file modes):
 *   a folder made read-only under a running daemon → `mcpx stop` exits 1 naming the three files and
 *   EACCES; `mcpx daemon` exits 1 naming EACCES and the lock; once writable again, a daemon starts.
 *
 * Root ignores file modes, so the in-process tests inject the failures through a `StateFs`.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireLock, DAEMON_JSON, LOCK_FILE, nodeStateFs, removeDaemonFiles, StateFolderError, type StateFs } from '../../src/daemon/state-dir.js';
import { MCPX } from '../cli/helpers.js';
import { tempDir } from '../support/real.js';
import { isGone } from './helpers.js';

let root: { path: string; remove: () => Promise<void> };
beforeAll(async () => {
  root = await tempDir('mcpx-rostate-');
  chmodSync(root.path, 0o755);
});
afterAll(async () => {
  for (const pid of strays) if (!isGone(pid)) process.kill(pid, 'SIGKILL');
  await root?.remove();
});
const strays = new Set<number>();

let n = 0;
function stateFolder(): string {
  const dir = join(root.path, `s${(n += 1)}`);
  mkdirSync(dir, { mode: 0o700 });
  return dir;
}

const errno = (code: string, syscall: string, path: string): NodeJS.ErrnoException =>
  Object.assign(new Error(`${code}: injected, ${syscall} '${path}'`), { code, syscall, path });

/** node:fs/promises, except that the named operations fail with `code`. */
function failing(code: string, ops: Array<keyof StateFs>): StateFs & { tried: string[] } {
  const tried: string[] = [];
  const fs = { ...nodeStateFs, tried } as StateFs & { tried: string[] };
  for (const op of ops) {
    (fs as unknown as Record<string, unknown>)[op] = async (path: string) => {
      tried.push(`${op} ${String(path)}`);
      throw errno(code, op, String(path));
    };
  }
  return fs;
}

/** A pid that is certainly not running: a child that has exited and been reaped. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  await new Promise((r) => child.once('exit', r));
  return child.pid!;
}

describe('#10 the lock in a folder that cannot be written (injected errno)', () => {
  it('a stale lock that cannot be moved aside: the errno and the path at once, not "another daemon keeps taking it"', async () => {
    const dir = stateFolder();
    const lock = join(dir, LOCK_FILE);
    writeFileSync(lock, `${JSON.stringify({ pid: await deadPid(), socket: join(dir, 'daemon.sock') })}\n`);
    for (const code of ['EACCES', 'EPERM', 'EROFS']) {
      const fs = failing(code, ['rename']);
      const err = await acquireLock(dir, join(dir, 'daemon.sock'), fs).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(StateFolderError);
      expect(err).toMatchObject({ code: 'MCPX_BAD_SETTING', errno: code, path: lock, data: { stateDir: dir, path: lock, errno: code } });
      expect((err as Error).message).toContain(`could not move aside the stale daemon lock ${lock}: ${code}`);
      expect((err as Error).message).toContain(`the state folder ${dir} is not writable by this user`);
      expect((err as Error).message).not.toMatch(/keeps taking it/);
      expect(fs.tried, 'one attempt: retrying cannot help').toHaveLength(1);
    }
    expect(existsSync(lock), 'the stale lock is still there (nothing was removed)').toBe(true);
    // the same folder, writable: the stale lock is taken over
    const taken = await acquireLock(dir, join(dir, 'daemon.sock'));
    expect(taken.cleaned).toContain(lock);
    await taken.release();
    expect(existsSync(lock)).toBe(false);
  });

  it('no lock yet, and it cannot be created: the errno and the path', async () => {
    const dir = stateFolder();
    const err = await acquireLock(dir, join(dir, 'daemon.sock'), failing('EROFS', ['open'])).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: 'MCPX_BAD_SETTING', errno: 'EROFS' });
    expect((err as Error).message).toBe(
      `could not create the daemon lock ${join(dir, LOCK_FILE)}: EROFS (read-only file system): the state folder ${dir} is not writable by this user; make it writable or use another (--state-dir, MCPX_STATE_DIR)`,
    );
  });

  it('a lock that cannot be released says so (the daemon logs it on stop)', async () => {
    const dir = stateFolder();
    let deny = false;
    const fs: StateFs = {
      ...nodeStateFs,
      rm: async (p, o) => {
        if (deny) throw errno('EACCES', 'unlink', String(p));
        return nodeStateFs.rm(p, o);
      },
    };
    const lock = await acquireLock(dir, join(dir, 'daemon.sock'), fs);
    deny = true;
    await expect(lock.release()).rejects.toMatchObject({
      errno: 'EACCES',
      message: expect.stringContaining(`could not remove the daemon lock ${join(dir, LOCK_FILE)}: EACCES (permission denied)`),
    });
  });
});

describe('#10 removeDaemonFiles (the stop path)', () => {
  function leave(dir: string, pid: number): { lock: string; json: string; socket: string } {
    const socket = join(dir, 'daemon.sock');
    writeFileSync(join(dir, LOCK_FILE), `${JSON.stringify({ pid, socket })}\n`);
    writeFileSync(join(dir, DAEMON_JSON), `${JSON.stringify({ pid, socket })}\n`);
    writeFileSync(socket, ''); // a dead socket's file; nothing answers on it
    return { lock: join(dir, LOCK_FILE), json: join(dir, DAEMON_JSON), socket };
  }

  it('names each file it could not remove, with the errno', async () => {
    const dir = stateFolder();
    const pid = await deadPid();
    const f = leave(dir, pid);
    const out = await removeDaemonFiles(dir, f.socket, pid, failing('EACCES', ['rm']));
    expect(out.removed).toEqual([]);
    expect(out.left).toEqual([
      { path: f.json, errno: 'EACCES', reason: 'EACCES (permission denied)' },
      { path: f.socket, errno: 'EACCES', reason: 'EACCES (permission denied)' },
      { path: f.lock, errno: 'EACCES', reason: 'EACCES (permission denied)' },
    ]);
    for (const p of [f.lock, f.json, f.socket]) expect(existsSync(p)).toBe(true);
    // writable: all three go, nothing is reported
    expect(await removeDaemonFiles(dir, f.socket, pid)).toEqual({ removed: [f.json, f.socket, f.lock], left: [] });
    for (const p of [f.lock, f.json, f.socket]) expect(existsSync(p)).toBe(false);
  });

  it("never removes another daemon's files (a daemon started meanwhile), and is quiet when all is gone", async () => {
    const dir = stateFolder();
    const f = leave(dir, process.pid);
    expect(await removeDaemonFiles(dir, f.socket, await deadPid())).toEqual({ removed: [], left: [] });
    for (const p of [f.lock, f.json, f.socket]) expect(existsSync(p)).toBe(true);
    const empty = stateFolder();
    expect(await removeDaemonFiles(empty, join(empty, 'daemon.sock'), 1, failing('EACCES', ['rm']))).toEqual({ removed: [], left: [] });
  });
});

// ---- end to end, as an unprivileged user ----

const NOBODY = 65534;
const asRoot = process.platform === 'linux' && process.getuid?.() === 0;
/**
 * `nobody` must be able to run node and read mcpx: a checkout under a folder only root can enter (a
 * `mktemp -d` clone, say) cannot be run as another user, and then only the injected-errno tests above apply.
 */
const nobodyCanRun =
  asRoot &&
  spawnSync(process.execPath, ['-e', `require('fs').accessSync(${JSON.stringify(MCPX)}, require('fs').constants.R_OK)`], { uid: NOBODY, gid: NOBODY })
    .status === 0;
if (asRoot && !nobodyCanRun) console.log(`[read-only-state] the end-to-end run as nobody is left out: nobody cannot read ${MCPX}`);

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}
function runAsNobody(
  args: string[],
  env: NodeJS.ProcessEnv,
  opts: { until?: (out: string) => boolean; timeoutMs?: number } = {},
): { done: Promise<Run>; pid: number } {
  const child = spawn(process.execPath, [MCPX, ...args], { env, cwd: env['HOME'], uid: NOBODY, gid: NOBODY, stdio: ['ignore', 'pipe', 'pipe'] });
  strays.add(child.pid!);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const done = new Promise<Run>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`mcpx ${args.join(' ')} did not finish within ${opts.timeoutMs ?? 30_000} ms\n${stdout}\n${stderr}`));
    }, opts.timeoutMs ?? 30_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      strays.delete(child.pid!);
      resolve({ code, stdout, stderr });
    });
  });
  return { done, pid: child.pid! };
}

async function waitFor(check: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe.runIf(nobodyCanRun)('#10 end to end: a state folder made read-only under a running daemon (run as nobody)', () => {
  it('mcpx stop names the files left and EACCES; the next start names EACCES and the lock; writable again, it starts', async () => {
    const home = join(root.path, 'home');
    mkdirSync(home, { mode: 0o700 });
    const state = join(home, 'state');
    mkdirSync(state, { mode: 0o700 });
    writeFileSync(join(home, 'mcpx.json'), '{ "mcpServers": {} }\n');
    chownSync(home, NOBODY, NOBODY);
    chownSync(state, NOBODY, NOBODY);
    const env: NodeJS.ProcessEnv = {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      HOME: home,
      XDG_CONFIG_HOME: join(home, '.config'),
      XDG_STATE_HOME: join(home, '.state'),
      MCPX_STATE_DIR: state,
      MCPX_CONFIG: join(home, 'mcpx.json'),
    };
    const lock = join(state, LOCK_FILE);
    const json = join(state, DAEMON_JSON);
    const socket = join(state, 'daemon.sock');

    const daemon = runAsNobody(['daemon'], env, { timeoutMs: 60_000 });
    await waitFor(() => existsSync(json), 20_000, 'daemon.json');
    chmodSync(state, 0o500); // read-only for its owner

    const stop = await runAsNobody(['stop'], env).done;
    expect((await daemon.done).code, 'the daemon itself stopped').toBe(0);
    expect(stop.stdout).toContain(`stopped the mcpx daemon (pid ${daemon.pid})`);
    expect(stop.code, stop.stderr).toBe(1);
    expect(stop.stderr).toContain(
      `these files of the state folder ${state} are left and could not be removed: ${json} (EACCES (permission denied)), ${socket} (EACCES (permission denied)), ${lock} (EACCES (permission denied))`,
    );
    for (const p of [lock, json, socket]) expect(existsSync(p)).toBe(true);

    const again = await runAsNobody(['daemon'], env).done;
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(
      `could not move aside the stale daemon lock ${lock}: EACCES (permission denied): the state folder ${state} is not writable by this user`,
    );
    expect(again.stderr).not.toMatch(/keeps taking it/);

    chmodSync(state, 0o700);
    const third = runAsNobody(['daemon'], env, { timeoutMs: 60_000 });
    await waitFor(() => existsSync(json) && JSON.parse(readText(json)).pid === third.pid, 20_000, "the new daemon's daemon.json");
    const clean = await runAsNobody(['stop'], env).done;
    expect(clean.code, clean.stderr).toBe(0);
    expect((await third.done).code).toBe(0);
    for (const p of [lock, json, socket]) expect(existsSync(p), `${p} removed by a clean stop`).toBe(false);
  });
});

function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '{}'; // being rewritten
  }
}
