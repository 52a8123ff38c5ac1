/**
 * UpstreamSession: one upstream connection, driven by the session statechart.
 *
 * This is the transport adapter of docs/behaviour.md §8: it creates the machine's actor, carries out what
 * the machine emits (spawn, kill, request, notify, cache.write) on a Channel, and feeds back what the
 * upstream did. It decides nothing about eras; once the machine reaches `ready` it shapes ordinary
 * requests for the era the machine chose (with or without the `_meta` envelope).
 */
import { EventEmitter } from 'node:events';
import { createActor, type Actor, type ActorOptions, type AnyActorLogic, type InspectionEvent, type SnapshotFrom } from 'xstate';
import { McpxError, UpstreamRpcError, type RpcErrorObject } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import { sessionMachine, type EraSource, type SessionEmitted, type SessionFailure, type WireTransport } from '../machines/session.machine.js';
import type { SessionPreference } from '../machines/preference.js';
import { versionRefusal, type HttpFailure } from '../machines/verdict.js';
import type { Era } from '../machines/versions.js';
import { RPC } from '../protocol/constants.js';
import { requestParams, type ClientCapabilities } from '../transports/mcp-messages.js';
import { RpcPeer } from '../transports/rpc-peer.js';
import { LegacySseChannel } from '../transports/sse-legacy.js';
import { StdioChannel } from '../transports/stdio.js';
import { StreamableHttpChannel } from '../transports/streamable-http.js';
import type { Channel, CloseInfo, JsonRpcNotification, JsonRpcRequest } from '../transports/types.js';
import { isStdioDefinition, type ServerDefinition } from './definition.js';
import type { EraCache, EraRecord } from './era-cache.js';
import { eraCacheKey } from './process-key.js';
import { ToolHeaders } from './tool-headers.js';

export type SessionSnapshot = SnapshotFrom<typeof sessionMachine>;
type Clock = NonNullable<ActorOptions<AnyActorLogic>['clock']>;

/** What the session learned, for reports (`GET /v1/protocol`) and logs. */
export interface SessionInfo {
  server: string;
  state: string;
  era: Era | null;
  negotiated: string | null;
  eraSource: EraSource | null;
  supportsModern: boolean;
  serverInfo: unknown;
  capabilities: unknown;
  instructions: string | undefined;
  pid: number | undefined;
  spawns: number;
  error: SessionFailure | null;
}

/** Answers a server-to-client request (legacy elicitation, sampling, roots) for the call that provoked it. */
export type ServerRequestHandler = (request: JsonRpcRequest, context: unknown) => Promise<unknown>;

/** Fulfils a modern `input_required` result: given the server's inputRequests, returns the inputResponses. */
export type InputRequiredHandler = (inputRequests: Record<string, { method: string; params?: unknown }>, context: unknown) => Promise<Record<string, unknown>>;

export interface UpstreamSessionOptions {
  name: string;
  definition: ServerDefinition;
  preference: SessionPreference;
  /** Consulted and updated unless the preference is force-*. */
  cache?: EraCache | null;
  probeTimeoutMs?: number;
  startTimeoutMs?: number;
  requestTimeoutMs?: number;
  stopGraceMs?: number;
  maxMessageBytes?: number;
  modernVersions?: readonly string[];
  clientCapabilities?: ClientCapabilities;
  logger?: Logger;
  /** Replaces the real transport (model-based tests run the machine against simulated upstreams). */
  channelFactory?: (attempt: number, transport: WireTransport) => Channel;
  onServerRequest?: ServerRequestHandler;
  /** xstate inspection hook, for live statecharts. */
  inspect?: (event: InspectionEvent) => void;
  /** xstate clock; model-based tests pass a SimulatedClock to fire probe timeouts on cue. */
  clock?: Clock;
}

/** One `notifications/progress` the upstream sent for a request, as its caller sees it. */
export interface ProgressUpdate {
  progress: number;
  total?: number;
  message?: string;
}

export type ProgressListener = (p: ProgressUpdate) => void;

/** The listings a session can page through, and the server capability each needs (tools: none — always asked). */
export type ListKind = 'tools' | 'prompts' | 'resources' | 'resourceTemplates';
export const LISTINGS: Readonly<Record<ListKind, { method: string; key: string; capability: 'prompts' | 'resources' | null }>> = {
  tools: { method: 'tools/list', key: 'tools', capability: null },
  prompts: { method: 'prompts/list', key: 'prompts', capability: 'prompts' },
  resources: { method: 'resources/list', key: 'resources', capability: 'resources' },
  resourceTemplates: { method: 'resources/templates/list', key: 'resourceTemplates', capability: 'resources' },
};

