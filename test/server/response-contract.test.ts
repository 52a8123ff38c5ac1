/**
 * The hook that holds real answers to their routes' declared schemas reports drift (the harness turns it on
 * for every API test, so this checks that it would notice).
 */
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { checkResponses, type ResponseViolation } from '../../src/api/response-contract.js';

describe('checkResponses', () => {
  it('reports an answer that does not match its declared schema, and passes one that does', async () => {
    const violations: ResponseViolation[] = [];
    const app = Fastify();
    checkResponses(app, (v) => violations.push(v));
    let body: unknown = { ok: true, version: 7, pid: 1 };
    app.get('/v1/health', async () => body);
    await app.ready();
    await app.inject({ method: 'GET', url: '/v1/health' });
    expect(violations).toEqual([{ route: 'GET /v1/health', status: 200, issues: [expect.stringMatching(/^version: /)] }]);
    body = { ok: true, version: '1.0.0', pid: 1 };
    await app.inject({ method: 'GET', url: '/v1/health' });
    expect(violations).toHaveLength(1);
    await app.close();
  });

  it('leaves alone statuses a route does not declare and answers that are not JSON', async () => {
    const violations: ResponseViolation[] = [];
    const app = Fastify();
    checkResponses(app, (v) => violations.push(v));
    app.get('/v1/health', async (_req, reply) => reply.code(503).send({ anything: true }));
    app.get('/v1/statecharts/:server', async (_req, reply) => reply.type('text/html').send('<html></html>'));
    await app.ready();
    await app.inject({ method: 'GET', url: '/v1/health' });
    await app.inject({ method: 'GET', url: '/v1/statecharts/x' });
    expect(violations).toEqual([]);
    await app.close();
  });
});
