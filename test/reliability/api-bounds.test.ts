/**
 * Issue 10 #6 and #7: what a /v1 body can ask of the daemon's timers and stack.
 *
 * - `timeoutMs` above 2^31−1 ms would overflow Node's timers (they fire at once): refused with a 400
 *   naming the field, on /v1/call as on /v1/request.
 * - `args` (and `/v1/request` params) nested deeper than MAX_JSON_DEPTH levels: refused with a 400
 *   naming the field, instead of a 200 MCPX_INTERNAL "Maximum call stack size exceeded".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../src/front/json-depth.js';
import { harness, textOf, type Harness } from '../server/helpers.js';
import { simPool, until } from '../pool/helpers.js';
import { tempDir } from '../support/real.js';
import { callTool } from '../support/calls.js';

const MAX_TIMER_MS = 2 ** 31 - 1;

/** `{"d":{"d":…{"d":"leaf"}}}`, `levels` objects deep, as JSON text (JSON.stringify itself would overflow). */
function nested(levels: number): string {
  return `${'{"d":'.repeat(levels)}"leaf"${'}'.repeat(levels)}`;
}

let dir: { path: string; remove: () => Promise<void> };
let h: Harness;

beforeAll(async () => {
  dir = await tempDir('mcpx-bounds-');
  h = await harness(dir.path, { dual: { fixture: 'dual-v2' } });
});
afterAll(async () => {
  await h?.close();
  await dir?.remove();
});

/** `body` as JSON, with the text `deep` where the value `DEEP` is. */
const DEEP = '\u0000deep\u0000';
async function post(url: string, body: unknown, deep = ''): Promise<{ status: number; body: any }> {
  const payload = JSON.stringify(body).replace(JSON.stringify(DEEP), deep);
  const res = await h.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload });
  return { status: res.statusCode, body: res.json() };
}

describe.concurrent('timeoutMs past what a timer can wait', () => {
  it('POST /v1/call: 2^31 ms is a 400 naming timeoutMs; 2^31−1 is served', async () => {
    const r = await post('/v1/call', { server: 'dual', tool: 'echo', args: { text: 'x' }, timeoutMs: MAX_TIMER_MS + 1 });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'MCPX_BAD_REQUEST', path: ['timeoutMs'], in: 'body' });
    expect(r.body.error.message).toContain(String(MAX_TIMER_MS));
    const ok = await post('/v1/call', { server: 'dual', tool: 'echo', args: { text: 'long wait' }, timeoutMs: MAX_TIMER_MS });
    expect(ok.status).toBe(200);
    expect(textOf(ok.body)).toBe('long wait era=modern');
  });

  it('POST /v1/call: 1e300 ms too', async () => {
    const r = await post('/v1/call', { server: 'dual', tool: 'echo', args: { text: 'x' }, timeoutMs: 1e300 });
    expect(r.status).toBe(400);
    expect(r.body.error.path).toEqual(['timeoutMs']);
  });

  it('POST /v1/request: refused the same way', async () => {
    const r = await post('/v1/request', {
      server: 'dual',
      method: 'tools/call',
      params: { name: 'echo', arguments: { text: 'x' } },
      timeoutMs: MAX_TIMER_MS + 1,
    });
    expect(r.status).toBe(400);
    expect(r.body.error.path).toEqual(['timeoutMs']);
  });
});

describe('a timeout past what a timer can wait, below the API (pool and JSON-RPC timers)', () => {
  it('is bounded to 2^31−1 ms instead of firing at once', async () => {
    const s = simPool({ upstream: { kind: 'dual', gatedStart: true } });
    const { setTimeout: later } = await import('node:timers/promises');
    try {
      // The call waits for the instance's start (the pool's acquire timer), then for its answer (the request timer).
      const call = callTool(s.pool, 'hold', { tag: 't' }, { timeoutMs: 2 ** 32 }).then(
        (r) => (r.content as Array<{ text: string }>)[0]!.text,
        (e: { code: string }) => e.code,
      );
      // An overflowing timer fires after 1 ms; one armed later for 20 ms fires after it, whatever the load.
      await later(20);
      s.up.processes[0]!.up();
      await until(() => s.up.processes[0]!.heldTags().includes('t'), 5_000, 'the held call');
      await later(20);
      expect(s.up.release('t')).toBe(1);
      expect(await call).toBe('held t');
    } finally {
      await s.pool.stop();
    }
  });
});

describe.concurrent('deeply nested arguments', () => {
  it('POST /v1/call: 10,000 levels of args is a 400 naming args and the limit', async () => {
    const r = await post('/v1/call', { server: 'dual', tool: 'echo', args: DEEP }, nested(10_000));
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'MCPX_BAD_REQUEST', in: 'body' });
    expect(r.body.error.path[0]).toBe('args');
    expect(r.body.error.message).toContain(`${MAX_JSON_DEPTH} levels`);
  });

  it('POST /v1/call: one level past the limit is refused, the limit itself is served', async () => {
    // args itself is level 1, so nested(MAX_JSON_DEPTH - 1) under a key is exactly MAX_JSON_DEPTH deep.
    const deepest = await post('/v1/call', { server: 'dual', tool: 'echo', args: { text: 'deep', extra: DEEP } }, nested(MAX_JSON_DEPTH - 1));
    expect(deepest.status).toBe(200);
    expect(textOf(deepest.body)).toBe('deep era=modern');
    const over = await post('/v1/call', { server: 'dual', tool: 'echo', args: { text: 'deep', extra: DEEP } }, nested(MAX_JSON_DEPTH));
    expect(over.status).toBe(400);
    expect(over.body.error.path[0]).toBe('args');
  });

  it('arrays count as levels too', async () => {
    const r = await post('/v1/call', { server: 'dual', tool: 'echo', args: { text: 'x', list: DEEP } }, `${'['.repeat(10_000)}1${']'.repeat(10_000)}`);
    expect(r.status).toBe(400);
    expect(r.body.error.path[0]).toBe('args');
  });

  it('POST /v1/request: 10,000 levels of params is a 400 naming params', async () => {
    const r = await post('/v1/request', { server: 'dual', method: 'tools/call', params: { name: 'echo', arguments: DEEP } }, nested(10_000));
    expect(r.status).toBe(400);
    expect(r.body.error.path[0]).toBe('params');
  });

  it('POST /v1/ask: 100,000 levels in an extra capability is a 400 naming capabilities (issue 37 #16: they are sent upstream as given)', async () => {
    const r = await post('/v1/ask', { server: 'dual', tool: 'echo', args: { text: 'x' }, capabilities: { experimental: DEEP } }, nested(100_000));
    expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'MCPX_BAD_REQUEST', path: ['capabilities'] });
    expect(r.body.error.message).toContain(`nests deeper than ${MAX_JSON_DEPTH} levels`);
  });
});