/** The client requests forward() relays: those both eras share (the 2026-07-28 ClientRequest union minus server/discover and subscriptions/listen). */
export const FORWARDED_METHODS = [
  'prompts/list',
  'prompts/get',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'completion/complete',
  'tools/list',
  'tools/call',
] as const;
export type ForwardedMethod = (typeof FORWARDED_METHODS)[number];

export const isForwardedMethod = (m: unknown): m is ForwardedMethod => typeof m === 'string' && (FORWARDED_METHODS as readonly string[]).includes(m);

/** Which list a `notifications/<list>/list_changed` is about. */
export type ChangedList = 'tools' | 'prompts' | 'resources';
const LIST_CHANGED: ReadonlyMap<string, ChangedList> = new Map([
  ['notifications/tools/list_changed', 'tools'],
  ['notifications/prompts/list_changed', 'prompts'],
  ['notifications/resources/list_changed', 'resources'],
]);

/** A listing longer than this many pages is cut off (a guard against servers that page forever). */
const MAX_LIST_PAGES = 1000;

/** Progress tokens are unique across every session of the process, so a log line names one request. */
let progressTokens = 0;

export interface CallOptions {
  /** The caller's context; reaches the server-request handler for questions this call provokes. */
  context?: unknown;
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Capabilities to declare in this modern request's `_meta` (a relay declares its caller's). */
  capabilities?: ClientCapabilities;
  /** Answers legacy server-to-client requests this call provokes (elicitation, sampling, roots). */
  onServerRequest?: ServerRequestHandler;
  onInputRequired?: InputRequiredHandler;
  maxInputRounds?: number;
  /**
   * Receives the upstream's `notifications/progress` for this call: each upstream request (every
   * input_required round is one) carries a fresh `_meta.progressToken`, forgotten when it settles.
   */
  onProgress?: ProgressListener;
}

