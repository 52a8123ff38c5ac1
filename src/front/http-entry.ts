/**
 * `/mcp`: the front over Streamable HTTP, both eras, as one web-standard `fetch`.
 *
 * - 2026-07-28 callers are stateless: `createMcpHandler(factory, { legacy: 'reject' })` builds a front
 *   per request and does the 2026 header rules (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`
 *   against the body → 400 / -32020), `subscriptions/listen` streams, and 405 for GET/DELETE.
 * - Legacy callers (an `initialize`, or a request that claims no 2026 revision) get a **sessionful**
 *   Streamable HTTP transport: a legacy server can ask its caller something only over a session
 *   (stateless legacy HTTP has no way back), and list_changed reaches them on the GET stream.
 *   Sessions are bounded in number and expire when idle. Past the bound a new one closes the least
 *   recently used session only if that one is idle (nothing in flight, no open stream, unused a while);
 *   otherwise it gets 503 with Retry-After. A session in use is never closed for another, and a call in
 *   flight is never cut (a closed transport would end its response with no answer).
 *
 * The split uses the SDK's own `isLegacyRequest`, so it routes exactly as the SDK's entry would.
 * Access rules (Host, Origin, bearer token) are the daemon's and run before any of this.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import {
  createMcpHandler,
  isInitializeRequest,
  isLegacyRequest,
  WebStandardStreamableHTTPServerTransport,
  type McpHttpHandler,
} from '@modelcontextprotocol/server';
import { silentLogger, type Logger } from '../log.js';
import { RPC } from '../protocol/constants.js';
import { paramHeaderProblem, paramHeaderSpec } from '../transports/mcp-param-headers.js';
import type { Controller } from '../core/controller.js';
import { frontFactory, ViewCache } from './front.js';
import { modeConfig, type EntryMode } from './entry-mode.js';

export interface HttpEntryOptions {
  /** The daemon's core, which the front serves from. */
  controller: Controller;
  version: string;
  logger?: Logger;
  /** Legacy sessions kept at most (`serve.maxSessions`). Default 256. */
  maxSessions?: number;
  /** A legacy session with nothing in flight unused this long is closed (`serve.sessionIdleTimeout`). Default 30 minutes. */
  sessionIdleMs?: number;
  /** Past the bound, a session idle this long may be closed for a new one. Default a tenth of sessionIdleMs, at most a minute. */
  evictIdleMs?: number;
  /** How long a 2026-07-28 caller has to answer a question round (`serve.questionTtl`). */
  questionTtlSeconds?: number;
}

export type { EntryMode };

interface LegacySession {
  transport: WebStandardStreamableHTTPServerTransport;
  close(): Promise<void>;
  id: string;
  lastUsed: number;
  mode: string;
  /** POST and DELETE requests whose response has not ended. */
  calls: number;
  /** Open GET streams. */
  streams: number;
}

const jsonRpcError = (status: number, code: number, message: string, id: unknown = null, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id }), { status, headers: { 'content-type': 'application/json', ...headers } });

/** `res` with `done` called once when its body has been sent, cancelled or failed (or at once, with no body). */
function onBodyEnd(res: Response, done: () => void): Response {
  let called = false;
  const once = () => {
    if (!called) {
      called = true;
      done();
    }
  };
  if (!res.body) {
    once();
    return res;
  }
  const reader = res.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done: end, value } = await reader.read();
        if (end) {
          once();
          controller.close();
        } else controller.enqueue(value);
      } catch (err) {
        once();
        controller.error(err);
      }
    },
    cancel(reason) {
      once();
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
}

export class McpHttpEntry {
  private readonly opts: HttpEntryOptions;
  private readonly log: Logger;
  private readonly modern = new Map<string, { handler: McpHttpHandler; factory: ReturnType<typeof frontFactory> }>();
  private readonly legacyFactories = new Map<string, ReturnType<typeof frontFactory>>();
  private readonly sessions = new Map<string, LegacySession>();
  /** Sessions being made (counted against the bound before they are in `sessions`). */
  private opening = 0;
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;
  /** The per-daemon key that signs requestState. */
  private readonly stateKey = randomBytes(32);
  /** Per mode: the catalogue view the Mcp-Param-* check resolves tool names in, kept until the catalogue changes. */
  private readonly views = new Map<string, ViewCache>();

