/**
 * How long a benchmark run takes, from the environment:
 *
 *   MCPX_BENCH_QUICK=1      a few minutes: fewer rounds and calls (the default is the full run)
 *   MCPX_BENCH_ROUNDS=N     runs per figure (median and spread are over these); quick 3, full 7
 *   MCPX_BENCH_CALLS=N      calls per run at concurrency 1 (16 in flight: twice as many); quick 200, full 1000
 *   MCPX_BENCH_ONLY=a,b     only these sections: call, probe, startup, pool, memory, search
 *   MCPX_BENCH_POOL_N=N     session actors in the pool-scale section (default 1000)
 *   MCPX_BENCH_POOL_DEADLINE=MS  give up on a pool size whose sessions are not all up by then (quick 20 s, full 60 s)
 *   MCPX_BENCH_NO_DOCS=1    write bench/results.json only, leave docs/benchmarks.md alone
 *   MCPX_BENCH_BASELINE=DIR another built mcpx (DIR/dist/src/cli/main.js, e.g. a checkout of an earlier
 *                           commit after `npm run build`), measured in the same run, interleaved, as
 *                           "before": the daemon, serve and CLI rows, the starts and the through-mcpx
 *                           memory rows get a twin
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const QUICK = ['1', 'true', 'yes'].includes(String(process.env['MCPX_BENCH_QUICK'] ?? '').toLowerCase());

function int(name: string, fallback: number): number {
  const v = Number(process.env[name]);
  return Number.isInteger(v) && v > 0 ? v : fallback;
}

export const ROUNDS = int('MCPX_BENCH_ROUNDS', QUICK ? 3 : 7);
export const CALLS = int('MCPX_BENCH_CALLS', QUICK ? 200 : 1000);
export const POOL_N = int('MCPX_BENCH_POOL_N', 1000);
export const POOL_DEADLINE_MS = int('MCPX_BENCH_POOL_DEADLINE', QUICK ? 20_000 : 60_000);
export const ONLY = new Set(
  String(process.env['MCPX_BENCH_ONLY'] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0),
);
export const WRITE_DOCS = !['1', 'true', 'yes'].includes(String(process.env['MCPX_BENCH_NO_DOCS'] ?? '').toLowerCase());

export function wanted(section: 'call' | 'probe' | 'startup' | 'pool' | 'memory' | 'search'): boolean {
  return ONLY.size === 0 || ONLY.has(section);
}

/** The repository root (this file runs from dist/bench/lib). */
export const ROOT = (() => {
  const here = dirname(fileURLToPath(import.meta.url));
  return here.includes(`${join('dist', 'bench')}`) ? join(here, '..', '..', '..') : join(here, '..', '..');
})();

/** The built CLI (`npm run bench` builds first). */
export const MCPX = join(ROOT, 'dist', 'src', 'cli', 'main.js');

/** The baseline's built CLI, when MCPX_BENCH_BASELINE names one. */
export const BASELINE_MCPX = process.env['MCPX_BENCH_BASELINE'] ? join(process.env['MCPX_BENCH_BASELINE'], 'dist', 'src', 'cli', 'main.js') : undefined;
