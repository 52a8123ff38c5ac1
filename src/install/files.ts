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
  fsyncSync,
  unlinkSync,
  readFileSync,
  statSync,
  realpathSync,
  renameSync,
  chmodSync,
  mkdirSync,
  copyFileSync,
  existsSync,
  accessSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { createHash } from 'node:crypto';
import { McpxError } from '../errors.js';

export function sha256(text: string | Buffer): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The file's text, or undefined when it does not exist. */
export function readIfExists(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new McpxError('MCPX_INSTALL_IO', `${file}: cannot read it: ${(err as Error).message}`, { data: { file } });
  }
}

/** Symlinked dotfiles are common: write the file the link points at, keep the link. */
export function realTarget(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return file;
  }
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

/** Runs `fn` holding `<file>.mcpx.lock` (O_EXCL; a lock whose pid is gone is taken over). */
export async function withLock<T>(file: string, fn: () => Promise<T> | T): Promise<T> {
  const lock = `${file}.mcpx.lock`;
  mkdirSync(dirname(lock), { recursive: true });
  const deadline = Date.now() + 5_000;
  for (;;) {
    try {
      const fd = openSync(lock, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST')
        throw new McpxError('MCPX_INSTALL_IO', `${lock}: cannot take the lock: ${(err as Error).message}`, { data: { file } });
      const holder = Number(readIfExists(lock) ?? '');
      if (!Number.isInteger(holder) || holder <= 0 || !pidAlive(holder)) {
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
  let backup = `${file}.mcpx-backup-${stamp}`;
  for (let i = 2; existsSync(backup); i++) backup = `${file}.mcpx-backup-${stamp}-${i}`;
  copyFileSync(file, backup, constants.COPYFILE_EXCL);
  return backup;
}

/**
 * Replaces `file` with `text` atomically. `expected` is the text the edit was made from: when the file no
 * longer holds it (the client wrote it meanwhile) nothing is written and the caller starts again.
 */
export function atomicWrite(file: string, text: string, expected: string | undefined): void {
  const target = realTarget(file);
  const now = readIfExists(target);
  if (now !== expected)
    throw new McpxError('MCPX_INSTALL_RACE', `${file} changed while mcpx was editing it (is the client writing it?); nothing was written, try again`, {
      data: { file },
    });
  mkdirSync(dirname(target), { recursive: true });
  const mode = existsSync(target) ? statSync(target).mode & 0o7777 : 0o600;
  const tmp = join(dirname(target), `.${basename(target)}.mcpx-${process.pid}.tmp`);
  try {
    const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC, mode);
    try {
      writeSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    chmodSync(tmp, mode); // the umask may have narrowed it
    renameSync(tmp, target);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      // never made
    }
    if (err instanceof McpxError) throw err;
    throw new McpxError('MCPX_INSTALL_IO', `${file}: cannot write it: ${(err as Error).message}`, { data: { file } });
  }
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
