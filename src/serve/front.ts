/**
 * The MCP server mcpx shows its callers (`mcpx serve` on stdio, `/mcp` over Streamable HTTP).
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
import { randomUUID } from 'node:crypto';
import {
  PROTOCOL_VERSION_META_KEY,
  ProtocolError,
  ResourceNotFoundError,
  Server,
  UriTemplate,
  type McpServerFactory,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { silentLogger, type Logger } from '../log.js';
import { eraOfRevision } from '../machines/versions.js';
import { RelayError, type CatalogItem, type CatalogView, type FrontBackend, type Progress, type RelayContext, type ServerCatalog } from './backend.js';
import { NameTable, sanitize, SEPARATOR } from './names.js';

export interface FrontConfig {
  backend: FrontBackend;
  /** Serve this one server under its own names. */
  passthrough?: string;
  /** Show only these servers (aggregate mode). */
  servers?: readonly string[];
  version: string;
  logger?: Logger;
  /** The caller's session when the entry has no session of its own (stdio: one per connection). */
  session?: string;
}

/** JSON-RPC error codes the front answers with itself. */
const INVALID_PARAMS = -32602;
const INTERNAL_ERROR = -32603;

const SERVER_INFO_META = 'io.modelcontextprotocol/serverInfo';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** What one caller sees, computed from a catalogue view. */
export class FrontView {
  readonly tools: NameTable;
  readonly prompts: NameTable;
  private readonly toolItems = new Map<string, CatalogItem>();
  private readonly promptItems = new Map<string, CatalogItem>();
  readonly resources: Array<{ server: string; item: CatalogItem }> = [];
  readonly templates: Array<{ server: string; item: CatalogItem; template: UriTemplate | undefined }> = [];
  readonly errors: Array<{ server: string; code: string; message: string }> = [];

  constructor(view: CatalogView, readonly mode: { passthrough?: string; servers?: readonly string[] }) {
    // Names are given over every configured server, so a `--servers` filter never renames anything.
    const all = view.servers;
    const pairs = (pick: (s: ServerCatalog) => CatalogItem[]) =>
      all.flatMap((s) => pick(s).filter((i) => typeof i['name'] === 'string').map((i) => ({ server: s.server, name: i['name'] as string, item: i })));
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
 * The serving entries' factory: one front instance per connection (stdio, legacy HTTP session) or
 * per request (2026-07-28 HTTP).
 */
export function frontFactory(cfg: FrontConfig): McpServerFactory & { close(): void } {
  const log = (cfg.logger ?? silentLogger).child({ component: 'front' });
  const live = new Set<Server>();
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
    const server = buildFront(cfg, ctx.era, log);
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
    live.clear();
  };
  return factory;
}

function shownBy(cfg: FrontConfig, server: string): boolean {
  if (cfg.passthrough !== undefined) return server === cfg.passthrough;
  return cfg.servers === undefined || cfg.servers.includes(server);
}

function buildFront(cfg: FrontConfig, era: 'legacy' | 'modern', log: Logger): Server {
  const server = new Server(
    { name: cfg.passthrough === undefined ? 'mcpx' : `mcpx/${cfg.passthrough}`, version: cfg.version },
    {
      capabilities: {
        tools: { listChanged: true },
        prompts: { listChanged: true },
        resources: { listChanged: true },
        completions: {},
      },
    },
  );
  const mode = {
    ...(cfg.passthrough === undefined ? {} : { passthrough: cfg.passthrough }),
    ...(cfg.servers === undefined ? {} : { servers: cfg.servers }),
  };
  const connectionSession = cfg.session ?? `mcpx-${randomUUID()}`;

  /** The caller's revision: the request's own `_meta` (2026-07-28), else the one negotiated at initialize. */
  const relayContext = (ctx: ServerContext): RelayContext => {
    const claimed = (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[PROTOCOL_VERSION_META_KEY];
    const callerProtocol = typeof claimed === 'string' ? claimed : server.getNegotiatedProtocolVersion() ?? (era === 'legacy' ? '2025-03-26' : undefined);
    return {
      ...(callerProtocol ? { callerProtocol } : {}),
      session: ctx.sessionId ?? connectionSession,
      signal: ctx.mcpReq.signal,
    };
  };

  const view = async (ctx: RelayContext): Promise<FrontView> => new FrontView(await cfg.backend.catalog(ctx), mode);

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
        .notify({ method: 'notifications/progress', params: { progressToken: token, progress: p.progress, ...(p.total === undefined ? {} : { total: p.total }), ...(p.message === undefined ? {} : { message: p.message }) } })
        .catch((err: unknown) => log.debug({ err }, 'could not relay progress'))
        .finally(() => sending.delete(sent));
      sending.add(sent);
    };
    return { rctx: { ...rctx, onProgress }, flush: async () => void (await Promise.all([...sending])) };
  };

