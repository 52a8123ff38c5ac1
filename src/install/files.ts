/**
 * Writing other programs' files safely: a lock beside the file, a timestamped backup before mcpx first
 * changes it, an atomic replace (temp file in the same folder, fsync, rename) that keeps the file's mode,
 * and a read-only file left alone. Installers that skip these have wiped users' settings (docs/clients.md).
 */
import {
  constants,
  openSync,
  closeSync,
  writeSync,
  unlinkSync,
  lstatSync,
  statSync,
  realpathSync,
  mkdirSync,
  copyFileSync,
  existsSync,
  accessSync,
} from 'node:fs';
import { dirname } from 'node:path';
import { createHash } from 'node:crypto';
import { McpxError } from '../errors.js';
import { writeFileAtomicSync } from '../state/atomic-write.js';
import { FileTooLargeError, fileIdentity, NotRegularFileError, readRegularFileSync, type RegularFileText } from '../state/safe-files.js';

export function sha256(text: string | Buffer): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The largest client file read (bytes): `~/.claude.json` grows to tens of MB with history. */
export const CLIENT_FILE_MAX_BYTES = 128 * 1024 * 1024;

/** The file's text and identity, or undefined when it does not exist. Regular files only, bounded, never blocking. */
export function readClientFile(file: string): RegularFileText | undefined {
  try {
    return readRegularFileSync(file, { follow: true, maxBytes: CLIENT_FILE_MAX_BYTES });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    // A FIFO would block the read until a writer comes, /dev/zero never ends: neither is a config file.
    if (err instanceof NotRegularFileError)
      throw new McpxError('MCPX_INSTALL_IO', `${file} is ${err.kind}, not a regular file; mcpx reads and writes only regular files`, { data: { file } });
    if (err instanceof FileTooLargeError)
      throw new McpxError('MCPX_INSTALL_IO', `${file} is ${err.size} bytes, more than mcpx reads (${err.maxBytes}); mcpx leaves it as it is`, {
        data: { file },
      });
    throw new McpxError('MCPX_INSTALL_IO', `${file}: cannot read it: ${(err as Error).message}`, { data: { file } });
  }
}

/** The file's text, or undefined when it does not exist (see readClientFile). */
export function readIfExists(file: string): string | undefined {
  return readClientFile(file)?.text;
}

/** Symlinked dotfiles are common: write the file the link points at, keep the link. */
export function realTarget(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return file;
  }
}

/**
 * Refuses a symlink another user made (root's aside): in a folder others can write, such a link at
 * `.mcp.json` would have mcpx edit whatever file of the user's it points at.
 */
export function assertOwnLink(file: string): void {
  const uid = process.getuid?.();
  if (uid === undefined) return;
  let st;
  try {
    st = lstatSync(file);
  } catch {
    return;
  }
  if (st.isSymbolicLink() && st.uid !== uid && st.uid !== 0)
    throw new McpxError(
      'MCPX_INSTALL_UNSAFE',
      `${file} is a symbolic link another user (uid ${st.uid}) made: mcpx does not write through it (remove it, or make the file yourself)`,
      { data: { file, uid: st.uid } },
    );
}

