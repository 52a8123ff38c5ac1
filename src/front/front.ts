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
 * Aggregate mode (the default): tools and prompts as `<server>__<name>` (../catalog/names.ts), resources and
 * templates by their own URIs. Passthrough mode: one server under its own names.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import {
  CLIENT_INFO_META_KEY,
  createRequestStateCodec,
  ProtocolError,
  ResourceNotFoundError,
  Server,
  type McpServerFactory,
  type RequestStateCodec,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { silentLogger, type Logger } from '../log.js';
import { McpxError, upstreamRpcOf } from '../errors.js';
import { askable, failureOf, requestOutcome, runAsk } from './front-ask.js';
import { fromUpstream, INVALID_PARAMS, isProtocolMisuse, relay, relayed, toolFailure } from './front-relay.js';
import { callerOf, callOf, freshView, listing, targetOf, type AskState, type FrontConfig, type FrontScope } from './front-scope.js';
import { ViewCache } from './front-view.js';
import { appOnly, callerExtensions, declareExtensions, rendersApps } from './extensions.js';
import { sanitize, SEPARATOR } from '../catalog/names.js';
import type { ScopeIndex, SearchScope } from '../catalog/search-index.js';
import { toolShown } from '../catalog/tool-filter.js';
import { isObject } from '../is-object.js';
import {
  callToolTarget,
  DESCRIBE_TOOLS,
  describeTools,
  frontInstructions,
  META_TOOLS,
  metaToolDefinitions,
  SEARCH_TOOLS,
  searchTools,
} from './search-tools.js';
import { decideListing, type ToolListing, type ToolStrategy } from './tool-strategy.js';

export type { FrontConfig };
export { ViewCache };

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
  const scope: SearchScope = {
    ...(cfg.passthrough === undefined ? {} : { passthrough: cfg.passthrough }),
    ...(cfg.servers === undefined ? {} : { servers: cfg.servers }),
    ...(cfg.toolGlobs === undefined ? {} : { globs: cfg.toolGlobs }),
  };
  const views = new ViewCache(cfg.controller, { ...scope, ...(cfg.config === undefined ? {} : { config: cfg.config }) });
  const decisions = new Map<string, ToolListing>();
  // Every instance announces changes to its caller: legacy connections get list_changed
  // notifications, 2026-07-28 callers get them on their subscriptions/listen streams.
  const unsubscribe = cfg.controller.onCatalogChange(cfg.config, (change) => {
    for (const server of live) {
      if (change.server !== undefined && !shownBy(cfg, change.server)) continue;
      for (const list of change.lists) {
        const send = list === 'tools' ? server.sendToolListChanged() : list === 'prompts' ? server.sendPromptListChanged() : server.sendResourceListChanged();
        void send.catch((err: unknown) => log.debug({ err, list }, 'could not announce a list change'));
      }
    }
  });
  // A broken edit of this entry's config is said to its legacy callers (a 2026-07-28 caller has no stream
  // outside a request to hear it on: mcpx status and the page say it).
  const unwatch = cfg.controller.onConfigError(cfg.config, (message) => {
    for (const server of live) {
      if (server.getNegotiatedProtocolVersion() === undefined) continue;
      void server
        .sendLoggingMessage({
          level: 'error',
          logger: 'mcpx',
          data: `mcpx: the config was edited but not reloaded; its last good version stays in force: ${message}`,
        })
        .catch((err: unknown) => log.debug({ err }, 'could not send a config error'));
    }
  });
  const factory = (async (ctx: { era: 'legacy' | 'modern' }) => {
    const instructions = await instructionsFor(cfg, ctx.era, scope, log);
    const server = buildFront(cfg, ctx.era, log, codec, session, views, { scope, decisions, instructions });
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
    unwatch();
    views.close();
    live.clear();
  };
  return factory;
}

function shownBy(cfg: FrontConfig, server: string): boolean {
  if (cfg.passthrough !== undefined) return server === cfg.passthrough;
  return cfg.servers === undefined || cfg.servers.includes(server);
}

/** Instructions made once per built index and strategy (a 2026-07-28 HTTP caller gets a front per request). */
const madeInstructions = new WeakMap<ScopeIndex, Map<ToolStrategy, string>>();

/**
 * The front's `instructions` (initialize result, discover result): every server's domain from its own
 * instructions, name and tools, and when to search; from the known catalogue, starting nothing.
 */
async function instructionsFor(cfg: FrontConfig, era: 'legacy' | 'modern', scope: SearchScope, log: Logger): Promise<string | undefined> {
  try {
    const config = cfg.config === undefined ? {} : { config: cfg.config };
    const found = await cfg.controller.toolSearch.scope(era === 'legacy' ? { ...config, callerProtocol: '2025-11-25' } : config, scope);
    const strategy = cfg.tools ?? 'auto';
    let made = madeInstructions.get(found);
    if (!made) madeInstructions.set(found, (made = new Map()));
    let text = made.get(strategy);
    if (text === undefined) made.set(strategy, (text = frontInstructions(found, strategy)));
    return text;
  } catch (err) {
    log.debug({ err }, 'could not summarise the servers for the instructions');
    return undefined;
  }
}

/** One front instance, pinned to an era: the SDK server and mcpx's handlers for what a caller may ask. */
function buildFront(
  cfg: FrontConfig,
  era: 'legacy' | 'modern',
  log: Logger,
  codec: RequestStateCodec<AskState>,
  session: string,
  views: ViewCache,
  entry: { scope: SearchScope; decisions: Map<string, ToolListing>; instructions: string | undefined },
): Server {
  const server = new Server(
    { name: cfg.passthrough === undefined ? 'mcpx' : `mcpx/${cfg.passthrough}`, version: cfg.version },
    {
      ...(entry.instructions === undefined ? {} : { instructions: entry.instructions }),
      capabilities: {
        tools: { listChanged: true },
        prompts: { listChanged: true },
        resources: { listChanged: true },
        completions: {},
        // Legacy callers hear of a broken edit of their config as a log message (2026-07-28 deprecates logging).
        ...(era === 'legacy' ? { logging: {} } : {}),
      },
      // A tampered, expired or rebound state is refused by the SDK with -32602 before the handler runs.
      requestState: { verify: (state, ctx) => codec.verify(state, ctx) },
    },
  );
  const f: FrontScope = { cfg, era, log, codec, session, views, server, scope: entry.scope, decided: {}, decisions: entry.decisions };
  // The extensions this caller declared and mcpx can carry; the servers' offers as the catalogue knows them.
  declareExtensions(server, async (callerProtocol) =>
    (
      await cfg.controller.offer(
        { ...(cfg.config === undefined ? {} : { config: cfg.config }), ...(callerProtocol ? { callerProtocol } : {}), session: session },
        { knownOnly: true },
      )
    ).servers.filter((s) => shownBy(cfg, s.server)),
  );
  handleTools(f);
  handlePrompts(f);
  handleResources(f);
  handleCompletion(f);
  return server;
}

/** The client's self-reported name: its initialize (legacy), else the request's `_meta` (2026-07-28). */
function clientNameOf(f: FrontScope, ctx: ServerContext): string | undefined {
  const fromMeta = (m: unknown) => (isObject(m) && isObject(m[CLIENT_INFO_META_KEY]) ? m[CLIENT_INFO_META_KEY]['name'] : undefined);
  const name = f.server.getClientVersion()?.name ?? fromMeta(ctx.mcpReq.envelope) ?? fromMeta(ctx.mcpReq._meta);
  return typeof name === 'string' ? name : undefined;
}

/** The tools a caller's `all` listing holds: the entry's, less app-only ones for a caller that renders no apps. */
async function fullListing(f: FrontScope, ctx: ServerContext): Promise<{ v: Awaited<ReturnType<typeof listing>>; tools: Record<string, unknown>[] }> {
  const v = await listing(f, ctx);
  const tools = v.listTools();
  // App-only tools are for a host's apps: a caller that renders none would offer them to its model.
  return { v, tools: rendersApps(callerExtensions(f.server, ctx)) ? tools : tools.filter((t) => !appOnly(t)) };
}

/**
 * What this caller is given: the entry's strategy, or under `auto` what fits its client — decided at
 * the connection's first need and kept (a 2026-07-28 caller's per client name on the entry).
 */
async function listingFor(f: FrontScope, ctx: ServerContext, count?: number): Promise<ToolListing> {
  const strategy = f.cfg.tools ?? 'auto';
  if (strategy !== 'auto') return strategy;
  const client = clientNameOf(f, ctx);
  const key = `client:${client ?? ''}`;
  const kept = f.era === 'legacy' ? f.decided.listing : f.decisions.get(key);
  if (kept) return kept;
  const decided = decideListing(strategy, client, count ?? (await fullListing(f, ctx)).tools.length);
  if (f.era === 'legacy') f.decided.listing = decided;
  else {
    if (f.decisions.size >= 256) f.decisions.clear();
    f.decisions.set(key, decided);
  }
  f.log.debug({ client, listing: decided }, 'tool listing decided');
  return decided;
}

/** The search index of this caller's lane and the entry's scope (kept by the daemon; nothing starts). */
const searchIndex = (f: FrontScope, ctx: ServerContext): Promise<ScopeIndex> => {
  const c = callerOf(f, ctx);
  return f.cfg.controller.toolSearch.scope(
    {
      ...(c.config === undefined ? {} : { config: c.config }),
      ...(c.callerProtocol ? { callerProtocol: c.callerProtocol } : {}),
      ...(c.session ? { session: c.session } : {}),
    },
    f.scope,
  );
};

/** tools/list and tools/call: a call the upstream may interrupt runs as an ask when the caller can answer. */
function handleTools(f: FrontScope): void {
  f.server.setRequestHandler('tools/list', async (_req, ctx) => {
    const { v, tools } = await fullListing(f, ctx);
    if ((await listingFor(f, ctx, tools.length)) === 'all') return { tools } as never;
    // search: the three tools, and what the servers pin.
    return { tools: [...metaToolDefinitions(await searchIndex(f, ctx)), ...tools.filter((t) => v.pinned.has(t['name'] as string))] } as never;
  });

  f.server.setRequestHandler('tools/call', async (req, ctx) => {
    const name = req.params.name;
    const args = req.params.arguments ?? {};
    if (META_TOOLS.includes(name) && (await listingFor(f, ctx)) === 'search') {
      if (name === SEARCH_TOOLS) return searchTools(await searchIndex(f, ctx), args) as never;
      if (name === DESCRIBE_TOOLS) return describeTools(await searchIndex(f, ctx), args) as never;
      const target = await callToolTarget(await searchIndex(f, ctx), args);
      if ('result' in target) return target.result as never;
      return callTool(f, ctx, target.tool.exposed, target.arguments) as never;
    }
    // A denied tool is refused by its name, before anything is looked up or started.
    if (!toolShown(f.cfg.toolGlobs, name))
      throw new ProtocolError(INVALID_PARAMS, `Unknown tool: ${name} (this entry does not serve it: --allow-tools/--deny-tools)`);
    return callTool(f, ctx, name, args) as never;
  });
}

/**
 * A tool of a shown server that is not served (its config filters it out, or it is held for a changed
 * definition): the call goes on to be refused with why (MCPX_TOOL_DENIED, MCPX_TOOL_HELD), not as an unknown tool.
 */
function withheldTool(f: FrontScope, name: string): { server: string; original: string } | undefined {
  const { catalog, configs } = f.cfg.controller;
  // The entry's config names the servers; what is withheld is its instance's.
  const entry = configs.get(f.cfg.config);
  const withheld = (server: string) => {
    const instance = entry.instances.get(server);
    return instance === undefined ? [] : catalog.withheld(instance);
  };
  if (f.cfg.passthrough !== undefined) return withheld(f.cfg.passthrough).includes(name) ? { server: f.cfg.passthrough, original: name } : undefined;
  for (const s of entry.cfg.servers) {
    const prefix = `${sanitize(s.name)}${SEPARATOR}`;
    if (!shownBy(f.cfg, s.name) || !name.startsWith(prefix)) continue;
    const original = withheld(s.name).find((t) => `${prefix}${sanitize(t)}` === name);
    if (original !== undefined) return { server: s.name, original };
  }
  return undefined;
}

/** A tool call by the name the caller sees (or its server's own name), relayed as every call is. */
async function callTool(f: FrontScope, ctx: ServerContext, name: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const { v, found } = await targetOf(f, callerOf(f, ctx), 'tools', name);
  // A server's own name (an app's call) when no shown name matches.
  const tool = found ?? v.resolveBare(name, INVALID_PARAMS) ?? v.resolveUnlisted(name) ?? withheldTool(f, name);
  if (!tool) throw new ProtocolError(INVALID_PARAMS, `Unknown tool: ${name}`);
  const params = { name: tool.original, arguments: args };
  const can = askable(f, ctx);
  if (can) {
    try {
      const out = await runAsk(f, ctx, callOf(f, ctx, tool.server, 'tools/call', params), name, can.caps);
      if ('input' in out) return out.input;
      if (out.done.result !== undefined) return v.ui.result(tool.server, fromUpstream(out.done.result));
      return toolFailure(tool.server, failureOf(out.done));
    } catch (err) {
      if (err instanceof ProtocolError) throw err;
      return toolFailure(tool.server, err);
    }
  }
  try {
    const result = await relayed(ctx, f.log, (onProgress) => f.cfg.controller.relay(callOf(f, ctx, tool.server, 'tools/call', params, onProgress)));
    return v.ui.result(tool.server, fromUpstream(result));
  } catch (err) {
    // A 2026-07-28 caller is told of a capability it must declare (-32021, requiredCapabilities);
    // a legacy caller has no such error: it sees the tool fail, saying why.
    const rpc = err instanceof McpxError ? upstreamRpcOf(err) : undefined;
    if (rpc && isProtocolMisuse(rpc.code) && !(rpc.code === -32021 && f.era === 'legacy')) {
      throw new ProtocolError(rpc.code, rpc.message, rpc.data);
    }
    // A client shows a tool result to the person; a JSON-RPC error it may swallow.
    return toolFailure(tool.server, err);
  }
}

/** prompts/list and prompts/get. */
function handlePrompts(f: FrontScope): void {
  f.server.setRequestHandler('prompts/list', async (_req, ctx) => ({ prompts: (await listing(f, ctx)).listPrompts() }) as never);

  f.server.setRequestHandler('prompts/get', async (req, ctx) => {
    const { v, found: target } = await targetOf(f, callerOf(f, ctx), 'prompts', req.params.name);
    if (!target) throw new ProtocolError(INVALID_PARAMS, `Unknown prompt: ${req.params.name}`);
    const params = { name: target.original, ...(req.params.arguments ? { arguments: req.params.arguments } : {}) };
    const can = askable(f, ctx);
    if (can)
      return v.ui.result(
        target.server,
        requestOutcome(target.server, await runAsk(f, ctx, callOf(f, ctx, target.server, 'prompts/get', params), req.params.name, can.caps)),
      ) as never;
    return v.ui.result(
      target.server,
      fromUpstream(await relayed(ctx, f.log, (onProgress) => relay(f.cfg.controller, callOf(f, ctx, target.server, 'prompts/get', params, onProgress)))),
    ) as never;
  });
}

/** resources/list, resources/templates/list and resources/read (by URI: the server that listed it, or whose template matches). */
function handleResources(f: FrontScope): void {
  f.server.setRequestHandler('resources/list', async (_req, ctx) => ({ resources: (await listing(f, ctx)).resources.map((r) => r.item) }) as never);

  f.server.setRequestHandler(
    'resources/templates/list',
    async (_req, ctx) => ({ resourceTemplates: (await listing(f, ctx)).templates.map((t) => t.item) }) as never,
  );

  f.server.setRequestHandler('resources/read', async (req, ctx) => {
    const v = await freshView(f, callerOf(f, ctx));
    // A `ui://` URI mcpx made distinct goes to its server under the server's own URI (./ui-uris.ts).
    const route = v.routeUri(req.params.uri);
    if (!route) throw new ResourceNotFoundError(req.params.uri);
    const { server: target, uri } = route;
    const can = askable(f, ctx);
    if (can)
      return v.ui.result(target, requestOutcome(target, await runAsk(f, ctx, callOf(f, ctx, target, 'resources/read', { uri }), uri, can.caps))) as never;
    return v.ui.result(
      target,
      fromUpstream(await relayed(ctx, f.log, (onProgress) => relay(f.cfg.controller, callOf(f, ctx, target, 'resources/read', { uri }, onProgress)))),
    ) as never;
  });
}

/** completion/complete: to the server behind the prompt or resource template named in `ref`. */
function handleCompletion(f: FrontScope): void {
  f.server.setRequestHandler('completion/complete', async (req, ctx) => {
    const v = await freshView(f, callerOf(f, ctx));
    const ref = req.params.ref as { type: string; name?: string; uri?: string };
    let target: string | undefined;
    let upstreamRef: Record<string, unknown> = { ...ref };
    if (ref.type === 'ref/prompt' && typeof ref.name === 'string') {
      const p = v.resolve('prompts', ref.name);
      target = p?.server;
      if (p) upstreamRef = { ...ref, name: p.original };
    } else if (ref.type === 'ref/resource' && typeof ref.uri === 'string') {
      // A `ui://` template mcpx made distinct goes to its server as the server wrote it.
      const routed = v.ui.route(ref.uri);
      const ui = routed && v.shows(routed.server) ? routed : undefined;
      target = ui?.server ?? v.serverForTemplate(ref.uri) ?? v.serverForUri(ref.uri);
      if (ui) upstreamRef = { ...ref, uri: ui.uri };
    }
    if (!target) return { completion: { values: [], hasMore: false } } as never;
    const params = { ...req.params, ref: upstreamRef };
    return fromUpstream(await relay(f.cfg.controller, callOf(f, ctx, target, 'completion/complete', params as Record<string, unknown>))) as never;
  });
}
