/**
 * The pool's persistent map (src/pool/hash-trie.ts): against a Map model under random operations,
 * with every earlier version left as it was, and with keys whose whole hashes collide.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HashTrie, hashOf } from '../../src/pool/hash-trie.js';

const sorted = <V>(t: HashTrie<V>) => [...t.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
const sortedMap = <V>(m: Map<string, V>) => [...m.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

/** Two keys with equal FNV-1a hashes (a birthday search over `k0`, `k1`, …). */
function collidingPair(): [string, string] {
  const seen = new Map<number, string>();
  for (let i = 0; ; i++) {
    const k = `k${i}`;
    const h = hashOf(k);
    const other = seen.get(h);
    if (other !== undefined) return [other, k];
    seen.set(h, k);
  }
}

describe('HashTrie', () => {
  it('sets, gets, replaces and deletes', () => {
    const e = HashTrie.empty<number>();
    const a = e.set('a', 1).set('b', 2);
    expect(a.size).toBe(2);
    expect(a.get('a')).toBe(1);
    expect(a.has('b')).toBe(true);
    expect(a.get('c')).toBeUndefined();
    const b = a.set('a', 3);
    expect(b.size).toBe(2);
    expect(b.get('a')).toBe(3);
    expect(a.get('a')).toBe(1); // the earlier version is untouched
    const c = b.delete('a');
    expect(c.size).toBe(1);
    expect(c.has('a')).toBe(false);
    expect(b.has('a')).toBe(true);
    expect(e.size).toBe(0);
  });

  it('returns itself for a change that changes nothing', () => {
    const t = HashTrie.empty<number>().set('a', 1);
    expect(t.set('a', 1)).toBe(t);
    expect(t.delete('zz')).toBe(t);
    expect(t.delete('a').delete('a').size).toBe(0);
  });

  it('keeps keys with colliding hashes apart', () => {
    const [x, y] = collidingPair();
    expect(hashOf(x)).toBe(hashOf(y));
    let t = HashTrie.empty<string>().set(x, 'x').set(y, 'y').set('other', 'o');
    expect([t.get(x), t.get(y), t.get('other'), t.size]).toEqual(['x', 'y', 'o', 3]);
    t = t.set(y, 'y2');
    expect([t.get(x), t.get(y), t.size]).toEqual(['x', 'y2', 3]);
    const without = t.delete(x);
    expect([without.get(x), without.get(y), without.size]).toEqual([undefined, 'y2', 2]);
    expect(t.get(x)).toBe('x');
    expect(without.delete(y).delete('other').size).toBe(0);
  });

  it('holds thousands of keys, and copies little per change', () => {
    let t = HashTrie.empty<number>();
    for (let i = 0; i < 5_000; i++) t = t.set(`i${i}`, i);
    expect(t.size).toBe(5_000);
    for (let i = 0; i < 5_000; i += 7) expect(t.get(`i${i}`)).toBe(i);
    for (let i = 0; i < 5_000; i += 2) t = t.delete(`i${i}`);
    expect(t.size).toBe(2_500);
    expect([...t.values()].every((v) => v % 2 === 1)).toBe(true);
  });

  it('behaves like a Map, and every earlier version stays as it was (property)', () => {
    const key = fc.oneof(
      fc.constantFrom('a', 'b', 'c', 'i1', 'i2', 'call:1'),
      fc.string({ maxLength: 4 }),
      fc.integer({ min: 0, max: 300 }).map((n) => `r${n}`),
    );
    const op = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), key, value: fc.integer({ min: 0, max: 3 }) }),
      fc.record({ kind: fc.constant('delete' as const), key }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 400 }), (ops) => {
        let t = HashTrie.empty<number>();
        const model = new Map<string, number>();
        const history: Array<[HashTrie<number>, Array<[string, number]>]> = [];
        for (const o of ops) {
          if (o.kind === 'set') {
            t = t.set(o.key, o.value);
            model.set(o.key, o.value);
          } else {
            t = t.delete(o.key);
            model.delete(o.key);
          }
          expect(t.size).toBe(model.size);
          expect(t.get(o.key)).toBe(model.get(o.key));
          history.push([t, sortedMap(model)]);
        }
        expect(sorted(t)).toEqual(sortedMap(model));
        for (const [k, v] of model) expect(t.get(k)).toBe(v);
        for (const [version, content] of history) expect(sorted(version)).toEqual(content);
      }),
      { numRuns: 200 },
    );
  });
});
