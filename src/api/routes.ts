/**
 * What a `/v1` route declaration is, and how one is registered. A declaration (the table is in
 * ./v1-routes.ts) names everything about its route once: method, path, summary, its zod schemas as
 * functions of the lazily loaded ./schemas.ts, the handler, and who may call it. From it come the
 * fastify route, what is validated (the parts `input` names, checked before the handler runs; a bad one
 * is a 400 naming the field), `GET /v1/openapi.json` (./openapi.ts) and the tests' response contract
 * (./response-contract.ts).
 *
 * The schemas load on the first request to a route that declares `input`, and stay: the daemon
 * listens, and answers the routes without input, without loading zod (docs/decisions.md).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { badRequest, send } from './api-errors.js';

export type Schemas = typeof import('./schemas.js');

/** The parts of a request a route may validate, in the order they are checked. */
const PARTS = ['params', 'query', 'body', 'headers'] as const;
type Part = (typeof PARTS)[number];

export type RouteInput = Partial<Record<Part, z.ZodType>>;

/** The handler's input: each declared part as its schema gave it back. */
export type InputOf<I extends RouteInput> = { [K in keyof I]: I[K] extends z.ZodType ? z.output<I[K]> : never };

export interface ResponseDef {
  description: string;
  schema?: z.ZodType;
  contentType?: string;
}

/** Per request: the route's request and reply beside the plugin's own context. */
export type Exchange<Ctx> = Ctx & { req: FastifyRequest; reply: FastifyReply };

export interface RouteDecl<Ctx, I extends RouteInput = RouteInput> {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  url: string;
  summary: string;
  /** The parts to validate, from the lazily loaded schemas; none: nothing is validated and the schemas are not loaded. */
  input?: (s: Schemas) => I;
  /** The answers of each status this route gives (statuses any route may give, 401/403/500/503, are not repeated). */
  responses: (s: Schemas) => Record<number, ResponseDef>;
  /** Still served while the daemon stops (every other route gets 503 MCPX_SHUTTING_DOWN). */
  whileStopping?: true;
  /** Read by the `mcpx ui` page: its cookie stands in for the bearer token (src/ui/hub.ts). */
  page?: true;
  /** The answer (fastify sends it), or undefined once the handler sent or hijacked the reply itself. (A method: a table holds routes of any input.) */
  handler(input: InputOf<I>, exchange: Exchange<Ctx>): Promise<unknown>;
}

/**
 * A declaration builder for routes whose handlers get `Ctx`: `const route = routeOf<Ctx>()`, then
 * `route({...})` per route (curried so each route's input type is inferred from its own `input`).
 */
export function routeOf<Ctx>(): <I extends RouteInput = Record<never, never>>(decl: RouteDecl<Ctx, I>) => RouteDecl<Ctx, I> {
  return (decl) => decl;
}

/** The zod schemas, loaded on first use (once; every later request finds them here). */
let schemas: Schemas | undefined;
let loadingSchemas: Promise<Schemas> | undefined;
export function loadSchemas(): Promise<Schemas> {
  return (loadingSchemas ??= import('./schemas.js').then((m) => (schemas = m)));
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Served while the daemon stops (src/api/app.ts answers every other request 503). */
    whileStopping?: boolean;
    /** On TCP, lets a request without the bearer token through when it says so (the `mcpx ui` page's cookie, a login code). */
    admitsWithoutToken?: (req: FastifyRequest) => boolean;
  }
}

export interface RegisterOptions<Ctx> {
  /** What every handler gets besides its request and reply. */
  context: Ctx;
  /** The `mcpx ui` page's cookie check, for the routes declared `page`; none: they need the token like every other. */
  pageAdmits?: (req: FastifyRequest) => boolean;
}

/** Registers each declared route on `app`: its parts validated, then its handler run. */
export function registerRoutes<Ctx>(app: FastifyInstance, routes: Record<string, RouteDecl<Ctx>>, opts: RegisterOptions<Ctx>): void {
  for (const decl of Object.values(routes)) {
    const run = (input: unknown, req: FastifyRequest, reply: FastifyReply) => decl.handler(input as InputOf<RouteInput>, { ...opts.context, req, reply });
    const config = {
      ...(decl.whileStopping ? { whileStopping: true } : {}),
      ...(decl.page && opts.pageAdmits ? { admitsWithoutToken: opts.pageAdmits } : {}),
    };
    const input = decl.input;
    if (!input) {
      const none = {};
      app.route({ method: decl.method, url: decl.url, config, handler: (req, reply) => run(none, req, reply) });
      continue;
    }
    // The parts this route validates, worked out once (when the schemas first load), not on every request.
    let checks: Array<{ where: Part; schema: z.ZodType }> | undefined;
    const checksOf = (loaded: Schemas) => {
      const parts = input(loaded);
      return PARTS.flatMap((where) => (parts[where] ? [{ where, schema: parts[where] }] : []));
    };
    app.route({
      method: decl.method,
      url: decl.url,
      config,
      handler: async (req, reply) => {
        checks ??= checksOf(schemas ?? (await loadSchemas()));
        const parsed: Record<string, unknown> = {};
        for (const { where, schema } of checks) {
          const r = schema.safeParse(req[where] ?? (where === 'body' ? undefined : {}));
          if (!r.success) return send(reply, 400, badRequest(where, r.error));
          parsed[where] = r.data;
        }
        return run(parsed, req, reply);
      },
    });
  }
}
