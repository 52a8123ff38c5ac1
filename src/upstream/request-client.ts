/**
 * RequestClient: ordinary requests on a ready upstream session, in the era the session chart chose.
 *
 * UpstreamSession (./session.ts) runs the chart and its effects (processes, connections, the probe); once
 * the chart is `ready`, every caller's request goes through here: the `_meta` envelope of 2026-07-28, the
 * `resultType` check and `input_required` rounds, the one -32022 retry (the rule is versionRefusal in
 * src/machines/verdict.ts), progress tokens, whose turn it is to ask a question on a legacy stdio session,
 * listings, and SEP-2243 `Mcp-Param-*` headers with their one header-mismatch retry.
 */
import { basename } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  LIST_METHODS,
  type Call,
  type CallHandling,
  type ListKind,
  type ListMethod,
  type ProgressListener,
  type ProgressUpdate,
  timeLeft,
} from '../call/call.js';
import type { InputRequests, QuestionRelay } from '../call/question-relay.js';
import { McpxError, UpstreamRpcError, type RpcErrorObject } from '../errors.js';
import type { Logger } from '../log.js';
import { versionRefusal } from '../machines/verdict.js';
import type { Era } from '../machines/versions.js';
import { RPC } from '../protocol/constants.js';
import type { TransportCapabilities } from '../transports/capabilities.js';
import { requestParams, type ClientCapabilities } from '../transports/mcp-messages.js';
import type { RpcPeer } from '../transports/rpc-peer.js';
import type { JsonRpcNotification, JsonRpcRequest } from '../transports/types.js';
import { ToolHeaders } from './tool-headers.js';
import { isObject } from '../is-object.js';

/** The listings a session can page through, and the server capability each needs (tools: none — always asked). */
export const LISTINGS: Readonly<Record<ListKind, { method: ListMethod; key: string; capability: 'prompts' | 'resources' | null }>> = {
  tools: { method: 'tools/list', key: 'tools', capability: null },
  prompts: { method: 'prompts/list', key: 'prompts', capability: 'prompts' },
  resources: { method: 'resources/list', key: 'resources', capability: 'resources' },
  resourceTemplates: { method: 'resources/templates/list', key: 'resourceTemplates', capability: 'resources' },
};

/** A listing longer than this many pages is cut off (a guard against servers that page forever). */
const MAX_LIST_PAGES = 1000;

/** How long a call's question must have waited for its answer before the next asking call goes ahead (see askTurn). */
const LEND_AFTER_MS = 200;
/** How long a stdio question that two running asking calls could have provoked waits for one of them to end. */
const AMBIGUOUS_HOLD_MS = 10_000;
/** How long a roots/list on a one-caller session waits for the call it was started for (see answerServerRequest). */
const FIRST_ASKER_MS = 5_000;

/** Progress tokens are unique across every session of the process, so a log line names one request. */
let progressTokens = 0;

export interface Tool {
  name: string;
  description?: string;
  inputSchema?: unknown;
  [key: string]: unknown;
}

/** What a request needs from the ready session: its connection and what the chart settled. */
export interface ReadyConnection {
  peer: RpcPeer<CallHandling>;
  era: Era;
  negotiated: string;
  /** What the connection's wire can do. */
  transport: Readonly<TransportCapabilities>;
  /** The server's declared capabilities (from discover or initialize); undefined when it declared none. */
  capabilities: unknown;
  /** Modern revisions mcpx offers, newest first (for the -32022 rule). */
  modernVersions: readonly string[];
}

/** The session side of the client: its name, its log, and a way to the ready connection. */
export interface SessionLink {
  readonly name: string;
  readonly log: Logger;
  /** The ready connection, starting the session first if needed; throws MCPX_SESSION_CLOSED when it is not open. */
  ready(): Promise<ReadyConnection>;
  readonly requestTimeoutMs: number | undefined;
  /** What a modern request declares when its call has no relay. */
  readonly capabilitiesWithoutRelay: ClientCapabilities | undefined;
  /** The folders a legacy `roots/list` is answered with by mcpx itself (see answerServerRequest). */
  readonly roots?: () => readonly string[];
  /** The session is one caller's alone: a roots/list a call provoked goes to that call. */
  readonly rootsPerCaller?: boolean;
}

