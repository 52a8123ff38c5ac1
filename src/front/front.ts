/**
 * The MCP server mcpx shows its callers, in the daemon: each `mcpx serve` stream (./socket-entry.ts) and
 * `/mcp` over Streamable HTTP (./http-entry.ts).
 *
 * Built on the official SDK v2 low-level `Server`, so the caller's era — `initialize` for 2024-11-05 …
 * 2025-11-25 callers, `server/discover` and `_meta` on every request for 2026-07-28 callers — is the
 * SDK's business: a serving entry (`serveStdio`, `createMcpHandler`, a sessionful HTTP transport)
 * calls `frontFactory(...)` once per connection (or per request) and pins the instance to an era.
 * What is mcpx's own is here: the names callers see, routing each request to the server that
 * offers it, the caller's revision forwarded so the pool picks the lane, and upstream failures shown
 * the way a client shows them to a person.
 *
 * Aggregate mode (the default): tools and prompts as `<server>__<name>` (./names.ts), resources and
 * templates by their own URIs. Passthrough mode: one server under its own names.
 */
import { RPC } from '../protocol/constants.js';
import { randomBytes, randomUUID } from 'node:crypto';
import {
  CLIENT_CAPABILITIES_META_KEY,
  createRequestStateCodec,
  inputRequired,
  PROTOCOL_VERSION_META_KEY,
  ProtocolError,
  ResourceNotFoundError,
  Server,
  UriTemplate,
  type McpServerFactory,
  type RequestStateCodec,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { silentLogger, type Logger } from '../log.js';
import {
  RelayError,
  type AskBackend,
  type AskView,
  type CatalogItem,
  type CatalogView,
  type FrontBackend,
  type Progress,
  type RelayContext,
  type ServerCatalog,
} from './backend.js';
import { NameTable, sanitize, SEPARATOR } from './names.js';
import { isObject } from '../is-object.js';

export interface FrontConfig {
  backend: FrontBackend;
  /** Serve this one server under its own names. */
  passthrough?: string;
  /** Show only these servers (aggregate mode). */
  servers?: readonly string[];
  version: string;
  logger?: Logger;
  /** The caller's session when the entry has no session of its own (a serve stream: one per stream). */
  session?: string;
  /**
   * Signs the `requestState` a 2026-07-28 caller echoes between rounds of a question (HMAC-SHA256,
   * 32 bytes or more). Default: a random key per factory, i.e. per daemon (`/mcp`) or per `mcpx serve` stream.
   */
  stateKey?: Uint8Array;
  /** How long a caller has to answer a question round (default 10 minutes). */
  questionTtlSeconds?: number;
}

/** What a `requestState` carries between rounds: the daemon-side ask, the questions put ([key the caller saw, question id]), what was asked for. */
interface AskState {
  ask: string;
  questions: Array<[string, string]>;
  name: string;
}

/** What an ask runs: a tool call, or a prompts/get or resources/read with its params. */
interface AskStart {
  tool: string;
  args: Record<string, unknown>;
  method?: 'prompts/get' | 'resources/read';
  params?: Record<string, unknown>;
}

/** How long one poll of an ask waits before polling again (the caller's signal ends it sooner). */
const ASK_POLL_MS = 20_000;

/** JSON-RPC error codes the front answers with itself. */
const INVALID_PARAMS = -32602;

const SERVER_INFO_META = 'io.modelcontextprotocol/serverInfo';

/** What one caller sees, computed from a catalogue view. */
export class FrontView {
  readonly tools: NameTable;
  readonly prompts: NameTable;
  private readonly toolItems = new Map<string, CatalogItem>();
  private readonly promptItems = new Map<string, CatalogItem>();
  readonly resources: Array<{ server: string; item: CatalogItem }> = [];
  readonly templates: Array<{ server: string; item: CatalogItem; template: UriTemplate | undefined }> = [];
  readonly errors: Array<{ server: string; code: string; message: string }> = [];
  /** Every server was listed (no failure, nothing left unlisted): the view may be reused until the catalogue changes. */
  readonly complete: boolean;

  constructor(
    view: CatalogView,
    readonly mode: { passthrough?: string; servers?: readonly string[] },
  ) {
    // Names are given over every configured server, so a `--servers` filter never renames anything.
    const all = view.servers;
    const pairs = (pick: (s: ServerCatalog) => CatalogItem[]) =>
      all.flatMap((s) =>
        pick(s)
          .filter((i) => typeof i['name'] === 'string')
          .map((i) => ({ server: s.server, name: i['name'] as string, item: i })),
      );
    this.complete = all.every((s) => s.error === undefined && s.source !== 'none');
    const toolPairs = pairs((s) => s.tools);
    const promptPairs = pairs((s) => s.prompts);
    this.tools = NameTable.of(toolPairs);
    this.prompts = NameTable.of(promptPairs);
    toolPairs.forEach((p, i) => this.toolItems.set(this.tools.entries[i]!.name, p.item));
    promptPairs.forEach((p, i) => this.promptItems.set(this.prompts.entries[i]!.name, p.item));
    const seen = new Set<string>();
    for (const s of all.filter((x) => this.shows(x.server))) {
      if (s.error) this.errors.push({ server: s.server, ...s.error });
      for (const r of s.resources) {
        const uri = r['uri'];
        if (typeof uri !== 'string' || seen.has(uri)) continue; // the first server to list a URI serves it
        seen.add(uri);
        this.resources.push({ server: s.server, item: r });
      }
      for (const t of s.resourceTemplates) {
        const uriTemplate = t['uriTemplate'];
        if (typeof uriTemplate !== 'string') continue;
        let template: UriTemplate | undefined;
        try {
          template = new UriTemplate(uriTemplate);
        } catch {
          template = undefined;
        }
        this.templates.push({ server: s.server, item: t, template });
      }
    }
  }

  shows(server: string): boolean {
    if (this.mode.passthrough !== undefined) return server === this.mode.passthrough;
    return this.mode.servers === undefined || this.mode.servers.includes(server);
  }

  listTools(): CatalogItem[] {
    if (this.mode.passthrough !== undefined) return this.passthroughItems('tools');
    return this.tools.entries.filter((e) => this.shows(e.server)).map((e) => ({ ...this.toolItems.get(e.name), name: e.name }));
  }

  listPrompts(): CatalogItem[] {
    if (this.mode.passthrough !== undefined) return this.passthroughItems('prompts');
    return this.prompts.entries.filter((e) => this.shows(e.server)).map((e) => ({ ...this.promptItems.get(e.name), name: e.name }));
  }

  private passthroughItems(kind: 'tools' | 'prompts'): CatalogItem[] {
    const table = kind === 'tools' ? this.tools : this.prompts;
    const items = kind === 'tools' ? this.toolItems : this.promptItems;
    return table.entries.filter((e) => e.server === this.mode.passthrough).map((e) => items.get(e.name)!);
  }

  /** The server and upstream name behind a tool (or prompt) name a caller used. */
  resolve(kind: 'tools' | 'prompts', name: string): { server: string; original: string; item: CatalogItem } | undefined {
    const table = kind === 'tools' ? this.tools : this.prompts;
    const items = kind === 'tools' ? this.toolItems : this.promptItems;
    if (this.mode.passthrough !== undefined) {
      const e = table.entries.find((x) => x.server === this.mode.passthrough && x.original === name);
      return e ? { server: e.server, original: e.original, item: items.get(e.name)! } : undefined;
    }
    const e = table.resolve(name);
    if (!e || !this.shows(e.server)) return undefined;
    return { server: e.server, original: e.original, item: items.get(e.name)! };
  }

  /**
   * A tool name of a server that could not be listed (it fails to start, say): the call goes to that
   * server anyway, so the caller learns why from the server's own failure rather than "unknown tool".
   */
  resolveUnlisted(name: string): { server: string; original: string } | undefined {
    for (const e of this.errors) {
      const prefix = this.mode.passthrough === e.server ? '' : `${sanitize(e.server)}${SEPARATOR}`;
      if (this.mode.passthrough !== undefined && this.mode.passthrough !== e.server) continue;
      if (name.startsWith(prefix) && name.length > prefix.length) return { server: e.server, original: name.slice(prefix.length) };
    }
    return undefined;
  }

  /** The server that serves a URI: the one that listed it, else the first whose template matches it. */
  serverForUri(uri: string): string | undefined {
    const listed = this.resources.find((r) => r.item['uri'] === uri);
    if (listed) return listed.server;
    const t = this.templates.find((x) => x.template?.match(uri));
    if (t) return t.server;
    return this.mode.passthrough;
  }

  serverForTemplate(uriTemplate: string): string | undefined {
    return this.templates.find((t) => t.item['uriTemplate'] === uriTemplate)?.server ?? this.mode.passthrough;
  }
}

/**
 * The caller's view of the catalogue, kept between requests: a `tools/call` resolves its name against
 * the view the last listing (or call) built, instead of fetching the catalogue and rebuilding the name
 * tables on every request. One view per caller lane (the caller's revision picks the lane, and the lane
 * the listing). A view is dropped when the backend announces a catalogue change, after `maxAgeMs`
 * (a bound in case an announcement is lost), and is never kept when a server failed to list; a name the
 * kept view does not know is looked up again in a fresh view before it is refused.
 */
export class ViewCache {
  private readonly views = new Map<string, { view: FrontView; at: number }>();
  private generation = 0;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly backend: FrontBackend,
    private readonly mode: { passthrough?: string; servers?: readonly string[] },
    private readonly maxAgeMs = 5_000,
  ) {
    this.unsubscribe = backend.onChange(() => this.clear());
  }

  /** The kept view for this caller's lane, else a fresh one; `fresh` always fetches (and keeps the result). */
  async get(ctx: RelayContext, fresh = false): Promise<FrontView> {
    const key = ctx.callerProtocol ?? '';
    const kept = this.views.get(key);
    if (!fresh && kept && Date.now() - kept.at < this.maxAgeMs) return kept.view;
    const generation = this.generation;
    const view = new FrontView(await this.backend.catalog(ctx), this.mode);
    // A change announced while this view was being fetched may have come after the catalogue was read.
    if (view.complete && generation === this.generation) this.views.set(key, { view, at: Date.now() });
    else this.views.delete(key);
    return view;
  }

  clear(): void {
    this.generation += 1;
    this.views.clear();
  }

  close(): void {
    this.unsubscribe();
    this.clear();
  }
}