export interface Tool {
  name: string;
  description?: string;
  inputSchema?: unknown;
  [key: string]: unknown;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export class UpstreamSession extends EventEmitter {
  readonly name: string;
  readonly definition: ServerDefinition;
  readonly cacheKey: string;
  private readonly actor: Actor<typeof sessionMachine>;
  private readonly log: Logger;
  private channel: Channel | undefined;
  private peer: RpcPeer | undefined;
  private readonly closing = new Set<Promise<void>>();
  private readonly opts: UpstreamSessionOptions;
  private startPromise: Promise<SessionInfo> | undefined;
  private transport: WireTransport | undefined;
  /** Calls in flight that can answer questions, for transports that cannot attribute them (stdio). */
  private readonly askers = new Set<InFlightCall>();
  /** The turns of asking calls on a legacy stdio session (see askTurn). */
  private askQueue: Promise<void> = Promise.resolve();
  private lastClose: CloseInfo | undefined;
  /**
   * SEP-2243, modern Streamable HTTP sessions only: from the latest complete listTools(), the
   * `Mcp-Param-*` headers each listed tool asks for, and the tools excluded for invalid annotations.
   */
  private paramTools: ToolHeaders | undefined;
  /** The tools/list callTool runs when it needs paramTools; shared by concurrent calls. */
  private paramToolsListing: Promise<void> | undefined;
  /** Requests in flight that asked for progress, by the progressToken they carry. */
  private readonly progress = new Map<string, { listener: ProgressListener; call: InFlightCall }>();

  constructor(opts: UpstreamSessionOptions) {
    super();
    this.opts = opts;
    this.name = opts.name;
    this.definition = opts.definition;
    this.cacheKey = eraCacheKey(opts.definition);
    this.log = (opts.logger ?? silentLogger).child({ server: opts.name });
    // The machine ignores the record under force-* (and never asks to write one).
    const cached = opts.cache?.usable(this.cacheKey) ?? null;
    this.actor = createActor(sessionMachine, {
      id: `session:${opts.name}`,
      input: {
        server: opts.name,
        transport: isStdioDefinition(opts.definition) ? 'stdio' : 'http',
        ...(!isStdioDefinition(opts.definition) && opts.definition.transport === 'sse' ? { declaredSse: true } : {}),
        preference: opts.preference,
        cached,
        ...(opts.probeTimeoutMs === undefined ? {} : { probeTimeoutMs: opts.probeTimeoutMs }),
        ...(opts.startTimeoutMs === undefined ? {} : { startTimeoutMs: opts.startTimeoutMs }),
        ...(opts.modernVersions === undefined ? {} : { modernVersions: opts.modernVersions }),
        ...(opts.clientCapabilities === undefined ? {} : { clientCapabilities: opts.clientCapabilities }),
      },
      ...(opts.inspect ? { inspect: opts.inspect } : {}),
      ...(opts.clock ? { clock: opts.clock } : {}),
    });
    this.actor.on('spawn', (e) => this.onSpawn(e.attempt, e.transport));
    this.actor.on('kill', () => this.onKill());
    this.actor.on('request', (e) => this.onProbeRequest(e));
    this.actor.on('notify', (e) => this.peer?.notify(e.method, e.params));
    this.actor.on('cache.write', (e) => {
      const write = this.onCacheWrite(e.record);
      this.closing.add(write);
      void write.finally(() => this.closing.delete(write));
    });
    this.actor.on('era.stale', (e) => {
      this.log.info({ cached: e.cached.era, found: e.found }, 'cached era was wrong; probed again');
      this.emit('era.stale', { server: this.name, cached: e.cached, found: e.found });
    });
    this.actor.subscribe({
      next: (snapshot) => this.emit('state', snapshot),
      error: (err) => this.log.error({ err }, 'session actor failed'),
    });
  }

  /** Start the upstream and run the probe. Resolves when the session is ready; rejects with an McpxError. */
  start(): Promise<SessionInfo> {
    this.startPromise ??= new Promise<SessionInfo>((resolve, reject) => {
      const check = (snapshot: SessionSnapshot) => {
        if (snapshot.matches('ready')) {
          sub.unsubscribe();
          const info = this.info();
          this.log.info({ era: info.era, negotiated: info.negotiated, eraSource: info.eraSource, pid: info.pid }, 'upstream ready');
          this.listen();
          resolve(info);
        } else if (snapshot.status === 'done') {
          sub.unsubscribe();
          reject(this.failure(snapshot));
        }
      };
      const sub = this.actor.subscribe(check);
      this.actor.start();
      this.actor.send({ type: 'start' });
      check(this.actor.getSnapshot());
    });
    return this.startPromise;
  }

  get snapshot(): SessionSnapshot {
    return this.actor.getSnapshot();
  }

  get isReady(): boolean {
    return this.actor.getSnapshot().matches('ready');
  }

  info(): SessionInfo {
    const s = this.actor.getSnapshot();
    const c = s.context;
    return {
      server: this.name,
      state: stateName(s),
      era: c.era,
      negotiated: c.negotiated,
      eraSource: c.eraSource,
      supportsModern: c.supportsModern,
      serverInfo: c.serverInfo,
      capabilities: c.capabilities,
      instructions: c.instructions,
      pid: this.channel?.pid,
      spawns: c.spawns,
      error: c.error,
    };
  }

  /**
   * Send a request in the session's era. Modern requests get the `_meta` envelope; results are
   * checked for `resultType` (absent = complete, as legacy servers send). An `input_required` result is
   * fulfilled through `onInputRequired` and retried, up to `maxInputRounds` (default 8).
   */
  request(method: string, params?: Record<string, unknown>, opts: CallOptions = {}): Promise<Record<string, unknown>> {
    return this.requestWithHeaders(method, params, opts, undefined);
  }

  /** request(), with extra HTTP headers on every round's POST (callTool's `Mcp-Param-*`). */
  private async requestWithHeaders(
    method: string, params: Record<string, unknown> | undefined, opts: CallOptions, headers: Record<string, string> | undefined,
  ): Promise<Record<string, unknown>> {
    if (!this.isReady) await this.start();
    const { era, negotiated } = this.actor.getSnapshot().context;
    if (!this.peer || !era || !negotiated || !this.isReady) {
      throw new McpxError('MCPX_SESSION_CLOSED', `${this.name}: the session is not open (${stateName(this.actor.getSnapshot())})`);
    }
    const peer = this.peer;
    const maxRounds = opts.maxInputRounds ?? 8;
    // The call travels with its request: HTTP hands it back with any question that request provokes.
    const call: InFlightCall = { context: opts.context, ...(opts.onServerRequest ? { onServerRequest: opts.onServerRequest } : {}) };
    // stdio says nothing of which call a legacy server's question is for: calls that can answer
    // questions take turns there, so a question always has exactly one call to go to.
    const release = call.onServerRequest && this.transport === 'stdio' && era === 'legacy' ? await this.askTurn(opts.signal) : undefined;
    if (call.onServerRequest) this.askers.add(call);
    try {
      return await this.requestRounds(peer, era, negotiated, method, params, opts, call, maxRounds, headers);
    } finally {
      this.askers.delete(call);
      release?.();
    }
  }

  /** Waits for the turn of the next asking call on this session; resolves with its release. */
  private async askTurn(signal: AbortSignal | undefined): Promise<() => void> {
    const previous = this.askQueue;
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    this.askQueue = previous.then(() => mine);
    if (signal) {
      const aborted = new Promise<never>((_, reject) => {
        if (signal.aborted) reject(new McpxError('MCPX_REQUEST_CANCELLED', `${this.name}: cancelled while waiting for its turn`));
        signal.addEventListener('abort', () => reject(new McpxError('MCPX_REQUEST_CANCELLED', `${this.name}: cancelled while waiting for its turn`)), { once: true });
      });
      try {
        await Promise.race([previous, aborted]);
      } catch (err) {
        release(); // leave the line without holding up those behind
        throw err;
      }
    } else {
      await previous;
    }
    return release;
  }

  private async requestRounds(
    peer: RpcPeer, era: Era, negotiated: string, method: string, params: Record<string, unknown> | undefined,
    opts: CallOptions, call: InFlightCall, maxRounds: number, headers?: Record<string, string>,
  ): Promise<Record<string, unknown>> {
    let current = params;
    for (let round = 0; ; round++) {
      // Each round is a new upstream request, so it gets its own token (the spec: unique per request).
      const token = opts.onProgress ? `mcpx-p-${++progressTokens}` : undefined;
      if (token !== undefined) this.progress.set(token, { listener: opts.onProgress!, call });
      let raw: unknown;
      try {
        // A -32022 gets the one retry the version rule allows (retryVersion); a second one is thrown.
        for (let version = negotiated, retried = false; ; retried = true) {
          try {
            raw = await peer.request(method, requestParams(era, version, current, opts.capabilities ?? this.opts.clientCapabilities, token === undefined ? undefined : { progressToken: token }), {
              timeoutMs: opts.timeoutMs ?? this.opts.requestTimeoutMs ?? 300_000,
              ...(opts.signal ? { signal: opts.signal } : {}),
              context: call,
              ...(headers !== undefined && Object.keys(headers).length > 0 ? { headers } : {}),
            });
            break;
          } catch (err) {
            version = this.retryVersion(err, era, method, retried);
          }
        }
      } finally {
        if (token !== undefined) this.progress.delete(token);
      }
      if (!isObject(raw)) throw new McpxError('MCPX_BAD_RESULT', `${this.name}: ${method} returned a result that is not an object`);
      const resultType = raw.resultType ?? 'complete';
      if (resultType === 'complete') return raw;
      if (resultType !== 'input_required') {
        // The spec: a resultType the client does not recognise MUST be considered invalid.
        throw new McpxError('MCPX_BAD_RESULT', `${this.name}: ${method} returned unknown resultType ${JSON.stringify(resultType)}`);
      }
      if (!opts.onInputRequired) {
        throw new McpxError('MCPX_UPSTREAM_ERROR', `${this.name}: ${method} needs input from the caller (input_required), and this caller cannot answer questions`, {
          data: { resultType, inputRequests: raw.inputRequests },
        });
      }
      if (round >= maxRounds) throw new McpxError('MCPX_UPSTREAM_ERROR', `${this.name}: ${method} still required input after ${maxRounds} rounds`);
      const inputRequests = isObject(raw.inputRequests) ? (raw.inputRequests as Record<string, { method: string; params?: unknown }>) : {};
      const inputResponses = Object.keys(inputRequests).length > 0 ? await opts.onInputRequired(inputRequests, opts.context) : {};
      current = { ...params, inputResponses };
      // requestState is echoed byte-exact when given, and never invented when not.
      if (typeof raw.requestState === 'string') current.requestState = raw.requestState;
    }
  }

  /**
   * The version to send a modern request again at after a -32022, per the rule in src/machines/verdict.ts
   * (versionRefusal: once, at the best mutual version); throws `err` when it is not a -32022, and
   * MCPX_NO_COMMON_VERSION (keeping the upstream's error in `data`) when the rule says it is final.
   */
  private retryVersion(err: unknown, era: Era, method: string, retried: boolean): string {
    if (era !== 'modern' || !(err instanceof UpstreamRpcError) || err.rpc.code !== RPC.unsupportedProtocolVersion) throw err;
    const v = versionRefusal(method, err.rpc, this.actor.getSnapshot().context.modernVersions, retried);
    if (v.kind === 'retry') {
      this.log.info({ method, version: v.version, supported: v.supported }, v.why);
      return v.version;
    }
    if (v.kind === 'malformed') throw err;
    throw new McpxError('MCPX_NO_COMMON_VERSION', `${this.name}: ${v.why}`, { cause: err, data: { ...err.data, method, supported: v.supported } });
  }

  async listTools(opts: CallOptions = {}): Promise<Tool[]> {
    const tools = (await this.listAll('tools', opts)) as Tool[];
    return this.mirrorsParams() ? this.admitTools(tools) : tools;
  }

  /**
   * Every item of a listing, following `nextCursor` (at most MAX_LIST_PAGES pages; a cursor that comes
   * back twice is MCPX_BAD_RESULT). Prompts and resources are listed only when the server declared the
   * capability (many servers answer -32601 otherwise): an undeclared one is an empty list, nothing sent.
   * Tools are returned as listed (listTools() also applies SEP-2243's exclusions).
   */
  async listAll(kind: ListKind, opts: CallOptions = {}): Promise<Array<Record<string, unknown>>> {
    const { method, key, capability } = LISTINGS[kind];
    if (!this.isReady) await this.start();
    if (capability !== null && !this.declares(capability)) return [];
    const items: Array<Record<string, unknown>> = [];
    const seen = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const result = await this.request(method, cursor ? { cursor } : undefined, opts);
      const list = result[key];
      if (Array.isArray(list)) items.push(...list.filter(isObject));
      cursor = typeof result.nextCursor === 'string' && result.nextCursor ? result.nextCursor : undefined;
      if (!cursor) break;
      if (seen.has(cursor)) {
        throw new McpxError('MCPX_BAD_RESULT', `${this.name}: ${method} returned the cursor ${JSON.stringify(cursor)} twice; the listing would never end`, {
          data: { method, cursor, pages: page + 1 },
        });
      }
      seen.add(cursor);
    }
    return items;
  }

