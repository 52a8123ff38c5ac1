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
  createRequestStateCodec,
  ProtocolError,
  ResourceNotFoundError,
  Server,
  type McpServerFactory,
  type RequestStateCodec,
} from '@modelcontextprotocol/server';
import { silentLogger, type Logger } from '../log.js';
import { McpxError, upstreamRpcOf } from '../errors.js';
import { askable, failureOf, requestOutcome, runAsk } from './front-ask.js';
import { fromUpstream, INVALID_PARAMS, isProtocolMisuse, relay, relayed, toolFailure } from './front-relay.js';
import { callerOf, callOf, freshView, listing, targetOf, type AskState, type FrontConfig, type FrontScope } from './front-scope.js';
import { ViewCache } from './front-view.js';
import { appOnly, callerExtensions, declareExtensions, rendersApps } from './extensions.js';
import { sanitize, SEPARATOR } from '../catalog/names.js';

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
  const views = new ViewCache(cfg.controller, {
    ...(cfg.passthrough === undefined ? {} : { passthrough: cfg.passthrough }),
    ...(cfg.servers === undefined ? {} : { servers: cfg.servers }),
    ...(cfg.config === undefined ? {} : { config: cfg.config }),
  });
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

/** One front instance, pinned to an era: the SDK server and mcpx's handlers for what a caller may ask. */
function buildFront(cfg: FrontConfig, era: 'legacy' | 'modern', log: Logger, codec: RequestStateCodec<AskState>, session: string, views: ViewCache): Server {
  const server = new Server(
    { name: cfg.passthrough === undefined ? 'mcpx' : `mcpx/${cfg.passthrough}`, version: cfg.version },
    {
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
  const f: FrontScope = { cfg, era, log, codec, session, views, server };
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

/** tools/list and tools/call: a call the upstream may interrupt runs as an ask when the caller can answer. */
function handleTools(f: FrontScope): void {
  f.server.setRequestHandler('tools/list', async (_req, ctx) => {
    const tools = (await listing(f, ctx)).listTools();
    // App-only tools are for a host's apps: a caller that renders none would offer them to its model.
    return { tools: rendersApps(callerExtensions(f.server, ctx)) ? tools : tools.filter((t) => !appOnly(t)) } as never;
  });

  f.server.setRequestHandler('tools/call', async (req, ctx) => {
    const name = req.params.name;
    const { v, found } = await targetOf(f, callerOf(f, ctx), 'tools', name);
    // A server's own name (an app's call) when no shown name matches.
    const tool = found ?? v.resolveBare(name, INVALID_PARAMS) ?? v.resolveUnlisted(name) ?? withheldTool(f, name);
    if (!tool) throw new ProtocolError(INVALID_PARAMS, `Unknown tool: ${name}`);
    const params = { name: tool.original, arguments: req.params.arguments ?? {} };
    const can = askable(f, ctx);
    if (can) {
      try {
        const out = await runAsk(f, ctx, callOf(f, ctx, tool.server, 'tools/call', params), name, can.caps);
        if ('input' in out) return out.input as never;
        if (out.done.result !== undefined) return v.ui.result(tool.server, fromUpstream(out.done.result)) as never;
        return toolFailure(tool.server, failureOf(out.done)) as never;
      } catch (err) {
        if (err instanceof ProtocolError) throw err;
        return toolFailure(tool.server, err) as never;
      }
    }
    try {
      const result = await relayed(ctx, f.log, (onProgress) => f.cfg.controller.relay(callOf(f, ctx, tool.server, 'tools/call', params, onProgress)));
      return v.ui.result(tool.server, fromUpstream(result)) as never;
    } catch (err) {
      // A 2026-07-28 caller is told of a capability it must declare (-32021, requiredCapabilities);
      // a legacy caller has no such error: it sees the tool fail, saying why.
      const rpc = err instanceof McpxError ? upstreamRpcOf(err) : undefined;
      if (rpc && isProtocolMisuse(rpc.code) && !(rpc.code === -32021 && f.era === 'legacy')) {
        throw new ProtocolError(rpc.code, rpc.message, rpc.data);
      }
      // A client shows a tool result to the person; a JSON-RPC error it may swallow.
      return toolFailure(tool.server, err) as never;
    }
  });
}

/**
 * A tool of a shown server that is not served (its config filters it out, or it is held for a changed
 * definition): the call goes on to be refused with why (MCPX_TOOL_DENIED, MCPX_TOOL_HELD), not as an unknown tool.
 */
function withheldTool(f: FrontScope, name: string): { server: string; original: string } | undefined {
  const { catalog, config } = f.cfg.controller;
  if (f.cfg.passthrough !== undefined) return catalog.withheld(f.cfg.passthrough).includes(name) ? { server: f.cfg.passthrough, original: name } : undefined;
  for (const s of config.servers) {
    const prefix = `${sanitize(s.name)}${SEPARATOR}`;
    if (!shownBy(f.cfg, s.name) || !name.startsWith(prefix)) continue;
    const original = catalog.withheld(s.name).find((t) => `${prefix}${sanitize(t)}` === name);
    if (original !== undefined) return { server: s.name, original };
  }
  return undefined;
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
