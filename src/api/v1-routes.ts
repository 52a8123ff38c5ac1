/**
 * The `/v1` API: the route table (V1_ROUTES, one declaration per route, ./routes.ts) and the fastify
 * plugin that registers it. Handlers answer with the controller's views; the streamed answers and the
 * event feed write through the one SSE writer (./sse.ts).
 */
import type { AuthManager } from '../auth/auth-manager.js';
import { createReadStream } from 'node:fs';
import type { Socket } from 'node:net';
import { uptimeSince } from '../core/uptime.js';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { McpxError } from '../errors.js';
import type { Logger } from '../log.js';
import { newCall, toolCall, type Call, type Caller } from '../call/call.js';
import { send, statusFor, toApiError } from './api-errors.js';
import type { Controller } from '../core/controller.js';
import type { DaemonEvent } from '../core/events.js';
import type { RejectedEdit } from '../core/views.js';
import { CALLER_PROTOCOL_HEADER, CONFIG_HEADER, SESSION_HEADER } from '../front/headers.js';
import { registerRoutes, routeOf, type Exchange } from './routes.js';
import type { callHeadersSchema } from './schemas.js';
import { SseWriter } from './sse.js';
import { unreadLimits } from '../front/unread-guard.js';
import { localMermaid, MERMAID_ASSET_URL, statechartPage } from '../ui/statechart-page.js';

export interface DaemonInfo {
  stateDir: string | null;
  socket: string | null;
  tcp: { host: string; port: number; auth: 'token' | 'none' } | null;
}

/** What every /v1 handler gets (with its request and reply). */
export interface V1Context {
  controller: Controller;
  version: string;
  pid: number;
  /** When the daemon started (ms since the epoch). */
  startedAt: number;
  /** The ms since then, on a monotonic clock (../core/uptime.ts); default: measured from when the routes are registered. */
  uptime?: () => number;
  /** Where the daemon listens, for /v1/status. */
  info?: () => DaemonInfo;
  /** `POST /v1/shutdown`: called after the 202 is sent. */
  shutdown?: () => void;
  sse: SseWriter;
  /** The daemon's logger (an event stream cut off for not reading is logged). */
  logger?: Logger;
}

export interface V1Options extends Omit<V1Context, 'sse'> {
  /** The `mcpx ui` page's cookie check (src/ui/hub.ts), for the routes declared `page`. */
  pageAdmits?: (req: FastifyRequest) => boolean;
}

// ---- what several handlers share ----

const goneSignals = new WeakMap<Socket, AbortSignal>();

/** Aborted when the connection closes: every request still running on it lost its caller. */
function callerGone(socket: Socket | null): AbortSignal {
  if (!socket) return AbortSignal.abort(new Error('the caller went away'));
  let signal = goneSignals.get(socket);
  if (!signal) {
    const ac = new AbortController();
    signal = ac.signal;
    goneSignals.set(socket, signal);
    if (socket.destroyed) ac.abort(new Error('the caller went away'));
    else socket.once('close', () => ac.abort(new Error('the caller went away')));
  }
  return signal;
}

/** The config each request means (X-Mcpx-Config, loaded by the hook in v1Routes); none: the daemon's own. */
const requestConfigs = new WeakMap<object, string>();

/** The caller of a request as far as its config: `{config}` when it named one other than the daemon's own. */
function configOf(req: FastifyRequest): Caller {
  const config = requestConfigs.get(req.raw);
  return config === undefined ? {} : { config };
}

/** Who calls: its config, X-Mcpx-Caller-Protocol → callerProtocol, the session (body, query or header). */
function callerOf(req: FastifyRequest, headers: z.output<typeof callHeadersSchema>, session: string | undefined): Caller {
  const callerProtocol = headers[CALLER_PROTOCOL_HEADER];
  const s = session ?? headers[SESSION_HEADER];
  return { via: 'api', ...configOf(req), ...(callerProtocol ? { callerProtocol } : {}), ...(s ? { session: s } : {}) };
}

/**
 * How a call of this request runs: its timeout, and cancellation on disconnect. A response that closes
 * before it finished means its connection closed, so the signal is the connection's: one per connection,
 * not an AbortController and a listener per request; what a finished call registered on it, it removed.
 */
function handlingOf(reply: FastifyReply, timeoutMs: number | undefined): Pick<Call, 'signal' | 'timeoutMs'> {
  return { signal: callerGone(reply.raw.socket), ...(timeoutMs === undefined ? {} : { timeoutMs }) };
}

