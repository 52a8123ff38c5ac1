/**
 * QuestionRelay: what a caller who can answer questions offers the call it makes. The call carries it
 * (Call.relay, ./call.ts); the session puts to it the questions that call provokes,
 * and declares its capabilities in each modern request. A call without one cannot be asked anything.
 *
 * - `ask`: one legacy server-to-client request (`elicitation/create`, `sampling/createMessage`,
 *   `roots/list`). It resolves with the JSON-RPC result sent back upstream; a rejection with an
 *   RpcErrorObject (src/errors.ts) goes upstream as the JSON-RPC error, any other as -32603.
 * - `askRound`: one modern `input_required` round, the result's `inputRequests` (key → {method, params}).
 *   It resolves with the `inputResponses`, under the same keys; the request is then sent again with them
 *   (and the byte-exact `requestState`), and may come back with another round. A rejection ends the call
 *   with that error: nothing waits upstream between modern rounds, not sending again is the refusal.
 *
 * Each gets the call that provoked the question (the Call object itself), so a relay can tell a question
 * another call provoked from its own.
 */
import type { ClientCapabilities } from '../transports/mcp-messages.js';
import type { JsonRpcRequest } from '../transports/types.js';

/** A modern round's questions, by the key the server gave each (unique within the round only). */
export type InputRequests = Record<string, { method: string; params?: unknown }>;

/** The call a question came with, as a relay sees it (the Call object itself; ./call.ts). */
export interface AskingCall {
  readonly id?: string;
}

export interface QuestionRelay {
  /** The MCP client capabilities the caller can honour, declared upstream in each modern request's `_meta`. */
  readonly capabilities: ClientCapabilities;
  /** Puts a legacy server-to-client request to the caller: its result, or a rejection (an RpcErrorObject goes upstream as is). */
  ask(request: JsonRpcRequest, call: AskingCall): Promise<unknown>;
  /** Puts a modern input_required round to the caller: the inputResponses, key for key, or a rejection that ends the call. */
  askRound(inputRequests: InputRequests, call: AskingCall): Promise<Record<string, unknown>>;
}

/**
 * What mcpx can relay to a caller that declares it. The daemon's sessions declare it at `initialize` (and
 * in the discover probe): a legacy server asks only what its client declared for the whole session, and
 * that session is shared by many calls, so each question is refused, per call, when its caller cannot
 * answer it (src/asks/ask-store.ts).
 */
export const RELAYABLE_CAPABILITIES: Readonly<ClientCapabilities> = Object.freeze({
  elicitation: { form: {}, url: {} },
  sampling: {},
  // Not roots: a session declares them only when it has some to give (ServerPool.startInstance).
});
