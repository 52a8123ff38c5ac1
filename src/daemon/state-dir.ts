/**
 * The daemon's state folder (paths.state): created 0700, or an existing one of the user's own that no one
 * else can write (its mode is never changed); one daemon at a time, through `daemon.lock`; where clients find it, through
 * `daemon.json` (0600: pid, socket, TCP port and bearer token).
 *
 * The lock is a file created exclusively ('wx') holding the owner's pid. A lock whose pid is gone
 * (a crashed daemon) is stale: it is moved aside (so two starting daemons cannot both take it over),
 * and the socket and daemon.json it left behind are removed. A lock whose pid is alive belongs to a
 * running daemon — unless that process has not answered on its socket for a while and is not an mcpx
 * daemon at all (the pid was reused), which also counts as stale.
 *
 * A folder the daemon cannot write (EACCES, EPERM, EROFS) is reported as such, with the errno and the
 * path: taking the lock and moving a stale one aside fail with `StateFolderError`; `removeDaemonFiles`
 * (the daemon's own stop, then `mcpx stop`) names each file it could not remove and why. The file
 * operations go through a `StateFs` (node:fs/promises by default) so tests can make them fail.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { mkdir, stat } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { McpxError } from '../errors.js';
import { writeFileAtomic } from '../state/atomic-write.js';
import { fileKind, readRegularFile } from '../state/safe-files.js';

export const LOCK_FILE = 'daemon.lock';
/** An empty `daemon.lock` older than this (or dated this far ahead) was made by a writer that could not write it: stale. */
export const EMPTY_LOCK_MS = 1_000;
export const DAEMON_JSON = 'daemon.json';
export const DAEMON_LOG = 'daemon.log';

/** What `<state>/daemon.json` holds. */
export interface DaemonFile {
  pid: number;
  version: string;
  stateDir: string;
  socket: string;
  host: string | null;
  port: number | null;
  auth: 'token' | 'none';
  /** The TCP bearer token; absent when TCP is off or daemon.auth is none. */
  token?: string;
  startedAt: string;
}

interface LockContent {
  pid: number;
  socket?: string;
  startedAt?: string;
}

const errCode = (err: unknown): string | undefined => (err as NodeJS.ErrnoException | null)?.code;

/** The file operations on the state folder's own files; tests pass one that fails. */
export interface StateFs {
  open: typeof fsp.open;
  readFile: (file: string, encoding: 'utf8') => Promise<string>;
  rename: typeof fsp.rename;
  link: typeof fsp.link;
  rm: typeof fsp.rm;
  stat: typeof fsp.stat;
}
// readFile never blocks on a FIFO nor follows a symlink (src/state/safe-files.ts).
export const nodeStateFs: StateFs = { open: fsp.open, readFile: (f) => readRegularFile(f), rename: fsp.rename, link: fsp.link, rm: fsp.rm, stat: fsp.stat };

/** Errnos that mean "this folder cannot be written by this user", whatever else is going on. */
const NOT_WRITABLE = new Set(['EACCES', 'EPERM', 'EROFS']);
const ERRNO_TEXT: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on device',
  EBUSY: 'resource busy',
};
/** `EACCES (permission denied)`, or the error's message when it has no errno. */
export function errnoText(err: unknown): string {
  const code = errCode(err);
  if (code === undefined) return err instanceof Error ? err.message : String(err);
  return ERRNO_TEXT[code] ? `${code} (${ERRNO_TEXT[code]})` : code;
}

/** A file of the state folder could not be created, moved or removed: names the errno and the path. */
export class StateFolderError extends McpxError {
  readonly errno: string | undefined;
  readonly path: string;
  constructor(what: string, path: string, stateDir: string, cause: unknown) {
    const code = errCode(cause);
    const hint =
      code !== undefined && NOT_WRITABLE.has(code)
        ? `: the state folder ${stateDir} is not writable by this user; make it writable or use another (--state-dir, MCPX_STATE_DIR)`
        : '';
    super('MCPX_BAD_SETTING', `could not ${what} ${path}: ${errnoText(cause)}${hint}`, {
      data: { stateDir, path, errno: code ?? null, setting: 'paths.state' },
    });
    this.errno = code;
    this.path = path;
  }
}

/**
 * The longest Unix socket path the kernel takes: `sun_path` is 108 bytes on Linux, 104 on macOS and
 * the BSDs, NUL included. A longer path is cut short silently, and the socket bound wherever the cut
 * lands (often a stray file in the parent folder), so such a path is refused before anything is created.
 */
export const MAX_SOCKET_PATH_BYTES = process.platform === 'linux' ? 107 : 103;

