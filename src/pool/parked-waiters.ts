/**
 * Callers parked on their scope key's instance — it is starting, held exclusively, or stopping — kept
 * apart from the callers the pool must look at on every event.
 *
 * Why: a parked caller can only move when its key's instances or the pool's routing facts change, so
 * dispatch takes out just the callers of the keys an event touched. With every waiter in one list, each
 * event looked at all of them, and 1,000 callers starting at once cost O(callers²). Immutable like the
 * rest of the pool's context (see ./hash-trie.ts).
 */
import { HashTrie } from './hash-trie.js';
import type { Waiter } from './types.js';

export class ParkedWaiters {
  static readonly EMPTY = new ParkedWaiters(HashTrie.empty(), HashTrie.empty());

  private constructor(
    /** Parked callers by scope key, oldest first. */
    private readonly byKey: HashTrie<readonly Waiter[]>,
    /** The scope key each parked caller waits on. */
    private readonly keyOf: HashTrie<string>,
  ) {}

  get size(): number {
    return this.keyOf.size;
  }

  has(requestId: string): boolean {
    return this.keyOf.get(requestId) !== undefined;
  }

  add(w: Waiter): ParkedWaiters {
    const list = this.byKey.get(w.key) ?? [];
    return new ParkedWaiters(this.byKey.set(w.key, [...list, w]), this.keyOf.set(w.requestId, w.key));
  }

  remove(requestId: string): ParkedWaiters {
    const key = this.keyOf.get(requestId);
    if (key === undefined) return this;
    const rest = (this.byKey.get(key) ?? []).filter((w) => w.requestId !== requestId);
    return new ParkedWaiters(rest.length > 0 ? this.byKey.set(key, rest) : this.byKey.delete(key), this.keyOf.delete(requestId));
  }

  /** The callers parked on a key (oldest first), and the table without them. */
  take(key: string): [readonly Waiter[], ParkedWaiters] {
    const list = this.byKey.get(key);
    if (!list) return [[], this];
    let keyOf = this.keyOf;
    for (const w of list) keyOf = keyOf.delete(w.requestId);
    return [list, new ParkedWaiters(this.byKey.delete(key), keyOf)];
  }

  /** Every parked caller, oldest first. O(N log N): for a full look, pool stop and tests. */
  list(): Waiter[] {
    const all: Waiter[] = [];
    for (const l of this.byKey.values()) all.push(...l);
    return all.sort((a, b) => a.seq - b.seq);
  }

  /** Printable plain data: the parked callers, oldest first. */
  toJSON(): Waiter[] {
    return this.list();
  }
}
