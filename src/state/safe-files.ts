/**
 * Opening the state folder's files, and the daemon's socket, without trusting what is there.
 *
 * - `readRegularFile`: opens without blocking (a FIFO opened for reading blocks until a writer comes:
 *   a daemon start that never ends) and without following a last-component symlink, then refuses
 *   anything that is not a regular file, naming what it is, and a file larger than a bound (a 300 MB
 *   state file would otherwise be read whole, and `/dev/zero` behind a link never ends).
 * - `readRegularFileSync`: the same for the CLI's synchronous readers (other programs' files, which may
 *   be symlinked dotfiles: `follow`).
 * - `checkSocketTrust`: before a client speaks on the daemon socket, the socket and its folder must be
 *   this user's own and not writable by others. A socket planted by another user in a folder they made
 *   would otherwise receive every call's arguments, and answer with whatever it likes. Node gives no
 *   peer credentials (SO_PEERCRED) on a Unix socket: the socket file's owner is the next best thing, as
 *   only its binder (or root) can own it.
 *
 * Plain node:fs and nothing else: a CLI command loads this on every run.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, type Stats } from 'node:fs';
import { open } from 'node:fs/promises';
import { dirname } from 'node:path';
import { McpxError } from '../errors.js';

/** "a FIFO", "a folder", …: what a file that is not a regular one is. */
export function fileKind(s: Stats): string {
  if (s.isFile()) return 'a regular file';
  if (s.isDirectory()) return 'a folder';
  if (s.isFIFO()) return 'a FIFO (named pipe)';
  if (s.isSocket()) return 'a socket';
  if (s.isSymbolicLink()) return 'a symbolic link';
  if (s.isCharacterDevice()) return 'a character device';
  if (s.isBlockDevice()) return 'a block device';
  return 'not a regular file';
}

/** A state file that is not a regular file; `code` is ENOTREGULAR so callers can tell it from an errno. */
export class NotRegularFileError extends Error {
  readonly code = 'ENOTREGULAR';
  readonly path: string;
  readonly kind: string;
  constructor(path: string, kind: string) {
    super(`${path} is ${kind}, not a regular file`);
    this.path = path;
    this.kind = kind;
  }
}

const READ_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOFOLLOW ?? 0);

/** The largest state file read (bytes): the biggest real one (a tool catalog) is a few MB. */
export const STATE_FILE_MAX_BYTES = 64 * 1024 * 1024;

/** A file larger than the reader's bound; `code` EFBIG, as the kernel says for a file too large. */
export class FileTooLargeError extends Error {
  readonly code = 'EFBIG';
  readonly path: string;
  readonly size: number;
  readonly maxBytes: number;
  constructor(path: string, size: number, maxBytes: number) {
    super(`${path} is larger than mcpx reads (${size} bytes; at most ${maxBytes})`);
    this.path = path;
    this.size = size;
    this.maxBytes = maxBytes;
  }
}

function openError(err: unknown, path: string): unknown {
  // O_NOFOLLOW on a symlink: ELOOP on Linux, EMLINK on FreeBSD, EFTYPE on NetBSD.
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ELOOP' || code === 'EMLINK' || code === 'EFTYPE') return new NotRegularFileError(path, 'a symbolic link');
  if (code === 'EISDIR') return new NotRegularFileError(path, 'a folder');
  if (code === 'ENXIO') return new NotRegularFileError(path, 'a socket');
  return err;
}

/**
 * The text of `path`, a regular file that is not a symlink, of at most `maxBytes` (default STATE_FILE_MAX_BYTES).
 * @throws NotRegularFileError for a FIFO, socket, device, folder or symlink; FileTooLargeError; the errno for the rest (ENOENT…).
 */
export async function readRegularFile(path: string, opts: { maxBytes?: number } = {}): Promise<string> {
  const max = opts.maxBytes ?? STATE_FILE_MAX_BYTES;
  let h;
  try {
    h = await open(path, READ_FLAGS);
  } catch (err) {
    throw openError(err, path);
  }
  try {
    const s = await h.stat();
    if (!s.isFile()) throw new NotRegularFileError(path, fileKind(s));
    if (s.size > max) throw new FileTooLargeError(path, s.size, max);
    // Read at most max + 1 bytes: a file that grows while read is still bounded.
    const buf = Buffer.alloc(Math.min(s.size, max) + 1);
    let n = 0;
    for (;;) {
      const { bytesRead } = await h.read(buf, n, buf.length - n, n);
      if (bytesRead === 0) break;
      n += bytesRead;
      if (n === buf.length) {
        if (n > max) throw new FileTooLargeError(path, n, max);
        break;
      }
    }
    return buf.toString('utf8', 0, n);
  } finally {
    await h.close();
  }
}

