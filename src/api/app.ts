/**
 * The daemon's HTTP API (`/v1`, JSON) as a fastify instance, testable with `app.inject`.
 *
 * One instance serves one listener: the Unix socket (no token: the file mode protects it) or loopback
 * TCP (every request needs a loopback Host and, when it has one, a loopback Origin — else 403 even
 * with the token — and then `Authorization: Bearer <token>` unless `daemon.auth` is `none` — else 401).
 * Both instances share one Controller.
 *
 * This file holds what applies to every request (access, the scrubber, error shapes) and registers the
 * route plugins: `/v1` (./v1-routes.ts), `/mcp` (./mcp-routes.ts) and the `mcpx ui` page (src/ui/routes.ts);
 * on the socket listener, also `mcpx serve`'s streams (./serve-upgrade.ts).
 * What a route is exempt from, its plugin says in the route's config (./routes.ts): `whileStopping`,
 * `admitsWithoutToken`. Every body, query and parameter is validated with the zod schemas of
 * ./schemas.ts; a bad one gets 400 `{"ok":false,"error":{"code":"MCPX_BAD_REQUEST","message":…,"path":[…]}}`.
 * Every JSON response passes the secret scrubber on its way out.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import Fastify, { errorCodes, LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Logger as PinoLogger } from 'pino';
import { loopbackHost } from '../config/settings.js';
import type { McpHttpEntry } from '../front/http-entry.js';
import type { SocketEntry } from '../front/socket-entry.js';
import { UiHub } from '../ui/hub.js';
import { uiRoutes } from '../ui/routes.js';
import { send, toApiError } from './api-errors.js';
import { closeSilentConnections } from './connection-limit.js';
import { serveUpgrade } from './serve-upgrade.js';
import type { Controller } from '../core/controller.js';
import { mcpRoutes } from './mcp-routes.js';
import { packageVersion } from '../package-info.js';
import type { ResponseViolation } from './response-contract.js';
import { v1Routes, type DaemonInfo } from './v1-routes.js';
import { UnreadGuard, unreadLimits, type UnreadLimits } from '../front/unread-guard.js';

export type { DaemonInfo } from './v1-routes.js';

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
  /** While true, every request but to a route declared `whileStopping` (health, status) gets 503 MCPX_SHUTTING_DOWN. */
  isStopping?: () => boolean;
  /**
   * The `/mcp` entry, shared by the daemon's listeners (one set of legacy sessions), or a function that
   * makes it on first use (so the SDK loads only when /mcp is used); default: one of its own, made on first use.
   */
  mcp?: McpHttpEntry | (() => Promise<McpHttpEntry>);
  /** The front for `mcpx serve` streams (`GET /v1/mcp-stream`, upgraded; the socket listener only), made on first use; none: no streams. */
  serve?: () => Promise<SocketEntry>;
  /** The `mcpx ui` page's state (probe ring, login codes), shared by the daemon's listeners; default: one of its own. */
  ui?: UiHub;
  /** Tests: hold every JSON answer against the schema its route declares, reporting mismatches here. */
  checkResponses?: (violation: ResponseViolation) => void;
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

/**
 * fastify's JSON Schema compilers (ajv, fast-json-stringify), required only if a route ever declares a
 * fastify schema. None does (every part is validated with zod, ./routes.ts), and fastify would
 * otherwise load ajv whenever an instance is made, before the daemon listens.
 */
