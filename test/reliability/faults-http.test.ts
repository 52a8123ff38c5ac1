/**
 * Upstream faults over Streamable HTTP, one daemon core (the /v1 API over a real registry), next to a
 * healthy HTTP server and a healthy stdio server: a crash mid-call (connection reset), a crash during
 * the probe, a hang, garbage JSON, garbage in an SSE stream, a 20 MB answer, an answer for an unknown id
 * and the answer twice, a dropped stream (socket destroyed mid-SSE), a stream that ends without the
 * answer. Several rounds, each fault called at once with the healthy servers. Every call is answered
 * exactly once — a result or a typed MCPX_* error, within its timeout; an instance a fault broke is
 * replaced (the next call opens a new upstream session: `whoami` counts initialize requests); healthy
 * calls are unaffected; at the end no upstream process is left and no upstream connection stays open.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UPSTREAM_PROCESS_CHANNEL, type UpstreamProcessEvent } from '../../src/transports/spawn-tag.js';
import { startFaultyHttp, type FaultyHttp } from '../fixtures/http/faulty-http.js';
import { harness, textOf, type Harness } from '../server/helpers.js';
import { tempDir } from '../support/real.js';
import { faultyEntry, isGone } from './helpers.js';

const HTTP_ROUNDS = Number(process.env['MCPX_FAULT_ROUNDS'] ?? 3);
const HUGE = 20_000_000;

interface Fault {
  server: string;
  tool: string;
  args?: Record<string, unknown>;
  timeoutMs?: number;
  /** What each faulty call must end in: a text result, or one of these error codes. */
  expect: { text: string } | { codes: string[] };
  /** The fault breaks the upstream session: the next call must run on a new one. */
  replaces: boolean;
}

/** The limit each faulty call must be answered within (its timeout, with room for a loaded machine). */
const CALL_LIMIT_MS = 20_000;

const FAULTS: Fault[] = [
  { server: 'crash', tool: 'crash', expect: { codes: ['MCPX_TRANSPORT_CLOSED', 'MCPX_UPSTREAM_UNAVAILABLE'] }, replaces: true },
  { server: 'hang', tool: 'hang', timeoutMs: 300, expect: { codes: ['MCPX_REQUEST_TIMEOUT'] }, replaces: false },
  { server: 'garbage', tool: 'garbage', expect: { codes: ['MCPX_HTTP_STATUS'] }, replaces: false },
  { server: 'garbageSse', tool: 'garbage-sse', args: { text: 'g' }, expect: { text: 'g era=legacy' }, replaces: false },
  { server: 'big', tool: 'big', expect: { text: 'x'.repeat(HUGE) }, replaces: false },
  { server: 'dup', tool: 'dup', args: { text: 'd' }, expect: { text: 'd era=legacy' }, replaces: false },
  { server: 'drop', tool: 'drop', expect: { codes: ['MCPX_TRANSPORT_CLOSED', 'MCPX_UPSTREAM_UNAVAILABLE'] }, replaces: true },
  { server: 'endStream', tool: 'end-stream', expect: { codes: ['MCPX_TRANSPORT_CLOSED', 'MCPX_UPSTREAM_UNAVAILABLE'] }, replaces: false },
];

let dir: { path: string; remove: () => Promise<void> };
let h: Harness;
let up: FaultyHttp;
const spawned = new Set<number>();
const onSpawn = (m: unknown) => {
  const e = m as UpstreamProcessEvent;
  if (e.type === 'spawn') spawned.add(e.pid);
};

beforeAll(async () => {
  subscribe(UPSTREAM_PROCESS_CHANNEL, onSpawn);
  dir = await tempDir('mcpx-faults-http-');
  up = await startFaultyHttp({ hugeBytes: HUGE });
  const http = (name: string, extra: Record<string, unknown> = {}) =>
    ({ url: up.url(name), mcpx: { probeTimeout: '10s', startTimeout: '20s' }, ...extra }) as never;
  const servers: Record<string, never> = { healthyHttp: http('healthy'), healthyStdio: faultyEntry('plain') };
  for (const f of FAULTS) servers[f.server] = http(f.server.toLowerCase());
  for (let round = 0; round < HTTP_ROUNDS; round += 1) servers[`probeCrash${round}`] = http(`probecrash-${round}`);
  h = await harness(dir.path, servers);
});
afterAll(async () => {
  await h?.close();
  await up?.close();
  unsubscribe(UPSTREAM_PROCESS_CHANNEL, onSpawn);
  await dir?.remove();
});

async function call(server: string, tool: string, args: Record<string, unknown> = {}, timeoutMs?: number) {
  const t0 = Date.now();
  const res = await h.app.inject({ method: 'POST', url: '/v1/call', payload: { server, tool, args, ...(timeoutMs ? { timeoutMs } : {}) } });
  return {
    ms: Date.now() - t0,
    status: res.statusCode,
    body: res.json() as { ok: boolean; result?: Record<string, unknown>; error?: { code: string; message: string } },
  };
}
const connOf = (text: string) => Number(/conn=(\d+)/.exec(text)?.[1] ?? NaN);