export class RequestClient {
  /** Calls in flight that can answer questions, for transports that cannot attribute them (stdio). */
  private readonly askers = new Set<CallHandling>();
  /** Asking calls waiting for their turn on a legacy stdio session, first come first (see askTurn). */
  private readonly turnQueue: Array<{ call: CallHandling; go: () => void }> = [];
  /** Questions of each call in flight that wait for its caller's answer (the call is parked meanwhile). */
  private readonly parked = new Map<CallHandling, number>();
  /** Questions held until the askers change (see soleAskerWithin). */
  private readonly changes = new Set<() => void>();
  /**
   * SEP-2243, modern Streamable HTTP sessions only: from the latest complete listTools(), the
   * `Mcp-Param-*` headers each listed tool asks for, and the tools excluded for invalid annotations.
   */
  private paramTools: ToolHeaders | undefined;
  /** The tools/list callTool runs when it needs paramTools; shared by concurrent calls. */
  private paramToolsListing: Promise<void> | undefined;
  /** On a session that is one caller's alone: the roots that caller last gave (a later roots/list with no call to go to gets them). */
  private callerRoots: unknown;
  /** Requests in flight that asked for progress, by the progressToken they carry. */
  private readonly progress = new Map<string, { listener: ProgressListener; call: CallHandling }>();

  constructor(private readonly link: SessionLink) {}

  private get name(): string {
    return this.link.name;
  }

  private get log(): Logger {
    return this.link.log;
  }

  /**
   * Send a request in the session's era. Modern requests get the `_meta` envelope; results are
   * checked for `resultType` (absent = complete, as legacy servers send). An `input_required` result is
   * put to the call's relay (`askRound`) and retried, up to `maxInputRounds` (default 8).
   */
  request(method: string, params?: Record<string, unknown>, call: CallHandling = {}): Promise<Record<string, unknown>> {
    return this.requestWithHeaders(method, params, call, undefined);
  }

  /** request(), with extra HTTP headers on every round's POST (callTool's `Mcp-Param-*`). */
  private async requestWithHeaders(
    method: string,
    params: Record<string, unknown> | undefined,
    call: CallHandling,
    headers: Record<string, string> | undefined,
  ): Promise<Record<string, unknown>> {
    const conn = await this.link.ready();
    const maxRounds = call.maxInputRounds ?? 8;
    // The call travels with its request: HTTP hands it back with any question that request provokes.
    // Where the wire says nothing of which call a legacy server's question is for, calls that can
    // answer questions take turns, so a question always has exactly one call to go to.
    if (call.relay && turnsFor(conn) && conn.era === 'legacy') await this.askTurn(call, call.signal);
    else if (call.relay) {
      this.askers.add(call);
      this.changed();
    }
    try {
      return await this.requestRounds(conn, method, params, call, maxRounds, headers);
    } finally {
      this.askers.delete(call);
      this.parked.delete(call);
      this.nextTurn();
    }
  }

