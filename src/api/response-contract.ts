/**
 * The /v1 contract, checked on real responses: each route of V1_ROUTES (./v1-routes.ts) declares the body
 * of each status it answers with, and this hook holds every JSON answer against that declaration. The
 * daemon does not turn it on (the schemas describe what the handlers already build); the test harness
 * does, so every API test is also a contract test, and a handler whose answer drifts from its declared
 * schema fails the suite.
 */
import type { FastifyInstance } from 'fastify';
import type { ResponseDef } from './routes.js';
import * as schemas from './schemas.js';
import { V1_ROUTES } from './v1-routes.js';

export interface ResponseViolation {
  /** `METHOD /url` as its route declares it. */
  route: string;
  status: number;
  /** Each mismatch as `path: message`. */
  issues: string[];
}

export function checkResponses(app: FastifyInstance, report: (v: ResponseViolation) => void): void {
  const routes = new Map<string, Record<number, ResponseDef>>(Object.values(V1_ROUTES).map((r) => [`${r.method} ${r.url}`, r.responses(schemas)]));
  app.addHook('onSend', async (req, reply, payload) => {
    const route = `${req.method} ${req.routeOptions.url}`;
    const schema = routes.get(route)?.[reply.statusCode]?.schema;
    // Statuses any route may answer (401, 403, 500, 503) are described once, not per route.
    if (!schema || typeof payload !== 'string') return payload;
    // A route may answer another content type on request (`?format=html`); only JSON answers are held to the schema.
    if (!String(reply.getHeader('content-type') ?? '').startsWith('application/json')) return payload;
    let value: unknown;
    try {
      value = JSON.parse(payload);
    } catch {
      report({ route, status: reply.statusCode, issues: ['the body is not JSON'] });
      return payload;
    }
    const r = schema.safeParse(value);
    if (!r.success) report({ route, status: reply.statusCode, issues: r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`) });
    return payload;
  });
}
