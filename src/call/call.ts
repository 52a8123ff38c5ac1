/**
 * One call, as every entry builds it — `/v1/call`, `/v1/request`, `/v1/ask`, `/v1/tools` listings, `/mcp`
 * and each `mcpx serve` stream, the catalogue's listings — and as the pool and the upstream session read
 * it: who calls, what is asked of which server, and how it runs. Nothing below an entry re-types it: the
 * pool picks the lane and scope key from it, and the session sends it, puts its questions to its relay
 * and its progress to its listener; the session knows a call in flight by this very object.
 *
 * A new concern of every call (the caller's config, a search strategy's `call_tool`) is a field here.
 */
import type { QuestionRelay } from './question-relay.js';

/** The client requests mcpx relays to a server for a caller. */
export const RELAYED_METHODS = ['tools/call', 'prompts/get', 'resources/read', 'completion/complete'] as const;
export type RelayedMethod = (typeof RELAYED_METHODS)[number];

/** The listings a session pages through, by kind. */
export type ListKind = 'tools' | 'prompts' | 'resources' | 'resourceTemplates';

/** The listing methods, each whole: the session follows every cursor and answers all items under the listing's key. */
export const LIST_METHODS = {
  'tools/list': 'tools',
  'prompts/list': 'prompts',
  'resources/list': 'resources',
  'resources/templates/list': 'resourceTemplates',
} as const satisfies Record<string, ListKind>;
export type ListMethod = keyof typeof LIST_METHODS;
/** Each listing's method; its whole answer holds the items under the kind's own name (`{tools: [...]}`). */
export const LIST_METHOD_OF: Readonly<Record<ListKind, ListMethod>> = {
  tools: 'tools/list',
  prompts: 'prompts/list',
  resources: 'resources/list',
  resourceTemplates: 'resources/templates/list',
};

export type CallMethod = RelayedMethod | ListMethod;

/** The lists an upstream announces changes of (`notifications/<list>/list_changed`; templates go with resources). */
export type ChangedList = Exclude<ListKind, 'resourceTemplates'>;

export const isRelayedMethod = (m: unknown): m is RelayedMethod => typeof m === 'string' && (RELAYED_METHODS as readonly string[]).includes(m);

/** One `notifications/progress` the upstream sent for a call, as its caller sees it. */
export interface ProgressUpdate {
  progress: number;
  total?: number;
  message?: string;
}
export type ProgressListener = (p: ProgressUpdate) => void;

/**
 * How a call runs: what the upstream session reads off it. A `Call` is one; a session's own requests
 * (and its tests) pass just these.
 */
export interface CallHandling {
  /** The caller went away or cancelled: the call ends (MCPX_REQUEST_CANCELLED) and the upstream is told. */
  readonly signal?: AbortSignal;
  /** The caller's timeout, counted from the entry (messages name it). */
  readonly timeoutMs?: number;
  /** When the call must have its answer (Date.now() ms): set at the entry from timeoutMs, read by the pool and the session. */
  readonly deadline?: number;
  /** Receives the upstream's progress (mcpx sends its own progressToken upstream, one per request). */
  readonly onProgress?: ProgressListener;
  /**
   * The caller's, when it can answer questions: this call's legacy server requests and modern
   * input_required rounds are put to it, and each modern request declares its capabilities. Without
   * one, a question has nobody to go to.
   */
  readonly relay?: QuestionRelay;
  /** How many modern input_required rounds the call may take (default 8). */
  readonly maxInputRounds?: number;
  /** Names the call in records, logs and the questions it provokes. */
  readonly id?: string;
}

/** Who calls: what picks the lane and the scope key (a listing for a caller needs only this). */
export interface Caller {
  /** The caller's MCP revision (absent: 2026-07-28, modern): picks the lane. */
  readonly callerProtocol?: string;
  /** The caller's session: the scope key of a server pooled per session. */
  readonly session?: string;
  /** Where it came in, for its record: the HTTP API or an MCP client (`/mcp`, `mcpx serve`). */
  readonly via?: 'api' | 'mcp';
  /**
   * The config it means (its file's real path, as the daemon loaded it); absent: the daemon's own. Server
   * names are that config's: the daemon maps `(config, server)` to the instance that runs it.
   */
  readonly config?: string;
}

/** One call: who calls (Caller), how it runs (CallHandling), and what it asks of which server. */
export interface Call extends Caller, CallHandling {
  /** The configured server it goes to (a name in the caller's config). */
  readonly server: string;
  readonly method: CallMethod;
  /** The request's params as the caller gave them (`tools/call`: `{name, arguments}`). */
  readonly params: Record<string, unknown>;
}

let calls = 0;

/** A call as an entry makes it: named (`call-N`, unless it has an id), its deadline set from its timeout. */
export function newCall<C extends Omit<Call, 'deadline'>>(call: C): C & { id: string; deadline?: number } {
  const id = call.id ?? `call-${++calls}`;
  return call.timeoutMs === undefined ? { ...call, id } : { ...call, id, deadline: Date.now() + call.timeoutMs };
}

/** The time a call has left (undefined: no deadline, only its timeout, counted from now). */
export function timeLeft(call: CallHandling): number | undefined {
  return call.deadline !== undefined ? call.deadline - Date.now() : call.timeoutMs;
}

/** A `tools/call` made from a tool name and its arguments. */
export function toolCall(server: string, tool: string, args: Record<string, unknown>, rest: Omit<Call, 'server' | 'method' | 'params'> = {}): Call {
  return newCall({ ...rest, server, method: 'tools/call', params: { name: tool, arguments: args } });
}

/** The tool a call names (`tools/call`), else the prompt, resource or method, for records and views. */
export function subjectOf(call: Call): string {
  const p = call.params;
  if (call.method === 'tools/call' || call.method === 'prompts/get') return typeof p['name'] === 'string' ? p['name'] : '';
  if (call.method === 'resources/read') return typeof p['uri'] === 'string' ? p['uri'] : '';
  return call.method;
}
