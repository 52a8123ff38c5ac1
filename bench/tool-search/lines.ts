/**
 * The tool-search figures (bench/tool-search/quality.ts measures them) and their section of
 * docs/benchmarks.md: one table for quality, one for speed.
 */
import type { Figure } from '../lib/stats.js';

export const KS = [1, 3, 5, 10] as const;
export const KINDS = ['exact', 'paraphrase', 'task', 'server', 'ambiguous'] as const;

export interface Quality {
  queries: number;
  /** recall@k for k in KS, in that order. */
  recall: number[];
  mrr: number;
}

export interface SpeedRow {
  tools: number;
  buildMs: Figure;
  /** Per query, over every labelled query many times; microseconds. */
  p50Us: number;
  p99Us: number;
  baselineP50Us: number;
  baselineP99Us: number;
}

type Tokens = { cl100k_base: number; o200k_base: number };

/** What tools cost a client through the binary (bench/tool-search/cost.ts). */
export interface CostResults {
  tools: number;
  servers: number;
  /** Tokens of the initialize result (instructions included) plus the tools/list result. */
  connect: { all: Tokens; search: Tokens };
  /** Tokens of the tools/list result alone. */
  listing: { all: Tokens; search: Tokens };
  /** Tokens of the search connection's initialize result (the front's instructions). */
  instructions: Tokens;
  searchAnswer: { queries: number; limit: number } & Record<'cl100k_base' | 'o200k_base', { mean: number; p95: number; max: number }>;
  /** Upstream processes running before and after every labelled query was searched. */
  upstreamsDuringSearch: { before: number; after: number };
}

export interface ToolSearchResults {
  /** When this part was measured (it can be run alone, after the rest of the page). */
  measuredAt: string;
  /** The machine's load average (1 min) before and after: the times below move with it. */
  load: [number, number];
  servers: number;
  tools: number;
  queries: number;
  /** Engine → group (`all`, `tune`, `held`, `<kind>`, `<kind>/held`) → figures. */
  quality: Record<'mcpx' | 'bm25', Record<string, Quality>>;
  speed: SpeedRow[];
  cost?: CostResults;
}

const f2 = (x: number | undefined) => (x === undefined ? '–' : x.toFixed(2));

/** The section of docs/benchmarks.md: one table for quality, one for speed. */
export function toolSearchLines(r: ToolSearchResults | undefined): string[] {
  if (!r) return ['- (not measured in this run)'];
  const labels: Array<[string, string]> = [
    ['all', '**all**'],
    ['tune', 'tune split'],
    ['held', '**held-out split**'],
  ];
  for (const kind of KINDS) labels.push([kind, kind], [`${kind}/held`, `${kind}, held-out`]);
  const cells = (q: Quality | undefined) => (q ? [...q.recall.map(f2), f2(q.mrr)].join(' | ') : '– | – | – | – | –');
  const out = [
    `Measured ${r.measuredAt}. ${r.queries} labelled queries (bench/tool-search/queries.json) over ${r.tools} tools of ${r.servers} real servers' captured listings (bench/tool-search/listings). The labels were committed before the engine was tuned, and the engine was tuned on the tune half only: the held-out half is the figure to believe. A query is found at k when one of its relevant tools is among the first k. mcpx: BM25F over name words, title, description (first sentence weighted more), parameters and the server, Porter stems, general concept groups scored as one term, adjacent-word pairs, a multi-step query's later clauses counted less, coordination over the query's words. BM25: one field (name + description), plain words, k1 1.2, b 0.75.`,
    '',
    '| queries | n | mcpx R@1 | R@3 | R@5 | R@10 | MRR | BM25 R@1 | R@3 | R@5 | R@10 | MRR |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const [key, label] of labels)
    out.push(`| ${label} | ${r.quality.mcpx[key]?.queries ?? 0} | ${cells(r.quality.mcpx[key])} | ${cells(r.quality.bm25[key])} |`);
  out.push(
    '',
    `Index build and search time (limit 5; every labelled query, many times; µs per query; load average ${r.load[0].toFixed(1)} → ${r.load[1].toFixed(1)} on this machine, which the p99s follow):`,
    '',
    '| tools | build (mcpx) | mcpx p50 | mcpx p99 | BM25 p50 | BM25 p99 |',
    '|---:|---|---:|---:|---:|---:|',
  );
  for (const s of r.speed)
    out.push(
      `| ${s.tools} | ${s.buildMs.median.toFixed(1)} ms (${s.buildMs.min.toFixed(1)}–${s.buildMs.max.toFixed(1)}) | ${s.p50Us.toFixed(1)} | ${s.p99Us.toFixed(1)} | ${s.baselineP50Us.toFixed(1)} | ${s.baselineP99Us.toFixed(1)} |`,
    );
  const c = r.cost;
  if (c) {
    const pct = (a: number, b: number) => `${((100 * a) / b).toFixed(1)}%`;
    out.push(
      '',
      `What a client receives, through the built binary: the ${c.servers} captured listings (${c.tools} tools) behind one daemon, an SDK v1 client through \`mcpx serve --tools all\` and \`--tools search\`; tokens (js-tiktoken) of the initialize result (with the front's instructions) and the \`tools/list\` result, and of each of the ${c.searchAnswer.queries} labelled queries' \`search_tools\` answer at limit ${c.searchAnswer.limit}. Upstream processes running while every query was searched on a restarted daemon: ${c.upstreamsDuringSearch.before} before, ${c.upstreamsDuringSearch.after} after.`,
      '',
      '| tokens | cl100k_base | o200k_base |',
      '|---|---:|---:|',
      `| \`all\`: tools/list | ${c.listing.all.cl100k_base} | ${c.listing.all.o200k_base} |`,
      `| \`search\`: tools/list (the three tools) | ${c.listing.search.cl100k_base} (${pct(c.listing.search.cl100k_base, c.listing.all.cl100k_base)}) | ${c.listing.search.o200k_base} (${pct(c.listing.search.o200k_base, c.listing.all.o200k_base)}) |`,
      `| \`search\`: at connect, instructions included | ${c.connect.search.cl100k_base} (${pct(c.connect.search.cl100k_base, c.connect.all.cl100k_base)} of \`all\`'s ${c.connect.all.cl100k_base}) | ${c.connect.search.o200k_base} (${pct(c.connect.search.o200k_base, c.connect.all.o200k_base)}) |`,
      `| a \`search_tools\` answer, limit ${c.searchAnswer.limit}: mean / p95 / max | ${c.searchAnswer.cl100k_base.mean} / ${c.searchAnswer.cl100k_base.p95} / ${c.searchAnswer.cl100k_base.max} | ${c.searchAnswer.o200k_base.mean} / ${c.searchAnswer.o200k_base.p95} / ${c.searchAnswer.o200k_base.max} |`,
    );
  }
  return out;
}
