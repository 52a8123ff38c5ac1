/**
 * Property-based (fast-check): every /v1 body, query, path parameter and caller header, generated —
 * right fields with right and wrong values, unknown keys, arrays for scalars, non-objects, non-JSON
 * bytes. For each request:
 *
 * - no 5xx, ever;
 * - a rejection (400 MCPX_BAD_REQUEST) names the part (`in`: params, query, body, headers) and the field
 *   (`path`), exactly as the route's own zod schema finds it, in the order the route checks the parts;
 *   `path` is empty only when the part as a whole is wrong (a body that is not an object, not JSON);
 * - an input the schemas accept is never refused as malformed: it gets its answer (200/202, or 404/409/
 *   429 for what it names).
 *
 * The app is built in-process over a real controller with one real server (dual-v2), so accepted calls
 * really run. Runs are bounded (seeded per run, printed on failure); the count is printed at the end.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import type { RouteInput } from '../../src/api/routes.js';
import * as schemas from '../../src/api/schemas.js';
import { V1_ROUTES, type V1RouteName } from '../../src/api/v1-routes.js';
import { harness, type Harness } from '../server/helpers.js';
import { tempDir } from '../support/real.js';

const RUNS = Number(process.env['MCPX_PROPERTY_RUNS'] ?? 120);

let dir: { path: string; remove: () => Promise<void> };
let h: Harness;
let requests = 0;
const statuses = new Map<number, number>();

beforeAll(async () => {
  dir = await tempDir('mcpx-api-props-');
  h = await harness(dir.path, { dual: { fixture: 'dual-v2' } });
});
afterAll(async () => {
  await h?.close();
  await dir?.remove();
  console.log(
    `api-properties: ${requests} generated requests, 0 answered 5xx; by status: ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}`,
  );
});

// ---- generators ----

/** Keys that are not prototype traps (fastify's JSON parser refuses those on purpose: tested elsewhere). */
const key = fc.string({ minLength: 1, maxLength: 12 }).filter((k) => k !== '__proto__' && k !== 'constructor' && k !== 'prototype');
const json = fc.jsonValue({ maxDepth: 3 }).filter((v) => !JSON.stringify(v ?? null).includes('"__proto__"'));
const text = fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('', ' ', '\t\n', 'dual', 'nope'));

/** One field: usually a plausible value, sometimes any JSON at all. */
const field = (good: fc.Arbitrary<unknown>) => fc.oneof({ weight: 12, arbitrary: good }, { weight: 1, arbitrary: json });

/** An object of some of `fields` (good or bad values), sometimes with an extra unknown key; sometimes not an object at all. */
function objectOf(fields: Record<string, fc.Arbitrary<unknown>>, opts: { extra?: boolean } = {}): fc.Arbitrary<unknown> {
  const model = Object.fromEntries(Object.entries(fields).map(([k, a]) => [k, field(a)]));
  // every known key (each maybe with a wrong value), or any subset of them
  const known = fc.oneof({ weight: 2, arbitrary: fc.record(model) }, { weight: 1, arbitrary: fc.record(model, { requiredKeys: [] }) });
  const withExtra = fc
    .tuple(known, fc.option(fc.tuple(key, json), { freq: opts.extra === false ? 1_000_000 : 8 }))
    .map(([o, extra]) => (extra ? { ...o, [extra[0]]: extra[1] } : o));
  return fc.oneof({ weight: 8, arbitrary: withExtra }, { weight: 1, arbitrary: json });
}

const server = fc.oneof({ weight: 6, arbitrary: fc.constantFrom('dual', 'dual', 'nope', '  dual  ') }, { weight: 1, arbitrary: text });
const timeoutMs = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: 1, max: 3_000 }) },
  fc.constantFrom(0, -1, 1.5, 2 ** 31 - 1, 2 ** 31, 1e300, Number.MAX_SAFE_INTEGER),
);
const args = fc.oneof(fc.record({ text: fc.string({ maxLength: 10 }) }), fc.dictionary(key, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }));
const callFields = {
  server,
  tool: fc.oneof(fc.constantFrom('echo', 'whoami', 'no-such-tool'), text),
  args,
  session: fc.oneof({ weight: 3, arbitrary: fc.constantFrom('s1', 's2') }, { weight: 1, arbitrary: text }),
  timeoutMs,
};

