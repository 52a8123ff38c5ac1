/**
 * `mcpx logs [-f]`: the log of the daemon a client command started in the background
 * (`<state>/daemon.log`, JSON lines), readable: time, level, message and the line's other fields.
 * `--json` prints the lines as written. `-f` keeps printing what is appended until Ctrl-C. Needs no
 * daemon and starts none. A daemon run with `mcpx daemon` logs to its own terminal, not here.
 */
import type { Command } from 'commander';
import { constants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { McpxError } from '../../errors.js';
import { out, target, UsageError, withTarget, type CommonOpts } from '../common.js';

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
/** Fields every line has, or that the time, level and message columns already show. */
const SHOWN = new Set(['level', 'time', 'msg', 'daemon', 'pid', 'hostname']);
const POLL_MS = 200;

/** One log line as a person reads it; a line that is not JSON (a crash's stderr) as it is. */
export function readableLine(line: string, json: boolean): string {
  if (json) return line;
  let rec: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(line);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return line;
    rec = parsed as Record<string, unknown>;
  } catch {
    return line;
  }
  const time = typeof rec['time'] === 'number' ? new Date(rec['time']).toISOString() : '-';
  const level = typeof rec['level'] === 'number' ? (LEVELS[rec['level']] ?? String(rec['level'])) : '-';
  const rest = Object.entries(rec)
    .filter(([k]) => !SHOWN.has(k))
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  return `${time} ${level.padEnd(5)} ${typeof rec['msg'] === 'string' ? rec['msg'] : ''}${rest.length > 0 ? `  ${rest.join(' ')}` : ''}`;
}

/** The log, opened for reading: never through a symlink, never a FIFO or device (opened without blocking, then refused). */
async function openLog(file: string): Promise<FileHandle | undefined> {
  let h: FileHandle;
  try {
    h = await open(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOFOLLOW ?? 0));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP' || code === 'EMLINK')
      throw new McpxError('MCPX_NOT_FOUND', `the daemon log ${file} is a symbolic link; mcpx does not read through it`);
    throw err;
  }
  if (!(await h.stat()).isFile()) {
    await h.close();
    throw new McpxError('MCPX_NOT_FOUND', `the daemon log ${file} is not a regular file`);
  }
  return h;
}

/** Reads `h` from `from` to its end; returns the text and the new offset. */
async function readFrom(h: FileHandle, from: number): Promise<{ text: string; at: number }> {
  const size = (await h.stat()).size;
  if (size <= from) return { text: '', at: size < from ? 0 : from };
  const buf = Buffer.alloc(size - from);
  const { bytesRead } = await h.read(buf, 0, buf.length, from);
  return { text: buf.subarray(0, bytesRead).toString('utf8'), at: from + bytesRead };
}

export function register(program: Command): void {
  withTarget(
    program
      .command('logs')
      .description('the log of the daemon a client command started in the background (<state>/daemon.log); -f follows it')
      .option('-f, --follow', 'keep printing what is appended, until Ctrl-C')
      .option('-n, --lines <n>', 'how many of the last lines to print first (0: none; "all")', '50')
      .option('--json', 'print the log lines as written (JSON lines)'),
  ).action(async (o: CommonOpts & { follow?: boolean; lines: string }) => {
    const lines = o.lines === 'all' ? Infinity : Number(o.lines);
    if (!(lines === Infinity || (Number.isInteger(lines) && lines >= 0)))
      throw new UsageError(`--lines must be a whole number or "all", not ${JSON.stringify(o.lines)}`);
    const t = await target(o);
    const file = join(t.stateDir, 'daemon.log');
    const json = o.json === true;
    let h = await openLog(file);
    if (!h && !o.follow) {
      out(`no daemon log at ${file}: a daemon started in the background by a client command writes one there (mcpx daemon logs to its own terminal)`);
      return;
    }
    let at = 0;
    let partial = '';
    const print = (text: string, tail?: number) => {
      const all = (partial + text).split('\n');
      partial = all.pop() ?? '';
      const shown = tail === undefined ? all : tail === 0 ? [] : all.slice(-tail);
      for (const line of shown) if (line.trim() !== '') out(readableLine(line, json));
    };
    if (h) {
      const first = await readFrom(h, 0);
      at = first.at;
      print(first.text, lines);
    }
    if (!o.follow) {
      if (partial.trim() !== '') out(readableLine(partial, json));
      await h?.close();
      return;
    }
    // Following: until Ctrl-C (or SIGTERM); a log cut short (truncated) is read again from its start.
    await new Promise<void>((resolve) => {
      let busy = false;
      const timer = setInterval(() => {
        if (busy) return;
        busy = true;
        void (async () => {
          try {
            h ??= await openLog(file);
            if (!h) return;
            const next = await readFrom(h, at);
            if (next.at < at) partial = '';
            at = next.at;
            print(next.text);
          } catch {
            // the file went away or cannot be read this moment: the next poll tries again
            await h?.close().catch(() => undefined);
            h = undefined;
            at = 0;
          } finally {
            busy = false;
          }
        })();
      }, POLL_MS);
      const stop = () => {
        clearInterval(timer);
        resolve();
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    await h?.close();
  });
}
