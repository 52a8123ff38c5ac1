/**
 * How the front hands a request to its server and the answer back to the caller: the caller's progress
 * relayed under its own token, the upstream's envelope fields removed, failures worded as a client shows
 * them (a tool result for tools/call, a JSON-RPC error for the rest).
 */
import type { ServerContext } from '@modelcontextprotocol/server';
import { ProtocolError } from '@modelcontextprotocol/server';
import type { Call, ProgressListener } from '../call/call.js';
import type { Controller } from '../core/controller.js';
import { McpxError, upstreamRpcOf } from '../errors.js';
import { isObject } from '../is-object.js';
import type { Logger } from '../log.js';
import { RPC } from '../protocol/constants.js';

/** JSON-RPC error codes the front answers with itself. */
export const INVALID_PARAMS = -32602;

const SERVER_INFO_META = 'io.modelcontextprotocol/serverInfo';

/**
 * The caller's progress token, relayed: upstream progress goes to the caller under the caller's own
 * token. `flush` waits for notifications still being written, so none arrives after the result.
 */
function withProgress(ctx: ServerContext, log: Logger): { onProgress: ProgressListener | undefined; flush: () => Promise<void> } {
  const token = ctx.mcpReq._meta?.progressToken;
  if (token === undefined) return { onProgress: undefined, flush: async () => undefined };
  const sending = new Set<Promise<void>>();
  const onProgress: ProgressListener = (p) => {
    const sent = ctx.mcpReq
      .notify({
        method: 'notifications/progress',
        params: {
          progressToken: token,
          progress: p.progress,
          ...(p.total === undefined ? {} : { total: p.total }),
          ...(p.message === undefined ? {} : { message: p.message }),
        },
      })
      .catch((err: unknown) => log.debug({ err }, 'could not relay progress'))
      .finally(() => sending.delete(sent));
    sending.add(sent);
  };
  return { onProgress, flush: async () => void (await Promise.all([...sending])) };
}

/**
 * Runs `fn` with the caller's progress relayed (a listener when the caller sent a progress token), and
 * lets the progress out before the result.
 */
export async function relayed<T>(ctx: ServerContext, log: Logger, fn: (onProgress: ProgressListener | undefined) => Promise<T>): Promise<T> {
  const p = withProgress(ctx, log);
  try {
    return await fn(p.onProgress);
  } finally {
    await p.flush();
  }
}

/** A relayed request whose failure is a JSON-RPC error (prompts, resources, completions). */
export async function relay(controller: Controller, call: Call): Promise<Record<string, unknown>> {
  try {
    return await controller.relay(call);
  } catch (err) {
    throw asProtocolError(call.server, err);
  }
}

/** A failure as the JSON-RPC error a caller gets: the upstream's own when it answered with one. */
export function asProtocolError(server: string, err: unknown): ProtocolError {
  const rpc = err instanceof McpxError ? upstreamRpcOf(err) : undefined;
  if (rpc) return new ProtocolError(rpc.code, rpc.message, rpc.data);
  const code = err instanceof McpxError ? err.code : 'MCPX_INTERNAL';
  const message = err instanceof Error ? err.message : String(err);
  return new ProtocolError(RPC.internalError, `mcpx: ${server}: ${code}: ${message}`, { server, code });
}

/**
 * JSON-RPC errors from the upstream that say the request itself was wrong (unknown tool, bad
 * arguments, a capability the caller must declare): the caller should see them as such.
 */
export function isProtocolMisuse(code: number): boolean {
  return code === INVALID_PARAMS || code === -32600 || code === -32601 || code === -32021;
}

/** An upstream result as the caller should see it: the upstream's own envelope fields removed. */
export function fromUpstream(result: Record<string, unknown>): Record<string, unknown> {
  const { resultType: _resultType, ...rest } = result;
  if (isObject(rest['_meta']) && SERVER_INFO_META in rest['_meta']) {
    const { [SERVER_INFO_META]: _serverInfo, ...meta } = rest['_meta'];
    if (Object.keys(meta).length > 0) rest['_meta'] = meta;
    else delete rest['_meta'];
  }
  return rest;
}

/** An upstream failure as a tool result: a client shows it to the person, naming the server and the mcpx code. */
export function toolFailure(server: string, err: unknown): Record<string, unknown> {
  const code = err instanceof McpxError ? err.code : 'MCPX_INTERNAL';
  const message = err instanceof Error ? err.message : String(err);
  return { content: [{ type: 'text', text: `mcpx: ${server}: ${code}: ${message}` }], isError: true };
}
