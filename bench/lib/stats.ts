/** Order statistics for the benchmarks: medians of runs, percentiles of one run's latencies. */

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** The p-th percentile (0–100), nearest rank. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const rank = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[rank]!;
}

/** A figure measured over several runs: the median, and the spread (lowest, highest run). */
export interface Figure {
  median: number;
  min: number;
  max: number;
  runs: number[];
}

export function figure(runs: readonly number[]): Figure {
  return { median: round(median(runs)), min: round(Math.min(...runs)), max: round(Math.max(...runs)), runs: runs.map(round) };
}

export function round(x: number, digits = 3): number {
  if (!Number.isFinite(x)) return x;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** `1.23 ms (1.10–1.40)` */
export function showMs(f: Figure | undefined, digits = 2): string {
  if (!f) return '–';
  return `${f.median.toFixed(digits)} ms (${f.min.toFixed(digits)}–${f.max.toFixed(digits)})`;
}

export function showRate(f: Figure | undefined): string {
  if (!f) return '–';
  return `${Math.round(f.median)}/s (${Math.round(f.min)}–${Math.round(f.max)})`;
}
