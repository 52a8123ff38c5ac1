/**
 * The `/v1` routes, as a fastify plugin: each route of ROUTE_PATHS (./routes.ts) with its params, query,
 * body and headers validated by their zod schemas (ROUTES, ./schemas.ts) before the handler runs (a bad one
 * is a 400 naming the field), answering with the controller's views. The schemas load on the first request
 * that has a part to validate (then stay): the daemon listens without loading zod.
 */
import { createReadStream } from 'node:fs';
import type { Socket } from 'node:net';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { McpxError } from '../errors.js';
import type { CallContext } from '../pool/types.js';
import { badRequest, send, statusFor, toApiError } from './api-errors.js';
import type { Controller } from './controller.js';
import type { DaemonEvent } from './events.js';
import { CALLER_PROTOCOL_HEADER, SESSION_HEADER } from './headers.js';
import { ROUTE_PATHS, VALIDATED_ROUTES, type RouteName } from './routes.js';
import type { callHeadersSchema, ROUTES, RouteDef } from './schemas.js';
import { localMermaid, MERMAID_ASSET_URL, statechartPage } from './statechart-page.js';

export interface DaemonInfo {
  stateDir: string | null;
  socket: string | null;
  tcp: { host: string; port: number; auth: 'token' | 'none' } | null;
}

export interface V1Options {
  controller: Controller;
  version: string;
  pid: number;
  /** When the daemon started (ms since the epoch). */
  startedAt: number;
  /** Where the daemon listens, for /v1/status. */
  info?: () => DaemonInfo;
  /** `POST /v1/shutdown`: called after the 202 is sent. */
  shutdown?: () => void;
}

type Out<S> = S extends z.ZodType ? z.output<S> : undefined;
type Schemas = typeof import('./schemas.js');

/** The zod schemas, loaded on first use (once; every later request finds them here). */
let schemas: Schemas | undefined;
let loadingSchemas: Promise<Schemas> | undefined;
function loadSchemas(): Promise<Schemas> {
  return (loadingSchemas ??= import('./schemas.js').then((m) => (schemas = m)));
}

type Input<D> = {
  params: D extends { params: infer S } ? Out<S> : undefined;
  query: D extends { query: infer S } ? Out<S> : undefined;
  body: D extends { body: infer S } ? Out<S> : undefined;
  headers: D extends { headers: infer S } ? Out<S> : undefined;
};

/** The parts of a request a route may validate, in the order they are checked. */
const PARTS = ['params', 'query', 'body', 'headers'] as const;

