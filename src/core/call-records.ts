/**
 * The record of each finished call: the `call finished` log line and `call.finished` on /v1/events, made
 * once its answer has gone out (the caller should not wait for its log line to be formatted).
 */
import type { Logger } from '../log.js';
import { REDACTED } from '../redaction.js';
import type { Lane } from '../machines/preference.js';
import { subjectOf, type Call } from '../call/call.js';
import type { EventHub } from './events.js';
import type { RecordLog } from './record-log.js';
import type { CallOutcome } from './views.js';

/** How many finished calls `recent()` keeps (the `mcpx ui` page's recent calls), and how long an argument preview may be. */
export const RECENT_CALLS = 50;
const PREVIEW_CHARS = 200;

/** Who made a call: the /v1 API (`mcpx call`) or an MCP client through a front. */
export type CallVia = 'api' | 'mcp';

/** A finished call as the page shows it: no session id, arguments as a scrubbed, clipped preview. */
export interface RecentCall {
  at: string;
  via: CallVia;
  callerProtocol?: string;
  server: string;
  tool: string;
  ok: boolean;
  ms: number;
  code?: string;
  message?: string;
  args?: string;
}

/** Secret-looking argument names (`password`, `api_key`, `token`…): their values are never shown, known or not. */
const SECRET_NAME = /key|token|secret|pass|auth|sig|cred|session|cookie/i;

function hideSecretNames(value: unknown, depth = 0): unknown {
  if (depth > 6 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => hideSecretNames(v, depth + 1));
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, SECRET_NAME.test(k) ? REDACTED : hideSecretNames(v, depth + 1)]),
  );
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

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
  private readonly ring: RecentCall[] = [];

  constructor(
    /** Writes the `call finished` lines (see recordLogger). */
    private readonly recordLog: Pick<RecordLog, 'logger' | 'flush'>,
    private readonly hub: EventHub,
    /** Blanks known secrets (the daemon's scrubber) in what `recent()` keeps. */
    private readonly scrub: (text: string) => string = (t) => t,
  ) {}

  /** The last RECENT_CALLS finished calls, oldest first. */
  recent(): RecentCall[] {
    return [...this.ring];
  }

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

  /** A tool call that finished (or failed before it reached its server): one record. */
  finished(call: Call, started: number, outcome: CallOutcome, lane: Lane | undefined): void {
    const ms = Date.now() - started;
    const ok = outcome.ok;
    const code = outcome.ok ? undefined : outcome.error.code;
    const { server, callerProtocol } = call;
    const tool = subjectOf(call);
    const via: CallVia = call.via ?? 'api';
    this.keep({ server, tool, ok, ms, code, callerProtocol, via, args: call.params['arguments'], message: outcome.ok ? undefined : outcome.error.message });
    // One timer per turn for every call answered in it, not one per call.
    if (this.pending.push({ server, tool, ok, ms, code, lane, callerProtocol }) === 1) setImmediate(this.write);
  }

  // Scrubbed and clipped when kept: the ring never holds a known secret, a secret-named argument or a long value.
  private keep(c: {
    server: string;
    tool: string;
    ok: boolean;
    ms: number;
    code?: string | undefined;
    callerProtocol?: string | undefined;
    via: CallVia;
    args: unknown;
    message?: string | undefined;
  }): void {
    let args: string | undefined;
    if (c.args !== undefined) {
      try {
        args = clip(this.scrub(JSON.stringify(hideSecretNames(c.args)) ?? ''), PREVIEW_CHARS);
      } catch {
        args = '(not shown)';
      }
    }
    this.ring.push({
      at: new Date().toISOString(),
      via: c.via,
      ...(c.callerProtocol ? { callerProtocol: clip(this.scrub(c.callerProtocol), 40) } : {}),
      server: c.server,
      tool: clip(this.scrub(c.tool), 120),
      ok: c.ok,
      ms: c.ms,
      ...(c.code ? { code: c.code } : {}),
      ...(c.message ? { message: clip(this.scrub(c.message), PREVIEW_CHARS) } : {}),
      ...(args !== undefined ? { args } : {}),
    });
    if (this.ring.length > RECENT_CALLS) this.ring.shift();
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
