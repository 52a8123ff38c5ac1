/**
 * `npm run bench`: what the era probe and the era cache cost, against the bundled demo servers
 * (examples/servers: SDK v1 legacy-only, SDK v2 dual and modern-only) and a legacy server that never
 * answers server/discover (test/fixtures/raw.mjs silent).
 *
 * For each server, in one run and interleaved (so machine load hits every variant alike), it measures
 * start → ready → one tools/call → stop for:
 *   - baseline: the era forced (force-initialize for legacy, force-discover otherwise): no probe at all;
 *   - first start: prefer-discover with an empty era cache (the one-time probe);
 *   - cached start: prefer-discover with the record the first start wrote.
 * It reports medians and each variant's ratio to the baseline. Ratios, not absolute times, are the result:
 * absolute times depend mostly on how fast node loads the SDK on this machine.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SessionPreference } from '../src/machines/preference.js';
import { EraCache } from '../src/upstream/era-cache.js';
import { UpstreamSession } from '../src/upstream/session.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ROUNDS = Number(process.env.MCPX_BENCH_ROUNDS ?? 7);

const SERVERS = [
  { name: 'legacy-only', args: ['examples/servers/legacy-only.mjs'], forced: 'force-initialize' as const },
  { name: 'dual', args: ['examples/servers/dual.mjs'], forced: 'force-discover' as const },
  { name: 'modern-only', args: ['examples/servers/modern-only.mjs'], forced: 'force-discover' as const },
  // A legacy server that never answers server/discover: the first start pays upstream.probeTimeout (2 s).
  { name: 'legacy, silent before initialize', args: ['test/fixtures/raw.mjs', 'silent'], forced: 'force-initialize' as const },
];

async function once(definition: { command: string; args: string[] }, preference: SessionPreference, cache: EraCache | null): Promise<number> {
  const session = new UpstreamSession({ name: 'bench', definition, preference, cache });
  const t0 = performance.now();
  try {
    await session.start();
    await session.callTool('echo', { text: 'bench' });
    return performance.now() - t0;
  } finally {
    await session.stop();
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

async function main(): Promise<void> {
  const rows: string[] = [];
  for (const server of SERVERS) {
    const definition = { command: process.execPath, args: server.args.map((a, i) => (i === 0 ? join(root, a) : a)) };
    const times = { baseline: [] as number[], first: [] as number[], cached: [] as number[] };
    for (let round = 0; round < ROUNDS; round++) {
      const state = mkdtempSync(join(tmpdir(), 'mcpx-bench-'));
      try {
        times.baseline.push(await once(definition, server.forced, null));
        const cache = await EraCache.open(state);
        times.first.push(await once(definition, 'prefer-discover', cache));
        times.cached.push(await once(definition, 'prefer-discover', await EraCache.open(state)));
      } finally {
        rmSync(state, { recursive: true, force: true });
      }
    }
    const base = median(times.baseline);
    const fmt = (xs: number[]) => `${median(xs).toFixed(0)} ms (×${(median(xs) / base).toFixed(2)})`;
    rows.push(`| ${server.name} | ${base.toFixed(0)} ms (×1.00, ${server.forced}) | ${fmt(times.first)} | ${fmt(times.cached)} |`);
  }
  console.log(`start → ready → tools/call → stop, median of ${ROUNDS} rounds, ratio to the forced baseline measured in the same run\n`);
  console.log('| server | baseline (no probe) | first start (probe) | cached start |');
  console.log('|---|---|---|---|');
  for (const r of rows) console.log(r);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
