/**
 * The pool's instance slots as an immutable table with the lookups its decisions need in O(1): a slot
 * by id, the slot of a lane and scope key, the slot a caller holds, and per-lane counts.
 *
 * Why not a plain object copied on every event: the pool statechart's context must stay immutable
 * (xstate/graph replays paths from shared snapshots), and copying a table of N slots on every acquire
 * and release made each call cost O(N) — about 2 ms per call at 500 warm instances. Here a change copies
 * the O(log N) trie nodes on its key's path (./hash-trie.ts) and leaves the rest shared with the previous table.
 */
import type { Lane } from '../machines/preference.js';
import { HashTrie } from './hash-trie.js';
import type { Slot, SlotStatus } from './types.js';

export interface LaneCounts {
  /** Slots of the lane, stopping ones included (what the cap counts). */
  all: number;
  stopping: number;
}

const laneKey = (lane: Lane, key: string) => `${lane}\0${key}`;
const seqOf = (id: string) => Number(id.slice(1));

/**
 * Invariants it keeps (and throws on, as a bug in the pool, if broken): at most one slot per lane and
 * scope key; a caller holds at most one slot. Slots are values: `put` a changed copy, never mutate one
 * that is in a table.
 */
export class SlotTable {
  static readonly EMPTY = new SlotTable(HashTrie.empty(), HashTrie.empty(), HashTrie.empty(), {
    own: { all: 0, stopping: 0 },
    legacy: { all: 0, stopping: 0 },
  });

  private constructor(
    private readonly slots: HashTrie<Slot>,
    private readonly byKey: HashTrie<string>,
    private readonly byHolder: HashTrie<string>,
    private readonly counts: Readonly<Record<Lane, LaneCounts>>,
  ) {}

  get size(): number {
    return this.slots.size;
  }

  get(id: string): Slot | undefined {
    return this.slots.get(id);
  }

  /** The slot of a lane and scope key: the one a caller of that key is served by. */
  forKey(lane: Lane, key: string): Slot | undefined {
    const id = this.byKey.get(laneKey(lane, key));
    return id === undefined ? undefined : this.slots.get(id);
  }

  /** The slot a caller holds. */
  heldBy(requestId: string): Slot | undefined {
    const id = this.byHolder.get(requestId);
    return id === undefined ? undefined : this.slots.get(id);
  }

  count(lane: Lane): Readonly<LaneCounts> {
    return this.counts[lane];
  }

  /** Every slot, in start order (ids are `i<sequence>`). O(N log N): for listings and pool stop, not per call. */
  list(): Slot[] {
    return [...this.slots.values()].sort((a, b) => seqOf(a.id) - seqOf(b.id));
  }

  /** Add a slot, or replace one with a changed copy of itself (same id, lane and key). */
  put(slot: Slot): SlotTable {
    const old = this.slots.get(slot.id);
    let byKey = this.byKey;
    let byHolder = this.byHolder;
    let counts = this.counts;
    if (!old) {
      const k = laneKey(slot.lane, slot.key);
      if (byKey.get(k) !== undefined) throw new Error(`pool: a second ${slot.lane}-lane instance for key ${JSON.stringify(slot.key)}`);
      byKey = byKey.set(k, slot.id);
      counts = adjust(counts, slot.lane, 1, slot.status === 'stopping' ? 1 : 0);
      for (const h of slot.holders) byHolder = hold(byHolder, h, slot.id);
    } else {
      if (old.lane !== slot.lane || old.key !== slot.key) throw new Error(`pool: instance ${slot.id} cannot change lane or key`);
      if (old.holders !== slot.holders) byHolder = rehold(byHolder, slot.id, old.holders, slot.holders);
      const d = stoppingDelta(old.status, slot.status);
      if (d !== 0) counts = adjust(counts, slot.lane, 0, d);
    }
    return new SlotTable(this.slots.set(slot.id, slot), byKey, byHolder, counts);
  }

  remove(id: string): SlotTable {
    const old = this.slots.get(id);
    if (!old) return this;
    let byHolder = this.byHolder;
    for (const h of old.holders) byHolder = byHolder.delete(h);
    return new SlotTable(
      this.slots.delete(id),
      this.byKey.delete(laneKey(old.lane, old.key)),
      byHolder,
      adjust(this.counts, old.lane, -1, old.status === 'stopping' ? -1 : 0),
    );
  }

  /** Printable plain data (inspection, logs, test failure output): the slots by id, in start order. */
  toJSON(): Record<string, Slot> {
    return Object.fromEntries(this.list().map((s) => [s.id, s]));
  }
}

function hold(byHolder: HashTrie<string>, requestId: string, id: string): HashTrie<string> {
  const other = byHolder.get(requestId);
  if (other !== undefined && other !== id) throw new Error(`pool: caller ${requestId} would hold both ${other} and ${id}`);
  return byHolder.set(requestId, id);
}

/** The holder index after a slot's holders changed; a grant appends one and a release removes one, in O(holders). */
function rehold(byHolder: HashTrie<string>, id: string, was: readonly string[], now: readonly string[]): HashTrie<string> {
  if (now.length === was.length + 1 && was.every((h, i) => now[i] === h)) return hold(byHolder, now[now.length - 1]!, id);
  if (now.length === was.length - 1) {
    let i = 0;
    while (i < now.length && now[i] === was[i]) i++;
    if (now.every((h, j) => j < i || was[j + 1] === h)) return byHolder.delete(was[i]!);
  }
  const kept = new Set(now);
  const before = new Set(was);
  for (const h of was) if (!kept.has(h)) byHolder = byHolder.delete(h);
  for (const h of now) if (!before.has(h)) byHolder = hold(byHolder, h, id);
  return byHolder;
}

function stoppingDelta(from: SlotStatus, to: SlotStatus): number {
  return (to === 'stopping' ? 1 : 0) - (from === 'stopping' ? 1 : 0);
}

function adjust(counts: Readonly<Record<Lane, LaneCounts>>, lane: Lane, all: number, stopping: number): Readonly<Record<Lane, LaneCounts>> {
  const c = counts[lane];
  return { ...counts, [lane]: { all: c.all + all, stopping: c.stopping + stopping } };
}
