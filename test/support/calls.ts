/**
 * Calls as the tests make them: each helper builds the one Call (src/call/call.ts) an entry would build,
 * and runs it on a pool or a session.
 */
import { LIST_METHOD_OF, toolCall, type Call, type CallMethod, type ListKind } from '../../src/call/call.js';

/** What a call's caller adds besides its target: session, revision, timeout, signal, relay, progress. */
export type CallExtras = Omit<Call, 'server' | 'method' | 'params'>;

interface Runs {
  readonly name: string;
  run(call: Call): Promise<Record<string, unknown>>;
}

/** A `tools/call` on a pool (or anything that runs calls under a name). */
export function callTool(on: Runs, tool: string, args: Record<string, unknown> = {}, extras: CallExtras = {}): Promise<Record<string, unknown>> {
  return on.run(toolCall(on.name, tool, args, extras));
}

/** Any call by its method. */
export function request(on: Runs, method: CallMethod, params: Record<string, unknown> = {}, extras: CallExtras = {}): Promise<Record<string, unknown>> {
  return on.run({ ...extras, server: on.name, method, params });
}

/** A whole listing's items. */
export async function listAll(on: Runs, kind: ListKind, extras: CallExtras = {}): Promise<Array<Record<string, unknown>>> {
  const result = await on.run({ ...extras, server: on.name, method: LIST_METHOD_OF[kind], params: {} });
  return (result[kind] as Array<Record<string, unknown>> | undefined) ?? [];
}

/** A session's `run`, named like the pool's: a session has no `name` of the call's, so the server is given. */
export function onSession(session: { run(call: Call): Promise<Record<string, unknown>> }, name = 'test'): Runs {
  return { name, run: (call) => session.run(call) };
}
