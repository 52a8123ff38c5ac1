/**
 * The daemon's loggers: pino, pretty on a terminal and JSON otherwise, with known secret values scrubbed
 * from every line; and the `call finished` lines, buffered (../core/record-log.ts).
 */
import type { Writable } from 'node:stream';
import { pino, type Logger as PinoLogger } from 'pino';
import { safeLogStream } from './log-stream.js';
import { makeRecordLog, type RecordLog } from '../core/record-log.js';
import type { Scrubber } from '../core/secrets.js';

export interface DaemonLoggers {
  logger: PinoLogger;
  /** The `call finished` lines, buffered until flushed (see makeRecordLog); none for a terminal. */
  records: RecordLog | undefined;
}

export interface DaemonLogOptions {
  /** Where log lines go; default stdout (pretty on a TTY, JSON otherwise). */
  logStream?: Writable;
  /** Pretty logs; default: stdout is a TTY and no logStream was given. */
  prettyLogs?: boolean;
}

export async function makeLoggers(level: string, scrubber: Scrubber, opts: DaemonLogOptions): Promise<DaemonLoggers> {
  const usePretty = opts.prettyLogs ?? (opts.logStream === undefined && process.stdout.isTTY === true);
  // pino-pretty loads only for a terminal: a background daemon logs JSON to its file.
  const pretty = usePretty && !opts.logStream ? (await import('pino-pretty')).default : undefined;
  const base = { daemon: process.pid };
  // A line that cannot be written (a full disk) is dropped and counted, never thrown into the caller's code.
  const stream: Writable | pino.DestinationStream =
    opts.logStream ??
    (pretty ? pretty({ colorize: true, sync: true, singleLine: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'hostname,daemon' }) : safeLogStream(1, base));
  // Belt and braces: known secret values never reach a log line, whatever field they hide in.
  const hooks = { streamWrite: (s: string) => scrubber.scrub(s) };
  const logger = pino(
    {
      level,
      base,
      hooks,
      redact: {
        paths: ['req.headers.authorization', 'headers.authorization', 'token', '*.token', 'definition.env', 'definition.headers', 'env', 'headers'],
        censor: '<redacted>',
      },
    },
    stream as pino.DestinationStream,
  );
  return { logger, records: pretty ? undefined : makeRecordLog(level, base, hooks, stream) };
}