type CompilersFactory = Required<NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>>;
let fastifyCompilers: CompilersFactory | undefined;
function defaultCompilers(): CompilersFactory {
  const fastifyRequire = createRequire(createRequire(import.meta.url).resolve('fastify'));
  return {
    buildValidator: (fastifyRequire('@fastify/ajv-compiler') as () => CompilersFactory['buildValidator'])(),
    buildSerializer: (fastifyRequire('@fastify/fast-json-stringify-compiler') as () => CompilersFactory['buildSerializer'])(),
  };
}
const lazyCompilers: CompilersFactory = {
  buildValidator: (...args) => (fastifyCompilers ??= defaultCompilers()).buildValidator(...args),
  buildSerializer: (...args) => (fastifyCompilers ??= defaultCompilers()).buildSerializer(...args),
};

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { controller } = deps;
  const version = deps.version ?? packageVersion();
  const pid = deps.pid ?? process.pid;
  const startedAt = deps.startedAt ?? Date.now();
  const listener = deps.listener ?? 'socket';
  const scrub = (text: string) => controller.scrubber.scrub(text);
  const log = deps.logger?.child({ component: 'api', listener });
  const ui = deps.ui ?? new UiHub({ scrub });
  const firstRequestMs = controller.settings.get('daemon.firstRequestTimeout');
  const receiveMs = controller.settings.get('daemon.requestReceiveTimeout');

  const app: FastifyInstance = Fastify({
    ...(deps.logger ? { loggerInstance: deps.logger.child({ component: 'http', listener }) as unknown as FastifyBaseLogger } : { logger: false }),
    logController: new LogController({ disableRequestLogging: true }),
    // Requests are not logged (the daemon logs what it did): no pino child logger built per request.
    childLoggerFactory: (logger) => logger,
    forceCloseConnections: true,
    // A request must arrive whole in time (408 otherwise); a connection that sends none at all is
    // closed below. The answer and any stream after it are not bounded.
    // (daemon.requestReceiveTimeout, daemon.firstRequestTimeout; node wants headersTimeout ≤ requestTimeout.)
    requestTimeout: receiveMs,
    http: { headersTimeout: Math.min(firstRequestMs, receiveMs), connectionsCheckingInterval: 1_000 },
    bodyLimit: 8 * 1024 * 1024,
    return503OnClosing: true,
    schemaController: { compilersFactory: lazyCompilers },
  });

  closeSilentConnections(app.server, firstRequestMs, log, listener);

  // An empty body is no body, whatever its Content-Type says: clients close sessions with
  // `DELETE` + `Content-Type: application/json` and nothing after (the Python SDK, fastmcp). A route that
  // needs a body still says so (its schema); a non-empty body of a type no route reads is still 415.
  const json = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if (body === '') done(null, undefined);
    else json(req, body as string, done);
  });
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => {
    if ((body as Buffer).length === 0) done(null, undefined);
    else done(new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE(), undefined);
  });

  // Hooks take fastify's callback form: they run on every request, and an async hook costs a promise
  // and a microtask turn each time.

  // ---- access (TCP) ----
  app.addHook('onRequest', (req, reply, done) => {
    if (listener === 'tcp') {
      const host = req.headers.host;
      const origin = req.headers.origin;
      if (!isLoopbackHostHeader(host) || !isLoopbackOrigin(origin)) {
        log?.warn({ host: host ?? null, origin: origin ?? null, url: req.url }, 'refused a request whose Host or Origin is not loopback');
        // A refused caller does not keep its connection (a descriptor) open for another try.
        reply.header('connection', 'close');
        send(reply, 403, {
          code: 'MCPX_FORBIDDEN',
          message: `mcpx answers only loopback requests: ${!isLoopbackHostHeader(host) ? `Host ${JSON.stringify(host ?? '')}` : `Origin ${JSON.stringify(origin)}`} is not loopback`,
        });
        return;
      }
      if (controller.settings.get('daemon.auth') !== 'none') {
        const expected = deps.token?.();
        const auth = req.headers.authorization;
        const m = typeof auth === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(auth) : null;
        // Without the token: only what the route itself admits (the `mcpx ui` page's reads with its cookie, its login).
        if ((!expected || !m || !tokenMatches(m[1]!, expected)) && !req.routeOptions.config?.admitsWithoutToken?.(req)) {
          reply.header('www-authenticate', 'Bearer realm="mcpx"');
          // Without the token, no kept-alive connection: they would pile up at the descriptor limit.
          reply.header('connection', 'close');
          send(reply, 401, {
            code: 'MCPX_UNAUTHORIZED',
            message: 'this request needs "Authorization: Bearer <token>", the token in <state>/daemon.json (or set daemon.auth to none)',
          });
          return;
        }
      }
    }
    if (deps.isStopping?.() && !req.routeOptions.config?.whileStopping) {
      send(reply, 503, { code: 'MCPX_SHUTTING_DOWN', message: 'the daemon is shutting down' });
      return;
    }
    done();
  });

  app.addHook('onResponse', (req, reply, done) => {
    if (log?.isLevelEnabled('debug'))
      log.debug({ method: req.method, url: req.url.split('?')[0], status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
    done();
  });

  // Every payload leaves scrubbed of known secrets. A large one may wait in the daemon for a caller that
  // does not read it: its connection is watched until it has left (../front/unread-guard.ts).
  app.addHook('onSend', (req, reply, payload, done) => {
    if (typeof payload !== 'string') return done(null, payload);
    const text = scrub(payload);
    if (text.length > LARGE_ANSWER) setImmediate(watchUnread, reply.raw.socket, unreadLimits(controller.settings), log, req.url);
    done(null, text);
  });

  app.setErrorHandler((err, req, reply) => {
    const { status, error } = toApiError(err);
    if (status >= 500) log?.error({ err, url: req.url.split('?')[0] }, 'request failed');
    return send(reply, status, error);
  });

  app.setNotFoundHandler((req, reply) => send(reply, 404, { code: 'MCPX_NOT_FOUND', message: `no route ${req.method} ${req.url.split('?')[0]}` }));

  if (deps.checkResponses) (await import('./response-contract.js')).checkResponses(app, deps.checkResponses); // tests only

  await app.register(v1Routes, {
    controller,
    version,
    pid,
    startedAt,
    ...(deps.info ? { info: deps.info } : {}),
    ...(deps.shutdown ? { shutdown: deps.shutdown } : {}),
    ...(deps.logger ? { logger: deps.logger } : {}),
    pageAdmits: (req) => ui.admits(req),
  });
  await app.register(mcpRoutes, { controller, version, ...(deps.logger ? { logger: deps.logger } : {}), ...(deps.mcp ? { mcp: deps.mcp } : {}) });
  await app.register(uiRoutes, { controller, hub: ui, listener });
  if (listener === 'socket' && deps.serve)
    app.server.on(
      'upgrade',
      serveUpgrade({
        controller,
        entry: deps.serve,
        ...(deps.isStopping ? { isStopping: deps.isStopping } : {}),
        ...(deps.logger ? { logger: deps.logger.child({ component: 'serve' }) } : {}),
      }),
    );

  await app.ready();
  return app;
}

/** An answer longer than a socket's buffer (64 KiB) may wait for its caller to read it. */
const LARGE_ANSWER = 64 * 1024;

/** Cuts off a connection whose caller leaves a large answer unread (after the answer was written). */
function watchUnread(socket: Socket | null, limits: UnreadLimits, log: PinoLogger | undefined, url: string): void {
  if (!socket || socket.destroyed || !socket.writableNeedDrain) return;
  const guard = new UnreadGuard(socket, limits, (o) => {
    log?.warn({ url: url.split('?')[0], reason: o.reason, queuedBytes: o.queued }, `closed a connection: ${o.message}`);
    socket.destroy();
  });
  socket.once('close', () => guard.stop());
  guard.check();
}
