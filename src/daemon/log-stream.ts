/**
 * The daemon's log destination: synchronous writes to a file descriptor (stdout: `<state>/daemon.log`
 * for a daemon the CLI started) that never throw. pino's own destination throws a write error (ENOSPC on
 * a full disk, EIO, EFBIG) from inside the log call, and a log line is then enough to end the daemon and
 * every call in flight. Here a line that cannot be written is dropped, counted, and the count is said in
 * one line once writing works again.
 */
import { writeSync } from 'node:fs';

const ERRNO_TEXT: Record<string, string> = {
  ENOSPC: 'no space left on device',
  EIO: 'input/output error',
  EFBIG: 'file too large',
  EDQUOT: 'disk quota exceeded',
  EPIPE: 'broken pipe',
  EBADF: 'bad file descriptor',
};

/** A short blocking pause (EAGAIN on a non-blocking pipe): what pino's sync destination does too. */
const pause = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

export interface SafeLogStream {
  write(chunk: string): boolean;
  /** Lines dropped since the last successful write (tests, and the note). */
  readonly dropped: number;
}

/** Writes all of `buf` or throws; retries EAGAIN for up to ~1 s. Returns the bytes written before a throw via the error's `written`. */
function writeAll(fd: number, buf: Buffer): void {
  let off = 0;
  let waits = 0;
  while (off < buf.length) {
    try {
      off += writeSync(fd, buf, off, buf.length - off);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EAGAIN' && waits < 1_000) {
        waits += 1;
        pause(1);
        continue;
      }
      throw Object.assign(err as Error, { written: off });
    }
  }
}

export function safeLogStream(fd: number, base: Record<string, unknown>): SafeLogStream {
  let dropped = 0;
  let reason = '';
  /** A line was cut short by the failure: the next write starts on a new line. */
  let cut = false;
  const stream = {
    get dropped() {
      return dropped;
    },
    write(chunk: string): boolean {
      try {
        if (dropped > 0) {
          const note = JSON.stringify({
            level: 40,
            time: Date.now(),
            ...base,
            component: 'daemon',
            dropped,
            msg: `dropped ${dropped} log line(s): the log could not be written (${reason})`,
          });
          writeAll(fd, Buffer.from(`${cut ? '\n' : ''}${note}\n`));
          cut = false;
          dropped = 0;
        }
        writeAll(fd, Buffer.from(`${cut ? '\n' : ''}${chunk}`));
        cut = false;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        reason = code ? (ERRNO_TEXT[code] ? `${code} (${ERRNO_TEXT[code]})` : code) : String(err);
        if (((err as { written?: number }).written ?? 0) > 0) cut = true;
        dropped += (chunk.match(/\n/g)?.length ?? 0) || 1;
      }
      return true;
    },
  };
  return stream;
}