/** A query: each key once (usually a plausible value; a string) or repeated (an array, as fastify parses `a=1&a=2`); sometimes an unknown key. */
function queryOf(keys: Record<string, fc.Arbitrary<string>>): fc.Arbitrary<Record<string, string | string[]>> {
  const value = (good: fc.Arbitrary<string>) =>
    fc.oneof(
      { weight: 6, arbitrary: good },
      { weight: 2, arbitrary: fc.string({ maxLength: 12 }) },
      { weight: 1, arbitrary: fc.array(fc.string({ maxLength: 6 }), { minLength: 2, maxLength: 3 }) },
    );
  const known = fc.record(Object.fromEntries(Object.entries(keys).map(([k, good]) => [k, value(good)])), { requiredKeys: [] });
  return fc
    .tuple(known, fc.option(fc.tuple(key, value(fc.string())), { freq: 8 }))
    .map(([o, extra]) => (extra ? { ...o, [extra[0]]: extra[1] } : o)) as fc.Arbitrary<Record<string, string | string[]>>;
}
function queryString(q: Record<string, string | string[]>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) for (const one of Array.isArray(v) ? v : [v]) p.append(k, one);
  const s = p.toString();
  return s === '' ? '' : `?${s}`;
}

/** The caller headers: a revision, something else, or none. */
const headerValue = fc.stringMatching(/^[!-~]([ -~]{0,14}[!-~])?$/);
const callerHeaders = fc.record(
  {
    'x-mcpx-caller-protocol': fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom('2025-11-25', '2026-07-28', '2024-11-05', '1999-99-99') },
      { weight: 1, arbitrary: headerValue },
    ),
    'x-mcpx-session': headerValue,
  },
  { requiredKeys: [] },
);

/** A body as it goes on the wire: JSON of a generated value, or raw text that may not be JSON at all. */
function payloadOf(body: fc.Arbitrary<unknown>): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 8, arbitrary: body.map((b) => JSON.stringify(b) ?? 'null') },
    { weight: 1, arbitrary: fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom('', '{', '{"server":', '[1,2', 'nul', '"\\ud800"', '{"a":1}{}')) },
  );
}

// ---- the check ----

type Part = 'params' | 'query' | 'body' | 'headers';

/** A route as the daemon checks it: its method, path and the schemas of the parts it validates. */
type RouteDef = RouteInput & { method: 'GET' | 'POST' | 'PUT' | 'DELETE'; url: string };
const ROUTES = Object.fromEntries(Object.entries(V1_ROUTES).map(([name, r]) => [name, { method: r.method, url: r.url, ...r.input?.(schemas) }])) as Record<
  V1RouteName,
  RouteDef
>;

interface Sent {
  def: RouteDef;
  url: string;
  params?: Record<string, string>;
  query?: Record<string, string | string[]>;
  payload?: string;
  headers?: Record<string, string>;
}

/** The first failing part and its error, as the route checks them (params, query, body, headers). */
function expectedRejection(s: Sent): { in: Part; path: Array<string | number> } | undefined {
  let body: unknown;
  // An empty body is no body, whatever the content type says (a route that needs one refuses it by its schema).
  if (s.payload !== undefined && s.payload.length > 0) {
    let poisoned = false;
    try {
      // fastify's parser refuses a `__proto__` key, and a `constructor` holding `prototype`, anywhere
      body = JSON.parse(s.payload, function (this: unknown, k: string, v: unknown) {
        if (k === '__proto__' || (k === 'constructor' && v !== null && typeof v === 'object' && Object.hasOwn(v, 'prototype'))) poisoned = true;
        return v;
      });
    } catch {
      return { in: 'body', path: [] }; // fastify's parser refuses it before the schema sees it
    }
    if (poisoned) return { in: 'body', path: [] };
  }
  const parts: Array<[Part, z.ZodType | undefined, unknown]> = [
    ['params', s.def.params, s.params ?? {}],
    ['query', s.def.query, s.query ?? {}],
    ['body', s.def.body, body ?? undefined],
    ['headers', s.def.headers, s.headers ?? {}],
  ];
  for (const [where, schema, value] of parts) {
    if (!schema) continue;
    const r = schema.safeParse(value);
    if (r.success) continue;
    const issue = r.error.issues[0]!;
    let path = issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p));
    if (issue.code === 'unrecognized_keys' && issue.keys.length > 0) path = [...path, issue.keys[0]!];
    return { in: where, path };
  }
  return undefined;
}

