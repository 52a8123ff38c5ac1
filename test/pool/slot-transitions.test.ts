/**
 * SLOT_TRANSITIONS is enforced, not just documented: every status change of an instance slot goes through
 * one checked move, so a step that would put a slot somewhere the table does not allow fails loudly.
 */
import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import type { ErrorCode } from '../../src/errors.js';
import { acquire, initialContext, poolMachine, ready, SLOT_TRANSITIONS, startFailed, stopAll, type PoolContext } from '../../src/pool/pool.machine.js';

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

describe('idle alarms', () => {
  it('the chart asks for an alarm when a slot goes idle, and stops it only when it is still idle and due', () => {
    const actor = createActor(poolMachine, { input: { server: 's', preference: 'prefer-discover', limits } }).start();
    const alarms: Array<{ id: string; at: number }> = [];
    actor.on('idle.alarm', (e) => alarms.push({ id: e.id, at: e.at }));
    const slot = () => actor.getSnapshot().context.instances.get('i1');
    actor.send({ type: 'acquire', requestId: 'r1', want: 'own', key: 'global' });
    actor.send({ type: 'instance.ready', id: 'i1', era: 'modern', at: 5 });
    actor.send({ type: 'release', requestId: 'r1', at: 10 });
    expect(slot()).toMatchObject({ status: 'idle', idleAt: 60_010 });
    actor.send({ type: 'acquire', requestId: 'r2', want: 'own', key: 'global' });
    expect(slot()).toMatchObject({ status: 'ready', idleAt: null });
    actor.send({ type: 'instance.idle', id: 'i1', at: 60_010 }); // held: a stale alarm
    expect(slot()?.status).toBe('ready');
    actor.send({ type: 'release', requestId: 'r2', at: 500 });
    expect(alarms).toEqual([
      { id: 'i1', at: 60_010 },
      { id: 'i1', at: 60_500 },
    ]);
    actor.send({ type: 'instance.idle', id: 'i1', at: 60_499 }); // idle, not for long enough yet
    expect(slot()?.status).toBe('idle');
    actor.send({ type: 'instance.idle', id: 'i1', at: 60_500 });
    expect(slot()?.status).toBe('stopping');
    actor.stop();
  });
});

describe('start failures that want a login', () => {
  it('do not back off: the callers waiting get the refusal, and the next acquire (after a login) starts afresh', () => {
    const failTwice = (code: ErrorCode) => {
      let c = startedSlot();
      c = startFailed(c, 'i1', { code, message: 'refused' }).context;
      c = { ...c, lanes: { ...c.lanes, own: { ...c.lanes.own, cooling: false } } }; // the cooldown ran out
      c = acquire(c, { requestId: 'r2', want: 'own', key: 'global' }).context;
      c = startFailed(c, c.instances.list()[0]!.id, { code, message: 'refused' }).context;
      return c.lanes.own;
    };
    expect(failTwice('MCPX_UPSTREAM_UNAUTHORIZED')).toMatchObject({ failures: 1, cooldownMs: 0, cooling: true });
    expect(failTwice('MCPX_SPAWN_FAILED')).toMatchObject({ failures: 2, cooldownMs: 2_000, cooling: true });
  });
});
