/**
 * Calls and relayed requests on a server's pool, and their outcomes: upstream and tool failures come back
 * as `{ok:false}` with a stable code; each finished tool call is recorded (./call-records.ts).
 */
import { McpxError } from '../errors.js';
import { RELAYED_METHODS, type RelayedMethod } from '../front/backend.js';
import type { Lane } from '../machines/preference.js';
import type { ServerPool } from '../pool/server-pool.js';
import type { CallContext } from '../pool/types.js';
import type { CallRecords } from './call-records.js';
import type { CallOutcome } from './views.js';

export interface CallsDeps {
  /** Runs `fn` on the server's pool, counted as in flight (see Reconciler.withPool). */
  withPool<T>(server: string, fn: (pool: ServerPool) => Promise<T>): Promise<T>;
  records: CallRecords;
}

function errorOf(err: unknown): { code: string; message: string; data?: Record<string, unknown> } {
  if (err instanceof McpxError) return err.toJSON();
  return { code: 'MCPX_INTERNAL', message: err instanceof Error ? err.message : String(err) };
}

/**
 * A call that outran the caller's own timeout, said with the server and tool that gave no answer (the
 * transport knows only the method, and the time that was left when the request went out).
 */
function callerTimeout(err: unknown, server: string, tool: string, timeoutMs: number | undefined): unknown {
  if (!(err instanceof McpxError) || err.code !== 'MCPX_REQUEST_TIMEOUT' || timeoutMs === undefined) return err;
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
  private nextCall = 0;

  constructor(private readonly deps: CallsDeps) {}

  /**
   * Calls a tool. Upstream and tool failures come back as `{ok:false}` with a stable code (a result
   * with `isError: true` is MCPX_TOOL_ERROR, the result in `data.result`).
   * @throws McpxError MCPX_UNKNOWN_SERVER; MCPX_BAD_REQUEST (e.g. a session-scoped server and no session).
   */
  async call(server: string, tool: string, args: Record<string, unknown>, ctx: CallContext = {}): Promise<CallOutcome> {
    const started = Date.now();
    const callId = ctx.callId ?? `call-${++this.nextCall}`;
    let lane: Lane | undefined;
    let outcome: CallOutcome;
    try {
      const result = await this.deps.withPool(server, (pool) => {
        lane = pool.laneFor(ctx);
        return pool.callTool(tool, args, { ...ctx, callId });
      });
      outcome =
        result['isError'] === true
          ? { ok: false, error: { code: 'MCPX_TOOL_ERROR', message: `${server}/${tool}: ${textOfResult(result)}`, data: { server, tool, result } } }
          : { ok: true, result };
    } catch (err) {
      if (err instanceof McpxError && (err.code === 'MCPX_UNKNOWN_SERVER' || err.code === 'MCPX_BAD_REQUEST')) {
        this.deps.records.finished(server, tool, started, { ok: false, error: err.toJSON() }, lane, ctx, { via: 'api', args });
        throw err;
      }
      outcome = { ok: false, error: errorOf(callerTimeout(err, server, tool, ctx.timeoutMs)) };
    }
    this.deps.records.finished(server, tool, started, outcome, lane, ctx, { via: 'api', args });
    return outcome;
  }

  /**
   * Relays one MCP request (tools/call, prompts/get, resources/read, completion/complete) to a
   * server's pool in the session's era, for the MCP fronts. The result is the upstream's own
   * (an `isError` tool result is `ok: true`: the caller shows it as it is).
   */
  async request(server: string, method: RelayedMethod, params: Record<string, unknown>, ctx: CallContext = {}): Promise<CallOutcome> {
    if (!(RELAYED_METHODS as readonly string[]).includes(method)) {
      throw new McpxError('MCPX_BAD_REQUEST', `method must be one of ${RELAYED_METHODS.join(', ')}`, { data: { field: 'method' } });
    }
    const started = Date.now();
    let lane: Lane | undefined;
    let outcome: CallOutcome;
    try {
      const result = await this.deps.withPool(server, (pool) => {
        lane = pool.laneFor(ctx);
        return pool.request(method, params, ctx);
      });
      outcome = { ok: true, result };
    } catch (err) {
      if (err instanceof McpxError && (err.code === 'MCPX_UNKNOWN_SERVER' || err.code === 'MCPX_BAD_REQUEST')) throw err;
      outcome = { ok: false, error: errorOf(err) };
    }
    if (method === 'tools/call')
      this.deps.records.finished(server, String(params['name'] ?? ''), started, outcome, lane, ctx, { via: 'mcp', args: params['arguments'] });
    return outcome;
  }
}
