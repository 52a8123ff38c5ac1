/**
 * The record of each finished call: the `call finished` log line and `call.finished` on /v1/events, made
 * once its answer has gone out (the caller should not wait for its log line to be formatted).
 */
import type { Logger } from '../log.js';
import type { Lane } from '../machines/preference.js';
import type { CallContext } from '../pool/types.js';
import type { EventHub } from './events.js';
import type { RecordLog } from './record-log.js';
import type { CallOutcome } from './views.js';

/** What the record of one finished call holds. */
interface CallRecord {
  server: string;
  tool: string;
  ok: boolean;
  ms: number;
  code: string | undefined;
  lane: Lane | undefined;
  callerProtocol: string | undefined;
}

/**
 * The logger of the `call finished` lines: the daemon's, without its redaction paths (a record's fields are
 * names, numbers and codes, never a header, env or token; pino's wildcard paths cost a walk of every line).
 * Known secret values are still scrubbed from every line the daemon's logger writes (its streamWrite hook).
 */
export function recordLogger(logger: Logger): Logger {
  return (logger as Logger & { child(bindings: Record<string, unknown>, options: { redact: string[] }): Logger }).child(
    { component: 'daemon' },
    { redact: [] },
  );
}

export class CallRecords {
  /** Call records not yet written: written together, once per turn of the event loop (and on stop). */
  private pending: CallRecord[] = [];

  constructor(
    /** Writes the `call finished` lines (see recordLogger). */
    private readonly recordLog: Pick<RecordLog, 'logger' | 'flush'>,
    private readonly hub: EventHub,
  ) {}

  /** Writes the records of the calls answered so far. */
  readonly write = (): void => {
    const batch = this.pending;
    this.pending = [];
    for (const r of batch) this.record(r);
  };

  /** Flushes the lines the record log still buffers. */
  flushLog(): void {
    this.recordLog.flush();
  }

  finished(server: string, tool: string, started: number, outcome: CallOutcome, lane: Lane | undefined, ctx: CallContext): void {
    const ms = Date.now() - started;
    const ok = outcome.ok;
    const code = outcome.ok ? undefined : outcome.error.code;
    const callerProtocol = ctx.callerProtocol;
    // One timer per turn for every call answered in it, not one per call.
    if (this.pending.push({ server, tool, ok, ms, code, lane, callerProtocol }) === 1) setImmediate(this.write);
  }

  private record({ server, tool, ok, ms, code, lane, callerProtocol }: CallRecord): void {
    this.recordLog.logger.info({ server, tool, ok, ms, ...(code ? { code } : {}), ...(lane ? { lane } : {}) }, 'call finished');
    this.hub.publish({
      type: 'call.finished',
      server,
      tool,
      ok,
      ms,
      ...(code ? { code } : {}),
      ...(lane ? { lane } : {}),
      ...(callerProtocol ? { callerProtocol } : {}),
    });
  }
}