/** @throws McpxError MCPX_BAD_SETTING when `socket` is longer than a Unix socket path can be. */
export function checkSocketPath(socket: string): void {
  if (process.platform === 'win32') return; // named pipes have no such limit
  const bytes = Buffer.byteLength(socket, 'utf8');
  if (bytes <= MAX_SOCKET_PATH_BYTES) return;
  throw new McpxError(
    'MCPX_BAD_SETTING',
    `the daemon socket ${socket} is ${bytes} bytes long, and a Unix socket path can be at most ${MAX_SOCKET_PATH_BYTES} bytes on ${process.platform}; ` +
      'use a shorter state folder (--state-dir, MCPX_STATE_DIR) or put the socket on a shorter path (--daemon-socket, MCPX_DAEMON_SOCKET)',
    { data: { socket, bytes, limit: MAX_SOCKET_PATH_BYTES, setting: 'daemon.socket' } },
  );
}

/**
 * Creates the state folder 0700 (with any missing parents, also 0700), or takes an existing one as it
 * is: the mode of a folder mcpx did not create is never changed (a project folder given as `--state-dir .`,
 * a shared `/tmp`). An existing folder must be the user's own and writable by no one else, or another
 * user could plant the socket clients speak to: such a folder is refused, and a shared sticky one (`/tmp`)
 * is refused with the name of a folder of the user's own inside it (decisions.md, "A shared state folder").
 */
export async function ensureStateDir(dir: string): Promise<void> {
  const created = await mkdir(dir, { recursive: true, mode: 0o700 });
  const s = await stat(dir);
  const data = { stateDir: dir, setting: 'paths.state' };
  if (!s.isDirectory()) throw new McpxError('MCPX_BAD_SETTING', `paths.state ${dir} is not a folder`, { data });
  const uid = process.getuid?.();
  if (uid === undefined) return; // Windows: no owners or modes to compare
  if (s.uid !== uid) {
    throw new McpxError(
      'MCPX_BAD_SETTING',
      `the state folder ${dir} belongs to another user (uid ${s.uid}); use a folder of your own (--state-dir or MCPX_STATE_DIR)`,
      { data },
    );
  }
  const writable = s.mode & 0o022;
  if (writable === 0 || created !== undefined) return;
  const mode = (s.mode & 0o7777).toString(8).padStart(4, '0');
  if ((s.mode & 0o1000) !== 0) {
    throw new McpxError(
      'MCPX_BAD_SETTING',
      `the state folder ${dir} is a shared folder (mode ${mode}: writable by others, sticky); mcpx keeps its socket and files in a folder of its own and does not change this one: use a folder inside it, e.g. ${join(dir, `mcpx-${uid}`)} (mcpx creates it 0700)`,
      { data: { ...data, mode } },
    );
  }
  throw new McpxError(
    'MCPX_BAD_SETTING',
    `the state folder ${dir} is writable by ${writable & 0o002 ? 'every user' : 'its group'} (mode ${mode}): another user could put a socket there in the daemon's place; mcpx does not change the mode of a folder it did not create: make it private (chmod 700) or use another folder (--state-dir, MCPX_STATE_DIR)`,
    { data: { ...data, mode } },
  );
}

/** Whether something accepts connections on the Unix socket. */
export function socketAnswers(path: string, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect({ path });
    const done = (v: boolean) => {
      clearTimeout(timer);
      sock.destroy();
      resolve(v);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
  });
}

/** Whether the process runs (an exited process not yet reaped — a zombie — does not). */
export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    return errCode(err) === 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return !existsSync('/proc/self/stat'); // gone meanwhile; or no /proc, and kill(pid, 0) is all we know
  }
}

/** On Linux: whether the process looks like an mcpx daemon (its command line). Undefined when unknown. */
function looksLikeDaemon(pid: number): boolean | undefined {
  if (pid === process.pid) return true;
  try {
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
    return /\bdaemon\b/.test(cmd) && /node|mcpx|main/.test(cmd);
  } catch {
    return undefined;
  }
}

function parseLock(text: string): LockContent | undefined {
  try {
    const v = JSON.parse(text) as Partial<LockContent>;
    if (typeof v.pid === 'number')
      return {
        pid: v.pid,
        ...(typeof v.socket === 'string' ? { socket: v.socket } : {}),
        ...(typeof v.startedAt === 'string' ? { startedAt: v.startedAt } : {}),
      };
  } catch {
    const pid = Number.parseInt(text.trim(), 10);
    if (Number.isInteger(pid)) return { pid };
  }
  return undefined;
}

