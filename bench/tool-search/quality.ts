/**
 * Tool search, measured: recall@1/3/5/10 and MRR of mcpx's engine (src/catalog/tool-search.ts) and of a
 * plain BM25 baseline on the labelled queries over the captured listings, overall, per split and per
 * kind; then index build time and search latency at 250 and 1,000 tools (1,000 by copying the listings
 * under new server names). Offline: it reads the committed files only.
 *
 * A query counts as found at k when any of its relevant tools is among the first k (several servers may
 * offer the same thing); MRR uses the rank of the first relevant tool.
 *
 * Part of `npm run bench`; alone: `node dist/bench/tool-search/quality.js` (also writes its part of
 * bench/results.json and docs/benchmarks.md). `--misses` lists the tune-split queries whose first
 * relevant tool is not in the top 5 (never the held-out ones).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildToolIndex } from '../../src/catalog/tool-search.js';
import { QUICK, ROOT, WRITE_DOCS } from '../lib/knobs.js';
import { figure, percentile, round } from '../lib/stats.js';
import { buildPlainBm25 } from './baseline.js';
import { corpusOf, corpusOfSize, loadListings, loadQueries, type LabelledQuery } from './corpus.js';
import { KINDS, KS, toolSearchLines, type Quality, type SpeedRow, type ToolSearchResults } from './lines.js';

export { toolSearchLines, type ToolSearchResults };

/** The rank (1-based) of the first relevant exposed name, or Infinity. */
function firstRank(ranked: readonly string[], relevant: readonly string[]): number {
  const i = ranked.findIndex((name) => relevant.includes(name));
  return i === -1 ? Number.POSITIVE_INFINITY : i + 1;
}

function quality(ranks: readonly number[]): Quality {
  const n = ranks.length;
  return {
    queries: n,
    recall: KS.map((k) => round(ranks.filter((r) => r <= k).length / Math.max(1, n))),
    mrr: round(ranks.reduce((s, r) => s + (Number.isFinite(r) ? 1 / r : 0), 0) / Math.max(1, n)),
  };
}

function groups(queries: readonly LabelledQuery[], ranks: readonly number[]): Record<string, Quality> {
  const pick = (f: (q: LabelledQuery) => boolean) => quality(ranks.filter((_, i) => f(queries[i]!)));
  const out: Record<string, Quality> = { all: pick(() => true), tune: pick((q) => q.split === 'tune'), held: pick((q) => q.split === 'held') };
  for (const kind of KINDS) {
    out[kind] = pick((q) => q.kind === kind);
    out[`${kind}/held`] = pick((q) => q.kind === kind && q.split === 'held');
  }
  return out;
}

/** Microseconds per call of `search` over every query, `rounds` times, after one warm-up pass. */
function timeSearches(search: (q: string) => unknown, queries: readonly string[], rounds: number): number[] {
  for (const q of queries) search(q);
  const times: number[] = [];
  for (let r = 0; r < rounds; r++)
    for (const q of queries) {
      const t0 = process.hrtime.bigint();
      search(q);
      times.push(Number(process.hrtime.bigint() - t0) / 1000);
    }
  return times;
}

export function benchToolSearch(log: (line: string) => void = () => undefined, misses = false): ToolSearchResults {
  const loadBefore = loadavg()[0]!;
  const listings = loadListings();
  const queries = loadQueries();
  const { tools, servers } = corpusOf(listings);
  const known = new Set(tools.map((t) => t.exposed));
  for (const q of queries) for (const r of q.relevant) if (!known.has(r)) throw new Error(`queries.json: ${q.id} names ${r}, which no captured listing has`);
  log(`tool search: ${queries.length} queries over ${listings.length} servers, ${tools.length} tools`);

  const engine = buildToolIndex(tools, servers);
  const plain = buildPlainBm25(tools);
  const mcpxRanks = queries.map((q) =>
    firstRank(
      engine.search(q.query, 10).map((h) => h.exposed),
      q.relevant,
    ),
  );
  const plainRanks = queries.map((q) =>
    firstRank(
      plain.search(q.query, 10).map((h) => h.exposed),
      q.relevant,
    ),
  );
  if (misses)
    queries.forEach((q, i) => {
      if (q.split === 'tune' && mcpxRanks[i]! > 5)
        log(
          `miss ${q.id} (${q.kind}) "${q.query}" → ${engine
            .search(q.query, 3)
            .map((h) => h.exposed)
            .join(', ')}; want ${q.relevant.join(', ')}`,
        );
    });

  const rounds = QUICK ? 5 : 20;
  const speed: SpeedRow[] = [];
  for (const size of [250, 1000]) {
    const c = corpusOfSize(listings, size);
    const builds: number[] = [];
    let index = buildToolIndex(c.tools, c.servers);
    for (let i = 0; i < (QUICK ? 5 : 15); i++) {
      const t0 = performance.now();
      index = buildToolIndex(c.tools, c.servers);
      builds.push(performance.now() - t0);
    }
    const base = buildPlainBm25(c.tools);
    const texts = queries.map((q) => q.query);
    const own = timeSearches((q) => index.search(q, 5), texts, rounds);
    const theirs = timeSearches((q) => base.search(q, 5), texts, rounds);
    speed.push({
      tools: size,
      buildMs: figure(builds),
      p50Us: round(percentile(own, 50), 1),
      p99Us: round(percentile(own, 99), 1),
      baselineP50Us: round(percentile(theirs, 50), 1),
      baselineP99Us: round(percentile(theirs, 99), 1),
    });
    log(`tool search at ${size} tools: build ${figure(builds).median} ms, p50 ${round(percentile(own, 50), 1)} µs`);
  }
  return {
    measuredAt: new Date().toISOString(),
    load: [round(loadBefore, 2), round(loadavg()[0]!, 2)],
    servers: listings.length,
    tools: tools.length,
    queries: queries.length,
    quality: { mcpx: groups(queries, mcpxRanks), bm25: groups(queries, plainRanks) },
    speed,
  };
}

async function main(): Promise<void> {
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const r: ToolSearchResults = benchToolSearch(log, process.argv.includes('--misses'));
  // What tools cost a client, through the built binary (--no-cost: quality and speed only).
  if (!process.argv.includes('--no-cost')) r.cost = await (await import('./cost.js')).benchToolCost(log);
  console.log(toolSearchLines(r).join('\n'));
  // Alone: this part of bench/results.json and the page again, the other sections as they were.
  const file = join(ROOT, 'bench', 'results.json');
  if (!existsSync(file) || process.argv.includes('--no-write')) return;
  const { computeTargets, writeReport } = await import('../report.js');
  const results = JSON.parse(readFileSync(file, 'utf8')) as import('../report.js').Results;
  results.toolSearch = r;
  results.targets = computeTargets(results);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  if (WRITE_DOCS) writeReport(results);
  log(`wrote bench/results.json${WRITE_DOCS ? ' and docs/benchmarks.md' : ''}`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
