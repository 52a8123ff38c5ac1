/**
 * SLOT_TRANSITIONS is enforced, not just documented: every status change of an instance slot goes through
 * one checked move, so a step that would put a slot somewhere the table does not allow fails loudly.
 */
import { describe, expect, it } from 'vitest';
import { acquire, initialContext, ready, SLOT_TRANSITIONS, stopAll, type PoolContext } from '../../src/pool/pool.machine.js';

const limits = { scope: 'global', sharing: 'shared', max: 1, idleTimeoutMs: 60_000 } as const;

function startedSlot(): PoolContext {
  const c = acquire(initialContext({ server: 's', preference: 'prefer-discover', limits }), { requestId: 'r1', want: 'own', key: 'global' }).context;
  expect(c.instances.list().map((s) => s.status)).toEqual(['starting']);
  return c;
}

describe('instance slot moves', () => {
  it('legal moves follow the table: new → starting → ready (granted) → stopping', () => {
    let c = startedSlot();
    c = ready(c, 'i1', 'legacy', 0).context;
    expect(c.instances.get('i1')?.status).toBe('ready');
    expect(SLOT_TRANSITIONS.starting).toContain('ready');
    c = stopAll(c).context;
    expect(c.instances.get('i1')?.status).toBe('stopping');
  });

  it('a move the table forbids throws, naming the slot and both statuses', () => {
    const c = stopAll(startedSlot()).context;
    expect(c.instances.get('i1')?.status).toBe('stopping');
    expect(SLOT_TRANSITIONS.stopping).not.toContain('idle');
    expect(() => ready(c, 'i1', 'legacy', 0)).toThrow('pool: instance i1 cannot move from stopping to idle');
  });
});
