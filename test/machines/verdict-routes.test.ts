/** The verdict routing table compiler (src/machines/verdict-routes.ts): kinds in, xstate transitions out. */
import { describe, expect, it } from 'vitest';
import { verdictRoutes } from '../../src/machines/verdict-routes.js';

type Kind = 'a' | 'b' | 'c';
const routes = verdictRoutes<Kind, 'ok' | 'other'>();

describe('verdictRoutes', () => {
  it('makes one transition per row, a shared row guarded by every kind that names it, in table order', () => {
    const shared = { target: 'x', actions: 'note' } as const;
    expect(routes({ a: { target: 'y' }, b: shared, c: shared })).toEqual([
      { target: 'y', guard: { type: 'verdict', params: { is: ['a'] } } },
      { target: 'x', actions: 'note', guard: { type: 'verdict', params: { is: ['b', 'c'] } } },
    ]);
  });

  it("moves a row's condition into the guard and keeps each kind's rows in their order", () => {
    const fallback = { target: 'z' } as const;
    // `a` reaches the shared row only after its own conditional one, though `b` names it first.
    expect(routes({ b: fallback, a: [{ when: 'ok', target: 'y' }, fallback], c: { target: 'w', reenter: true } })).toEqual([
      { target: 'y', guard: { type: 'verdict', params: { is: ['a'], when: 'ok' } } },
      { target: 'z', guard: { type: 'verdict', params: { is: ['b', 'a'] } } },
      { target: 'w', reenter: true, guard: { type: 'verdict', params: { is: ['c'] } } },
    ]);
  });

  it('refuses two kinds that share rows in opposite orders', () => {
    const one = { target: 'x' } as const;
    const two = { target: 'y' } as const;
    expect(() => routes({ a: [one, two], b: [two, one], c: one })).toThrow(/opposite orders/);
  });
});