  /**
   * One client request as a front relays it (FORWARDED_METHODS), in the session's era: `tools/call`
   * goes through callTool (SEP-2243 headers), a prompts/resources listing the server did not declare
   * is answered empty without sending anything, a tools/list page on a modern Streamable HTTP session
   * leaves out the tools SEP-2243 excludes. Other methods are refused (MCPX_BAD_REQUEST).
   */
  async forward(method: string, params: Record<string, unknown> | undefined, opts: CallOptions = {}): Promise<Record<string, unknown>> {
    if (!isForwardedMethod(method)) {
      throw new McpxError('MCPX_BAD_REQUEST', `${this.name}: mcpx does not relay ${JSON.stringify(method)}; it relays ${FORWARDED_METHODS.join(', ')}`, {
        data: { server: this.name, method, allowed: [...FORWARDED_METHODS] },
      });
    }
    if (params !== undefined && !isObject(params)) {
      throw new McpxError('MCPX_BAD_REQUEST', `${this.name}: ${method} params must be an object`, { data: { server: this.name, method, field: 'params' } });
    }
    if (!this.isReady) await this.start();
    if (method === 'tools/call') {
      const name = params?.name;
      const args = params?.arguments ?? {};
      if (typeof name !== 'string' || !isObject(args)) {
        throw new McpxError('MCPX_BAD_REQUEST', `${this.name}: tools/call needs a string "name" and an object "arguments"`, {
          data: { server: this.name, method, field: typeof name !== 'string' ? 'name' : 'arguments' },
        });
      }
      return this.callToolWith({ ...params, name, arguments: args }, opts);
    }
    const listing = Object.values(LISTINGS).find((l) => l.method === method);
    if (listing?.capability && !this.declares(listing.capability)) return { [listing.key]: [] };
    const result = await this.request(method, params, opts);
    if (method === 'tools/list' && this.mirrorsParams() && Array.isArray(result.tools)) {
      const tools = result.tools.filter(isObject) as Tool[];
      // A whole listing (first page, no next) replaces the header table; a page only filters.
      const whole = params?.cursor === undefined && (typeof result.nextCursor !== 'string' || result.nextCursor === '');
      return { ...result, tools: whole ? this.admitTools(tools) : ToolHeaders.admit(tools, this.log, this.paramTools).admitted };
    }
    return result;
  }