/** `Accept: text/event-stream`: the caller wants progress frames before the outcome. */
const wantsStream = (req: FastifyRequest) => /\btext\/event-stream\b/.test(req.headers.accept ?? '');

/** A streamed answer: `event: progress` frames while `run` works, then one `event: result` frame with its outcome (a failure as `{ok:false, error}`). */
async function streamed({ sse, reply }: Exchange<V1Context>, run: (onProgress: (progress: unknown) => void) => Promise<unknown>): Promise<undefined> {
  const stream = sse.open(reply);
  let outcome: unknown;
  try {
    outcome = await run((p) => stream.send('progress', p));
  } catch (err) {
    outcome = { ok: false, error: toApiError(err).error };
  }
  stream.send('result', outcome);
  stream.close();
  return undefined;
}

const connections = new WeakMap<object, number>();
let nextConnection = 0;
const connectionId = (socket: object): number => {
  let id = connections.get(socket);
  if (id === undefined) connections.set(socket, (id = ++nextConnection));
  return id;
};

/** An ask error naming an answer (`data.path`), as a 4xx naming that body field. */
const askFailure = (reply: FastifyReply, err: unknown) => {
  const path = err instanceof McpxError ? err.data?.['path'] : undefined;
  if (!(err instanceof McpxError) || !Array.isArray(path)) throw err;
  return send(reply, statusFor(err.code), { ...err.toJSON(), path: path as Array<string | number>, in: 'body' });
};

// ---- the routes ----

const route = routeOf<V1Context>();

/**
 * Every `/v1` route but two that are not API: the page's /v1/ui/login (src/ui/routes.ts) and the chart
 * page's Mermaid file (below). The key is the route's name, its OpenAPI operationId.
 *
 * Adding a route is adding an entry here, and its zod schemas to ./schemas.ts:
 *   method, url, summary
 *   input          the request parts to validate, `(s) => ({ body: s.fooBodySchema })`; none: nothing is
 *                  validated and the route never loads zod
 *   responses      each status's answer: the OpenAPI document and the tests' response contract use them
 *   handler        `(input, { controller, req, reply, … })`, returning the JSON answer
 *   page           the `mcpx ui` page's cookie may read it (GET only)
 *   whileStopping  it still answers while the daemon stops
 * What a handler needs that V1Context lacks goes into V1Context (app.ts fills it in). Then add the route
 * to the table of docs/contract.md §4.
 */
/** `rejected`: the last config edit a reload refused, when there is one. */
const rejectedOf = (controller: { rejected(caller: Caller): RejectedEdit | undefined }, caller: Caller): { rejected?: RejectedEdit } => {
  const r = controller.rejected(caller);
  return r === undefined ? {} : { rejected: r };
};

