/**
 * An immutable string-keyed map for the pool statechart's context: `set` and `delete` copy one bucket of
 * a 32-way split (N/32 entries) and share the rest with the map they came from, so a context that
 * changes one entry per event costs O(N/32) instead of O(N), and every earlier snapshot stays as it was.
 */
const BUCKETS = 32;

/** FNV-1a over the key: cheap, and spreads `i1`, `i2`, … and `call:1`, `call:2`, … evenly. */
function bucketOf(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % BUCKETS;
}

/** An immutable string-keyed map whose `set`/`delete` copy one bucket. */
export class BucketMap<V> {
  static empty<V>(): BucketMap<V> {
    return new BucketMap<V>(new Array<ReadonlyMap<string, V> | undefined>(BUCKETS).fill(undefined), 0);
  }

  private constructor(
    private readonly buckets: ReadonlyArray<ReadonlyMap<string, V> | undefined>,
    readonly size: number,
  ) {}

  get(key: string): V | undefined {
    return this.buckets[bucketOf(key)]?.get(key);
  }

  set(key: string, value: V): BucketMap<V> {
    const b = bucketOf(key);
    const next = new Map(this.buckets[b]);
    const had = next.has(key);
    next.set(key, value);
    const buckets = this.buckets.slice();
    buckets[b] = next;
    return new BucketMap(buckets, had ? this.size : this.size + 1);
  }

  delete(key: string): BucketMap<V> {
    const b = bucketOf(key);
    const old = this.buckets[b];
    if (!old?.has(key)) return this;
    const next = new Map(old);
    next.delete(key);
    const buckets = this.buckets.slice();
    buckets[b] = next.size > 0 ? next : undefined;
    return new BucketMap(buckets, this.size - 1);
  }

  *values(): IterableIterator<V> {
    for (const m of this.buckets) if (m) yield* m.values();
  }
}