export const v1Routes: FastifyPluginAsync<V1Options> = async (app, opts) => {
  const { controller, version, pid, startedAt } = opts;
  const scrub = (text: string) => controller.scrubber.scrub(text);
  const streams = new Set<() => void>();
  const goneSignals = new WeakMap<Socket, AbortSignal>();
  let openapi: Record<string, unknown> | undefined;

  app.addHook('preClose', async () => {
    for (const end of [...streams]) end();
  });

  // ---- the route helper: validate every part with its zod schema, then run the handler ----
  function route<K extends RouteName>(name: K, fn: (input: Input<(typeof ROUTES)[K]>, req: FastifyRequest, reply: FastifyReply) => Promise<unknown>): void {
    const { method, url } = ROUTE_PATHS[name];
    const validates = VALIDATED_ROUTES.has(name);
    // The parts this route validates, worked out once (when its schemas first load), not on every request.
    let parts: { where: (typeof PARTS)[number]; schema: z.ZodType }[] | undefined;
    const partsOf = (loaded: Schemas) => {
      const def = loaded.ROUTES[name] as RouteDef;
      return PARTS.flatMap((where) => {
        const schema = def[where];
        return schema ? [{ where, schema }] : [];
      });
    };
    app.route({
      method,
      url,
      handler: async (req, reply) => {
        const input: Record<string, unknown> = {};
        if (!validates) return fn(input as Input<(typeof ROUTES)[K]>, req, reply);
        parts ??= partsOf(schemas ?? (await loadSchemas()));
        for (const { where, schema } of parts) {
          const value = req[where];
          const r = schema.safeParse(value ?? (where === 'body' ? undefined : {}));
          if (!r.success) return send(reply, 400, badRequest(where, r.error));
          input[where] = r.data;
        }
        return fn(input as Input<(typeof ROUTES)[K]>, req, reply);
      },
    });
  }

  /**
   * The caller's context: X-Mcpx-Caller-Protocol → callerProtocol, the session (body, query or header), cancellation on disconnect.
   * A response that closes before it finished means its connection closed, so the signal is the connection's: one per
   * connection, not an AbortController and a listener per request; what a finished call registered on it, it removed.
   */
  function contextOf(reply: FastifyReply, headers: z.output<typeof callHeadersSchema>, session: string | undefined, timeoutMs?: number): CallContext {
    const callerProtocol = headers[CALLER_PROTOCOL_HEADER];
    const s = session ?? headers[SESSION_HEADER];
    return {
      signal: callerGone(reply.raw.socket),
      ...(callerProtocol ? { callerProtocol } : {}),
      ...(s ? { session: s } : {}),
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
    };
  }

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

  route('health', async () => ({ ok: true, version, pid }));

  route('status', async () => {
    const cfg = controller.config;
    return {
      ok: true,
      version,
      pid,
      startedAt: new Date(startedAt).toISOString(),
      uptimeMs: Date.now() - startedAt,
      daemon: opts.info?.() ?? { stateDir: null, socket: null, tcp: null },
      config: { file: cfg.file ?? null, via: cfg.via ?? null, demo: cfg.demo === true },
      servers: controller.serverStatus(),
    };
  });

  route('servers', async () => ({ servers: controller.servers() }));

  route('tools', async ({ query, headers }, _req, reply) =>
    controller.tools(query.server, contextOf(reply, headers, query.session), { fresh: query.fresh === 'true' || query.fresh === '1' }),
  );

  route('call', async ({ body, headers }, _req, reply) =>
    controller.call(body.server, body.tool, body.args, contextOf(reply, headers, body.session, body.timeoutMs)),
  );

  route('catalog', async ({ headers }, req, reply) => {
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

  route('request', async ({ body, headers }, req, reply) => {
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

  route('settingsList', async () => controller.settingsList());
  route('settingGet', async ({ params }) => controller.setting(params.path));
  route('settingPut', async ({ params, body }) => controller.setSetting(params.path, body.value));
  route('settingDelete', async ({ params }) => controller.unsetSetting(params.path));

  route('protocol', async () => controller.protocol());

  route('config', async () => controller.configView());

  route('reload', async () => controller.reload('api'));

  route('shutdown', async (_input, _req, reply) => {
    if (opts.shutdown) reply.raw.once('finish', () => setImmediate(() => opts.shutdown?.()));
    return reply.code(202).send({ ok: true, stopping: true, pid });
  });

  // The document is generated on first request (its generator is loaded then, not before the daemon listens).
  route('openapi', async () => (openapi ??= (await import('./openapi.js')).buildOpenApi(version)));

  route('statechart', async ({ params, query }, _req, reply) => {
    const pool = controller.pool(params.server);
    const view = (await import('./statechart-view.js')).statechartView(pool);
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

  route('events', async ({ query }, req, reply) => {
    const types = query.type
      ?.split(',')
      .map((t) => t.trim())
      .filter((t) => t.length > 0);
    const wanted = (e: DaemonEvent): boolean => {
      if (query.server !== undefined && (!('server' in e) || e.server !== query.server)) return false;
      if (types && !types.some((t) => (t.endsWith('.') ? e.type.startsWith(t) : e.type === t))) return false;
      return true;
    };
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
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

  route('ask', async ({ body, headers }, req, reply) => {
    controller.pool(body.server); // an unknown server is a 404 now, not a failed ask later
    const callerProtocol = headers[CALLER_PROTOCOL_HEADER];
    const session = body.session ?? headers[SESSION_HEADER];
    const started = controller.asks.start({
      // The per-caller bound: the caller's session, else its connection.
      caller: session ? `session:${session}` : `connection:${connectionId(req.raw.socket)}`,
      server: body.server,
      tool: body.tool,
      args: body.args,
      ...(body.method === undefined ? {} : { method: body.method }),
      ...(body.params === undefined ? {} : { params: body.params }),
      ...(body.questionTimeoutMs === undefined ? {} : { questionTimeoutMs: body.questionTimeoutMs }),
      // Unnamed: what this route can carry to a program (forms, URLs); the answer says what it refuses.
      ...(body.capabilities === undefined ? {} : { capabilities: body.capabilities }),
      ...(callerProtocol ? { callerProtocol } : {}),
      ...(session ? { session } : {}),
      ...(body.timeoutMs === undefined ? {} : { timeoutMs: body.timeoutMs }),
    });
    return reply.code(202).send({ id: started.id, status: started.status, capabilities: started.capabilities, refuses: started.refuses });
  });

  route('askGet', async ({ params, query }, req, reply) => {
    // A poller that goes away stops waiting (the ask itself goes on).
    const gone = new AbortController();
    reply.raw.once('close', () => gone.abort());
    if (!wantsStream(req)) return controller.asks.wait(params.id, query.waitMs ?? 0, gone.signal);
    // Streamed: the call's progress while this poll waits, then the view.
    controller.asks.get(params.id); // an unknown ask is still a plain 404
    const stream = openStream(reply);
    const view = await controller.asks
      .wait(params.id, query.waitMs ?? 0, gone.signal, (p) => stream.frame('progress', p))
      .catch((err: unknown) => ({ ok: false, error: toApiError(err).error }));
    stream.end('result', view);
    return undefined;
  });

  route('askAnswers', async ({ params, body }, _req, reply) => {
    try {
      return await controller.asks.answer(params.id, body.answers);
    } catch (err) {
      return askFailure(reply, err);
    }
  });

  route('askAbandon', async ({ params }) => controller.asks.abandon(params.id));

  // ---- /v1/auth: OAuth logins and credentials (src/auth); never a token in an answer ----

  const auth = () => {
    if (!controller.auth) throw new McpxError('MCPX_NOT_IMPLEMENTED', 'this daemon keeps no credentials (it has no state folder)');
    return controller.auth;
  };
  /** A configured server (else 404), then one that can use authorization (else 400). */
  const authServer = (server: string) => {
    controller.pool(server);
    return server;
  };

  route('authList', async () => ({ servers: auth().views() }));
  route('authGet', async ({ params }) => ({ servers: auth().views(authServer(params.server)) }));
  route('authLogin', async ({ params, body }, _req, reply) =>
    reply.code(202).send(await auth().login(authServer(params.server), { stepUp: body?.stepUp === true })),
  );
  route('authLogout', async ({ params, body }) => auth().logout(authServer(params.server), { forgetClient: body?.forgetClient === true }));
  route('authLoginGet', async ({ params, query }, _req, reply) => {
    const gone = new AbortController();
    reply.raw.once('close', () => gone.abort());
    return auth().waitLogin(params.id, query.waitMs ?? 0, gone.signal);
  });
  route('authLoginCancel', async ({ params }) => auth().cancelLogin(params.id));
};
