/**
 * SlotTable: the pool's immutable slot table answers like a plain map it is checked against, after any
 * sequence of changes, and never changes a table an earlier snapshot still holds.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Slot, SlotStatus } from '../../src/pool/types.js';
import { SlotTable } from '../../src/pool/slot-table.js';

const slot = (n: number, over: Partial<Slot> = {}): Slot => ({
  id: `i${n}`,
  lane: n % 3 === 0 ? 'legacy' : 'own',
  key: `k${n}`,
  status: 'starting',
  holders: [],
  lastUsed: n,
  era: null,
  idleAt: null,
  ...over,
});

type Op =
  | { kind: 'add'; n: number }
  | { kind: 'status'; n: number; status: SlotStatus }
  | { kind: 'grant'; n: number; r: number }
  | { kind: 'release'; n: number }
  | { kind: 'remove'; n: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('add' as const), n: fc.integer({ min: 1, max: 80 }) }),
  fc.record({
    kind: fc.constant('status' as const),
    n: fc.integer({ min: 1, max: 80 }),
    status: fc.constantFrom<SlotStatus>('starting', 'ready', 'idle', 'stopping'),
  }),
  fc.record({ kind: fc.constant('grant' as const), n: fc.integer({ min: 1, max: 80 }), r: fc.integer({ min: 1, max: 10_000 }) }),
  fc.record({ kind: fc.constant('release' as const), n: fc.integer({ min: 1, max: 80 }) }),
  fc.record({ kind: fc.constant('remove' as const), n: fc.integer({ min: 1, max: 80 }) }),
);

describe('SlotTable', () => {
  it('answers every lookup like a plain map after any sequence of changes, and leaves earlier tables as they were', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300 }), (ops) => {
        let table = SlotTable.EMPTY;
        const model = new Map<string, Slot>();
        const history: Array<{ table: SlotTable; model: Slot[] }> = [];
        let nextRequest = 0;
        for (const o of ops) {
          const id = `i${o.n}`;
          const cur = model.get(id);
          if (o.kind === 'add' && !cur) {
            const s = slot(o.n);
            model.set(id, s);
            table = table.put(s);
          } else if (o.kind === 'status' && cur) {
            const s = { ...cur, status: o.status };
            model.set(id, s);
            table = table.put(s);
          } else if (o.kind === 'grant' && cur) {
            const s = { ...cur, holders: [...cur.holders, `r${o.r}-${++nextRequest}`] };
            model.set(id, s);
            table = table.put(s);
          } else if (o.kind === 'release' && cur && cur.holders.length > 0) {
            const gone = cur.holders[Math.floor(cur.holders.length / 2)];
            const s = { ...cur, holders: cur.holders.filter((h) => h !== gone) };
            model.set(id, s);
            table = table.put(s);
          } else if (o.kind === 'remove' && cur) {
            model.delete(id);
            table = table.remove(id);
          }
          history.push({ table, model: [...model.values()].map((s) => ({ ...s, holders: [...s.holders] })) });
        }
        // Every table in the history still answers as the model did at that point.
        for (const { table: t, model: m } of history) {
          expect(t.size).toBe(m.length);
          expect(t.list().map((s) => s.id)).toEqual(m.map((s) => s.id).sort((a, b) => Number(a.slice(1)) - Number(b.slice(1))));
          for (const s of m) {
            expect(t.get(s.id)).toEqual(s);
            expect(t.forKey(s.lane, s.key)?.id).toBe(s.id);
            for (const h of s.holders) expect(t.heldBy(h)?.id).toBe(s.id);
          }
          for (const lane of ['own', 'legacy'] as const) {
            const mine = m.filter((s) => s.lane === lane);
            expect(t.count(lane)).toEqual({ all: mine.length, stopping: mine.filter((s) => s.status === 'stopping').length });
          }
          expect(t.get('i999')).toBeUndefined();
          expect(t.heldBy('nobody')).toBeUndefined();
        }
      }),
      { numRuns: 150 },
    );
  });

  it('refuses a second instance for one lane and key, a slot changing its key, and one caller holding two slots', () => {
    const t = SlotTable.EMPTY.put(slot(1, { key: 'a', holders: ['r1'] }));
    expect(() => t.put(slot(2, { key: 'a', lane: 'own' }))).toThrow('a second own-lane instance for key "a"');
    expect(() => t.put(slot(1, { key: 'b', holders: ['r1'] }))).toThrow('cannot change lane or key');
    expect(() => t.put(slot(2, { key: 'b', holders: ['r1'] }))).toThrow('caller r1 would hold both i1 and i2');
    // the legacy lane may have its own instance for the same key
    expect(t.put(slot(3, { key: 'a' })).forKey('legacy', 'a')?.id).toBe('i3');
  });

  it('prints as plain data: the slots by id, in start order', () => {
    const t = SlotTable.EMPTY.put(slot(10)).put(slot(2)).put(slot(7));
    expect(Object.keys(JSON.parse(JSON.stringify(t)))).toEqual(['i2', 'i7', 'i10']);
  });
});