  /** Relays with the caller's progress, and lets the progress out before the result. */
  const relayed = async (ctx: ServerContext, rctx: RelayContext, fn: (rctx: RelayContext) => Promise<Record<string, unknown>>): Promise<Record<string, unknown>> => {
    const p = withProgress(ctx, rctx);
    try {
      return await fn(p.rctx);
    } finally {
      await p.flush();
    }
  };

  /** A listing; a caller that sent a progress token hears of each server started for it. */
  const listing = async (ctx: ServerContext): Promise<FrontView> => {
    const p = withProgress(ctx, relayContext(ctx));
    try {
      return await view(p.rctx);
    } finally {
      await p.flush();
    }
  };

  server.setRequestHandler('tools/list', async (_req, ctx) => ({ tools: (await listing(ctx)).listTools() }) as never);

  server.setRequestHandler('tools/call', async (req, ctx) => {
    const rctx = relayContext(ctx);
    const name = req.params.name;
    const v = await view(rctx);
    const target = v.resolve('tools', name) ?? v.resolveUnlisted(name);
    if (!target) throw new ProtocolError(INVALID_PARAMS, `Unknown tool: ${name}`);
    try {
      const result = await relayed(ctx, rctx, (r) => cfg.backend.request(target.server, 'tools/call', { name: target.original, arguments: req.params.arguments ?? {} }, r));
      return fromUpstream(result) as never;
    } catch (err) {
      if (err instanceof RelayError && err.rpc && isProtocolMisuse(err.rpc.code)) throw new ProtocolError(err.rpc.code, err.rpc.message, err.rpc.data);
      // A client shows a tool result to the person; a JSON-RPC error it may swallow.
      return toolFailure(target.server, err) as never;
    }
  });

  server.setRequestHandler('prompts/list', async (_req, ctx) => ({ prompts: (await listing(ctx)).listPrompts() }) as never);

  server.setRequestHandler('prompts/get', async (req, ctx) => {
    const rctx = relayContext(ctx);
    const target = (await view(rctx)).resolve('prompts', req.params.name);
    if (!target) throw new ProtocolError(INVALID_PARAMS, `Unknown prompt: ${req.params.name}`);
    const params = { name: target.original, ...(req.params.arguments ? { arguments: req.params.arguments } : {}) };
    return fromUpstream(await relayed(ctx, rctx, (r) => relay(cfg.backend, target.server, 'prompts/get', params, r))) as never;
  });

  server.setRequestHandler('resources/list', async (_req, ctx) => ({ resources: (await listing(ctx)).resources.map((r) => r.item) }) as never);

  server.setRequestHandler('resources/templates/list', async (_req, ctx) => ({ resourceTemplates: (await listing(ctx)).templates.map((t) => t.item) }) as never);

  server.setRequestHandler('resources/read', async (req, ctx) => {
    const rctx = relayContext(ctx);
    const uri = req.params.uri;
    const target = (await view(rctx)).serverForUri(uri);
    if (!target) throw new ResourceNotFoundError(uri);
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

/** A relayed request whose failure is a JSON-RPC error (prompts, resources, completions). */
async function relay(backend: FrontBackend, server: string, method: Parameters<FrontBackend['request']>[1], params: Record<string, unknown>, ctx: RelayContext): Promise<Record<string, unknown>> {
  try {
    return await backend.request(server, method, params, ctx);
  } catch (err) {
    if (err instanceof RelayError && err.rpc) throw new ProtocolError(err.rpc.code, err.rpc.message, err.rpc.data);
    const code = err instanceof RelayError ? err.code : 'MCPX_INTERNAL';
    const message = err instanceof Error ? err.message : String(err);
    throw new ProtocolError(INTERNAL_ERROR, `mcpx: ${server}: ${code}: ${message}`, { server, code });
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

/** Whether a revision string names the legacy era (for entries that must choose a transport). */
export function isLegacyRevision(rev: string | undefined): boolean {
  return rev !== undefined && eraOfRevision(rev) === 'legacy';
}