  constructor(opts: HttpEntryOptions) {
    this.opts = opts;
    this.log = (opts.logger ?? silentLogger).child({ component: 'mcp-http' });
    this.sweeper = setInterval(() => this.sweep(), Math.min(60_000, this.idleMs())).unref();
  }

  private idleMs(): number {
    return this.opts.sessionIdleMs ?? 30 * 60_000;
  }

  private evictIdleMs(): number {
    return this.opts.evictIdleMs ?? Math.min(60_000, Math.ceil(this.idleMs() / 10));
  }

  private maxSessions(): number {
    return this.opts.maxSessions ?? 256;
  }

  /** Serves one HTTP request for the front in `mode`. */
  async fetch(request: Request, parsedBody: unknown, mode: EntryMode = {}): Promise<Response> {
    if (this.closed) return jsonRpcError(503, -32603, 'mcpx is shutting down');
    const key = modeKey(mode);
    const sessionId = request.headers.get('mcp-session-id');
    if (sessionId !== null) return this.legacy(request, parsedBody, key, mode, sessionId);
    if (await isLegacyRequest(request, parsedBody)) return this.legacy(request, parsedBody, key, mode, null);
    const mismatch = await this.paramHeaderMismatch(request, parsedBody, mode);
    if (mismatch) return mismatch;
    return this.modernHandler(key, mode).fetch(request, parsedBody === undefined ? {} : { parsedBody });
  }

  /**
   * SEP-2243: a 2026-07-28 `tools/call` must carry the `Mcp-Param-*` headers its tool's `x-mcp-header`
   * annotations name, agreeing with the arguments. The SDK cannot check that for tools it does not
   * know, and the upstream (often stdio) never sees the headers, so mcpx checks them here, before the
   * call goes anywhere: 400 with HeaderMismatch.
   */
  private async paramHeaderMismatch(request: Request, body: unknown, mode: EntryMode): Promise<Response | undefined> {
    if (request.method !== 'POST' || typeof body !== 'object' || body === null) return undefined;
    const msg = body as { id?: unknown; method?: unknown; params?: { name?: unknown; arguments?: unknown; _meta?: Record<string, unknown> } };
    if (msg.method !== 'tools/call' || typeof msg.params?.name !== 'string') return undefined;
    const revision = msg.params._meta?.['io.modelcontextprotocol/protocolVersion'];
    const key = modeKey(mode);
    let views = this.views.get(key);
    if (!views) {
      const m = modeConfig(mode);
      views = new ViewCache(this.opts.controller, {
        ...(m.passthrough === undefined ? {} : { passthrough: m.passthrough }),
        ...(m.servers === undefined ? {} : { servers: m.servers }),
        ...(m.toolGlobs === undefined ? {} : { globs: m.toolGlobs }),
        ...(m.config === undefined ? {} : { config: m.config }),
      });
      this.views.set(key, views);
    }
    const caller = { ...(mode.config === undefined ? {} : { config: mode.config }), ...(typeof revision === 'string' ? { callerProtocol: revision } : {}) };
    const tool = (await views.get(caller)).resolve('tools', msg.params.name);
    if (!tool) return undefined;
    const spec = specOf(tool.item);
    if (!spec.ok || spec.params.length === 0) return undefined;
    const problem = paramHeaderProblem(spec, msg.params.arguments ?? {}, (h) => request.headers.get(h));
    if (!problem) return undefined;
    return new Response(JSON.stringify({ jsonrpc: '2.0', id: msg.id ?? null, error: { code: RPC.headerMismatch, message: `Header mismatch: ${problem}` } }), {
      status: 400,
      headers: { 'content-type': 'application/json' },
    });
  }

