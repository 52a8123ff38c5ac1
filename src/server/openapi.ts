/**
 * `GET /v1/openapi.json`: an OpenAPI 3.1 document generated from the route table and the zod schemas
 * the daemon validates with (src/server/schemas.ts).
 */
import * as z from 'zod';
import { ROUTES, type RouteDef } from './schemas.js';

type Json = Record<string, unknown>;

function schemaOf(schema: z.ZodType, io: 'input' | 'output'): Json {
  const json = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Json;
  delete json['$schema'];
  return json;
}

/** `/v1/settings/:path` → `/v1/settings/{path}`. */
function openapiPath(url: string): string {
  return url.replace(/:([A-Za-z_]+)/g, '{$1}');
}

function parametersOf(def: RouteDef): Json[] {
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
  add('path', def.params);
  add('query', def.query);
  add('header', def.headers);
  return out;
}

export function buildOpenApi(version: string): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const [id, def] of Object.entries(ROUTES) as Array<[string, RouteDef]>) {
    const op: Json = { operationId: id, summary: def.summary };
    const parameters = parametersOf(def);
    if (parameters.length > 0) op['parameters'] = parameters;
    if (def.body) op['requestBody'] = { required: true, content: { 'application/json': { schema: schemaOf(def.body, 'input') } } };
    op['responses'] = Object.fromEntries(
      Object.entries(def.responses).map(([status, r]) => [
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
    const p = openapiPath(def.url);
    paths[p] ??= {};
    paths[p][def.method.toLowerCase()] = op;
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