  /** Whether the server declared a capability (from discover or initialize); with nothing known, assume it did. */
  private declares(capability: string): boolean {
    const caps = this.actor.getSnapshot().context.capabilities;
    if (!isObject(caps)) return true;
    const value = caps[capability];
    return value !== undefined && value !== null && value !== false;
  }

  /**
   * Calls a tool. On a modern Streamable HTTP session the arguments its `x-mcp-header` annotations name
   * go out as `Mcp-Param-*` headers too (SEP-2243), from the most recently listed inputSchema; a call
   * before any listing lists the tools once first. A tool excluded for invalid annotations is refused
   * (MCPX_BAD_TOOL), and so is an argument with no header form (MCPX_BAD_REQUEST); nothing is sent.
   */
  callTool(name: string, args: Record<string, unknown> = {}, opts: CallOptions = {}): Promise<Record<string, unknown>> {
    return this.callToolWith({ name, arguments: args }, opts);
  }

  /** callTool with whole params (a relayed call may carry `_meta` or other fields besides name and arguments). */
  private async callToolWith(
    params: Record<string, unknown> & { name: string; arguments: Record<string, unknown> }, opts: CallOptions,
  ): Promise<Record<string, unknown>> {
    const { name, arguments: args } = params;
    if (!this.isReady) await this.start();
    if (!this.mirrorsParams()) return this.request('tools/call', params, opts);
    if (!this.paramTools) await this.listParamTools();
    const headers = this.paramHeadersFor(name, args);
    try {
      return await this.requestWithHeaders('tools/call', params, opts, headers);
    } catch (err) {
      // "If the server rejects a request with a HeaderMismatch error because required Mcp-Param-* headers
      // are missing or do not match the body, the client SHOULD call tools/list to check for changes to the
      // tool's inputSchema, then retry the original request with the appropriate headers." Once, and only
      // when the listing changed the headers: the same headers would be refused the same way.
      if (!(err instanceof UpstreamRpcError) || err.rpc.code !== RPC.headerMismatch) throw err;
      await this.listParamTools();
      const fresh = this.paramHeadersFor(name, args);
      if (JSON.stringify(Object.entries(fresh).sort()) === JSON.stringify(Object.entries(headers).sort())) throw err;
      this.log.info({ tool: name }, 'the server refused the Mcp-Param headers; retrying with the re-listed inputSchema');
      return this.requestWithHeaders('tools/call', params, opts, fresh);
    }
  }