describe('Streamable HTTP upstream faults', () => {
  it('every call answered once with a result or a typed error in time; broken sessions replaced; healthy servers unaffected; nothing left', async () => {
    let calls = 0;
    let answered = 0;
    const unexpected: string[] = [];
    const outcomes = new Map<string, Set<string>>();
    const saw = (server: string, what: string) => outcomes.set(server, (outcomes.get(server) ?? new Set()).add(what));
    const record = (what: string, ok: boolean) => {
      if (!ok) unexpected.push(what);
    };
    for (let round = 0; round < HTTP_ROUNDS; round += 1) {
      // the session each fault runs on, before it
      const before = new Map<string, number>();
      for (const f of FAULTS) {
        calls += 1;
        const r = await call(f.server, 'whoami');
        answered += 1;
        before.set(f.server, connOf(textOf(r.body as never)));
      }
      await Promise.all([
        ...FAULTS.map(async (f) => {
          calls += 1;
          const r = await call(f.server, f.tool, f.args, f.timeoutMs);
          answered += 1;
          const got: { text?: string; code?: string } = r.body.ok ? { text: textOf(r.body as never) } : { code: r.body.error!.code };
          const good = 'text' in f.expect ? got.text === f.expect.text : got.code !== undefined && f.expect.codes.includes(got.code);
          saw(f.server, got.code ?? (got.text!.length > 100 ? `served (${got.text!.length} chars)` : 'served'));
          record(
            `${f.server} round ${round}: ${r.status} ${JSON.stringify(got).slice(0, 120)} ${r.body.error?.message ?? ''}`,
            r.status === 200 && good && r.ms < CALL_LIMIT_MS,
          );
        }),
        // a crash during the probe: the call is served, or fails typed and the next one is served
        (async () => {
          calls += 1;
          const r = await call(`probeCrash${round}`, 'echo', { text: 'p' });
          answered += 1;
          const served = r.body.ok && textOf(r.body as never) === 'p era=legacy';
          saw('probeCrash', served ? 'served' : `${r.body.error?.code}, then served`);
          record(`probeCrash round ${round}: ${JSON.stringify(r.body).slice(0, 200)}`, r.status === 200 && (served || /^MCPX_/.test(r.body.error?.code ?? '')));
          if (!served) {
            // a failed start cools down before the next try: wait for the condition, not a timer
            const end = Date.now() + CALL_LIMIT_MS;
            let again = await call(`probeCrash${round}`, 'echo', { text: 'p' });
            calls += 1;
            answered += 1;
            while (!again.body.ok && Date.now() < end) {
              await new Promise((res) => setTimeout(res, 100));
              again = await call(`probeCrash${round}`, 'echo', { text: 'p' });
              calls += 1;
              answered += 1;
            }
            record(`probeCrash round ${round} after: ${JSON.stringify(again.body).slice(0, 200)}`, textOf(again.body as never) === 'p era=legacy');
          }
        })(),
        ...Array.from({ length: 5 }, async (_, i) => {
          for (const server of ['healthyHttp', 'healthyStdio']) {
            calls += 1;
            const r = await call(server, 'echo', { text: `h${round}.${i}` });
            answered += 1;
            record(`${server}: ${JSON.stringify(r.body).slice(0, 200)}`, textOf(r.body as never) === `h${round}.${i} era=legacy`);
          }
        }),
      ]);
      // after each fault the server still serves; where the fault broke the session, on a new one
      for (const f of FAULTS) {
        calls += 1;
        const r = await call(f.server, 'whoami');
        answered += 1;
        const conn = connOf(textOf(r.body as never));
        record(
          `${f.server} after round ${round}: ${JSON.stringify(r.body).slice(0, 200)} (session before: ${before.get(f.server)})`,
          Number.isFinite(conn) && (f.replaces ? conn > before.get(f.server)! : conn === before.get(f.server)!),
        );
      }
    }
    expect(unexpected).toEqual([]);
    expect(answered).toBe(calls);
    const processes = spawned.size;
    await h.close();
    const left = [...spawned].filter((pid) => !isGone(pid));
    const deadline = Date.now() + 10_000;
    while (up.openSockets() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    console.log(`[faults-http] outcomes: ${JSON.stringify(Object.fromEntries([...outcomes].map(([k, v]) => [k, [...v]])))}`);
    console.log(
      `[faults-http] ${FAULTS.length + 1} HTTP faults × ${HTTP_ROUNDS} rounds: ${calls} calls, ${answered} answered, lost ${calls - answered}; ${processes} stdio processes started, ${left.length} left; upstream sockets open after stop: ${up.openSockets()}`,
    );
    expect(left).toEqual([]);
    expect(up.openSockets(), 'no upstream connection stays open after the daemon core stopped').toBe(0);
  }, 180_000);
});