export class DaemonRunningError extends McpxError {
  readonly pid: number;
  readonly socket: string;
  constructor(pid: number, socket: string, stateDir: string, detail?: string) {
    super(
      'MCPX_DAEMON_RUNNING',
      `another mcpx daemon (pid ${pid}) owns the state folder ${stateDir} and listens on ${socket}${detail ? ` ${detail}` : ''}; stop it first (mcpx stop) or use another state folder (--state-dir)`,
      { data: { pid, socket, stateDir } },
    );
    this.pid = pid;
    this.socket = socket;
  }
}

export interface Lock {
  file: string;
  /** Stale files cleaned up on the way in (for the log). */
  cleaned: string[];
  release(): Promise<void>;
}

/**
 * Takes `<state>/daemon.lock` for this process.
 * @throws DaemonRunningError when a live daemon holds it.
 */
export async function acquireLock(stateDir: string, socket: string, fs: StateFs = nodeStateFs): Promise<Lock> {
  const { open, readFile, rm, stat } = fs;
  const file = join(stateDir, LOCK_FILE);
  const cleaned: string[] = [];
  const content = `${JSON.stringify({ pid: process.pid, socket, startedAt: new Date().toISOString() })}\n`;
  // However a clock moves, an empty lock is waited on for at most twice its second.
  const emptyDeadline = Date.now() + 2 * EMPTY_LOCK_MS;
  for (let attempt = 0; attempt < 10; attempt += 1) {
    try {
      const h = await open(file, 'wx', 0o600);
      try {
        await h.writeFile(content, 'utf8');
      } catch (err) {
        // Made but not written (ENOSPC): an empty lock left behind would stand in the next start's way.
        await h.close().catch(() => undefined);
        await rm(file, { force: true }).catch(() => undefined);
        throw new StateFolderError('write the daemon lock', file, stateDir, err);
      }
      await h.close();
      return {
        file,
        cleaned,
        release: async () => {
          let text: string;
          try {
            text = await readFile(file, 'utf8');
          } catch {
            return; // already gone
          }
          if (text !== content) return; // not ours (any more)
          try {
            await rm(file, { force: true });
          } catch (err) {
            throw new StateFolderError('remove the daemon lock', file, stateDir, err);
          }
        },
      };
    } catch (err) {
      if (err instanceof StateFolderError) throw err;
      if (errCode(err) !== 'EEXIST') throw new StateFolderError('create the daemon lock', file, stateDir, err);
    }
    // A symlink (dangling or not), a FIFO, a folder: not a lock mcpx made, and reading a FIFO would block.
    const found = await fsp.lstat(file).catch(() => undefined);
    if (found && !found.isFile()) {
      const target = found.isSymbolicLink() ? ` (to ${JSON.stringify(await fsp.readlink(file).catch(() => '?'))})` : '';
      throw new McpxError('MCPX_BAD_SETTING', `the daemon lock ${file} is ${fileKind(found)}${target}, not a lock file mcpx made; remove it`, {
        data: { stateDir, path: file },
      });
    }
    let text: string;
    let mtimeMs: number;
    try {
      text = await readFile(file, 'utf8');
      mtimeMs = (await stat(file)).mtimeMs;
    } catch (err) {
      if (errCode(err) === 'ENOENT') continue; // released meanwhile
      throw err;
    }
    const holder = parseLock(text);
    if (holder && pidAlive(holder.pid)) {
      const holderSocket = holder.socket ?? socket;
      if (await socketAnswers(holderSocket)) throw new DaemonRunningError(holder.pid, holderSocket, stateDir);
      const age = Date.now() - mtimeMs;
      const young = age < 10_000 && age > -10_000; // dated in the future (a clock set back): it would never age

      if (young) throw new DaemonRunningError(holder.pid, holderSocket, stateDir, '(it is starting up)');
      if (looksLikeDaemon(holder.pid) !== false) {
        throw new DaemonRunningError(holder.pid, holderSocket, stateDir, `(but it does not answer; if it is stuck, end it with kill ${holder.pid})`);
      }
      // pid reused by something else: the lock is stale
    } else if (text.trim() === '' && Math.abs(Date.now() - mtimeMs) < EMPTY_LOCK_MS && Date.now() < emptyDeadline) {
      // Being written right now by a starting daemon: it has until the lock is a second old. Waiting for
      // that is not a failed attempt (10 × 50 ms ran out long before, and the start failed or took 2.4 s).
      await new Promise((r) => setTimeout(r, 50));
      attempt -= 1;
      continue;
    }
    if (await moveAsideIfUnchanged(fs, file, text, stateDir)) {
      cleaned.push(file);
      const leftSocket = holder?.socket;
      if (
        leftSocket &&
        (await stat(leftSocket).then(
          (s) => s.isSocket(),
          () => false,
        )) &&
        !(await socketAnswers(leftSocket, 200))
      ) {
        await rm(leftSocket, { force: true }).catch(() => undefined);
        cleaned.push(leftSocket);
      }
      const leftJson = join(stateDir, DAEMON_JSON);
      if (existsSync(leftJson)) {
        await rm(leftJson, { force: true }).catch(() => undefined);
        cleaned.push(leftJson);
      }
    }
  }
  throw new McpxError('MCPX_DAEMON_RUNNING', `could not take the daemon lock ${file}: another daemon keeps taking it`, { data: { file } });
}

