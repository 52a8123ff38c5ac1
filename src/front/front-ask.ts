/**
 * A request the upstream may interrupt with questions, as the front runs it: daemon-side as an ask
 * (the daemon's ask store, src/asks/ask-store.ts), each round's questions put to the caller in its own
 * era, each round's answers posted back, until the ask has an outcome.
 */
import { inputRequired, ProtocolError, type Server, type ServerContext, CLIENT_CAPABILITIES_META_KEY } from '@modelcontextprotocol/server';
import type { AskView } from '../asks/ask-store.js';
import type { Call } from '../call/call.js';
import { McpxError, type ErrorCode } from '../errors.js';
import { isObject } from '../is-object.js';
import { asProtocolError, fromUpstream, INVALID_PARAMS, relayed } from './front-relay.js';
import type { AskState, FrontScope } from './front-scope.js';

/** How long one poll of an ask waits before polling again (the caller's signal ends it sooner). */
const ASK_POLL_MS = 20_000;

/**
 * The question kinds this caller can answer: the request's own `_meta` (2026-07-28), else what it
 * declared at initialize. None: the call runs as a plain relay, and the upstream is told the caller
 * can answer nothing.
 */
function answerableCapabilities(server: Server, ctx: ServerContext): Record<string, unknown> | undefined {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const declared = (envelope?.[CLIENT_CAPABILITIES_META_KEY] ?? server.getClientCapabilities()) as Record<string, unknown> | undefined;
  if (!declared) return undefined;
  const caps: Record<string, unknown> = {};
  for (const k of ['elicitation', 'sampling', 'roots'] as const) if (isObject(declared[k])) caps[k] = declared[k];
  return Object.keys(caps).length > 0 ? caps : undefined;
}

/** The capabilities the caller can answer questions for, when it can answer any (or answers a round); otherwise undefined. */
export function askable(f: FrontScope, ctx: ServerContext): { caps: Record<string, unknown> } | undefined {
  const caps = answerableCapabilities(f.server, ctx);
  if (!caps && ctx.mcpReq.requestState() === undefined) return undefined;
  return { caps: caps ?? {} };
}

/**
 * A request the upstream may interrupt with questions (tools/call, prompts/get, resources/read). It
 * runs daemon-side as an ask; its questions go to the caller as `inputRequired(...)`: a 2026-07-28
 * caller gets an input_required result and retries with its answers and the signed state; a legacy
 * caller gets real elicitation/sampling/roots requests from the SDK's legacy shim, which re-enters
 * the handler with the answers. Each round's answers are posted to the ask, and the request goes on.
 * Resolves with the final view (a result or an error), or the inputRequired result to return.
 */
