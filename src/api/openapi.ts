/**
 * `GET /v1/openapi.json`: an OpenAPI 3.1 document generated from a route table (the caller's: ./v1-routes.ts
 * passes V1_ROUTES, so this module does not import the table that loads it) and the zod schemas its routes
 * validate with and answer in (./schemas.ts).
 */
import * as z from 'zod';
import type { RouteDecl, RouteInput } from './routes.js';
import * as schemas from './schemas.js';

type Json = Record<string, unknown>;

/** What the document says of a route: everything but its handler. */
export type DocumentedRoute = Pick<RouteDecl<never>, 'method' | 'url' | 'summary' | 'input' | 'responses'>;
/** Route id (the operationId) → declaration, in the document's order. */
export type RouteTable = Readonly<Record<string, DocumentedRoute>>;

function schemaOf(schema: z.ZodType, io: 'input' | 'output'): Json {
  const json = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Json;
  delete json['$schema'];
  return json;
}

/** `/v1/settings/:path` → `/v1/settings/{path}`. */
function openapiPath(url: string): string {
  return url.replace(/:([A-Za-z_]+)/g, '{$1}');
}

function parametersOf(input: RouteInput): Json[] {
  const out: Json[] = [];
  const add = (where: 'path' | 'query' | 'header', schema: z.ZodType | undefined) => {
    if (!schema) return;
    const json = schemaOf(schema, 'input');
    const props = (json['properties'] ?? {}) as Record<string, Json>;
    const required = new Set((json['required'] as string[] | undefined) ?? []);
    for (const [name, s] of Object.entries(props)) {
      const { description, ...rest } = s;
      out.push({ name, in: where, required: where === 'path' || required.has(name), schema: rest, ...(description ? { description } : {}) });
    }
  };
  add('path', input.params);
  add('query', input.query);
  add('header', input.headers);
  return out;
}

let built: { version: string; routes: RouteTable; document: Json } | undefined;

/** The document, built on first use (then kept: the routes do not change while the daemon runs). */
export function openApiDocument(version: string, routes: RouteTable): Json {
  if (built?.version !== version || built.routes !== routes) built = { version, routes, document: buildOpenApi(version, routes) };
  return built.document;
}

export function buildOpenApi(version: string, routes: RouteTable): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const [id, route] of Object.entries(routes)) {
    const op: Json = { operationId: id, summary: route.summary };
    const input: RouteInput = route.input?.(schemas) ?? {};
    const parameters = parametersOf(input);
    if (parameters.length > 0) op['parameters'] = parameters;
    if (input.body) op['requestBody'] = { required: true, content: { 'application/json': { schema: schemaOf(input.body, 'input') } } };
    op['responses'] = Object.fromEntries(
      Object.entries(route.responses(schemas)).map(([status, r]) => [
        status,
        {
          description: r.description,
          ...(r.schema
            ? { content: { [r.contentType ?? 'application/json']: { schema: schemaOf(r.schema, 'output') } } }
            : r.contentType
              ? { content: { [r.contentType]: {} } }
              : {}),
        },
      ]),
    );
    const p = openapiPath(route.url);
    paths[p] ??= {};
    paths[p][route.method.toLowerCase()] = op;
  }
  paths['/mcp'] = {
    post: {
      operationId: 'mcp',
      summary: 'The `mcpx serve` MCP server over Streamable HTTP (arrives with `mcpx serve`).',
      responses: { 501: { description: 'Not yet (MCPX_NOT_IMPLEMENTED).' } },
    },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'mcpx daemon API',
      version,
      description:
        'The /v1 API of the mcpx daemon, on its Unix socket (<state>/daemon.sock) and, when enabled, on loopback TCP ' +
        '(bearer token from <state>/daemon.json unless daemon.auth is none; non-loopback Origin/Host refused with 403). ' +
        'A bad body, query or parameter gets 400 with {"error":{"code":"MCPX_BAD_REQUEST","message":…,"path":[…]}}.',
    },
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'TCP only; the token is in <state>/daemon.json.' } } },
    paths,
  };
}
