/**
 * "Did you mean …?": the nearest known name to a mistyped one, in the same words at every level of the
 * config and the settings. A module of its own, importing nothing, so every reader of names can use it.
 */

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i += 1) {
    let prev = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j += 1) {
      const cur = row[j] as number;
      row[j] = Math.min(cur + 1, (row[j - 1] as number) + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length] as number;
}

/** The nearest of `candidates` to `name` when it is close enough to be a typo. */
export function closest(name: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  const n = name.toLowerCase();
  for (const c of candidates) {
    const d = editDistance(n, c.toLowerCase());
    if (d < bestD) {
      best = c;
      bestD = d;
    }
  }
  return best !== undefined && bestD <= Math.max(2, Math.floor(name.length / 4)) ? best : undefined;
}

/** ` (did you mean X?)` when `name` is one typo away from one of `known`, else nothing: the same words at every level. */
export function didYouMean(name: string, known: Iterable<string>): string {
  const near = closest(name, known);
  return near === undefined ? '' : ` (did you mean ${near}?)`;
}