  private modernHandler(key: string, mode: EntryMode): McpHttpHandler {
    let entry = this.modern.get(key);
    if (!entry) {
      const factory = frontFactory({ ...this.frontConfig(mode) });
      const handler = createMcpHandler(factory, { legacy: 'reject', onerror: (err) => this.log.debug({ err }, 'modern request refused or failed') });
      // The SDK's listen router delivers these to 2026-07-28 callers that subscribed.
      const unsubscribe = this.opts.controller.onCatalogChange(mode.config, (c) => {
        if (c.lists.includes('tools')) handler.notify.toolsChanged();
        if (c.lists.includes('prompts')) handler.notify.promptsChanged();
        if (c.lists.includes('resources')) handler.notify.resourcesChanged();
      });
      const close = factory.close;
      factory.close = () => {
        unsubscribe();
        close();
      };
      entry = { handler, factory };
      this.modern.set(key, entry);
    }
    return entry.handler;
  }

  private frontConfig(mode: EntryMode) {
    return {
      controller: this.opts.controller,
      version: this.opts.version,
      logger: this.log,
      // One signing key for every front of this entry: a retry may reach another instance.
      stateKey: this.stateKey,
      ...(this.opts.questionTtlSeconds === undefined ? {} : { questionTtlSeconds: this.opts.questionTtlSeconds }),
      ...modeConfig(mode),
    };
  }

  private async legacy(request: Request, parsedBody: unknown, key: string, mode: EntryMode, sessionId: string | null): Promise<Response> {
    if (sessionId !== null) {
      const s = this.sessions.get(sessionId);
      // The spec: an unknown or ended session is 404, and the client starts a new one with initialize.
      if (!s || s.mode !== key) return jsonRpcError(404, -32001, 'Session not found');
      return this.tracked(s, request, parsedBody);
    }
    if (request.method !== 'POST' || !isInitializeRequest(parsedBody)) {
      return jsonRpcError(
        400,
        -32000,
        'Bad Request: No valid session ID provided (a 2025-era caller starts with initialize; a 2026-07-28 caller sends MCP-Protocol-Version and _meta)',
      );
    }
    // The bound is checked and the place taken before anything is awaited: concurrent initializes count.
    if (this.sessions.size + this.opening >= this.maxSessions() && !this.makeRoom()) {
      const retryAfter = this.retryAfterSeconds();
      this.log.warn({ sessions: this.sessions.size, max: this.maxSessions(), retryAfter }, 'refused a new legacy /mcp session: every session is in use');
      return jsonRpcError(
        503,
        -32000,
        `Server busy: ${this.maxSessions()} legacy sessions are open and in use (serve.maxSessions); retry in ${retryAfter} s, or close sessions you no longer use (DELETE /mcp)`,
        (parsedBody as { id?: unknown }).id ?? null,
        { 'retry-after': String(retryAfter) },
      );
    }
    this.opening++;
    const place = { held: true };
    try {
      return await this.openSession(request, parsedBody, key, mode, place);
    } finally {
      if (place.held) this.opening--;
    }
  }

  /** Serves a request on a session, counting it in flight until its response has ended. */
  private async tracked(s: LegacySession, request: Request, parsedBody: unknown): Promise<Response> {
    const stream = request.method === 'GET';
    if (stream) s.streams++;
    else s.calls++;
    s.lastUsed = Date.now();
    const done = () => {
      if (stream) s.streams--;
      else s.calls--;
      s.lastUsed = Date.now();
    };
    let res: Response;
    try {
      res = await s.transport.handleRequest(request, parsedBody === undefined ? {} : { parsedBody });
    } catch (err) {
      done();
      throw err;
    }
    if (request.method === 'DELETE') this.sessions.delete(s.id);
    return onBodyEnd(res, done);
  }