  /**
   * An asking call's turn on a legacy stdio session, which says nothing of which call a question is for:
   * it starts when no other asking call is running there. A call whose question waits for its caller's
   * answer is parked, not running: the next call goes ahead at once, so a caller that walks away from
   * its question holds up nobody (calls that ask nothing are never held), and a question that arrives then
   * is the running call's. Once more than one is running (the parked one was answered), a question is held
   * until one of them ends (answerServerRequest), and refused if none does soon: never handed to a guess. Resolves once `call` is among the askers.
   */
  private askTurn(call: CallHandling, signal: AbortSignal | undefined): Promise<void> {
    if (this.turnQueue.length === 0 && !this.askerRunning()) {
      this.askers.add(call);
      this.changed();
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const entry = {
        call,
        go: () => {
          signal?.removeEventListener('abort', onAbort);
          this.askers.add(call);
          this.changed();
          resolve();
        },
      };
      const onAbort = () => {
        const i = this.turnQueue.indexOf(entry);
        if (i >= 0) this.turnQueue.splice(i, 1);
        reject(new McpxError('MCPX_REQUEST_CANCELLED', `${this.name}: cancelled while waiting for its turn`));
        this.nextTurn(); // leave the line without holding up those behind
      };
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.turnQueue.push(entry);
    });
  }

  /** An asking call in flight that is not parked on a question. */
  private askerRunning(): boolean {
    for (const c of this.askers) if (!this.parked.get(c)) return true;
    return false;
  }

  /** Lets the next waiting call go when no asking call is running. */
  private nextTurn(): void {
    if (this.turnQueue.length > 0 && !this.askerRunning()) this.turnQueue.shift()!.go();
    this.changed();
  }

  /** Who a stdio question is for: the one asking call running (a parked call waits for its caller's answer and asks nothing meanwhile), else the only one in flight. */
  private soleAsker(): CallHandling | undefined {
    const running = [...this.askers].filter((c) => !this.parked.get(c));
    if (running.length === 1) return running[0];
    return this.askers.size === 1 ? [...this.askers][0] : undefined;
  }

  /** soleAsker() once the askers change so that there is one, or undefined after `ms`. */
  private soleAskerWithin(ms: number): Promise<CallHandling | undefined> {
    return new Promise((resolve) => {
      const check = () => {
        const call = this.soleAsker();
        if (call === undefined && this.askers.size > 1) return;
        done(call);
      };
      const done = (call: CallHandling | undefined) => {
        clearTimeout(timer);
        this.changes.delete(check);
        resolve(call);
      };
      const timer = setTimeout(() => done(undefined), ms);
      timer.unref();
      this.changes.add(check);
    });
  }

  /** The first asking call to come, or undefined after `ms`. */
  private firstAskerWithin(ms: number): Promise<CallHandling | undefined> {
    return new Promise((resolve) => {
      const check = () => {
        const call = this.soleAsker();
        if (call === undefined) return;
        clearTimeout(timer);
        this.changes.delete(check);
        resolve(call);
      };
      const timer = setTimeout(() => {
        this.changes.delete(check);
        resolve(undefined);
      }, ms);
      timer.unref();
      this.changes.add(check);
    });
  }

  private changed(): void {
    for (const wake of [...this.changes]) wake();
  }

  private async requestRounds(
    conn: ReadyConnection,
    method: string,
    params: Record<string, unknown> | undefined,
    call: CallHandling,
    maxRounds: number,
    headers?: Record<string, string>,
  ): Promise<Record<string, unknown>> {
    const { peer, era, negotiated } = conn;
    let current = params;
    for (let round = 0; ; round++) {
      // Each round is a new upstream request, so it gets its own token (the spec: unique per request).
      const token = call.onProgress ? `mcpx-p-${++progressTokens}` : undefined;
      if (token !== undefined) this.progress.set(token, { listener: call.onProgress!, call });
      let raw: unknown;
      try {
        // A -32022 gets the one retry the version rule allows (retryVersion); a second one is thrown.
        for (let version = negotiated, retried = false; ; retried = true) {
          try {
            raw = await peer.request(
              method,
              requestParams(
                era,
                version,
                current,
                call.relay ? withSessionExtensions(call.relay.capabilities, this.link.capabilitiesWithoutRelay) : this.link.capabilitiesWithoutRelay,
                token === undefined ? undefined : { progressToken: token },
              ),
              {
                timeoutMs: Math.max(1, timeLeft(call) ?? this.link.requestTimeoutMs ?? 300_000),
                ...(call.signal ? { signal: call.signal } : {}),
                context: call,
                ...(headers !== undefined && Object.keys(headers).length > 0 ? { headers } : {}),
              },
            );
            break;
          } catch (err) {
            version = this.retryVersion(err, conn, method, retried);
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
      if (!call.relay) {
        throw new McpxError(
          'MCPX_UPSTREAM_ERROR',
          `${this.name}: ${method} needs input from the caller (input_required), and this caller cannot answer questions`,
          {
            data: { resultType, inputRequests: raw.inputRequests },
          },
        );
      }
      if (round >= maxRounds) throw new McpxError('MCPX_UPSTREAM_ERROR', `${this.name}: ${method} still required input after ${maxRounds} rounds`);
      const inputRequests = isObject(raw.inputRequests) ? (raw.inputRequests as InputRequests) : {};
      const inputResponses = Object.keys(inputRequests).length > 0 ? await call.relay.askRound(inputRequests, call) : {};
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
  private retryVersion(err: unknown, conn: ReadyConnection, method: string, retried: boolean): string {
    if (conn.era !== 'modern' || !(err instanceof UpstreamRpcError) || err.rpc.code !== RPC.unsupportedProtocolVersion) throw err;
    const v = versionRefusal(method, err.rpc, conn.modernVersions, retried);
    if (v.kind === 'retry') {
      this.log.info({ method, version: v.version, supported: v.supported }, v.why);
      return v.version;
    }
    if (v.kind === 'malformed') throw err;
    throw new McpxError('MCPX_NO_COMMON_VERSION', `${this.name}: ${v.why}`, { cause: err, data: { ...err.data, method, supported: v.supported } });
  }

  async listTools(call: CallHandling = {}): Promise<Tool[]> {
    const tools = (await this.listAll('tools', call)) as Tool[];
    return mirrorsParams(await this.link.ready()) ? this.admitTools(tools) : tools;
  }

  /**
   * Every item of a listing, following `nextCursor` (at most MAX_LIST_PAGES pages; a cursor that comes
   * back twice is MCPX_BAD_RESULT). Prompts and resources are listed only when the server declared the
   * capability (many servers answer -32601 otherwise): an undeclared one is an empty list, nothing sent.
   * Tools are returned as listed (listTools() also applies SEP-2243's exclusions).
   */
  async listAll(kind: ListKind, call: CallHandling = {}): Promise<Array<Record<string, unknown>>> {
    const { method, key, capability } = LISTINGS[kind];
    const conn = await this.link.ready();
    if (capability !== null && !declares(conn, capability)) return [];
    const items: Array<Record<string, unknown>> = [];
    const seen = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      let result: Record<string, unknown>;
      try {
        result = await this.request(method, cursor ? { cursor } : undefined, call);
      } catch (err) {
        // A server that declared `resources` but has no templates (or the like) answers -32601: that list is
        // empty, and the server's other lists are still served. Tools have no such excuse.
        if (kind !== 'tools' && page === 0 && err instanceof UpstreamRpcError && err.rpc.code === RPC.methodNotFound) return [];
        throw err;
      }
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
   * One call, in the session's era: a listing whole (every page; tools less those SEP-2243 excludes), a
   * `tools/call` through callTool (SEP-2243 headers), any other relayed request as it is. The call's
   * method is one of the Call's by its type: the entries checked it.
   */
  async run(call: Call): Promise<Record<string, unknown>> {
    const { method, params } = call;
    if (method === 'tools/call') {
      const name = params['name'];
      const args = params['arguments'] ?? {};
      if (typeof name !== 'string' || !isObject(args)) {
        throw new McpxError('MCPX_BAD_REQUEST', `${this.name}: tools/call needs a string "name" and an object "arguments"`, {
          data: { server: this.name, method, field: typeof name !== 'string' ? 'name' : 'arguments' },
        });
      }
      return this.callToolWith({ ...params, name, arguments: args }, call);
    }
    if (method in LIST_METHODS) {
      const kind = LIST_METHODS[method as keyof typeof LIST_METHODS];
      return { [LISTINGS[kind].key]: kind === 'tools' ? await this.listTools(call) : await this.listAll(kind, call) };
    }
    return this.request(method, params, call);
  }

  /**
   * Calls a tool. On a modern Streamable HTTP session the arguments its `x-mcp-header` annotations name
   * go out as `Mcp-Param-*` headers too (SEP-2243), from the most recently listed inputSchema; a call
   * before any listing lists the tools once first. A tool excluded for invalid annotations is refused
   * (MCPX_BAD_TOOL), and so is an argument with no header form (MCPX_BAD_REQUEST); nothing is sent.
   */
  callTool(name: string, args: Record<string, unknown> = {}, call: CallHandling = {}): Promise<Record<string, unknown>> {
    return this.callToolWith({ name, arguments: args }, call);
  }

  /** callTool with whole params (a relayed call may carry `_meta` or other fields besides name and arguments). */
  private async callToolWith(
    params: Record<string, unknown> & { name: string; arguments: Record<string, unknown> },
    call: CallHandling,
  ): Promise<Record<string, unknown>> {
    const { name, arguments: args } = params;
    if (!mirrorsParams(await this.link.ready())) return this.request('tools/call', params, call);
    if (!this.paramTools) await this.listParamTools(call);
    const headers = this.paramHeadersFor(name, args);
    try {
      return await this.requestWithHeaders('tools/call', params, call, headers);
    } catch (err) {
      // "If the server rejects a request with a HeaderMismatch error because required Mcp-Param-* headers
      // are missing or do not match the body, the client SHOULD call tools/list to check for changes to the
      // tool's inputSchema, then retry the original request with the appropriate headers." Once, and only
      // when the listing changed the headers: the same headers would be refused the same way.
      if (!(err instanceof UpstreamRpcError) || err.rpc.code !== RPC.headerMismatch) throw err;
      await this.listParamTools(call);
      const fresh = this.paramHeadersFor(name, args);
      if (JSON.stringify(Object.entries(fresh).sort()) === JSON.stringify(Object.entries(headers).sort())) throw err;
      this.log.info({ tool: name }, 'the server refused the Mcp-Param headers; retrying with the re-listed inputSchema');
      return this.requestWithHeaders('tools/call', params, call, fresh);
    }
  }

  /** Tools the last listTools() excluded for invalid `x-mcp-header` annotations, with the reason. */
  excludedTools(): Array<{ name: string; reason: string }> {
    return this.paramTools?.excluded() ?? [];
  }

  // ---- what arrives for requests in flight ----

  /**
   * A `notifications/progress`: delivered to the request in flight whose token it names (over HTTP it also
   * arrives with the context of the POST that carried it, which must be that request's); otherwise dropped.
   */
  progressArrived(n: JsonRpcNotification, context: CallHandling | undefined): void {
    const p = n.params ?? {};
    const entry = typeof p.progressToken === 'string' ? this.progress.get(p.progressToken) : undefined;
    if (!entry || (context !== undefined && context !== entry.call) || typeof p.progress !== 'number' || !Number.isFinite(p.progress)) {
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
  }

  /**
   * A server-to-client request (legacy elicitation, sampling, roots). Over HTTP it arrives with the call
   * whose response stream carried it. stdio cannot say which call provoked it: when exactly one call in
   * flight can answer questions it is that one; otherwise mcpx does not guess. It is put to that call's relay.
   */
  async answerServerRequest(req: JsonRpcRequest, context: CallHandling | undefined): Promise<unknown> {
    if (req.method === 'ping') return {};
    // A legacy server keeps the roots it was given for the whole session (server-filesystem asks right
    // after initialize, whoever's call is in flight): on a session callers share they are mcpx's answer,
    // the same for every caller. Only a session that is one caller's alone asks that caller.
    if (req.method === 'roots/list' && this.link.roots && !this.link.rootsPerCaller) return this.ownRoots();
    let call = context ?? this.soleAsker();
    // Two asking calls running (a parked one was answered while one went ahead): the question is held
    // until one of them ends, then it is the other's; held too long, it is refused, never guessed.
    if (!call && context === undefined && this.askers.size > 1) call = await this.soleAskerWithin(AMBIGUOUS_HOLD_MS);
    // A session that is one caller's alone was started for that caller's call, and its server may ask for
    // roots (right after initialize) before the call is sent: the call that is coming is the one to ask.
    if (!call && context === undefined && req.method === 'roots/list' && this.link.rootsPerCaller && this.askers.size === 0) {
      call = await this.firstAskerWithin(FIRST_ASKER_MS);
    }
    // Nobody here can answer for roots: the last roots this session's caller gave, else the configured ones.
    if (req.method === 'roots/list' && this.link.roots && call?.relay?.capabilities.roots === undefined) return this.callerRoots ?? this.ownRoots();
    if (call?.relay) {
      // While its caller is asked, the call is parked: the session's next asking call may start (askTurn).
      const asker = call;
      this.parked.set(asker, (this.parked.get(asker) ?? 0) + 1);
      this.changed();
      // After a moment: questions a tool sends together arrive together, before anyone goes ahead.
      setTimeout(() => this.nextTurn(), LEND_AFTER_MS).unref();
      try {
        const answer = await asker.relay!.ask(req, asker);
        if (req.method === 'roots/list') this.callerRoots = answer;
        return answer;
      } finally {
        const n = (this.parked.get(asker) ?? 1) - 1;
        if (n > 0) this.parked.set(asker, n);
        else this.parked.delete(asker);
        this.changed();
      }
    }
    if (this.askers.size > 1) {
      const error: RpcErrorObject = {
        code: RPC.internalError,
        message: `mcpx cannot tell which of ${this.askers.size} calls in flight ${req.method} is for (none of them ended within ${AMBIGUOUS_HOLD_MS} ms); refused rather than guessed`,
      };
      throw error;
    }
    const error: RpcErrorObject = { code: RPC.methodNotFound, message: `mcpx has no caller to ask (${req.method})` };
    throw error;
  }

  /**
   * mcpx's own answer to roots/list: the configured roots. With none, what a client that declared no
   * roots answers (-32601): a server that asks anyway is given nothing to replace its own folders with.
   */
  private ownRoots(): { roots: Array<{ uri: string; name: string }> } {
    const dirs = this.link.roots?.() ?? [];
    if (dirs.length === 0) {
      const error: RpcErrorObject = { code: RPC.methodNotFound, message: 'mcpx has no roots to give this server (it declared none; see mcpx.roots)' };
      throw error;
    }
    return { roots: dirs.map((dir) => ({ uri: pathToFileURL(dir).href, name: basename(dir) || dir })) };
  }

  // ---- SEP-2243 Mcp-Param-* headers ----

  private admitTools(tools: Tool[]): Tool[] {
    const { table, admitted } = ToolHeaders.admit(tools, this.log, this.paramTools);
    this.paramTools = table;
    return admitted;
  }

  /**
   * One tools/list for callTool's sake, shared by the calls waiting on it. A failure leaves paramTools as it
   * was. It declares the capabilities of the call that needed it (a server may list differently for them),
   * but puts nothing to that call's caller, who asked for the call, not for the listing.
   */
  private listParamTools(call: CallHandling): Promise<void> {
    this.paramToolsListing ??= this.listTools(call.relay ? { relay: declaringOnly(call.relay) } : {})
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
}

/** A relay that declares `relay`'s capabilities and refuses every question, as a call without a relay would. */
function declaringOnly(relay: QuestionRelay): QuestionRelay {
  return {
    capabilities: relay.capabilities,
    ask: (req) => {
      const error: RpcErrorObject = { code: RPC.methodNotFound, message: `mcpx has no caller to ask (${req.method})` };
      return Promise.reject(error);
    },
    askRound: () => Promise.reject(new McpxError('MCPX_UPSTREAM_ERROR', 'a request mcpx makes on its own needs input (input_required); nobody can answer it')),
  };
}

/**
 * "Clients using other transports (e.g., stdio) MAY ignore x-mcp-header annotations entirely": mcpx does
 * wherever a message cannot carry headers of its own, and legacy eras have none.
 */
function mirrorsParams(conn: ReadyConnection): boolean {
  return conn.transport.perMessageHeaders && conn.era === 'modern';
}

/**
 * Whether asking calls take turns on the connection (askTurn): wherever the wire cannot say which call a
 * question is for (a process's stdio; HTTP+SSE, whose server messages all come on one GET stream).
 */
function turnsFor(conn: ReadyConnection): boolean {
  return !conn.transport.attributesServerRequests;
}

/** Whether the server declared a capability (from discover or initialize); with nothing known, assume it did. */
function declares(conn: ReadyConnection, capability: string): boolean {
  const caps = conn.capabilities;
  if (!isObject(caps)) return true;
  const value = caps[capability];
  return value !== undefined && value !== null && value !== false;
}

/**
 * A relay's capabilities plus the extensions every request of the session declares (the daemon: MCP
 * Apps): extensions are the session's, whichever caller the call's questions go to.
 */
function withSessionExtensions(caps: ClientCapabilities, session: ClientCapabilities | undefined): ClientCapabilities {
  const extensions = (session as { extensions?: Record<string, unknown> } | undefined)?.extensions;
  if (extensions === undefined || Object.keys(extensions).length === 0) return caps;
  return { ...caps, extensions: { ...extensions, ...((caps as { extensions?: Record<string, unknown> }).extensions ?? {}) } } as ClientCapabilities;
}