  /** Tools the last listTools() excluded for invalid `x-mcp-header` annotations, with the reason. */
  excludedTools(): Array<{ name: string; reason: string }> {
    return this.paramTools?.excluded() ?? [];
  }

  // ---- SEP-2243 Mcp-Param-* headers ----

  /** "Clients using other transports (e.g., stdio) MAY ignore x-mcp-header annotations entirely": mcpx does, and legacy eras have none. */
  private mirrorsParams(): boolean {
    return this.transport === 'streamable-http' && this.actor.getSnapshot().context.era === 'modern';
  }

  private admitTools(tools: Tool[]): Tool[] {
    const { table, admitted } = ToolHeaders.admit(tools, this.log, this.paramTools);
    this.paramTools = table;
    return admitted;
  }

  /** One tools/list for callTool's sake, shared by the calls waiting on it. A failure leaves paramTools as it was. */
  private listParamTools(): Promise<void> {
    this.paramToolsListing ??= this.listTools()
      .then(
        () => undefined,
        (err: unknown) => this.log.debug({ err }, 'could not list the tools for their Mcp-Param headers'),
      )
      .finally(() => {
        this.paramToolsListing = undefined;
      });
    return this.paramToolsListing;
  }

  private paramHeadersFor(name: string, args: Record<string, unknown>): Record<string, string> {
    return this.paramTools?.for(this.name, name, args) ?? {};
  }

  /** Stop the session and its process. Resolves when nothing is left running and the era cache is written. */
  async stop(): Promise<void> {
    const s = this.actor.getSnapshot();
    if (!this.startPromise) {
      // Never started: record the stop in the chart (idle → stopped) without starting anything.
      this.actor.start();
      this.actor.send({ type: 'stop' });
      this.actor.stop();
      return;
    }
    if (s.status === 'active') this.actor.send({ type: 'stop' });
    else if (this.channel && !this.channel.closed) this.onKill();
    await Promise.all([...this.closing]);
    this.actor.stop();
  }

  // ---- carrying out what the machine emits ----

  private onSpawn(attempt: number, transport: WireTransport): void {
    this.transport = transport;
    const channel = this.opts.channelFactory
      ? this.opts.channelFactory(attempt, transport)
      : createChannel(this.definition, transport, this.opts, this.log);
    const peer = new RpcPeer(channel, { logger: this.log });
    this.channel = channel;
    this.peer = peer;
    peer.onRequest((req, ctx) => this.answerServerRequest(req, ctx.context));
    peer.onNotification((n, ctx) => {
      if (peer === this.peer) this.onNotification(n, ctx.context);
    });
    channel.onClose((info) => {
      this.lastClose = info;
      if (channel !== this.channel) return; // a replaced process: the machine already moved on
      const detail = closeDetail(info);
      this.log.info({ reason: info.reason, code: info.code, signal: info.signal }, 'upstream closed');
      this.actor.send({ type: 'transport.closed', reason: info.reason, ...(detail ? { detail } : {}) });
      // `closed` means the chart closed the session (ready → closed). A process lost while connecting is
      // the chart's business (a respawn, or a start failure start() reports): announcing it would let
      // listeners take it for the successor's.
      if (this.actor.getSnapshot().matches('closed')) this.emit('closed', info);
    });
    channel.start().then(
      () => {
        if (channel !== this.channel) return;
        this.log.debug({ pid: channel.pid, attempt }, 'upstream started');
        this.actor.send({ type: 'transport.ready', ...(channel.pid === undefined ? {} : { pid: channel.pid }) });
      },
      (err: unknown) => {
        if (channel !== this.channel) return;
        const message = err instanceof Error ? err.message : String(err);
        this.actor.send({ type: 'transport.closed', reason: 'spawn-failed', detail: message });
      },
    );
  }