/**
 * The serving entries' factory: one front instance per connection (stdio, legacy HTTP session) or
 * per request (2026-07-28 HTTP).
 */
export function frontFactory(cfg: FrontConfig): McpServerFactory & { close(): void } {
  const log = (cfg.logger ?? silentLogger).child({ component: 'front' });
  // Bound to the method, the tool and the caller's session: a state minted for one call cannot be
  // replayed on another (and each ask's questions can be answered once: see ask()).
  // The scope key of a caller with no session of its own: the serve stream (cfg.session), else one
  // key for this entry's stateless (2026-07-28 HTTP) callers. A legacy HTTP caller has its Mcp-Session-Id.
  const session = cfg.session ?? `mcp-${randomUUID()}`;
  const codec = createRequestStateCodec<AskState>({
    key: cfg.stateKey ?? randomBytes(32),
    ttlSeconds: cfg.questionTtlSeconds ?? 600,
    bind: (ctx) => `${ctx.mcpReq.method}\0${ctx.sessionId ?? ''}`,
  });
  const live = new Set<Server>();
  const views = new ViewCache(cfg.backend, {
    ...(cfg.passthrough === undefined ? {} : { passthrough: cfg.passthrough }),
    ...(cfg.servers === undefined ? {} : { servers: cfg.servers }),
  });
  // Every instance announces changes to its caller: legacy connections get list_changed
  // notifications, 2026-07-28 callers get them on their subscriptions/listen streams.
  const unsubscribe = cfg.backend.onChange((change) => {
    for (const server of live) {
      if (change.server !== undefined && !shownBy(cfg, change.server)) continue;
      for (const list of change.lists) {
        const send = list === 'tools' ? server.sendToolListChanged() : list === 'prompts' ? server.sendPromptListChanged() : server.sendResourceListChanged();
        void send.catch((err: unknown) => log.debug({ err, list }, 'could not announce a list change'));
      }
    }
  });
  const factory = ((ctx: { era: 'legacy' | 'modern' }) => {
    const server = buildFront(cfg, ctx.era, log, codec, session, views);
    live.add(server);
    const prev = server.onclose;
    server.onclose = () => {
      live.delete(server);
      prev?.();
    };
    return server;
  }) as McpServerFactory & { close(): void };
  factory.close = () => {
    unsubscribe();
    views.close();
    live.clear();
  };
  return factory;
}

