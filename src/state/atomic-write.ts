/**
 * The one way mcpx replaces a file it writes (client files, its config, its state files): a temp file in
 * the same folder, then a rename over the file.
 *
 * The temp file is opened `O_CREAT | O_EXCL | O_NOFOLLOW` under a random name (another name on EEXIST),
 * so nothing planted in a folder others can write — a symlink under the next name, to a file of the
 * user's elsewhere — is ever opened, truncated or chmod-ed: the open fails instead. The mode is set on
 * the open descriptor (never by path), then the data, fsync, close, and the rename. A temp file that
 * could not be finished (a full disk) is removed, not left behind empty.
 */
import { closeSync, constants, fchmodSync, fsyncSync, openSync, promises as fsp, renameSync, unlinkSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';

const CREATE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0);
/** Names tried before giving up: a clash of 64 random bits is someone planting names, not chance. */
const ATTEMPTS = 8;

/** `.<name>.mcpx-<16 hex>.tmp` beside `file`. */
export function tempPath(file: string): string {
  return join(dirname(file), `.${basename(file)}.mcpx-${randomBytes(8).toString('hex')}.tmp`);
}

export interface AtomicWriteOptions {
  /** The file's mode (set on the descriptor, whatever the umask). */
  mode: number;
  /**
   * Called once the temp file is written and synced, just before the rename: throwing stops the write
   * (the temp file is removed and the file is left as it is). Where a check that the file is still what
   * the edit was made from goes: as close to the rename as it can be.
   */
  beforeRename?: () => void;
}

function isExists(err: unknown): boolean {
  return (err as NodeJS.ErrnoException).code === 'EEXIST';
}

/** Replaces `file` with `data`. @throws the errno error of the step that failed (the file unchanged). */
export function writeFileAtomicSync(file: string, data: string | Uint8Array, opts: AtomicWriteOptions): void {
  let tmp = '';
  let fd: number | undefined;
  for (let i = 0; fd === undefined; i++) {
    tmp = tempPath(file);
    try {
      fd = openSync(tmp, CREATE, opts.mode & 0o777);
    } catch (err) {
      if (!isExists(err) || i + 1 >= ATTEMPTS) throw err;
    }
  }
  try {
    try {
      fchmodSync(fd, opts.mode); // the umask may have narrowed it
      const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
      for (let off = 0; off < buf.length;) off += writeSync(fd, buf, off, buf.length - off);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    opts.beforeRename?.();
    renameSync(tmp, file);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      // gone already
    }
    throw err;
  }
}

/** `writeFileAtomicSync` for the daemon: the same steps, without blocking the event loop. */
export async function writeFileAtomic(file: string, data: string | Uint8Array, opts: AtomicWriteOptions): Promise<void> {
  let tmp = '';
  let h: fsp.FileHandle | undefined;
  for (let i = 0; h === undefined; i++) {
    tmp = tempPath(file);
    try {
      h = await fsp.open(tmp, CREATE, opts.mode & 0o777);
    } catch (err) {
      if (!isExists(err) || i + 1 >= ATTEMPTS) throw err;
    }
  }
  try {
    try {
      await h.chmod(opts.mode);
      await h.writeFile(data);
      await h.sync();
    } finally {
      await h.close();
    }
    opts.beforeRename?.();
    await fsp.rename(tmp, file);
  } catch (err) {
    await fsp.rm(tmp, { force: true }).catch(() => undefined);
    throw err;
  }
}