async function check(s: Sent): Promise<void> {
  requests += 1;
  const res = await h.app.inject({
    method: s.def.method,
    url: `${s.url}${s.query ? queryString(s.query) : ''}`,
    headers: { ...(s.payload !== undefined ? { 'content-type': 'application/json' } : {}), ...s.headers },
    ...(s.payload !== undefined ? { payload: s.payload } : {}),
  });
  statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
  const what = `${s.def.method} ${s.url} ${JSON.stringify({ query: s.query, payload: s.payload, headers: s.headers })} → ${res.statusCode} ${res.body.slice(0, 300)}`;
  expect(res.statusCode, what).toBeLessThan(500);
  const isJson = String(res.headers['content-type'] ?? '').startsWith('application/json');
  if (!isJson) {
    expect(res.statusCode, what).toBe(200); // the statechart page (?format=html)
    expect(expectedRejection(s), what).toBeUndefined();
    return;
  }
  const body = res.json() as { ok?: boolean; error?: { code: string; message: string; path?: Array<string | number>; in?: Part } };
  const expected = expectedRejection(s);
  if (expected) {
    expect(res.statusCode, what).toBe(400);
    expect(body.error, what).toMatchObject({ code: 'MCPX_BAD_REQUEST', in: expected.in, path: expected.path });
    const named = expected.path.length > 0 ? `${expected.in} field ${expected.path.join('.')}` : expected.in;
    expect(body.error!.message.startsWith(`${named}:`), what).toBe(true);
  } else if (res.statusCode === 400) {
    // refused after the schemas: by the handler, and still naming the field
    expect(body.error?.path?.length, what).toBeGreaterThan(0);
  } else {
    expect([200, 202, 404, 409, 429], what).toContain(res.statusCode);
  }
}

const runs = { numRuns: RUNS, interruptAfterTimeLimit: 20_000 };
const id = fc.oneof(fc.constantFrom('a1', 'x'), fc.string({ minLength: 1, maxLength: 10 })).filter((v) => v !== '.' && v !== '..'); // dot segments are the URL's, not an id
const seg = (v: string) => encodeURIComponent(v);