  private onKill(): void {
    const channel = this.channel;
    if (!channel) return;
    this.channel = undefined;
    this.peer = undefined;
    const done = channel.close().catch((err: unknown) => this.log.warn({ err }, 'error while stopping upstream'));
    this.closing.add(done);
    void done.finally(() => this.closing.delete(done));
  }

  private onProbeRequest(e: Extract<SessionEmitted, { type: 'request' }>): void {
    const peer = this.peer;
    if (!peer) return;
    this.log.debug({ id: e.id, method: e.method }, 'probe request');
    // No timeout here: the machine owns probe timing (probeTimeout, startTimeout).
    peer.request(e.method, e.params, { id: e.id }).then(
      (result) => {
        if (peer === this.peer) this.actor.send({ type: 'rpc.result', id: e.id, result });
      },
      (err: unknown) => {
        if (peer !== this.peer) return;
        if (err instanceof UpstreamRpcError) this.actor.send({ type: 'rpc.error', id: e.id, error: err.rpc });
        else if (!peer.channel.closed) this.actor.send({ type: 'rpc.failed', id: e.id, failure: httpFailureOf(err) });
        // Otherwise the channel closed; its close event reaches the machine on its own.
      },
    );
  }

  private async onCacheWrite(record: Omit<EraRecord, 'at'>): Promise<void> {
    const cache = this.opts.cache;
    if (!cache) return;
    try {
      await cache.set(this.cacheKey, { ...record, at: new Date().toISOString() });
      this.emit('cache.write', record);
    } catch (err) {
      // A cache that cannot be written costs a probe next time; it never breaks the session.
      this.log.warn({ err }, 'could not write the era cache');
    }
  }

  /**
   * A 2026-07-28 server announces its own list changes only on `subscriptions/listen` streams: open one
   * for the lists its capabilities say change, for the session's life (stdio: a request left pending;
   * HTTP: a POST whose event stream stays open). Its list_changed notifications take the ordinary
   * path (onNotification). A stream the server ends is opened again, a few times at most; the session's
   * end ends it. It is not a call: nothing waits on it and it asks no questions.
   */
  private listen(attempt = 0): void {
    const peer = this.peer;
    const { era, negotiated, capabilities } = this.actor.getSnapshot().context;
    if (!peer || era !== 'modern' || !negotiated || !this.isReady || attempt >= 5) return;
    const caps = (capabilities ?? {}) as Record<string, { listChanged?: unknown } | undefined>;
    const notifications: Record<string, boolean> = {};
    if (caps['tools']?.listChanged) notifications['toolsListChanged'] = true;
    if (caps['prompts']?.listChanged) notifications['promptsListChanged'] = true;
    if (caps['resources']?.listChanged) notifications['resourcesListChanged'] = true;
    if (Object.keys(notifications).length === 0) return;
    peer.request('subscriptions/listen', requestParams(era, negotiated, { notifications }, {}), {}).then(
      () => {
        if (peer === this.peer && this.isReady) setTimeout(() => this.listen(attempt + 1), 1_000).unref();
      },
      (err: unknown) => {
        if (peer !== this.peer || !this.isReady) return; // the session ended: so did its stream
        this.log.debug({ err }, 'subscriptions/listen ended with an error');
        setTimeout(() => this.listen(attempt + 1), 1_000 * 2 ** attempt).unref();
      },
    );
  }

  /**
   * Notifications mcpx acts on: progress for a request in flight (matched by its token; over HTTP it
   * also arrives with the context of the POST that carried it, which must be that request's), and
   * `list_changed`, re-emitted as a `list_changed` event once the session is ready. The rest are
   * logged and dropped.
   */
  private onNotification(n: JsonRpcNotification, context: unknown): void {
    if (n.method === 'notifications/progress') {
      const p = n.params ?? {};
      const entry = typeof p.progressToken === 'string' ? this.progress.get(p.progressToken) : undefined;
      if (!entry || (isInFlightCall(context) && context !== entry.call) || typeof p.progress !== 'number' || !Number.isFinite(p.progress)) {
        this.log.debug({ progressToken: p.progressToken }, 'dropping a progress notification that matches no request in flight');
        return;
      }
      const update: ProgressUpdate = {
        progress: p.progress,
        ...(typeof p.total === 'number' && Number.isFinite(p.total) ? { total: p.total } : {}),
        ...(typeof p.message === 'string' ? { message: p.message } : {}),
      };
      try {
        entry.listener(update);
      } catch (err) {
        this.log.warn({ err }, 'a progress listener threw');
      }
      return;
    }
    const list = LIST_CHANGED.get(n.method);
    if (list !== undefined) {
      if (!this.isReady) return; // whoever starts using the session lists it afresh anyway
      this.log.debug({ list }, 'upstream list changed');
      this.emit('list_changed', { server: this.name, list });
      return;
    }
    this.log.debug({ method: n.method }, 'ignoring an upstream notification');
  }

