/**
 * Calls on a server's pool, and their outcomes: upstream and tool failures come back as `{ok:false}`
 * with a stable code; each finished tool call is recorded (./call-records.ts).
 */
import { newCall, type Call } from '../call/call.js';
import { McpxError } from '../errors.js';
import type { Lane } from '../machines/preference.js';
import type { ServerPool } from '../pool/server-pool.js';
import type { CallRecords } from './call-records.js';
import type { CallOutcome } from './views.js';

export interface CallsDeps {
  /** Runs `fn` on the pool of the call's server (in the caller's config), counted as in flight (see Reconciler.withPool). */
  withPool<T>(call: Call, fn: (pool: ServerPool) => Promise<T>): Promise<T>;
  records: CallRecords;
  /** Refuses a call before it is sent (throws its McpxError): a tool the config filters out, or one held. */
  admit?(call: Call, lane: Lane): void;
}

function errorOf(err: unknown): { code: string; message: string; data?: Record<string, unknown> } {
  if (err instanceof McpxError) return err.toJSON();
  return { code: 'MCPX_INTERNAL', message: err instanceof Error ? err.message : String(err) };
}

/**
 * A call that outran the caller's own timeout, said with the server and tool that gave no answer (the
 * transport knows only the method, and the time that was left when the request went out).
 */
function callerTimeout(err: unknown, call: Call): unknown {
  const { server, timeoutMs } = call;
  if (!(err instanceof McpxError) || err.code !== 'MCPX_REQUEST_TIMEOUT' || timeoutMs === undefined) return err;
  const tool = String(call.params['name'] ?? '');
  const phase = / — (timed out .*)$/.exec(err.message)?.[1];
  return new McpxError(
    'MCPX_REQUEST_TIMEOUT',
    `${server}: tool "${tool}" got no answer within ${timeoutMs} ms (the call's timeout${phase ? `; ${phase}` : ''})`,
    {
      cause: err,
      data: { ...err.data, server, tool, timeoutMs },
    },
  );
}

function textOfResult(result: Record<string, unknown>): string {
  const content = result['content'];
  if (Array.isArray(content)) {
    const texts = content.filter(
      (c): c is { type: string; text: string } =>
        typeof c === 'object' && c !== null && (c as { type?: unknown }).type === 'text' && typeof (c as { text?: unknown }).text === 'string',
    );
    if (texts.length > 0) return texts.map((t) => t.text).join('\n');
  }
  return 'the tool reported an error';
}

export class Calls {
  constructor(private readonly deps: CallsDeps) {}

  /**
   * A tool call of the HTTP API (`/v1/call`, asks): upstream and tool failures come back as `{ok:false}`
   * with a stable code (a result with `isError: true` is MCPX_TOOL_ERROR, the result in `data.result`).
   * @throws McpxError MCPX_UNKNOWN_SERVER; MCPX_BAD_REQUEST (e.g. a session-scoped server and no session).
   */
  call(call: Call): Promise<CallOutcome> {
    return this.run(call, true);
  }

  /**
   * A relayed request (`/v1/request`, an MCP client's through `/mcp` and `mcpx serve`): the result is the
   * upstream's own (an `isError` tool result is `ok: true`: the caller shows it as it is).
   */
  request(call: Call): Promise<CallOutcome> {
    return this.run(call, false);
  }

  private async run(call: Call, toolErrors: boolean): Promise<CallOutcome> {
    const started = Date.now();
    // Entries name their calls (newCall); one made without a name gets one here, for its record.
    const named: Call = call.id === undefined ? newCall(call) : call;
    const recorded = named.method === 'tools/call';
    let lane: Lane | undefined;
    let outcome: CallOutcome;
    try {
      const result = await this.deps.withPool(named, (pool) => {
        lane = pool.laneFor(named);
        this.deps.admit?.(named, lane);
        return pool.run(named);
      });
      outcome =
        toolErrors && result['isError'] === true
          ? {
              ok: false,
              error: {
                code: 'MCPX_TOOL_ERROR',
                message: `${named.server}/${String(named.params['name'])}: ${textOfResult(result)}`,
                data: { server: named.server, tool: named.params['name'], result },
              },
            }
          : { ok: true, result };
    } catch (err) {
      if (err instanceof McpxError && (err.code === 'MCPX_UNKNOWN_SERVER' || err.code === 'MCPX_BAD_REQUEST')) {
        if (toolErrors) this.deps.records.finished(named, started, { ok: false, error: err.toJSON() }, lane);
        throw err;
      }
      outcome = { ok: false, error: errorOf(toolErrors ? callerTimeout(err, named) : err) };
    }
    if (recorded) this.deps.records.finished(named, started, outcome, lane);
    return outcome;
  }
}