export const V1_ROUTES = {
  health: route({
    method: 'GET',
    url: '/v1/health',
    summary: 'Liveness: version and pid.',
    whileStopping: true,
    responses: (s) => ({ 200: { description: 'Alive.', schema: s.healthSchema } }),
    handler: async (_, { version, pid }) => ({ ok: true, version, pid }),
  }),

  status: route({
    method: 'GET',
    url: '/v1/status',
    summary: 'Servers, their lanes, live instances.',
    whileStopping: true,
    page: true,
    responses: (s) => ({ 200: { description: 'Status.', schema: s.statusSchema } }),
    handler: async (_, { controller, version, pid, startedAt, uptime, info, req }) => {
      const caller = configOf(req);
      const cfg = controller.configs.get(caller.config).cfg;
      return {
        ok: true,
        version,
        pid,
        startedAt: new Date(startedAt).toISOString(),
        // Not Date.now() - startedAt: negative once the wall clock is set back.
        uptimeMs: uptime?.() ?? 0,
        daemon: info?.() ?? { stateDir: null, socket: null, tcp: null },
        config: { file: cfg.file ?? null, via: cfg.via ?? null, demo: cfg.demo === true, ...rejectedOf(controller, caller) },
        configs: controller.configsStatus(),
        servers: controller.serverStatus(caller),
      };
    },
  }),

  servers: route({
    method: 'GET',
    url: '/v1/servers',
    summary: 'Configured servers, with transport and effective preference; secrets redacted.',
    responses: (s) => ({ 200: { description: 'Servers.', schema: s.serversSchema } }),
    handler: async (_, { controller, req }) => {
      const caller = configOf(req);
      return { servers: controller.servers(caller), ...rejectedOf(controller, caller) };
    },
  }),

  tools: route({
    method: 'GET',
    url: '/v1/tools',
    summary: 'Tools of one server or all, starting them as needed, for the lane of X-Mcpx-Caller-Protocol.',
    input: (s) => ({ query: s.toolsQuerySchema, headers: s.callHeadersSchema }),
    responses: (s) => ({
      200: { description: 'Tools; servers that could not answer are in `errors`.', schema: s.toolsSchema },
      400: s.bad,
      404: s.unknownServer,
    }),
    handler: async ({ query, headers }, { controller, req }) =>
      controller.tools(query.server, callerOf(req, headers, query.session), { fresh: query.fresh === 'true' || query.fresh === '1' }),
  }),

  toolsChanged: route({
    method: 'GET',
    url: '/v1/tools/changed',
    summary:
      'Tools whose definition (description, schemas, annotations) differs from the one first seen or last accepted, from the tool digests: nothing is started.',
    responses: (s) => ({ 200: { description: 'The changed tools, in config order.', schema: s.changedToolsSchema } }),
    handler: async (_, { controller }) => controller.changedTools(),
  }),

  toolAccept: route({
    method: 'POST',
    url: '/v1/tools/accept',
    summary: "Approve a changed tool's definition as listed now: a tool held for it (pinTools) is served again.",
    input: (s) => ({ body: s.acceptToolBodySchema }),
    responses: (s) => ({
      200: { description: 'Accepted.', schema: s.acceptToolSchema },
      400: s.bad,
      404: { description: 'No such server (MCPX_UNKNOWN_SERVER), or no changed tool by that name (MCPX_NOT_FOUND).', schema: s.errorBodySchema },
    }),
    handler: async ({ body }, { controller, req }) => controller.acceptTool(body.server, body.name, configOf(req)),
  }),

  toolSearch: route({
    method: 'GET',
    url: '/v1/tools/search',
    summary:
      'The tools that best match a query, ranked as the search_tools tool ranks them, from the tool catalogue (nothing is started), for the lane of X-Mcpx-Caller-Protocol.',
    input: (s) => ({ query: s.toolSearchQuerySchema, headers: s.callHeadersSchema }),
    responses: (s) => ({ 200: { description: 'The best matches, best first (none: an empty list).', schema: s.toolSearchSchema }, 400: s.bad }),
    handler: async ({ query, headers }, { controller, req }) => controller.searchTools(query.q, query.limit, callerOf(req, headers, query.session)),
  }),

  call: route({
    method: 'POST',
    url: '/v1/call',
    summary: 'Call a tool. Upstream and tool failures are {ok:false} with a stable code.',
    input: (s) => ({ body: s.callBodySchema, headers: s.callHeadersSchema }),
    responses: (s) => ({ 200: { description: 'The result, or ok:false with the error.', schema: s.callResultSchema }, 400: s.bad, 404: s.unknownServer }),
    handler: async ({ body, headers }, { controller, reply, req }) =>
      controller.call(toolCall(body.server, body.tool, body.args, { ...callerOf(req, headers, body.session), ...handlingOf(reply, body.timeoutMs) })),
  }),

  catalog: route({
    method: 'GET',
    url: '/v1/catalog',
    summary:
      'What every configured server offers (tools, prompts, resources, templates) for the lane of X-Mcpx-Caller-Protocol, from the persisted catalogue; servers with none yet are started and listed.',
    input: (s) => ({ headers: s.callHeadersSchema }),
    responses: (s) => ({ 200: { description: 'The catalogue, in config order.', schema: s.catalogSchema }, 400: s.bad }),
    handler: async ({ headers }, call) => {
      const caller = callerOf(call.req, headers, undefined);
      if (!wantsStream(call.req)) return call.controller.catalogView(caller);
      // Streamed: a progress frame as each server that had no listing yet is started and listed.
      return streamed(call, (onProgress) => call.controller.catalogView(caller, { onProgress }));
    },
  }),

  request: route({
    method: 'POST',
    url: '/v1/request',
    summary:
      'Relay one MCP request (tools/call, prompts/get, resources/read, completion/complete) to a server in its era. With `Accept: text/event-stream`, progress arrives as `event: progress` frames and the answer as `event: result`.',
    input: (s) => ({ body: s.requestBodySchema, headers: s.callHeadersSchema }),
    responses: (s) => ({
      200: { description: 'The upstream result, or ok:false with the error.', schema: s.requestResultSchema },
      400: s.bad,
      404: s.unknownServer,
    }),
    handler: async ({ body, headers }, call) => {
      const { controller } = call;
      const made = {
        ...callerOf(call.req, headers, body.session),
        ...handlingOf(call.reply, body.timeoutMs),
        server: body.server,
        method: body.method,
        params: body.params,
      };
      if (!wantsStream(call.req)) return controller.request(newCall(made));
      // Checked before the stream opens, so an unknown server is still a plain 404.
      controller.pool(body.server, made);
      return streamed(call, (onProgress) => controller.request(newCall({ ...made, onProgress })));
    },
  }),

  settingsList: route({
    method: 'GET',
    url: '/v1/settings',
    summary: 'Every setting: value, default, source.',
    responses: (s) => ({ 200: { description: 'Settings.', schema: s.settingsListSchema } }),
    handler: async (_, { controller }) => controller.settingsList(),
  }),

  settingGet: route({
    method: 'GET',
    url: '/v1/settings/:path',
    summary: 'One setting.',
    input: (s) => ({ params: s.settingParamsSchema }),
    responses: (s) => ({
      200: { description: 'The setting.', schema: s.settingEntrySchema },
      404: { description: 'No such setting (MCPX_UNKNOWN_SETTING).', schema: s.errorBodySchema },
    }),
    handler: async ({ params }, { controller }) => controller.setting(params.path),
  }),

  settingPut: route({
    method: 'PUT',
    url: '/v1/settings/:path',
    summary: 'Set a runtime value (normalised; refused with the allowed values). Applies to sessions started from now on.',
    input: (s) => ({ params: s.settingParamsSchema, body: s.settingPutSchema }),
    responses: (s) => ({
      200: { description: 'The setting as it now is, and when it applies.', schema: s.settingChangeSchema },
      400: s.bad,
      404: { description: 'No such setting.', schema: s.errorBodySchema },
    }),
    handler: async ({ params, body }, { controller }) => controller.setSetting(params.path, body.value),
  }),

  settingDelete: route({
    method: 'DELETE',
    url: '/v1/settings/:path',
    summary: 'Drop the runtime value: back to flag, environment, file or default.',
    input: (s) => ({ params: s.settingParamsSchema }),
    responses: (s) => ({
      200: { description: 'The setting as it now is.', schema: s.settingChangeSchema },
      404: { description: 'No such setting.', schema: s.errorBodySchema },
    }),
    handler: async ({ params }, { controller }) => controller.unsetSetting(params.path),
  }),

  protocol: route({
    method: 'GET',
    url: '/v1/protocol',
    summary: 'Per server: preference, era, negotiated version, eraSource, cached record, legacy lane (docs/behaviour.md §7).',
    page: true,
    responses: (s) => ({ 200: { description: 'Protocol report.', schema: s.protocolSchema } }),
    handler: async (_, { controller, req }) => controller.protocol(configOf(req)),
  }),

  events: route({
    method: 'GET',
    url: '/v1/events',
    summary: 'Server-sent events: every pool event, call.finished, config.reloaded, config.error, setting.changed.',
    page: true,
    input: (s) => ({ query: s.eventsQuerySchema }),
    responses: (s) => ({ 200: { description: '`event: <type>` / `data: <json>` frames.', contentType: 'text/event-stream' }, 400: s.bad }),
    handler: async ({ query }, { controller, sse, reply }) => {
      const types = query.type
        ?.split(',')
        .map((t) => t.trim())
        .filter((t) => t.length > 0);
      const wanted = (e: DaemonEvent): boolean => {
        if (query.server !== undefined && (!('server' in e) || e.server !== query.server)) return false;
        if (types && !types.some((t) => (t.endsWith('.') ? e.type.startsWith(t) : e.type === t))) return false;
        return true;
      };
      const stream = sse.open(reply, { feed: true });
      stream.comment('mcpx events');
      const unsubscribe = controller.hub.subscribe((e, seq) => {
        if (wanted(e)) stream.send(e.type, e, seq);
      });
      stream.onClose(unsubscribe);
      return undefined;
    },
  }),

  statechart: route({
    method: 'GET',
    url: '/v1/statecharts/:server',
    summary: "The session chart with each live instance's current state (?format=html: a page).",
    page: true,
    input: (s) => ({ params: s.serverParamsSchema, query: s.statechartQuerySchema }),
    responses: (s) => ({ 200: { description: 'The chart.', schema: s.statechartSchema }, 400: s.bad, 404: s.unknownServer }),
    handler: async ({ params, query }, { controller, reply }) => {
      const pool = controller.pool(params.server);
      const view = (await import('../ui/statechart-view.js')).statechartView(pool);
      if (query.format === 'html') {
        return reply.type('text/html; charset=utf-8').send(statechartPage(view, { mermaidUrl: localMermaid() ? MERMAID_ASSET_URL : null }));
      }
      return view;
    },
  }),

  config: route({
    method: 'GET',
    url: '/v1/config',
    summary: 'The config in force, secrets redacted.',
    responses: (s) => ({ 200: { description: 'Config.', schema: s.configViewSchema } }),
    handler: async (_, { controller, req }) => controller.configView(configOf(req)),
  }),

  reload: route({
    method: 'POST',
    url: '/v1/reload',
    summary: "Re-read the caller's config (`all`: every loaded config); a broken one is reported and its last good version stays.",
    input: (s) => ({ query: s.reloadQuerySchema }),
    responses: (s) => ({
      200: { description: "What changed, or ok:false with the problems; with `all`, `{configs:[…]}` (the daemon's own first).", schema: s.reloadAnswerSchema },
      400: s.bad,
    }),
    handler: async ({ query }, { controller, req }) =>
      query.all === 'true' || query.all === '1' ? { configs: await controller.reloadAll('api') } : controller.reload('api', configOf(req)),
  }),

  shutdown: route({
    method: 'POST',
    url: '/v1/shutdown',
    summary: 'Stop the daemon (every upstream process with it).',
    responses: (s) => ({ 202: { description: 'Stopping.', schema: s.shutdownSchema } }),
    handler: async (_, { shutdown, pid, reply }) => {
      if (shutdown) reply.raw.once('finish', () => setImmediate(() => shutdown()));
      return reply.code(202).send({ ok: true, stopping: true, pid });
    },
  }),

  openapi: route({
    method: 'GET',
    url: '/v1/openapi.json',
    summary: 'This document.',
    responses: () => ({ 200: { description: 'OpenAPI 3.1.' } }),
    // The document is generated on first request (its generator is loaded then, not before the daemon listens);
    // it is handed this table rather than importing it, so the two modules do not load each other.
    handler: async (_, { version }): Promise<unknown> => (await import('./openapi.js')).openApiDocument(version, V1_ROUTES),
  }),

  // ---- /v1/ask: a call the upstream may interrupt with questions (src/asks/ask-store.ts) ----

  ask: route({
    method: 'POST',
    url: '/v1/ask',
    summary: 'Start a tool call the upstream may interrupt with questions (elicitation, sampling, roots), whatever its era; poll it with GET /v1/ask/:id.',
    input: (s) => ({ body: s.askBodySchema, headers: s.callHeadersSchema }),
    responses: (s) => ({
      202: { description: 'Started.', schema: s.askStartedSchema },
      400: s.bad,
      404: s.unknownServer,
      429: { description: 'Too many asks running (MCPX_TOO_MANY_ASKS).', schema: s.errorBodySchema },
    }),
    handler: async ({ body, headers }, { controller, req, reply }) => {
      const caller = callerOf(req, headers, body.session);
      controller.pool(body.server, caller); // an unknown server is a 404 now, not a failed ask later
      // The ask's own signal is its own (it outlives this request): only the timeout comes from here.
      const timeout = body.timeoutMs === undefined ? {} : { timeoutMs: body.timeoutMs };
      const call =
        body.method === undefined || body.method === 'tools/call'
          ? toolCall(body.server, body.tool, body.args, { ...caller, ...timeout })
          : newCall({ ...caller, ...timeout, server: body.server, method: body.method, params: body.params ?? {} });
      const started = controller.asks.start({
        call,
        // The per-caller bound: the caller's session, else its connection.
        caller: caller.session ? `session:${caller.session}` : `connection:${connectionId(req.raw.socket)}`,
        ...(body.questionTimeoutMs === undefined ? {} : { questionTimeoutMs: body.questionTimeoutMs }),
        // Unnamed: what this route can carry to a program (forms, URLs); the answer says what it refuses.
        ...(body.capabilities === undefined ? {} : { capabilities: body.capabilities }),
      });
      return reply.code(202).send({ id: started.id, status: started.status, capabilities: started.capabilities, refuses: started.refuses });
    },
  }),

  askGet: route({
    method: 'GET',
    url: '/v1/ask/:id',
    summary: 'An ask: its open questions, or its outcome. Answers at once when there are questions or it finished, else waits up to waitMs for a change.',
    input: (s) => ({ params: s.askParamsSchema, query: s.askQuerySchema }),
    responses: (s) => ({ 200: { description: 'The ask.', schema: s.askViewSchema }, 400: s.bad, 404: s.unknownAsk }),
    handler: async ({ params, query }, call) => {
      const { asks } = call.controller;
      // A poller that goes away stops waiting (the ask itself goes on).
      const gone = new AbortController();
      call.reply.raw.once('close', () => gone.abort());
      if (!wantsStream(call.req)) return asks.wait(params.id, query.waitMs ?? 0, gone.signal);
      // Streamed: the call's progress while this poll waits, then the view.
      asks.get(params.id); // an unknown ask is still a plain 404
      return streamed(call, (onProgress) => asks.wait(params.id, query.waitMs ?? 0, gone.signal, onProgress));
    },
  }),

  askAnswers: route({
    method: 'POST',
    url: '/v1/ask/:id/answers',
    summary: 'Answer open questions (all checked before any is handed on).',
    input: (s) => ({ params: s.askParamsSchema, body: s.askAnswersBodySchema }),
    responses: (s) => ({
      200: { description: 'The ask after the answers.', schema: s.askViewSchema },
      400: { description: 'A bad answer or an unknown question (MCPX_BAD_REQUEST, MCPX_UNKNOWN_QUESTION); `error.path` names it.', schema: s.errorBodySchema },
      404: s.unknownAsk,
      409: {
        description: 'Answered already (MCPX_ALREADY_ANSWERED), or closed: refused, timed out, the ask over (MCPX_QUESTION_CLOSED).',
        schema: s.errorBodySchema,
      },
    }),
    handler: async ({ params, body }, { controller, reply }) => {
      try {
        return await controller.asks.answer(params.id, body.answers);
      } catch (err) {
        return askFailure(reply, err);
      }
    },
  }),

  askAbandon: route({
    method: 'POST',
    url: '/v1/ask/:id/abandon',
    summary: 'Give up: open questions are refused upstream and the upstream call is cancelled.',
    input: (s) => ({ params: s.askParamsSchema, body: s.askAbandonBodySchema }),
    responses: (s) => ({ 200: { description: 'The ask, abandoned (or as it finished).', schema: s.askViewSchema }, 400: s.bad, 404: s.unknownAsk }),
    handler: async ({ params }, { controller }) => controller.asks.abandon(params.id),
  }),

  // ---- /v1/auth: OAuth logins and credentials (src/auth); never a token in an answer ----

  authList: route({
    method: 'GET',
    url: '/v1/auth',
    summary: 'Per HTTP server: whether it needs authorization, is authorized (scopes, expiry, refreshable), or why it failed. Never a token.',
    responses: (s) => ({ 200: { description: 'The servers.', schema: s.authListSchema } }),
    handler: async (_input, { controller }) => ({ servers: authOf(controller).views() }),
  }),

  authGet: route({
    method: 'GET',
    url: '/v1/auth/:server',
    summary: "One server's authorization.",
    input: (s) => ({ params: s.authServerParamsSchema }),
    responses: (s) => ({ 200: { description: 'The server.', schema: s.authListSchema }, 400: s.bad, 404: s.unknownServer }),
    handler: async ({ params }, { controller, req }) => ({ servers: authOf(controller).views(configured(controller, params.server, req)) }),
  }),

  authLogin: route({
    method: 'POST',
    url: '/v1/auth/:server/login',
    summary: 'Start the OAuth authorization-code flow (PKCE) for one server: the answer holds the URL to open; the redirect comes back to the daemon.',
    input: (s) => ({ params: s.authServerParamsSchema, body: s.authLoginBodySchema }),
    responses: (s) => ({ 202: { description: 'Started (or the login already running).', schema: s.loginViewSchema }, 400: s.bad, 404: s.unknownServer }),
    handler: async ({ params, body }, { controller, reply, req }) =>
      reply.code(202).send(await authOf(controller).login(configured(controller, params.server, req), { stepUp: body?.stepUp === true })),
  }),

  authLogout: route({
    method: 'POST',
    url: '/v1/auth/:server/logout',
    summary: "Forget a server's tokens (and its client registration with forgetClient).",
    input: (s) => ({ params: s.authServerParamsSchema, body: s.authLogoutBodySchema }),
    responses: (s) => ({ 200: { description: 'Forgotten.', schema: s.logoutSchema }, 400: s.bad, 404: s.unknownServer }),
    handler: async ({ params, body }, { controller, req }) =>
      authOf(controller).logout(configured(controller, params.server, req), { forgetClient: body?.forgetClient === true }),
  }),

  authLoginGet: route({
    method: 'GET',
    url: '/v1/auth/logins/:id',
    summary: 'A login: waiting (with its URL), authorized, or failed (with why). Waits up to waitMs for it to end.',
    input: (s) => ({ params: s.loginParamsSchema, query: s.loginQuerySchema }),
    responses: (s) => ({ 200: { description: 'The login.', schema: s.loginViewSchema }, 400: s.bad, 404: s.unknownLogin }),
    handler: async ({ params, query }, { controller, reply }) => {
      const gone = new AbortController();
      reply.raw.once('close', () => gone.abort());
      return authOf(controller).waitLogin(params.id, query.waitMs ?? 0, gone.signal);
    },
  }),

  authLoginCancel: route({
    method: 'POST',
    url: '/v1/auth/logins/:id/cancel',
    summary: 'Give up a login: its callback listener closes.',
    input: (s) => ({ params: s.loginParamsSchema }),
    responses: (s) => ({ 200: { description: 'The login.', schema: s.loginViewSchema }, 400: s.bad, 404: s.unknownLogin }),
    handler: async ({ params }, { controller }) => authOf(controller).cancelLogin(params.id),
  }),
};