export interface RegularFileText {
  text: string;
  /** dev, inode, size, mtime and ctime (ns) as read: a file replaced or written since has another. */
  identity: string;
}

/** dev:ino:size:mtime:ctime of a stat, in nanoseconds: what changes when a file is written or replaced. */
export function fileIdentity(s: import('node:fs').BigIntStats): string {
  return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
}

/**
 * `readRegularFile` for synchronous callers, with the file's identity. `follow`: a symlink is followed
 * (a dotfile kept elsewhere), but what it leads to must still be a regular file.
 * @throws as readRegularFile.
 */
export function readRegularFileSync(path: string, opts: { maxBytes?: number; follow?: boolean } = {}): RegularFileText {
  const max = opts.maxBytes ?? STATE_FILE_MAX_BYTES;
  let fd: number;
  try {
    fd = openSync(path, opts.follow ? constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) : READ_FLAGS);
  } catch (err) {
    throw openError(err, path);
  }
  try {
    const s = fstatSync(fd);
    if (!s.isFile()) throw new NotRegularFileError(path, fileKind(s));
    if (s.size > max) throw new FileTooLargeError(path, s.size, max);
    const buf = Buffer.alloc(Math.min(s.size, max) + 1);
    let n = 0;
    for (;;) {
      const got = readSync(fd, buf, n, buf.length - n, n);
      if (got === 0) break;
      n += got;
      if (n === buf.length) {
        if (n > max) throw new FileTooLargeError(path, n, max);
        break;
      }
    }
    return { text: buf.toString('utf8', 0, n), identity: fileIdentity(fstatSync(fd, { bigint: true })) };
  } finally {
    closeSync(fd);
  }
}

/** What is wrong with `s` as a folder or socket trusted by user `uid` (undefined: nothing). */
function untrusted(s: Stats, uid: number, what: string, path: string, opts: { stickyOk: boolean }): string | undefined {
  if (s.uid !== uid && !(opts.stickyOk && s.uid === 0)) return `${what} ${path} belongs to another user (uid ${s.uid})`;
  const writable = s.mode & 0o022;
  if (writable !== 0 && !(opts.stickyOk && (s.mode & 0o1000) !== 0)) {
    return `${what} ${path} is writable by ${writable & 0o002 ? 'every user' : 'its group'} (mode ${(s.mode & 0o7777).toString(8).padStart(4, '0')})`;
  }
  return undefined;
}

/** Sockets checked and found trusted, by path: a folder only its owner can write stays so. */
const trusted = new Set<string>();

/**
 * Refuses to speak on `socket` unless it and its folder (and the state folder, when the socket is
 * elsewhere) are this user's own and not writable by others. A socket folder writable by all is
 * accepted only when sticky and root's (`/tmp`): there no one else can replace a socket that is ours.
 * A socket that is missing passes (nothing to speak to; the daemon's start checks the folder, `folderOnly`).
 * @throws McpxError MCPX_UNSAFE_SOCKET naming the path and what is wrong.
 */
export function checkSocketTrust(socket: string, opts: { stateDir?: string; folderOnly?: boolean } = {}): void {
  const { stateDir } = opts;
  const uid = process.getuid?.();
  if (uid === undefined || trusted.has(socket)) return; // Windows: named pipes, no owners to compare
  const problems: string[] = [];
  const look = (path: string): Stats | undefined => {
    try {
      return lstatSync(path);
    } catch {
      return undefined;
    }
  };
  const folder = dirname(socket);
  const fs = look(folder);
  if (fs) {
    const p = untrusted(fs, uid, 'the socket folder', folder, { stickyOk: true });
    if (p) problems.push(p);
  }
  if (stateDir !== undefined && stateDir !== folder) {
    const ss = look(stateDir);
    const p = ss && untrusted(ss, uid, 'the state folder', stateDir, { stickyOk: false });
    if (p) problems.push(p);
  }
  const s = opts.folderOnly ? undefined : look(socket);
  if (s) {
    if (!s.isSocket()) problems.push(`the daemon socket ${socket} is ${fileKind(s)}, not a socket`);
    else {
      const p = untrusted(s, uid, 'the daemon socket', socket, { stickyOk: false });
      if (p) problems.push(p);
    }
  }
  if (problems.length > 0) {
    throw new McpxError(
      'MCPX_UNSAFE_SOCKET',
      `refusing to talk to the daemon: ${problems.join('; ')}. Another user could read every call and answer in the daemon's name; use a state folder of your own (--state-dir, MCPX_STATE_DIR; mcpx creates it 0700)`,
      { data: { socket, ...(stateDir === undefined ? {} : { stateDir }) } },
    );
  }
  if (s) trusted.add(socket);
}