function shownBy(cfg: FrontConfig, server: string): boolean {
  if (cfg.passthrough !== undefined) return server === cfg.passthrough;
  return cfg.servers === undefined || cfg.servers.includes(server);
}

function buildFront(cfg: FrontConfig, era: 'legacy' | 'modern', log: Logger, codec: RequestStateCodec<AskState>, session: string, views: ViewCache): Server {
  const server = new Server(
    { name: cfg.passthrough === undefined ? 'mcpx' : `mcpx/${cfg.passthrough}`, version: cfg.version },
    {
      capabilities: {
        tools: { listChanged: true },
        prompts: { listChanged: true },
        resources: { listChanged: true },
        completions: {},
      },
      // A tampered, expired or rebound state is refused by the SDK with -32602 before the handler runs.
      requestState: { verify: (state, ctx) => codec.verify(state, ctx) },
    },
  );
  /** The caller's revision: the request's own `_meta` (2026-07-28), else the one negotiated at initialize. */
  const relayContext = (ctx: ServerContext): RelayContext => {
    const claimed = (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[PROTOCOL_VERSION_META_KEY];
    const callerProtocol = typeof claimed === 'string' ? claimed : (server.getNegotiatedProtocolVersion() ?? (era === 'legacy' ? '2025-03-26' : undefined));
    return {
      ...(callerProtocol ? { callerProtocol } : {}),
      session: ctx.sessionId ?? session,
      signal: ctx.mcpReq.signal,
    };
  };

  /** A listing's view: always fetched (a caller listing wants what is offered now), and kept for the requests that follow. */
  const view = (ctx: RelayContext): Promise<FrontView> => views.get(ctx, true);

  /**
   * The server and upstream name behind a tool or prompt name: from the kept view, else (a name it does
   * not know, or no view kept) from a fresh one, so a tool added since the last listing is found.
   */
  const targetOf = async (rctx: RelayContext, kind: 'tools' | 'prompts', name: string): Promise<{ v: FrontView; found: ReturnType<FrontView['resolve']> }> => {
    let v = await views.get(rctx);
    let found = v.resolve(kind, name);
    if (!found) {
      v = await views.get(rctx, true);
      found = v.resolve(kind, name);
    }
    return { v, found };
  };

  /**
   * The caller's progress token, relayed: upstream progress goes to the caller under the caller's own
   * token. `flush` waits for notifications still being written, so none arrives after the result.
   */
  const withProgress = (ctx: ServerContext, rctx: RelayContext): { rctx: RelayContext; flush: () => Promise<void> } => {
    const token = ctx.mcpReq._meta?.progressToken;
    if (token === undefined) return { rctx, flush: async () => undefined };
    const sending = new Set<Promise<void>>();
    const onProgress = (p: Progress) => {
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
    return { rctx: { ...rctx, onProgress }, flush: async () => void (await Promise.all([...sending])) };
  };

  /** Runs `fn` with the caller's progress relayed, and lets the progress out before the result. */
  const relayed = async <T>(ctx: ServerContext, rctx: RelayContext, fn: (rctx: RelayContext) => Promise<T>): Promise<T> => {
    const p = withProgress(ctx, rctx);
    try {
      return await fn(p.rctx);
    } finally {
      await p.flush();
    }
  };

  /** A listing; a caller that sent a progress token hears of each server started for it. */
  const listing = (ctx: ServerContext): Promise<FrontView> => relayed(ctx, relayContext(ctx), view);

  server.setRequestHandler('tools/list', async (_req, ctx) => ({ tools: (await listing(ctx)).listTools() }) as never);

  server.setRequestHandler('tools/call', async (req, ctx) => {
    const rctx = relayContext(ctx);
    const name = req.params.name;
    const { v, found } = await targetOf(rctx, 'tools', name);
    const tool = found ?? v.resolveUnlisted(name);
    if (!tool) throw new ProtocolError(INVALID_PARAMS, `Unknown tool: ${name}`);
    const can = askable(ctx);
    if (can) {
      try {
        const out = await ask(
          can.asks,
          ctx,
          rctx,
          name,
          tool.server,
          { tool: tool.original, args: (req.params.arguments ?? {}) as Record<string, unknown> },
          can.caps,
        );
        if ('input' in out) return out.input as never;
        if (out.done.result !== undefined) return fromUpstream(out.done.result) as never;
        const e = out.done.error!;
        return toolFailure(tool.server, new RelayError(e.code, e.message, e.data)) as never;
      } catch (err) {
        if (err instanceof ProtocolError) throw err;
        return toolFailure(tool.server, err) as never;
      }
    }
    try {
      const result = await relayed(ctx, rctx, (r) =>
        cfg.backend.request(tool.server, 'tools/call', { name: tool.original, arguments: req.params.arguments ?? {} }, r),
      );
      return fromUpstream(result) as never;
    } catch (err) {
      // A 2026-07-28 caller is told of a capability it must declare (-32021, requiredCapabilities);
      // a legacy caller has no such error: it sees the tool fail, saying why.
      if (err instanceof RelayError && err.rpc && isProtocolMisuse(err.rpc.code) && !(err.rpc.code === -32021 && era === 'legacy')) {
        throw new ProtocolError(err.rpc.code, err.rpc.message, err.rpc.data);
      }
      // A client shows a tool result to the person; a JSON-RPC error it may swallow.
      return toolFailure(tool.server, err) as never;
    }
  });

  /**
   * A request the upstream may interrupt with questions (tools/call, prompts/get, resources/read). It
   * runs daemon-side as an ask; its questions go to the caller as `inputRequired(...)`: a 2026-07-28
   * caller gets an input_required result and retries with its answers and the signed state; a legacy
   * caller gets real elicitation/sampling/roots requests from the SDK's legacy shim, which re-enters
   * the handler with the answers. Each round's answers are posted to the ask, and the request goes on.
   * Resolves with the final view (a result or an error), or the inputRequired result to return.
   */
  const ask = async (
    asks: AskBackend,
    ctx: ServerContext,
    rctx: RelayContext,
    name: string,
    upstream: string,
    start: AskStart,
    caps: Record<string, unknown>,
  ): Promise<{ done: AskView } | { input: Record<string, unknown> }> => {
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
        if (Object.keys(answers).length > 0) await asks.askAnswer(id, answers);
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
      const questionTimeoutMs = era === 'modern' ? (cfg.questionTtlSeconds ?? 600) * 1000 : undefined;
      id = (
        await asks.ask(upstream, start.tool, start.args, {
          ...rctx,
          capabilities: caps,
          ...(start.method ? { method: start.method } : {}),
          ...(start.params ? { params: start.params } : {}),
          ...(questionTimeoutMs === undefined ? {} : { questionTimeoutMs }),
        })
      ).id;
    }
    const abandon = () => void asks.askAbandon(id).catch(() => undefined);
    let keep = false;
    ctx.mcpReq.signal.addEventListener('abort', abandon, { once: true });
    try {
      return await relayed(ctx, rctx, async (r) => {
        for (;;) {
          const v: AskView = await asks.askPoll(id, ASK_POLL_MS, r);
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
            const requestState = await codec.mint({ ask: id, questions: pairs, name }, ctx);
            // A legacy caller's request stays open while the SDK's shim puts the questions to it: if the
            // caller goes away meanwhile, the ask is abandoned. A 2026-07-28 caller's request ends here.
            if (era === 'legacy') keep = true;
            return { input: inputRequired({ inputRequests: inputRequests as never, requestState }) as never };
          }
          if (ctx.mcpReq.signal.aborted) throw new RelayError('MCPX_REQUEST_CANCELLED', 'the caller cancelled the request');
        }
      });
    } finally {
      if (!keep) ctx.mcpReq.signal.removeEventListener('abort', abandon);
    }
  };

  /** Asks, when the caller can answer questions and the backend holds asks; otherwise undefined. */
  const askable = (ctx: ServerContext): { asks: AskBackend; caps: Record<string, unknown> } | undefined => {
    const asks = cfg.backend.asks;
    const caps = answerableCapabilities(server, ctx);
    if (!asks || (!caps && ctx.mcpReq.requestState() === undefined)) return undefined;
    return { asks, caps: caps ?? {} };
  };

  /** An ask's outcome for prompts/get and resources/read: the result, or a JSON-RPC error. */
  const requestOutcome = (upstream: string, out: { done: AskView } | { input: Record<string, unknown> }): Record<string, unknown> => {
    if ('input' in out) return out.input;
    if (out.done.result !== undefined) return fromUpstream(out.done.result);
    const e = out.done.error!;
    const rpc = new RelayError(e.code, e.message, e.data).rpc;
    if (rpc) throw new ProtocolError(rpc.code, rpc.message, rpc.data);
    throw new ProtocolError(RPC.internalError, `mcpx: ${upstream}: ${e.code}: ${e.message}`, { server: upstream, code: e.code });
  };

  server.setRequestHandler('prompts/list', async (_req, ctx) => ({ prompts: (await listing(ctx)).listPrompts() }) as never);

  server.setRequestHandler('prompts/get', async (req, ctx) => {
    const rctx = relayContext(ctx);
    const target = (await targetOf(rctx, 'prompts', req.params.name)).found;
    if (!target) throw new ProtocolError(INVALID_PARAMS, `Unknown prompt: ${req.params.name}`);
    const params = { name: target.original, ...(req.params.arguments ? { arguments: req.params.arguments } : {}) };
    const can = askable(ctx);
    if (can)
      return requestOutcome(
        target.server,
        await ask(can.asks, ctx, rctx, req.params.name, target.server, { tool: target.original, args: {}, method: 'prompts/get', params }, can.caps),
      ) as never;
    return fromUpstream(await relayed(ctx, rctx, (r) => relay(cfg.backend, target.server, 'prompts/get', params, r))) as never;
  });

  server.setRequestHandler('resources/list', async (_req, ctx) => ({ resources: (await listing(ctx)).resources.map((r) => r.item) }) as never);

  server.setRequestHandler(
    'resources/templates/list',
    async (_req, ctx) => ({ resourceTemplates: (await listing(ctx)).templates.map((t) => t.item) }) as never,
  );

  server.setRequestHandler('resources/read', async (req, ctx) => {
    const rctx = relayContext(ctx);
    const uri = req.params.uri;
    const target = (await view(rctx)).serverForUri(uri);
    if (!target) throw new ResourceNotFoundError(uri);
    const can = askable(ctx);
    if (can)
      return requestOutcome(
        target,
        await ask(can.asks, ctx, rctx, uri, target, { tool: uri, args: {}, method: 'resources/read', params: { uri } }, can.caps),
      ) as never;
    return fromUpstream(await relayed(ctx, rctx, (r) => relay(cfg.backend, target, 'resources/read', { uri }, r))) as never;
  });

  server.setRequestHandler('completion/complete', async (req, ctx) => {
    const rctx = relayContext(ctx);
    const v = await view(rctx);
    const ref = req.params.ref as { type: string; name?: string; uri?: string };
    let target: string | undefined;
    let upstreamRef: Record<string, unknown> = { ...ref };
    if (ref.type === 'ref/prompt' && typeof ref.name === 'string') {
      const p = v.resolve('prompts', ref.name);
      target = p?.server;
      if (p) upstreamRef = { ...ref, name: p.original };
    } else if (ref.type === 'ref/resource' && typeof ref.uri === 'string') {
      target = v.serverForTemplate(ref.uri) ?? v.serverForUri(ref.uri);
    }
    if (!target) return { completion: { values: [], hasMore: false } } as never;
    const params = { ...req.params, ref: upstreamRef };
    return fromUpstream(await relay(cfg.backend, target, 'completion/complete', params as Record<string, unknown>, rctx)) as never;
  });

  return server;
}

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

/** A relayed request whose failure is a JSON-RPC error (prompts, resources, completions). */
async function relay(
  backend: FrontBackend,
  server: string,
  method: Parameters<FrontBackend['request']>[1],
  params: Record<string, unknown>,
  ctx: RelayContext,
): Promise<Record<string, unknown>> {
  try {
    return await backend.request(server, method, params, ctx);
  } catch (err) {
    if (err instanceof RelayError && err.rpc) throw new ProtocolError(err.rpc.code, err.rpc.message, err.rpc.data);
    const code = err instanceof RelayError ? err.code : 'MCPX_INTERNAL';
    const message = err instanceof Error ? err.message : String(err);
    throw new ProtocolError(RPC.internalError, `mcpx: ${server}: ${code}: ${message}`, { server, code });
  }
}

/**
 * JSON-RPC errors from the upstream that say the request itself was wrong (unknown tool, bad
 * arguments, a capability the caller must declare): the caller should see them as such.
 */
function isProtocolMisuse(code: number): boolean {
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
  const code = err instanceof RelayError ? err.code : 'MCPX_INTERNAL';
  const message = err instanceof Error ? err.message : String(err);
  return { content: [{ type: 'text', text: `mcpx: ${server}: ${code}: ${message}` }], isError: true };
}
