/**
 * The pool at scale with an in-memory upstream (bench/lib/memory-upstream.ts: no processes, answers at
 * once), so what is measured is mcpx's own per-session cost: the session actor, its probe, the pool's
 * bookkeeping.
 *
 *   - N session actors under `call` scope (each call its own instance): N `hold` calls at once; the time
 *     until every session has started, probed (server/discover) and sent its call, and the heap that
 *     N live sessions (each with its call pending) add, per session, after a full GC.
 *   - acquire/release per second on warm instances: `session` scope, N sessions warmed once, then calls
 *     cycling through them, 64 in flight; each call is a lease taken, an in-memory tools/call, the lease
 *     given back. And the same on one warm `global` instance (the lease alone, no session lookup).
 *
 * Sizes 100, 250, 500 and N, so the growth shows; a size whose sessions are not all up within
 * MCPX_BENCH_POOL_DEADLINE ms is reported as such (with how many were), and larger ones are skipped.
 */
import { toolCall } from '../src/call/call.js';
import { ServerPool } from '../src/pool/server-pool.js';
import type { PoolServerConfig, Scope, Sharing } from '../src/pool/types.js';
import { UpstreamSession } from '../src/upstream/session.js';
import { POOL_DEADLINE_MS, POOL_N, QUICK, ROUNDS } from './lib/knobs.js';
import { drive } from './lib/load.js';
import { MemoryUpstream } from './lib/memory-upstream.js';
import { figure, round, type Figure } from './lib/stats.js';

export interface PoolSize {
  sessions: number;
  /** Every session started, probed and holding its call; null: not within the deadline. */
  startAndProbeAllMs: Figure | null;
  /** How many had come up when the deadline passed (when it passed). */
  upAtDeadline?: number;
  heapPerSessionKiB: Figure | null;
  /** `session` scope, every session warm, 64 in flight. */
  acquireReleasePerSec: Figure | null;
}

export interface PoolResults {
  target: number;
  rounds: number;
  deadlineMs: number;
  gcExposed: boolean;
  sizes: PoolSize[];
  /** One warm instance (`global` scope), 64 in flight: the per-call cost of the lease alone. */
  globalAcquireReleasePerSec: Figure;
}

const gc = (globalThis as { gc?: () => void }).gc;

function pool(scope: Scope, sharing: Sharing, n: number, upstream: MemoryUpstream): ServerPool {
  const config: PoolServerConfig = {
    name: 'memory',
    definition: { command: 'memory-upstream', args: [] },
    preference: 'prefer-discover',
    limits: { scope, max: n, sharing, idleTimeoutMs: 300_000 },
    // Generous: the point is what N sessions cost, not whether a starved event loop times their probes out.
    probeTimeoutMs: 120_000,
    startTimeoutMs: 120_000,
  };
  return new ServerPool(config, { sessionFactory: (o) => new UpstreamSession({ ...o, channelFactory: () => upstream.channel() }) });
}

const settle = () => new Promise<void>((r) => setImmediate(r));

function heapUsed(): number {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
}

/** N `hold` calls under call scope: the time until all N sessions hold their call, and the heap they add. */
async function startAll(n: number, deadlineMs: number): Promise<{ ms: number | null; up: number; heapKiB: number | null }> {
  const upstream = new MemoryUpstream();
  const p = pool('call', 'exclusive', n, upstream);
  const before = heapUsed();
  const t0 = performance.now();
  let failed = 0;
  let firstFailure: string | undefined;
  const calls = Array.from({ length: n }, () =>
    p.run(toolCall(p.name, 'hold', {})).catch((err: unknown) => {
      failed += 1;
      firstFailure ??= err instanceof Error ? err.message : String(err);
    }),
  );
  let ms: number | null = null;
  for (;;) {
    if (upstream.held.length >= n) {
      ms = performance.now() - t0;
      break;
    }
    if (performance.now() - t0 > deadlineMs || failed > 0) break;
    await settle();
  }
  const up = upstream.held.length;
  if (failed > 0) throw new Error(`${failed} of ${n} sessions failed to start: ${firstFailure}`);
  const heapKiB = ms === null ? null : (heapUsed() - before) / n / 1024;
  upstream.release();
  // All up: every call ends now. Not all up: stopping the pool ends the rest (their calls fail, ignored).
  if (ms !== null) await Promise.all(calls);
  await p.stop();
  upstream.release();
  await Promise.race([Promise.all(calls), new Promise((r) => setTimeout(r, 5_000))]);
  return { ms, up, heapKiB };
}

async function acquireRelease(scope: Scope, n: number): Promise<number> {
  const upstream = new MemoryUpstream();
  const p = pool(scope, 'shared', n, upstream);
  let k = 0;
  const call = async () => {
    await p.run(toolCall(p.name, 'echo', { text: 'x' }, { session: `s${k++ % n}` }));
  };
  await drive(call, Math.min(64, n), n); // every session started and warm
  await drive(call, 64, Math.max(n, 1_000));
  const run = await drive(call, 64, Math.max(n * 5, 10_000));
  await p.stop();
  if (run.errors > 0) throw new Error(`acquire/release: ${run.errors} errors, first: ${run.firstError}`);
  return (run.latencies.length / run.wallMs) * 1000;
}

export async function benchPool(log: (line: string) => void): Promise<PoolResults> {
  const target = POOL_N;
  const deadlineMs = POOL_DEADLINE_MS;
  const sizes = [...new Set([100, 250, 500, target].filter((x) => x <= target))];
  const out: PoolSize[] = [];
  for (const n of sizes) {
    const start: number[] = [];
    const heap: number[] = [];
    const rate: number[] = [];
    let upAtDeadline: number | undefined;
    // Large sizes take long while the pool's cost grows faster than linearly: fewer rounds in quick mode.
    const rounds = QUICK && n >= 500 ? 1 : ROUNDS;
    for (let r = 0; r < rounds; r++) {
      const s = await startAll(n, deadlineMs);
      if (s.ms === null) {
        upAtDeadline = s.up;
        break;
      }
      start.push(s.ms);
      heap.push(s.heapKiB!);
      rate.push(await acquireRelease('session', n));
    }
    out.push({
      sessions: n,
      startAndProbeAllMs: start.length > 0 && upAtDeadline === undefined ? figure(start) : null,
      ...(upAtDeadline === undefined ? {} : { upAtDeadline }),
      heapPerSessionKiB: heap.length > 0 ? figure(heap.map((x) => round(x, 2))) : null,
      acquireReleasePerSec: rate.length > 0 ? figure(rate) : null,
    });
    log(
      `pool: ${n} sessions ${upAtDeadline === undefined ? `up in ${Math.round(start[Math.floor(start.length / 2)] ?? 0)} ms` : `not up within ${deadlineMs} ms (${upAtDeadline} were)`}`,
    );
    if (upAtDeadline !== undefined) break; // larger sizes would only take longer
  }
  const global: number[] = [];
  for (let r = 0; r < ROUNDS; r++) global.push(await acquireRelease('global', 1));
  return { target, rounds: ROUNDS, deadlineMs, gcExposed: gc !== undefined, sizes: out, globalAcquireReleasePerSec: figure(global) };
}