describe('every /v1 input, generated: no 5xx; every rejection names its field as the schema does', { timeout: 120_000 }, () => {
  it('POST /v1/call (body, caller headers)', async () => {
    await fc.assert(
      fc.asyncProperty(payloadOf(objectOf(callFields)), callerHeaders, async (payload, headers) =>
        check({ def: ROUTES.call, url: '/v1/call', payload, headers }),
      ),
      runs,
    );
  });

  it('POST /v1/request', async () => {
    const body = objectOf({
      server,
      method: fc.oneof(fc.constantFrom('tools/call', 'prompts/get', 'resources/read', 'completion/complete', 'tools/list', 'initialize'), text),
      params: fc.oneof(args, fc.constant({ name: 'echo', arguments: { text: 'x' } })),
      session: text,
      timeoutMs,
    });
    await fc.assert(
      fc.asyncProperty(payloadOf(body), callerHeaders, async (payload, headers) => check({ def: ROUTES.request, url: '/v1/request', payload, headers })),
      runs,
    );
  });

  it('POST /v1/ask', async () => {
    const capabilities = fc.oneof(
      fc.constant({}),
      fc.record({ elicitation: fc.oneof(fc.constant({}), json), sampling: json, roots: json }, { requiredKeys: [] }),
    );
    const body = objectOf({
      ...callFields,
      method: fc.oneof(fc.constantFrom('tools/call', 'prompts/get', 'resources/read'), text),
      params: args,
      questionTimeoutMs: timeoutMs,
      capabilities,
    });
    await fc.assert(
      fc.asyncProperty(payloadOf(body), callerHeaders, async (payload, headers) => check({ def: ROUTES.ask, url: '/v1/ask', payload, headers })),
      runs,
    );
  });

  it('GET /v1/ask/:id (waitMs), POST /v1/ask/:id/answers, POST /v1/ask/:id/abandon', async () => {
    const answers = objectOf({
      answers: fc.oneof(
        fc.dictionary(fc.oneof(key, fc.constant('')), fc.oneof(json, fc.record({ action: fc.constantFrom('accept', 'decline') })), { maxKeys: 3 }),
        json,
      ),
    });
    await fc.assert(
      fc.asyncProperty(
        id,
        queryOf({ waitMs: fc.oneof(fc.constantFrom('0', '1', '60000', '60001', '999999999', '-1', '1e3'), fc.nat({ max: 100 }).map(String)) }),
        payloadOf(answers),
        payloadOf(objectOf({}, {})),
        async (askId, query, answersPayload, abandonPayload) => {
          const params = { id: askId };
          // waitMs waits only for an ask that exists; these ids name none, so each answers at once
          await check({ def: ROUTES.askGet, url: `/v1/ask/${seg(askId)}`, params, query });
          await check({ def: ROUTES.askAnswers, url: `/v1/ask/${seg(askId)}/answers`, params, payload: answersPayload });
          await check({ def: ROUTES.askAbandon, url: `/v1/ask/${seg(askId)}/abandon`, params, payload: abandonPayload });
        },
      ),
      runs,
    );
  });

  it('GET /v1/tools (query, caller headers), GET /v1/catalog (caller headers)', async () => {
    await fc.assert(
      fc.asyncProperty(
        queryOf({ server: fc.constantFrom('dual', 'nope', ''), session: fc.constantFrom('s1', ' '), fresh: fc.constantFrom('true', 'false', '1', '0', 'yes') }),
        callerHeaders,
        async (query, headers) => {
          await check({ def: ROUTES.tools, url: '/v1/tools', query, headers });
          await check({ def: ROUTES.catalog, url: '/v1/catalog', headers });
        },
      ),
      runs,
    );
  });

  it('PUT /v1/settings/:path (body), GET /v1/statecharts/:server (format)', async () => {
    const path = fc
      .oneof(fc.constantFrom('upstream.protocol', 'upstream.probeTimeout', 'no.such.setting'), fc.string({ minLength: 1, maxLength: 20 }))
      .filter((v) => v !== '.' && v !== '..');
    const value = fc.oneof(fc.constantFrom('auto', 'legacy', '5s', 'soon', '-1'), json);
    await fc.assert(
      fc.asyncProperty(
        path,
        payloadOf(objectOf({ value })),
        server.filter((v) => v.length > 0 && v !== '.' && v !== '..'),
        queryOf({ format: fc.constantFrom('json', 'html', 'svg') }),
        async (settingPath, payload, serverName, query) => {
          await check({ def: ROUTES.settingPut, url: `/v1/settings/${seg(settingPath)}`, params: { path: settingPath }, payload });
          await check({ def: ROUTES.statechart, url: `/v1/statecharts/${seg(serverName)}`, params: { server: serverName }, query });
        },
      ),
      runs,
    );
    // what the property may have set is put back, so the other properties see the defaults
    for (const p of ['upstream.protocol', 'upstream.probeTimeout']) await h.app.inject({ method: 'DELETE', url: `/v1/settings/${p}` });
  });

  it('GET /v1/events (a query the schema accepts opens a stream: only refusals are sent)', async () => {
    const refused = queryOf({ server: fc.constantFrom('dual', ''), type: fc.constantFrom('server.', 'config.reloaded,call.finished', '') }).filter(
      (q) => !ROUTES.events.query!.safeParse(q).success,
    );
    await fc.assert(
      fc.asyncProperty(refused, async (query) => check({ def: ROUTES.events, url: '/v1/events', query })),
      runs,
    );
  });

  it('raw bytes as a body (any octets, any length up to 4 KB) on every POST route', async () => {
    const posts = [ROUTES.call, ROUTES.request, ROUTES.ask, ROUTES.askAnswers, ROUTES.askAbandon];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...posts), fc.uint8Array({ maxLength: 4096 }), async (def, bytes) => {
        requests += 1;
        const url = def.url.replace(':id', 'x');
        const res = await h.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: Buffer.from(bytes) });
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
        expect(res.statusCode, `${url} ${Buffer.from(bytes).toString('hex').slice(0, 80)} → ${res.body}`).toBeLessThan(500);
        if (res.statusCode === 400) expect(res.json().error).toMatchObject({ code: 'MCPX_BAD_REQUEST', in: expect.stringMatching(/^(params|body)$/) });
      }),
      runs,
    );
  });
});