  /**
   * A server-to-client request (legacy elicitation, sampling, roots). Over HTTP it arrives with the call
   * whose response stream carried it. stdio cannot say which call provoked it: when exactly one call in
   * flight can answer questions it is that one; otherwise mcpx does not guess.
   */
  private async answerServerRequest(req: JsonRpcRequest, context: unknown): Promise<unknown> {
    if (req.method === 'ping') return {};
    let call = isInFlightCall(context) ? context : undefined;
    if (!call && this.askers.size === 1) call = [...this.askers][0];
    if (call?.onServerRequest) return call.onServerRequest(req, call.context);
    if (this.opts.onServerRequest) return this.opts.onServerRequest(req, call?.context);
    if (this.askers.size > 1) {
      const error: RpcErrorObject = { code: RPC.internalError, message: `mcpx cannot tell which of ${this.askers.size} calls in flight ${req.method} is for` };
      throw error;
    }
    const error: RpcErrorObject = { code: RPC.methodNotFound, message: `mcpx has no caller to ask (${req.method})` };
    throw error;
  }

  private failure(snapshot: SessionSnapshot): McpxError {
    const e = snapshot.context.error;
    if (e) return new McpxError(e.code, e.message, e.data ? { data: e.data } : undefined);
    if (snapshot.matches('stopped')) return new McpxError('MCPX_SESSION_CLOSED', `${this.name}: stopped before it was ready`);
    return new McpxError('MCPX_SESSION_CLOSED', `${this.name}: closed (${closeDetail(this.lastClose) ?? 'no detail'})`);
  }
}

/** The facts of a failed HTTP request, for the machine's verdict (no decision here). */
function httpFailureOf(err: unknown): HttpFailure {
  const code = err instanceof McpxError ? err.code : undefined;
  const own = (err as { status?: unknown } | null)?.status;
  const status = typeof own === 'number' ? own : err instanceof McpxError && typeof err.data?.status === 'number' ? err.data.status : undefined;
  const message = err instanceof Error ? err.message : String(err);
  if (code === 'MCPX_UPSTREAM_UNAUTHORIZED') return { kind: 'unauthorized', ...(status ? { status } : {}), message };
  if (code === 'MCPX_HTTP_STATUS' && status !== undefined) return { kind: 'status', status, message };
  return { kind: 'connection', message };
}

interface InFlightCall {
  context: unknown;
  onServerRequest?: ServerRequestHandler;
}

const isInFlightCall = (v: unknown): v is InFlightCall => typeof v === 'object' && v !== null && 'context' in v;

function createChannel(def: ServerDefinition, transport: WireTransport, opts: UpstreamSessionOptions, log: Logger): Channel {
  if (!isStdioDefinition(def)) {
    const httpOpts = {
      url: def.url,
      ...(def.headers ? { headers: def.headers } : {}),
      ...(opts.maxMessageBytes === undefined ? {} : { maxMessageBytes: opts.maxMessageBytes }),
      logger: log,
    };
    return transport === 'sse' ? new LegacySseChannel(httpOpts) : new StreamableHttpChannel(httpOpts);
  }
  return new StdioChannel({
    command: def.command,
    ...(def.args ? { args: def.args } : {}),
    ...(def.env ? { env: def.env } : {}),
    ...(def.inheritEnv ? { inheritEnv: true } : {}),
    ...(def.cwd ? { cwd: def.cwd } : {}),
    ...(opts.stopGraceMs === undefined ? {} : { stopGraceMs: opts.stopGraceMs }),
    ...(opts.maxMessageBytes === undefined ? {} : { maxMessageBytes: opts.maxMessageBytes }),
    logger: log,
  });
}

function closeDetail(info: CloseInfo | undefined): string | undefined {
  if (!info) return undefined;
  const parts: string[] = [];
  if (info.error) parts.push(info.error.message);
  if (info.code !== undefined && info.code !== null) parts.push(`exit code ${info.code}`);
  if (info.signal) parts.push(`signal ${info.signal}`);
  if (info.stderrTail && info.stderrTail.length > 0) parts.push(`stderr: ${info.stderrTail.slice(-3).join(' | ')}`);
  return parts.length ? parts.join(', ') : undefined;
}

/** A dotted name of the deepest active state, e.g. `connecting.racing`. */
export function stateName(snapshot: SessionSnapshot): string {
  const walk = (v: unknown): string => (typeof v === 'string' ? v : Object.entries(v as Record<string, unknown>).map(([k, sub]) => `${k}.${walk(sub)}`).join(','));
  return walk(snapshot.value);
}
