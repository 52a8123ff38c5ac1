/**
 * The daemon's HTTP API (`/v1`, JSON) as a fastify instance, testable with `app.inject`.
 *
 * One instance serves one listener: the Unix socket (no token: the file mode protects it) or loopback
 * TCP (every request needs a loopback Host and, when it has one, a loopback Origin — else 403 even
 * with the token — and then `Authorization: Bearer <token>` unless `daemon.auth` is `none` — else 401).
 * Both instances share one Controller.
 *
 * Every body, query and parameter is validated with the zod schemas of ./schemas.ts; a bad one gets
 * 400 `{"ok":false,"error":{"code":"MCPX_BAD_REQUEST","message":…,"path":[…]}}`. Every JSON response
 * passes the secret scrubber on its way out.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createReadStream } from 'node:fs';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger as PinoLogger } from 'pino';
import { z } from 'zod';
import { McpxError, SettingValueError, UnknownSettingError, type ErrorCode } from '../errors.js';
import { loopbackHost } from '../config/settings.js';
import type { CallContext } from '../pool/types.js';
import { Controller } from './controller.js';
import type { DaemonEvent } from './events.js';
import { buildOpenApi } from './openapi.js';
import { packageVersion } from './package-info.js';
import { checkResponses, type ResponseViolation } from './response-contract.js';
import { CALLER_PROTOCOL_HEADER, callHeadersSchema, ROUTES, SESSION_HEADER, type RouteDef } from './schemas.js';
import { localMermaid, MERMAID_ASSET_URL, statechartPage } from './statechart-page.js';
// The /mcp entry (the MCP SDK's server side) loads on the first /mcp request, not before the daemon listens.
import type { McpHttpEntry, EntryMode } from '../serve/http-entry.js';
import { UiHub } from '../ui/hub.js';
import { uiRoutes } from '../ui/routes.js';

export interface DaemonInfo {
  stateDir: string | null;
  socket: string | null;
  tcp: { host: string; port: number; auth: 'token' | 'none' } | null;
}

export interface AppDeps {
  controller: Controller;
  /** A pino logger (the daemon's); none: silent. */
  logger?: PinoLogger;
  version?: string;
  pid?: number;
  /** When the daemon started (ms since the epoch); default: when the app was built. */
  startedAt?: number;
  /** Which listener this instance serves; `tcp` turns on the Host/Origin check and the bearer token. */
  listener?: 'socket' | 'tcp';
  /** The TCP bearer token (daemon.json); checked unless `daemon.auth` is `none`. */
  token?: () => string | undefined;
  /** Where the daemon listens, for /v1/status. */
  info?: () => DaemonInfo;
  /** `POST /v1/shutdown`: called after the 202 is sent. */
  shutdown?: () => void;
  /** While true, every request but health and status gets 503 MCPX_SHUTTING_DOWN. */
  isStopping?: () => boolean;
  /**
   * The `/mcp` entry, shared by the daemon's listeners (one set of legacy sessions), or a function that
   * makes it on first use (so the SDK loads only when /mcp is used); default: one of its own, made on first use.
   */
  mcp?: McpHttpEntry | (() => Promise<McpHttpEntry>);
  /** The `mcpx ui` page's state (probe ring, login codes), shared by the daemon's listeners; default: one of its own. */
  ui?: UiHub;
  /** Tests: hold every JSON answer against the schema its route declares, reporting mismatches here. */
  checkResponses?: (violation: ResponseViolation) => void;
}

type Out<S> = S extends z.ZodType ? z.output<S> : undefined;
type Input<D> = {
  params: D extends { params: infer S } ? Out<S> : undefined;
  query: D extends { query: infer S } ? Out<S> : undefined;
  body: D extends { body: infer S } ? Out<S> : undefined;
  headers: D extends { headers: infer S } ? Out<S> : undefined;
};

export interface ApiError {
  code: string;
  message: string;
  path?: Array<string | number>;
  in?: 'body' | 'query' | 'params' | 'headers';
  allowed?: string[];
  data?: Record<string, unknown>;
}

/**
 * The HTTP status of each error code on /v1. A Record over every ErrorCode, so a new code does not compile
 * until it is given a status here. Upstream and session failures are 500: the request reached mcpx and
 * mcpx could not do it; 4xx codes are the caller's.
 */
