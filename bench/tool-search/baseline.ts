/**
 * The baseline the issue measures against: plain BM25 over one field (name + description), lower-cased
 * words split at anything but letters and digits, no stemming, stop words or related words; k1 1.2, b 0.75.
 */
import type { SearchableTool } from '../../src/catalog/tool-search.js';

const K1 = 1.2;
const B = 0.75;

const tokens = (text: string): string[] =>
  text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);

export interface PlainHit {
  exposed: string;
  score: number;
}

export function buildPlainBm25(tools: readonly SearchableTool[]): { search(query: string, limit?: number): PlainHit[] } {
  const docs = tools.map((t) => tokens(`${t.name} ${t.description ?? ''}`));
  const n = docs.length;
  const avg = docs.reduce((s, d) => s + d.length, 0) / Math.max(1, n);
  const postings = new Map<string, Array<[number, number]>>();
  docs.forEach((d, i) => {
    const tf = new Map<string, number>();
    for (const t of d) tf.set(t, (tf.get(t) ?? 0) + 1);
    for (const [t, f] of tf) {
      const list = postings.get(t) ?? [];
      list.push([i, f]);
      postings.set(t, list);
    }
  });
  return {
    search(query: string, limit = 5): PlainHit[] {
      const scores = new Map<number, number>();
      for (const t of new Set(tokens(query))) {
        const list = postings.get(t);
        if (!list) continue;
        const idf = Math.log(1 + (n - list.length + 0.5) / (list.length + 0.5));
        for (const [doc, f] of list) {
          const norm = f / (f + K1 * (1 - B + (B * docs[doc]!.length) / avg));
          scores.set(doc, (scores.get(doc) ?? 0) + idf * norm * (K1 + 1));
        }
      }
      return [...scores]
        .sort((a, b) => b[1] - a[1] || a[0] - b[0])
        .slice(0, limit)
        .map(([doc, score]) => ({ exposed: tools[doc]!.exposed, score }));
    },
  };
}
