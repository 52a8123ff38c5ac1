/** The reconcile statechart on its own (src/pool/reconcile.machine.ts): events in, emitted effects out. */
import { createActor } from 'xstate';
import { describe, expect, it } from 'vitest';
import type { PoolServerConfig } from '../../src/pool/types.js';
import { reconcileMachine, type ReconcileEmitted, type ReconcileFacts } from '../../src/pool/reconcile.machine.js';

function cfg(name: string, over: Partial<PoolServerConfig> = {}): PoolServerConfig {
  return {
    name,
    definition: { command: `sim-${name}` },
    preference: 'prefer-discover',
    limits: { scope: 'global', max: 1, sharing: 'shared', idleTimeoutMs: 1_000 },
    probeTimeoutMs: 1_000,
    eraCache: true,
    ...over,
  };
}

function start() {
  const actor = createActor(reconcileMachine).start();
  const out: ReconcileEmitted[] = [];
  actor.on('*', (e) => out.push(e as ReconcileEmitted));
  const take = () =>
    out
      .splice(0)
      .map((e) => (e.type === 'done' ? { type: e.type, id: e.id, deferred: e.result.deferred } : 'id' in e ? { type: e.type, id: e.id } : { type: e.type }));
  const ctx = () => actor.getSnapshot().context;
  const state = () => actor.getSnapshot().value;
  return { actor, take, ctx, state };
}

const noChange: ReconcileFacts = { current: [cfg('a')], desired: [cfg('a')], busy: [] };
const result = { added: [], removed: [], replaced: [], kept: [], failed: [] };

describe('reconcileMachine', () => {
  it('asks for facts, applies the plan, and ends the run; changing servers are marked until applied', () => {
    const m = start();
    m.actor.send({ type: 'reconcile', id: 'r1', deferBusy: false });
    expect(m.take()).toEqual([{ type: 'facts.needed', id: 'r1' }]);
    m.actor.send({ type: 'facts', id: 'r1', facts: { current: [cfg('a'), cfg('b')], desired: [cfg('a', { eraCache: false }), cfg('c')], busy: [] } });
    expect(m.take()).toEqual([{ type: 'apply', id: 'r1' }]);
    expect(m.ctx().changing.sort()).toEqual(['a', 'b', 'c']);
    m.actor.send({ type: 'applied', id: 'r1', result });
    expect(m.take()).toEqual([{ type: 'done', id: 'r1', deferred: [] }]);
    expect(m.ctx().changing).toEqual([]);
    expect(m.state()).toEqual({ runs: 'idle', catchUp: 'idle' });
  });

  it('runs one at a time: a run asked for while another applies starts after it', () => {
    const m = start();
    m.actor.send({ type: 'reconcile', id: 'r1', deferBusy: false });
    m.actor.send({ type: 'facts', id: 'r1', facts: noChange });
    m.actor.send({ type: 'reconcile', id: 'r2', deferBusy: true });
    expect(m.take()).toEqual([
      { type: 'facts.needed', id: 'r1' },
      { type: 'apply', id: 'r1' },
    ]);
    m.actor.send({ type: 'facts', id: 'r2', facts: noChange }); // not its turn: ignored
    expect(m.take()).toEqual([]);
    m.actor.send({ type: 'applied', id: 'r1', result });
    expect(m.take()).toEqual([
      { type: 'done', id: 'r1', deferred: [] },
      { type: 'facts.needed', id: 'r2' },
    ]);
  });

  it('defers busy servers; a quiet deferred server gets one catch-up run on the next turn', () => {
    const m = start();
    m.actor.send({ type: 'reconcile', id: 'r1', deferBusy: true });
    m.actor.send({ type: 'facts', id: 'r1', facts: { current: [cfg('a')], desired: [cfg('a', { preference: 'prefer-initialize' })], busy: ['a'] } });
    m.actor.send({ type: 'applied', id: 'r1', result });
    expect(m.take().at(-1)).toEqual({ type: 'done', id: 'r1', deferred: ['a'] });
    m.actor.send({ type: 'server.quiet', server: 'other' });
    expect(m.take()).toEqual([]);
    m.actor.send({ type: 'server.quiet', server: 'a' });
    m.actor.send({ type: 'server.quiet', server: 'a' }); // already queued
    expect(m.take()).toEqual([{ type: 'catchUp.schedule' }]);
    m.actor.send({ type: 'catchUp.due' });
    expect(m.take()).toEqual([{ type: 'facts.needed', id: 'catch-up-1' }]);
  });

  it('a failed apply or failed facts end that run with an error and leave the deferred servers as they were', () => {
    const m = start();
    m.actor.send({ type: 'reconcile', id: 'r1', deferBusy: true });
    m.actor.send({ type: 'facts', id: 'r1', facts: { current: [cfg('a')], desired: [cfg('a', { preference: 'prefer-initialize' })], busy: ['a'] } });
    m.actor.send({ type: 'applied', id: 'r1', result });
    m.actor.send({ type: 'reconcile', id: 'r2', deferBusy: true });
    m.actor.send({ type: 'facts.failed', id: 'r2', error: new Error('bad') });
    m.actor.send({ type: 'reconcile', id: 'r3', deferBusy: true });
    m.actor.send({ type: 'facts', id: 'r3', facts: noChange });
    m.actor.send({ type: 'apply.failed', id: 'r3', error: new Error('worse') });
    expect(m.take().filter((e) => e.type === 'failed')).toEqual([
      { type: 'failed', id: 'r2' },
      { type: 'failed', id: 'r3' },
    ]);
    expect(m.ctx().deferred).toEqual(['a']);
    expect(m.ctx().changing).toEqual([]);
  });

  it('once stopped, runs do nothing and no catch-up is asked for', () => {
    const m = start();
    m.actor.send({ type: 'reconcile', id: 'r1', deferBusy: true });
    m.actor.send({ type: 'facts', id: 'r1', facts: { current: [cfg('a')], desired: [cfg('a', { preference: 'prefer-initialize' })], busy: ['a'] } });
    m.actor.send({ type: 'reconcile', id: 'r2', deferBusy: true });
    m.actor.send({ type: 'stop' });
    m.take();
    m.actor.send({ type: 'applied', id: 'r1', result }); // the run under way finishes
    expect(m.take()).toEqual([
      { type: 'done', id: 'r1', deferred: ['a'] },
      { type: 'done', id: 'r2', deferred: [] },
    ]);
    m.actor.send({ type: 'reconcile', id: 'r3', deferBusy: false });
    m.actor.send({ type: 'server.quiet', server: 'a' });
    expect(m.take()).toEqual([{ type: 'done', id: 'r3', deferred: [] }]);
  });
});