const STATUS: Record<ErrorCode, number> = {
  MCPX_BAD_REQUEST: 400,
  MCPX_BAD_SETTING: 400,
  MCPX_BAD_PROTOCOL_VALUE: 400,
  MCPX_UNKNOWN_QUESTION: 400,
  MCPX_UNAUTHORIZED: 401,
  MCPX_FORBIDDEN: 403,
  MCPX_UNKNOWN_SERVER: 404,
  MCPX_UNKNOWN_SETTING: 404,
  MCPX_NOT_FOUND: 404,
  MCPX_ALREADY_ANSWERED: 409,
  MCPX_QUESTION_CLOSED: 409,
  MCPX_TOO_MANY_ASKS: 429,
  MCPX_NOT_IMPLEMENTED: 501,
  MCPX_SHUTTING_DOWN: 503,
  // configuration (a reload that failed), the daemon itself
  MCPX_BAD_CONFIG: 500,
  MCPX_SOCKET_CONFLICT: 500,
  MCPX_DAEMON_RUNNING: 500,
  MCPX_DAEMON_UNAVAILABLE: 500,
  MCPX_CACHE_IO: 500,
  MCPX_INTERNAL: 500,
  // upstreams, their transports and the era probe
  MCPX_SPAWN_FAILED: 500,
  MCPX_TRANSPORT_CLOSED: 500,
  MCPX_MESSAGE_TOO_LARGE: 500,
  MCPX_REQUEST_TIMEOUT: 500,
  MCPX_REQUEST_CANCELLED: 500,
  MCPX_HTTP_STATUS: 500,
  MCPX_UPSTREAM_UNAUTHORIZED: 500,
  MCPX_CONNECT_TIMEOUT: 500,
  MCPX_BAD_UPSTREAM: 500,
  MCPX_ERA_MISMATCH: 500,
  MCPX_NO_COMMON_VERSION: 500,
  MCPX_MODERN_PROTOCOL_ERROR: 500,
  MCPX_UNSUPPORTED_LEGACY_VERSION: 500,
  MCPX_PROBE_REFUSED: 500,
  MCPX_START_TIMEOUT: 500,
  MCPX_UPSTREAM_UNAVAILABLE: 500,
  MCPX_SESSION_CLOSED: 500,
  MCPX_UPSTREAM_ERROR: 500,
  MCPX_BAD_RESULT: 500,
  MCPX_BAD_TOOL: 500,
  MCPX_POOL_STOPPED: 500,
  MCPX_TOOL_ERROR: 500,
  MCPX_QUESTION_REFUSED: 500,
  MCPX_ASK_EXPIRED: 500,
};

export function statusFor(code: string): number {
  return Object.hasOwn(STATUS, code) ? STATUS[code as ErrorCode]! : 500;
}

function send(reply: FastifyReply, status: number, error: ApiError): FastifyReply {
  return reply.code(status).type('application/json; charset=utf-8').send({ ok: false, error });
}

/** The first zod issue as an API error naming the field. */
function badRequest(where: 'body' | 'query' | 'params' | 'headers', err: z.ZodError): ApiError {
  const issue = err.issues[0]!;
  let path: Array<string | number> = issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p));
  if (issue.code === 'unrecognized_keys' && issue.keys.length > 0) path = [...path, issue.keys[0]!];
  const field = path.length > 0 ? `${where} field ${path.join('.')}` : where;
  const allowed = (issue as { values?: unknown[] }).values;
  return {
    code: 'MCPX_BAD_REQUEST',
    message: `${field}: ${issue.message}`,
    path,
    in: where,
    ...(Array.isArray(allowed) ? { allowed: allowed.map(String) } : {}),
    ...(err.issues.length > 1 ? { data: { issues: err.issues.map((i) => ({ path: i.path.map(String), message: i.message })) } } : {}),
  };
}

/** An error thrown by a handler (or fastify itself) as status + API error. */
export function toApiError(err: unknown): { status: number; error: ApiError } {
  if (err instanceof UnknownSettingError) return { status: 404, error: { ...err.toJSON(), path: ['path'], in: 'params' } };
  if (err instanceof SettingValueError) {
    const allowed = err.data?.['allowed'];
    return { status: 400, error: { ...err.toJSON(), path: ['value'], in: 'body', ...(Array.isArray(allowed) ? { allowed: allowed.map(String) } : {}) } };
  }
  if (err instanceof McpxError) {
    const e: ApiError = err.toJSON();
    if (err.code === 'MCPX_BAD_REQUEST' && typeof err.data?.['field'] === 'string') {
      e.path = [err.data['field']];
      e.in = 'body';
    }
    return { status: statusFor(err.code), error: e };
  }
  const fe = err as Partial<FastifyError> & { statusCode?: number };
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return { status: fe.statusCode, error: { code: 'MCPX_BAD_REQUEST', message: `body: ${fe.message ?? 'bad request'}`, path: [], in: 'body' } };
  }
  return { status: 500, error: { code: 'MCPX_INTERNAL', message: err instanceof Error ? err.message : String(err) } };
}