/** Moves a stale lock aside, checking it is still the one judged stale; a fresh one is put back. */
async function moveAsideIfUnchanged(fs: StateFs, file: string, judged: string, stateDir: string): Promise<boolean> {
  const { readFile, rename, link, rm } = fs;
  const aside = `${file}.${process.pid}-${randomUUID().slice(0, 8)}.stale`;
  try {
    await rename(file, aside);
  } catch (err) {
    if (errCode(err) === 'ENOENT') return false; // someone else moved it first
    // EACCES, EPERM, EROFS…: retrying cannot help, and "another daemon keeps taking it" would be a lie
    throw new StateFolderError('move aside the stale daemon lock', file, stateDir, err);
  }
  try {
    if ((await readFile(aside, 'utf8')) !== judged) {
      await link(aside, file).catch(() => undefined);
      return false;
    }
    return true;
  } finally {
    await rm(aside, { force: true }).catch(() => undefined);
  }
}

/** Writes a file atomically with mode 0600 (temp file in the same folder, then rename). */
export async function writePrivateFile(file: string, text: string): Promise<void> {
  await writeFileAtomic(file, text, { mode: 0o600 });
}

export async function writeDaemonFile(stateDir: string, info: DaemonFile): Promise<void> {
  await writePrivateFile(join(stateDir, DAEMON_JSON), `${JSON.stringify(info, null, 2)}\n`);
}

/** A state file that could not be removed, and why. */
export interface FileLeft {
  path: string;
  /** The errno (`EACCES`, `EROFS`, …), when the failure had one. */
  errno: string | null;
  reason: string;
}

/**
 * Removes what a daemon leaves in its state folder — `daemon.lock`, `daemon.json`, the socket — as far as
 * they are the daemon `pid`'s (the lock and daemon.json name it; the socket is removed only with the
 * lock, and only while nothing answers on it). Never throws: returns what it removed and what it could
 * not, with the errno. Files that are gone, or belong to another daemon, are in neither list.
 */
export async function removeDaemonFiles(
  stateDir: string,
  socket: string,
  pid: number,
  fs: StateFs = nodeStateFs,
): Promise<{ removed: string[]; left: FileLeft[] }> {
  const removed: string[] = [];
  const left: FileLeft[] = [];
  const pidIn = async (file: string, parse: (text: string) => number | undefined): Promise<number | undefined | null> => {
    try {
      return parse(await fs.readFile(file, 'utf8'));
    } catch (err) {
      return errCode(err) === 'ENOENT' ? null : undefined; // null: gone; undefined: unreadable (try anyway)
    }
  };
  const remove = async (file: string) => {
    try {
      await fs.stat(file);
    } catch (err) {
      if (errCode(err) === 'ENOENT') return;
    }
    try {
      await fs.rm(file, { force: true });
      removed.push(file);
    } catch (err) {
      left.push({ path: file, errno: errCode(err) ?? null, reason: errnoText(err) });
    }
  };
  const jsonFile = join(stateDir, DAEMON_JSON);
  const jsonPid = await pidIn(jsonFile, (t) => (JSON.parse(t) as { pid?: unknown }).pid as number);
  if (jsonPid !== null && (jsonPid === undefined || jsonPid === pid)) await remove(jsonFile);
  const lockFile = join(stateDir, LOCK_FILE);
  const lockPid = await pidIn(lockFile, (t) => parseLock(t)?.pid);
  if (lockPid === null || lockPid === undefined || lockPid === pid) {
    if (!(await socketAnswers(socket, 200))) await remove(socket);
    if (lockPid !== null) await remove(lockFile);
  }
  return { removed, left };
}

/** One line naming each file left and why: `/s/daemon.lock (EACCES (permission denied)), …`. */
export function describeFilesLeft(left: FileLeft[]): string {
  return left.map((f) => `${f.path} (${f.reason})`).join(', ');
}