  private async openSession(request: Request, parsedBody: unknown, key: string, mode: EntryMode, place: { held: boolean }): Promise<Response> {
    let factory = this.legacyFactories.get(key);
    if (!factory) {
      factory = frontFactory(this.frontConfig(mode));
      this.legacyFactories.set(key, factory);
    }
    const id = randomUUID();
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: () => id });
    const server = await factory({ era: 'legacy' });
    // A legacy session keeps its config loaded while it lasts.
    const detach = this.opts.controller.attachCaller(mode.config, { id: `mcp-${id}`, kind: 'mcp' });
    const session: LegacySession = {
      id,
      transport,
      lastUsed: Date.now(),
      mode: key,
      calls: 0,
      streams: 0,
      close: async () => {
        this.sessions.delete(id);
        detach();
        await server.close().catch(() => undefined);
      },
    };
    transport.onclose = () => {
      this.sessions.delete(id);
      detach();
    };
    await server.connect(transport);
    this.sessions.set(id, session);
    place.held = false;
    this.opening--;
    return this.tracked(session, request, parsedBody);
  }

  /** Idle enough to be closed for a new session: nothing in flight, no open stream, unused for evictIdleMs. */
  private evictable(s: LegacySession, now: number): boolean {
    return s.calls === 0 && s.streams === 0 && now - s.lastUsed >= this.evictIdleMs();
  }

  /** Past the bound: closes the least recently used idle session, if there is one. */
  private makeRoom(): boolean {
    const now = Date.now();
    let victim: LegacySession | undefined;
    for (const s of this.sessions.values()) if (this.evictable(s, now) && (!victim || s.lastUsed < victim.lastUsed)) victim = s;
    if (!victim) return false;
    this.log.info({ session: victim.id, idleMs: now - victim.lastUsed }, 'closing the least recently used idle legacy /mcp session to make room');
    this.sessions.delete(victim.id);
    void victim.close();
    return true;
  }

  /** When a session may next be idle enough to make room: the soonest of those with nothing in flight. */
  private retryAfterSeconds(): number {
    const now = Date.now();
    let soonest = this.evictIdleMs();
    for (const s of this.sessions.values()) if (s.calls === 0 && s.streams === 0) soonest = Math.min(soonest, s.lastUsed + this.evictIdleMs() - now);
    return Math.max(1, Math.ceil(soonest / 1000));
  }

  private sweep(): void {
    const cutoff = Date.now() - this.idleMs();
    for (const [id, s] of this.sessions) {
      // A call in flight is never cut; a GET stream alone does not keep a session (its client may be gone).
      if (s.calls === 0 && s.lastUsed < cutoff) {
        this.log.info({ session: id }, 'closing an idle legacy /mcp session');
        void s.close();
      }
    }
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const v of this.views.values()) v.close();
    this.views.clear();
    clearInterval(this.sweeper);
    await Promise.all([...this.sessions.values()].map((s) => s.close()));
    for (const { handler, factory } of this.modern.values()) {
      factory.close();
      await handler.close().catch(() => undefined);
    }
    for (const f of this.legacyFactories.values()) f.close();
    this.modern.clear();
    this.legacyFactories.clear();
  }
}

/** A tool's Mcp-Param-* spec, read once per listed tool item (a new listing brings new items). */
const specs = new WeakMap<object, ReturnType<typeof paramHeaderSpec>>();
function specOf(item: Record<string, unknown>): ReturnType<typeof paramHeaderSpec> {
  let spec = specs.get(item);
  if (!spec) {
    spec = paramHeaderSpec(item['inputSchema']);
    specs.set(item, spec);
  }
  return spec;
}

function modeKey(mode: EntryMode): string {
  const config = mode.config === undefined ? '' : `${mode.config}\0`;
  const base =
    mode.passthrough !== undefined ? `passthrough:${mode.passthrough}` : mode.servers === undefined ? 'all' : `servers:${[...mode.servers].sort().join(',')}`;
  // Entries that offer tools differently are apart: their sessions, views and decisions are their own.
  const tools = `${mode.tools ?? 'auto'}|${[...(mode.allowTools ?? [])].sort().join(',')}|${[...(mode.denyTools ?? [])].sort().join(',')}`;
  return config + (tools === 'auto||' ? base : `${base};tools:${tools}`);
}
