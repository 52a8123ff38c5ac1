/**
 * The log of call records (`call finished` lines), written a turn at a time.
 */
import { pino } from 'pino';
import type { Logger } from '../log.js';

/** A logger whose lines wait until `flush()` writes them together. */
export interface RecordLog {
  logger: Logger;
  flush(): void;
  /** Follows the daemon's `log.level` (a record is an info line). */
  setLevel(level: string): void;
}

/** How long a record line may wait in the buffer: a log line, read by people and by `tail`. */
export const RECORD_FLUSH_MS = 100;

/**
 * The `call finished` lines' logger: the daemon's level, base and scrubber, without its redaction paths
 * (a record's fields are names, numbers and codes, never a header, env or token; pino's wildcard paths
 * cost a walk of every line). Its lines wait in a buffer that is written to the log stream in one write,
 * at most `flushMs` after the first of them (and at once by `flush()`: the daemon's stop, its exit).
 * Under load that is one write for hundreds of calls instead of one per call; the synchronous write per
 * line was about 7 % of the daemon's CPU per call. Lines stay whole and in order; each carries its time.
 */
export function makeRecordLog(
  level: string,
  base: Record<string, unknown>,
  hooks: { streamWrite: (s: string) => string },
  stream: { write(chunk: string): unknown },
  flushMs = RECORD_FLUSH_MS,
): RecordLog {
  let pending = '';
  let timer: NodeJS.Timeout | undefined;
  const flush = (): void => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (pending.length === 0) return;
    const chunk = pending;
    pending = '';
    stream.write(chunk);
  };
  const buffer = {
    write: (line: string) => {
      pending += line;
      // unref: a pending line never keeps the process alive; stop and exit flush it.
      timer ??= setTimeout(flush, flushMs).unref();
    },
  };
  const logger = pino({ level, base, hooks }, buffer).child({ component: 'daemon' });
  return { logger, flush, setLevel: (l) => void (logger.level = l) };
}