/** Refuses a file its owner made read-only (root could write it anyway; the user meant it not to be). */
export function assertWritable(file: string): void {
  if (!existsSync(file)) return;
  const st = statSync(file);
  let denied = (st.mode & 0o222) === 0;
  try {
    accessSync(file, constants.W_OK);
  } catch {
    denied = true;
  }
  if (denied) throw new McpxError('MCPX_INSTALL_READ_ONLY', `${file} is read-only: mcpx leaves it as it is (make it writable to install)`, { data: { file } });
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The pid in a lock file (undefined: gone, empty, or not a regular file of a few bytes). */
function lockHolder(lock: string): number | undefined {
  try {
    const n = Number(readRegularFileSync(lock, { maxBytes: 64 }).text.trim());
    return Number.isInteger(n) && n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

/** Runs `fn` holding `<file>.mcpx.lock` (O_EXCL; a lock whose pid is gone is taken over). */
export async function withLock<T>(file: string, fn: () => Promise<T> | T): Promise<T> {
  const lock = `${file}.mcpx.lock`;
  mkdirSync(dirname(lock), { recursive: true });
  const deadline = Date.now() + 5_000;
  for (;;) {
    try {
      const fd = openSync(lock, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0), 0o600);
      try {
        writeSync(fd, String(process.pid));
      } catch (err) {
        closeSync(fd);
        unlinkSync(lock); // made but not written (a full disk): no empty lock left behind
        throw err;
      }
      closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST')
        throw new McpxError('MCPX_INSTALL_IO', `${lock}: cannot take the lock: ${(err as Error).message}`, { data: { file } });
      const holder = lockHolder(lock);
      if (holder === undefined || !pidAlive(holder)) {
        try {
          unlinkSync(lock);
        } catch {
          // another process took it over first
        }
        continue;
      }
      if (Date.now() > deadline)
        throw new McpxError('MCPX_INSTALL_LOCKED', `${file} is locked by process ${holder} (${lock}); try again when it ends`, { data: { file, pid: holder } });
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  try {
    return await fn();
  } finally {
    try {
      unlinkSync(lock);
    } catch {
      // already gone
    }
  }
}

/** `<file>.mcpx-backup-20261202T010407Z` (a counter is added if that second is taken). */
export function backupFile(file: string, now = new Date()): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  // COPYFILE_EXCL creates the copy O_EXCL: a name taken (or a link planted under it) means the next one.
  for (let i = 1; ; i++) {
    const backup = i === 1 ? `${file}.mcpx-backup-${stamp}` : `${file}.mcpx-backup-${stamp}-${i}`;
    try {
      copyFileSync(file, backup, constants.COPYFILE_EXCL);
      return backup;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || i >= 100)
        throw new McpxError('MCPX_INSTALL_IO', `${file}: cannot back it up: ${(err as Error).message}`, { data: { file } });
    }
  }
}

function raceError(file: string, when: 'during' | 'after'): McpxError {
  let at = '';
  try {
    at = ` (last written ${statSync(file).mtime.toISOString()})`;
  } catch {
    // gone
  }
  const message =
    when === 'during'
      ? `${file} was changed by another program (the client?) while mcpx was writing it${at}; mcpx wrote nothing and kept that program's version`
      : `${file} was written by another program (the client?) right after mcpx wrote it${at}; that program's version stands, without mcpx's change`;
  return new McpxError('MCPX_INSTALL_RACE', message, { data: { file, when } });
}

export interface AtomicWriteOptions {
  /** The new file's mode; default: the file's own (0600 for a new one). */
  mode?: number;
}

/**
 * Replaces `file` with `text` atomically. `expected` is the text the edit was made from: when the file no
 * longer holds it (the client wrote it meanwhile) nothing is written and the caller starts again. The
 * file is compared before the temp file is written and again once it is, its identity (inode, size,
 * times) a last time just before the rename; a program that writes in the microseconds between that look
 * and the rename cannot be seen before (no exchanging rename in Node), so the file is read back after:
 * a write that landed right after mcpx's is reported, never passed off as done.
 */
export function atomicWrite(file: string, text: string, expected: string | undefined, opts: AtomicWriteOptions = {}): void {
  assertOwnLink(file);
  const target = realTarget(file);
  const now = readClientFile(target);
  if (now?.text !== expected) throw raceError(file, 'during');
  mkdirSync(dirname(target), { recursive: true });
  const mode = opts.mode ?? (now !== undefined ? statSync(target).mode & 0o7777 : 0o600);
  try {
    writeFileAtomicSync(target, text, {
      mode,
      beforeRename: () => {
        const again = readClientFile(target);
        if (again?.text !== expected) throw raceError(file, 'during');
        let id: string | undefined;
        try {
          id = fileIdentity(statSync(target, { bigint: true }));
        } catch {
          id = undefined;
        }
        if (id !== again?.identity) throw raceError(file, 'during');
      },
    });
  } catch (err) {
    if (err instanceof McpxError) throw err;
    throw new McpxError('MCPX_INSTALL_IO', `${file}: cannot write it: ${(err as Error).message}`, { data: { file } });
  }
  if (readClientFile(target)?.text !== text) throw raceError(file, 'after');
}

/** A unified-style diff of two texts by lines (common head and tail trimmed first: config edits are local). */
export function lineDiff(before: string, after: string, label: string): string {
  const split = (t: string): string[] => (t === '' ? [] : (t.endsWith('\n') ? t.slice(0, -1) : t).split('\n'));
  const a = split(before);
  const b = split(after);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const am = a.slice(head, a.length - tail);
  const bm = b.slice(head, b.length - tail);
  // LCS over the changed middle only.
  const n = am.length;
  const m = bm.length;
  const lines: string[] = [];
  if (n * m <= 4_000_000) {
    const dp: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
    for (let i = n - 1; i >= 0; i--)
      for (let j = m - 1; j >= 0; j--) dp[i]![j] = am[i] === bm[j] ? dp[i + 1]![j + 1]! + 1 : Math.max(dp[i + 1]![j]!, dp[i]![j + 1]!);
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && am[i] === bm[j]) {
        lines.push(` ${am[i]}`);
        i++;
        j++;
      } else if (i < n && (j >= m || dp[i + 1]![j]! >= dp[i]![j + 1]!)) lines.push(`-${am[i++]}`);
      else lines.push(`+${bm[j++]}`);
    }
  } else {
    for (const l of am) lines.push(`-${l}`);
    for (const l of bm) lines.push(`+${l}`);
  }
  const ctx = 3;
  const pre = a.slice(Math.max(0, head - ctx), head).map((l) => ` ${l}`);
  const post = a.slice(a.length - tail, Math.min(a.length, a.length - tail + ctx)).map((l) => ` ${l}`);
  const start = Math.max(0, head - ctx) + 1;
  const oldCount = pre.length + am.length + post.length;
  const newCount = pre.length + bm.length + post.length;
  return [`--- ${label}`, `+++ ${label} (after mcpx)`, `@@ -${start},${oldCount} +${start},${newCount} @@`, ...pre, ...lines, ...post].join('\n');
}