export async function runAsk(
  f: FrontScope,
  ctx: ServerContext,
  call: Call,
  name: string,
  caps: Record<string, unknown>,
): Promise<{ done: AskView } | { input: Record<string, unknown> }> {
  const { controller } = f.cfg;
  const asks = controller.asks;
  let id: string;
  const state = ctx.mcpReq.inputResponses === undefined ? undefined : ctx.mcpReq.requestState<AskState>();
  if (state !== undefined) {
    if (typeof state !== 'object' || state === null || state.name !== name || !Array.isArray(state.questions))
      throw new ProtocolError(INVALID_PARAMS, 'Invalid or expired requestState');
    id = state.ask;
    const given = ctx.mcpReq.inputResponses ?? {};
    const answers = Object.fromEntries(state.questions.filter(([key]) => key in given).map(([key, qid]) => [qid, given[key]]));
    try {
      // No answer at all: the questions are simply put again below (a server re-requests what is missing).
      if (Object.keys(answers).length > 0) await asks.answer(id, answers);
    } catch (err) {
      // The call ended before the answer came (a question closed with it): its outcome is below; never
      // fail a finished call for that.
      const e = err as { code?: unknown; data?: Record<string, unknown> };
      const finished = e.code === 'MCPX_QUESTION_CLOSED' && e.data?.['reason'] === 'finished';
      // Answered already (a replay), or the ask is gone (expired, abandoned): the state is no good.
      if (!finished) throw new ProtocolError(INVALID_PARAMS, `Invalid or expired requestState (${err instanceof Error ? err.message : String(err)})`);
    }
  } else {
    // inputResponses with no requestState answer nothing mcpx asked: ignored, as unknown params are.
    // A 2026-07-28 caller cannot answer once its state expired; a legacy one is bounded by the shim's round timeout.
    const questionTimeoutMs = f.era === 'modern' ? (f.cfg.questionTtlSeconds ?? 600) * 1000 : undefined;
    controller.pool(call.server, call); // an unknown server is said as such (MCPX_UNKNOWN_SERVER), before an ask starts
    id = asks.start({
      call,
      // The per-caller bound: the front's caller (its session; the stateless ones share the entry's).
      ...(call.session ? { caller: `mcp:${call.session}` } : {}),
      capabilities: caps,
      authorizeInPlace: true,
      ...(questionTimeoutMs === undefined ? {} : { questionTimeoutMs }),
    }).id;
  }
  const abandon = () => {
    try {
      asks.abandon(id);
    } catch {
      // gone already
    }
  };
  let keep = false;
  ctx.mcpReq.signal.addEventListener('abort', abandon, { once: true });
  try {
    return await relayed(ctx, f.log, async (onProgress) => {
      // Heard for the whole ask, not per wait: an update between two waits (a wait that ended for a change
      // of the ask) is not lost, and the result leaves after every update (relayed flushes them).
      const unlisten = onProgress ? asks.listenProgress(id, onProgress) : () => undefined;
      try {
        for (;;) {
          const v: AskView = controller.scrubbed(await asks.wait(id, ASK_POLL_MS, ctx.mcpReq.signal));
          if (v.result !== undefined || v.error !== undefined) return { done: v };
          if (v.status === 'abandoned' || v.status === 'expired')
            return { done: { ...v, error: { code: 'MCPX_REQUEST_CANCELLED', message: `the request was ${v.status} while it waited for answers` } } };
          if (v.questions.length > 0) {
            // The upstream's own keys where it gave them (and they are unique), else mcpx's question ids.
            const keys = v.questions.map((q) => q.key ?? q.id);
            const pairs: Array<[string, string]> = v.questions.map((q, i) => [new Set(keys).size === keys.length ? keys[i]! : q.id, q.id]);
            const inputRequests = Object.fromEntries(
              v.questions.map((q, i) => [pairs[i]![0], { method: q.method, ...(q.params === undefined ? {} : { params: q.params }) }]),
            );
            const requestState = await f.codec.mint({ ask: id, questions: pairs, name }, ctx);
            // A legacy caller's request stays open while the SDK's shim puts the questions to it: if the
            // caller goes away meanwhile, the ask is abandoned. A 2026-07-28 caller's request ends here.
            if (f.era === 'legacy') keep = true;
            return { input: inputRequired({ inputRequests: inputRequests as never, requestState }) as never };
          }
          if (ctx.mcpReq.signal.aborted) throw new McpxError('MCPX_REQUEST_CANCELLED', 'the caller cancelled the request');
        }
      } finally {
        unlisten();
      }
    });
  } finally {
    if (!keep) ctx.mcpReq.signal.removeEventListener('abort', abandon);
  }
}

/** An ask's outcome for prompts/get and resources/read: the result, or a JSON-RPC error. */
export function requestOutcome(upstream: string, out: { done: AskView } | { input: Record<string, unknown> }): Record<string, unknown> {
  if ('input' in out) return out.input;
  if (out.done.result !== undefined) return fromUpstream(out.done.result);
  throw asProtocolError(upstream, failureOf(out.done));
}

/** An ask's error as the McpxError it was. */
export function failureOf(v: AskView): McpxError {
  const e = v.error!;
  return new McpxError(e.code as ErrorCode, e.message, e.data === undefined ? undefined : { data: e.data });
}