/** The daemon's OAuth state (501 for a daemon without one). */
function authOf(controller: Controller): AuthManager {
  if (!controller.auth) throw new McpxError('MCPX_NOT_IMPLEMENTED', 'this daemon keeps no credentials (it has no state folder)');
  return controller.auth;
}

/** The instance (whose credentials these are) of a server in the caller's config (else 404 MCPX_UNKNOWN_SERVER). */
function configured(controller: Controller, server: string, req: FastifyRequest): string {
  return controller.instanceOf(configOf(req), server);
}

export type V1RouteName = keyof typeof V1_ROUTES;

export const v1Routes: FastifyPluginAsync<V1Options> = async (app, opts) => {
  const { pageAdmits, ...context } = opts;
  context.uptime ??= uptimeSince(opts.startedAt);
  const sse = new SseWriter(
    (text) => opts.controller.scrubber.scrub(text),
    () => unreadLimits(opts.controller.settings),
    opts.logger?.child({ component: 'api' }),
  );
  app.addHook('preClose', async () => sse.closeAll());
  // The config a request names is loaded (on first use) before its handler runs: a bad one is a 4xx naming the file.
  app.addHook('preHandler', async (req, reply) => {
    const named = req.headers[CONFIG_HEADER];
    if (typeof named !== 'string' || named === '') return;
    try {
      const id = await opts.controller.useConfig(named);
      if (id !== undefined) requestConfigs.set(req.raw, id);
    } catch (err) {
      // The caller named a config that cannot be used: its request is what is wrong (400, naming the file).
      if (err instanceof McpxError && err.code === 'MCPX_BAD_CONFIG') return send(reply, 400, { ...err.toJSON(), path: [CONFIG_HEADER], in: 'headers' });
      throw err;
    }
  });

  registerRoutes(app, V1_ROUTES, { context: { ...context, sse }, ...(pageAdmits ? { pageAdmits } : {}) });

  // A file, not part of the API (no document entry): the chart page's Mermaid, which the page's cookie reads too.
  app.get(MERMAID_ASSET_URL, { config: pageAdmits ? { admitsWithoutToken: pageAdmits } : {} }, async (_req, reply) => {
    const file = localMermaid();
    if (!file) return send(reply, 404, { code: 'MCPX_NOT_FOUND', message: 'no local copy of mermaid is installed' });
    return reply.type('text/javascript; charset=utf-8').send(createReadStream(file));
  });
};