function tokenMatches(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** A Host header naming a loopback address (any port). */
export function isLoopbackHostHeader(host: string | undefined): boolean {
  if (host === undefined) return false;
  let h = host.trim();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    if (end === -1) return false;
    h = h.slice(0, end + 1);
  } else {
    const colon = h.indexOf(':');
    if (colon !== -1) {
      if (h.indexOf(':', colon + 1) !== -1) return false; // a bare IPv6 address is not a valid Host
      h = h.slice(0, colon);
    }
  }
  return loopbackHost(h) !== undefined;
}

/** An Origin header naming a loopback http(s) origin; absent is fine, `null` is not. */
export function isLoopbackOrigin(origin: string | undefined): boolean {
  if (origin === undefined) return true;
  let u: URL;
  try {
    u = new URL(origin);
  } catch {
    return false;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return false;
  return loopbackHost(u.hostname) !== undefined;
}

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { controller } = deps;
  const version = deps.version ?? packageVersion();
  const pid = deps.pid ?? process.pid;
  const startedAt = deps.startedAt ?? Date.now();
  const listener = deps.listener ?? 'socket';
  const scrub = (text: string) => controller.scrubber.scrub(text);
  const log = deps.logger?.child({ component: 'api', listener });
  const ui = deps.ui ?? new UiHub({ scrub });

  const app: FastifyInstance = Fastify({
    ...(deps.logger ? { loggerInstance: deps.logger.child({ component: 'http', listener }) as unknown as FastifyBaseLogger } : { logger: false }),
    logController: new LogController({ disableRequestLogging: true }),
    forceCloseConnections: true,
    bodyLimit: 8 * 1024 * 1024,
    return503OnClosing: true,
  });

  const streams = new Set<() => void>();
  let openapi: Record<string, unknown> | undefined;

  // Hooks take fastify's callback form: they run on every request, and an async hook costs a promise
  // and a microtask turn each time.

  // ---- access (TCP) ----
  app.addHook('onRequest', (req, reply, done) => {
    if (listener === 'tcp') {
      const host = req.headers.host;
      const origin = req.headers.origin;
      if (!isLoopbackHostHeader(host) || !isLoopbackOrigin(origin)) {
        log?.warn({ host: host ?? null, origin: origin ?? null, url: req.url }, 'refused a request whose Host or Origin is not loopback');
        send(reply, 403, { code: 'MCPX_FORBIDDEN', message: `mcpx answers only loopback requests: ${!isLoopbackHostHeader(host) ? `Host ${JSON.stringify(host ?? '')}` : `Origin ${JSON.stringify(origin)}`} is not loopback` });
        return;
      }
      if (controller.settings.get('daemon.auth') !== 'none') {
        const expected = deps.token?.();
        const auth = req.headers.authorization;
        const m = typeof auth === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(auth) : null;
        // Without the token: only the `mcpx ui` page's own reads, with its cookie (src/ui/hub.ts).
        if ((!expected || !m || !tokenMatches(m[1]!, expected)) && !ui.admits(req)) {
          reply.header('www-authenticate', 'Bearer realm="mcpx"');
          send(reply, 401, { code: 'MCPX_UNAUTHORIZED', message: 'this request needs "Authorization: Bearer <token>", the token in <state>/daemon.json (or set daemon.auth to none)' });
          return;
        }
      }
    }
    if (deps.isStopping?.() && req.url !== '/v1/health' && req.url !== '/v1/status') {
      send(reply, 503, { code: 'MCPX_SHUTTING_DOWN', message: 'the daemon is shutting down' });
      return;
    }
    done();
  });

  app.addHook('onResponse', (req, reply, done) => {
    if (log?.isLevelEnabled('debug')) log.debug({ method: req.method, url: req.url.split('?')[0], status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
    done();
  });

  // Every payload leaves scrubbed of known secrets.
  app.addHook('onSend', (_req, _reply, payload, done) => done(null, typeof payload === 'string' ? scrub(payload) : payload));

  app.addHook('preClose', async () => {
    for (const end of [...streams]) end();
  });

  app.setErrorHandler((err, req, reply) => {
    const { status, error } = toApiError(err);
    if (status >= 500) log?.error({ err, url: req.url.split('?')[0] }, 'request failed');
    return send(reply, status, error);
  });

  app.setNotFoundHandler((req, reply) => send(reply, 404, { code: 'MCPX_NOT_FOUND', message: `no route ${req.method} ${req.url.split('?')[0]}` }));

  if (deps.checkResponses) checkResponses(app, deps.checkResponses);

  // ---- the route helper: validate every part with its zod schema, then run the handler ----
  function route<D extends RouteDef>(def: D, fn: (input: Input<D>, req: FastifyRequest, reply: FastifyReply) => Promise<unknown>): void {
    app.route({
      method: def.method,
      url: def.url,
      handler: async (req, reply) => {
        const input: Record<string, unknown> = {};
        const parts = [
          ['params', def.params, req.params],
          ['query', def.query, req.query],
          ['body', def.body, req.body],
          ['headers', def.headers, req.headers],
        ] as const;
        for (const [where, schema, value] of parts) {
          if (!schema) continue;
          const r = schema.safeParse(value ?? (where === 'body' ? undefined : {}));
          if (!r.success) return send(reply, 400, badRequest(where, r.error));
          input[where] = r.data;
        }
        return fn(input as Input<D>, req, reply);
      },
    });
  }

  /** The caller's context: X-Mcpx-Caller-Protocol → callerProtocol, the session (body, query or header), cancellation on disconnect. */
  function contextOf(reply: FastifyReply, headers: z.output<typeof callHeadersSchema>, session: string | undefined, timeoutMs?: number): CallContext {
    const ac = new AbortController();
    // The response closes before it finished: the caller went away, so stop waiting on its behalf.
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) ac.abort(new Error('the caller went away'));
    });
    const callerProtocol = headers[CALLER_PROTOCOL_HEADER];
    const s = session ?? headers[SESSION_HEADER];
    return {
      signal: ac.signal,
      ...(callerProtocol ? { callerProtocol } : {}),
      ...(s ? { session: s } : {}),
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
    };
  }

  /** `Accept: text/event-stream`: the caller wants progress frames before the outcome. */
  const wantsStream = (req: FastifyRequest) => /\btext\/event-stream\b/.test(req.headers.accept ?? '');

  /** An SSE response for progress frames and a closing `result` frame (scrubbed like every payload). */
  function openStream(reply: FastifyReply): { frame: (event: string, data: unknown) => void; end: (event: string, data: unknown) => void } {
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' });
    const frame = (event: string, data: unknown) => {
      if (!res.writableEnded) res.write(`event: ${event}\ndata: ${scrub(JSON.stringify(data))}\n\n`);
    };
    return {
      frame,
      end: (event, data) => {
        frame(event, data);
        res.end();
      },
    };
  }

  // ---- routes ----

  route(ROUTES.health, async () => ({ ok: true, version, pid }));

  route(ROUTES.status, async () => {
    const cfg = controller.config;
    return {
      ok: true,
      version,
      pid,
      startedAt: new Date(startedAt).toISOString(),
      uptimeMs: Date.now() - startedAt,
      daemon: deps.info?.() ?? { stateDir: null, socket: null, tcp: null },
      config: { file: cfg.file ?? null, via: cfg.via ?? null, demo: cfg.demo === true },
      servers: controller.serverStatus(),
    };
  });

  route(ROUTES.servers, async () => ({ servers: controller.servers() }));

  route(ROUTES.tools, async ({ query, headers }, _req, reply) =>
    controller.tools(query.server, contextOf(reply, headers, query.session), { fresh: query.fresh === 'true' || query.fresh === '1' }));

  route(ROUTES.call, async ({ body, headers }, _req, reply) => controller.call(body.server, body.tool, body.args, contextOf(reply, headers, body.session, body.timeoutMs)));

  route(ROUTES.catalog, async ({ headers }, req, reply) => {
    const ctx = contextOf(reply, headers, undefined);
    if (!wantsStream(req)) return controller.catalog.view(ctx);
    // Streamed: a progress frame as each server that had no listing yet is started and listed.
    const stream = openStream(reply);
    let outcome: unknown;
    try {
      outcome = await controller.catalog.view(ctx, { onProgress: (p) => stream.frame('progress', p) });
    } catch (err) {
      outcome = { ok: false, error: toApiError(err).error };
    }
    stream.end('result', outcome);
    return undefined;
  });

  route(ROUTES.request, async ({ body, headers }, req, reply) => {
    const ctx = contextOf(reply, headers, body.session, body.timeoutMs);
    if (!wantsStream(req)) return controller.request(body.server, body.method, body.params, ctx);
    // Streamed: progress frames while the request runs, then the outcome. Checked before the stream
    // opens, so an unknown server is still a plain 404.
    controller.pool(body.server);
    const stream = openStream(reply);
    let outcome: unknown;
    try {
      outcome = await controller.request(body.server, body.method, body.params, { ...ctx, onProgress: (p) => stream.frame('progress', p) });
    } catch (err) {
      outcome = { ok: false, error: toApiError(err).error };
    }
    stream.end('result', outcome);
    return undefined;
  });

  route(ROUTES.settingsList, async () => controller.settingsList());
  route(ROUTES.settingGet, async ({ params }) => controller.setting(params.path));
  route(ROUTES.settingPut, async ({ params, body }) => controller.setSetting(params.path, body.value));
  route(ROUTES.settingDelete, async ({ params }) => controller.unsetSetting(params.path));

  route(ROUTES.protocol, async () => controller.protocol());

  route(ROUTES.config, async () => controller.configView());

  route(ROUTES.reload, async () => controller.reload('api'));

  route(ROUTES.shutdown, async (_input, _req, reply) => {
    if (deps.shutdown) reply.raw.once('finish', () => setImmediate(() => deps.shutdown?.()));
    return reply.code(202).send({ ok: true, stopping: true, pid });
  });

  route(ROUTES.openapi, async () => (openapi ??= buildOpenApi(version)));

  route(ROUTES.statechart, async ({ params, query }, _req, reply) => {
    const view = controller.statechart(params.server);
    if (query.format === 'html') {
      return reply.type('text/html; charset=utf-8').send(statechartPage(view, { mermaidUrl: localMermaid() ? MERMAID_ASSET_URL : null }));
    }
    return view;
  });

  app.get(MERMAID_ASSET_URL, async (_req, reply) => {
    const file = localMermaid();
    if (!file) return send(reply, 404, { code: 'MCPX_NOT_FOUND', message: 'no local copy of mermaid is installed' });
    return reply.type('text/javascript; charset=utf-8').send(createReadStream(file));
  });

  route(ROUTES.events, async ({ query }, req, reply) => {
    const types = query.type?.split(',').map((t) => t.trim()).filter((t) => t.length > 0);
    const wanted = (e: DaemonEvent): boolean => {
      if (query.server !== undefined && (!('server' in e) || e.server !== query.server)) return false;
      if (types && !types.some((t) => (t.endsWith('.') ? e.type.startsWith(t) : e.type === t))) return false;
      return true;
    };
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    res.write(': mcpx events\n\n');
    const unsubscribe = controller.hub.subscribe((e, seq) => {
      if (!wanted(e)) return;
      res.write(`id: ${seq}\nevent: ${e.type}\ndata: ${scrub(JSON.stringify(e))}\n\n`);
    });
    const ping = setInterval(() => res.write(': ping\n\n'), 15_000);
    ping.unref();
    const end = () => {
      clearInterval(ping);
      unsubscribe();
      streams.delete(end);
      if (!res.writableEnded) res.end();
    };
    streams.add(end);
    req.raw.once('close', end);
    res.once('close', end);
  });

  // ---- /v1/ask: a call the upstream may interrupt with questions (src/serve/asks.ts) ----

  /** An ask error naming an answer (`data.path`), as a 4xx naming that body field. */
  const askFailure = (reply: FastifyReply, err: unknown) => {
    const path = err instanceof McpxError ? err.data?.['path'] : undefined;
    if (!(err instanceof McpxError) || !Array.isArray(path)) throw err;
    return send(reply, statusFor(err.code), { ...err.toJSON(), path: path as Array<string | number>, in: 'body' });
  };

  route(ROUTES.ask, async ({ body, headers }, _req, reply) => {
    controller.pool(body.server); // an unknown server is a 404 now, not a failed ask later
    const callerProtocol = headers[CALLER_PROTOCOL_HEADER];
    const session = body.session ?? headers[SESSION_HEADER];
    const started = controller.asks.start({
      server: body.server,
      tool: body.tool,
      args: body.args,
      ...(body.method === undefined ? {} : { method: body.method }),
      ...(body.params === undefined ? {} : { params: body.params }),
      ...(body.questionTimeoutMs === undefined ? {} : { questionTimeoutMs: body.questionTimeoutMs }),
      capabilities: body.capabilities ?? {},
      ...(callerProtocol ? { callerProtocol } : {}),
      ...(session ? { session } : {}),
      ...(body.timeoutMs === undefined ? {} : { timeoutMs: body.timeoutMs }),
    });
    return reply.code(202).send({ id: started.id, status: started.status });
  });

  route(ROUTES.askGet, async ({ params, query }, req, reply) => {
    // A poller that goes away stops waiting (the ask itself goes on).
    const gone = new AbortController();
    reply.raw.once('close', () => gone.abort());
    if (!wantsStream(req)) return controller.asks.wait(params.id, query.waitMs ?? 0, gone.signal);
    // Streamed: the call's progress while this poll waits, then the view.
    controller.asks.get(params.id); // an unknown ask is still a plain 404
    const stream = openStream(reply);
    const view = await controller.asks.wait(params.id, query.waitMs ?? 0, gone.signal, (p) => stream.frame('progress', p)).catch((err: unknown) => ({ ok: false, error: toApiError(err).error }));
    stream.end('result', view);
    return undefined;
  });

  route(ROUTES.askAnswers, async ({ params, body }, _req, reply) => {
    try {
      return controller.asks.answer(params.id, body.answers);
    } catch (err) {
      return askFailure(reply, err);
    }
  });

  route(ROUTES.askAbandon, async ({ params }) => controller.asks.abandon(params.id));

  // ---- /mcp: the MCP front over Streamable HTTP (both eras), under the same access rules ----
  let own: Promise<McpHttpEntry> | undefined;
  const given = deps.mcp;
  const mcpEntry = (): Promise<McpHttpEntry> => {
    if (typeof given === 'function') return given();
    if (given) return Promise.resolve(given);
    own ??= Promise.all([import('../serve/http-entry.js'), import('../serve/controller-backend.js')]).then(
      ([{ McpHttpEntry }, { ControllerBackend }]) => new McpHttpEntry({ backend: new ControllerBackend(controller), version, ...(deps.logger ? { logger: deps.logger } : {}) }),
    );
    return own;
  };
  if (!given) app.addHook('onClose', async () => (own ? (await own).close() : undefined));
  let nodeHandler: Promise<typeof import('@modelcontextprotocol/node').toNodeHandler> | undefined;
  const known = (name: string) => controller.config.servers.some((s) => s.name === name && !s.disabled);
  const serveMcp = async (req: FastifyRequest, reply: FastifyReply, mode: EntryMode) => {
    const missing = [mode.passthrough, ...(mode.servers ?? [])].find((n) => n !== undefined && !known(n));
    if (missing !== undefined) return send(reply, 404, { code: 'MCPX_UNKNOWN_SERVER', message: `no server ${JSON.stringify(missing)} is configured` });
    const [mcp, toNodeHandler] = await Promise.all([mcpEntry(), (nodeHandler ??= import('@modelcontextprotocol/node').then((m) => m.toNodeHandler))]);
    reply.hijack();
    const body = req.body;
    await toNodeHandler({ fetch: (request) => mcp.fetch(request, body, mode) }, { onerror: (err) => log?.error({ err }, '/mcp failed') })(req.raw as never, reply.raw as never, body);
    return undefined;
  };
  const mcpMethods: Array<'GET' | 'POST' | 'DELETE'> = ['GET', 'POST', 'DELETE'];
  app.route({
    method: mcpMethods,
    url: '/mcp',
    handler: async (req, reply) => {
      const servers = (req.query as { servers?: unknown }).servers;
      const list = typeof servers === 'string' ? servers.split(',').map((x) => x.trim()).filter((x) => x.length > 0) : undefined;
      return serveMcp(req, reply, list ? { servers: list } : {});
    },
  });
  app.route({ method: mcpMethods, url: '/mcp/:server', handler: async (req, reply) => serveMcp(req, reply, { passthrough: (req.params as { server: string }).server }) });

  await app.register(uiRoutes, { controller, hub: ui, listener });

  await app.ready();
  return app;
}
