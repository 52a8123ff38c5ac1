/**
 * The reconciliation rules (src/pool/reconciler.ts) on fake pools: the plan, one apply per run (the
 * era-cache switch included), runs and reloads one at a time, callers of a changing server waiting for
 * its new pool, busy servers deferred and caught up when their last call ends or their instances stop.
 */
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { PoolRegistry } from '../../src/pool/pool-registry.js';
import type { ServerPool } from '../../src/pool/server-pool.js';
import type { PoolServerConfig } from '../../src/pool/types.js';
import { planReconcile, Reconciler } from '../../src/pool/reconciler.js';

function cfg(name: string, over: Partial<PoolServerConfig> = {}): PoolServerConfig {
  return {
    name,
    definition: { command: `sim-${name}` },
    preference: 'prefer-discover',
    limits: { scope: 'global', max: 4, sharing: 'shared', idleTimeoutMs: 60_000 },
    probeTimeoutMs: 1_000,
    eraCache: true,
    ...over,
  };
}

/** A pool with `live` instances whose stop takes until `release()` when `slowStop` is set. */
class FakePool extends EventEmitter {
  live = 0;
  stopped = false;
  slowStop: Promise<void> | null = null;
  constructor(readonly config: PoolServerConfig) {
    super();
  }
  get name(): string {
    return this.config.name;
  }
  instances(): unknown[] {
    return Array.from({ length: this.live }, () => ({}));
  }
  async stop(): Promise<void> {
    await this.slowStop;
    this.stopped = true;
  }
}

function setup(initial: PoolServerConfig[]) {
  const built: FakePool[] = [];
  const registry = new PoolRegistry({
    createPool: (config) => {
      const p = new FakePool(config);
      built.push(p);
      return p as unknown as ServerPool;
    },
  });
  let applies = 0;
  const apply = registry.apply.bind(registry);
  registry.apply = (configs) => {
    applies += 1;
    return apply(configs);
  };
  let desired = initial;
  let failure: Error | null = null;
  const r = new Reconciler({
    registry,
    desired: () => {
      if (failure) throw failure;
      return desired;
    },
    pool: (s) => registry.get(s),
    logger: silentLogger,
  });
  const pool = (name: string) => registry.get(name) as unknown as FakePool;
  return { r, registry, built, pool, applies: () => applies, want: (d: PoolServerConfig[]) => (desired = d), failWith: (err: Error | null) => (failure = err) };
}

const tick = () => new Promise((res) => setImmediate(res));
async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i += 1) await tick();
  expect(cond()).toBe(true);
}

describe('planReconcile', () => {
  const current = [cfg('same'), cfg('changed'), cfg('gone'), cfg('busy')];
  const desired = [cfg('same'), cfg('changed', { preference: 'prefer-initialize' }), cfg('new'), cfg('busy', { probeTimeoutMs: 5 })];

  it('keeps unchanged servers, changes the others; a reload does not defer', () => {
    const plan = planReconcile({ current, desired, busy: ['same', 'changed', 'gone', 'busy'] }, { deferBusy: false });
    expect(plan.configs).toEqual(desired);
    expect(plan.deferred).toEqual([]);
    expect(plan.changing.sort()).toEqual(['busy', 'changed', 'gone', 'new']);
  });

  it('with deferBusy a busy server that would change keeps its current config', () => {
    const plan = planReconcile({ current, desired, busy: ['busy', 'same'] }, { deferBusy: true });
    expect(plan.configs).toEqual([cfg('same'), cfg('changed', { preference: 'prefer-initialize' }), cfg('new'), cfg('busy')]);
    expect(plan.deferred).toEqual(['busy']);
    expect(plan.changing.sort()).toEqual(['changed', 'gone', 'new']);
  });

  it('the era-cache switch alone is a change', () => {
    const plan = planReconcile({ current: [cfg('a')], desired: [cfg('a', { eraCache: false })], busy: [] }, { deferBusy: false });
    expect(plan.changing).toEqual(['a']);
  });
});

describe('Reconciler', () => {
  it('switching the era cache replaces an idle pool with one apply', async () => {
    const t = setup([cfg('a'), cfg('b')]);
    expect(await t.r.reconcile({ deferBusy: true })).toMatchObject({ added: ['a', 'b'], deferred: [] });
    const first = t.pool('a');
    t.want([cfg('a', { eraCache: false }), cfg('b', { eraCache: false })]);
    const before = t.applies();
    const r = await t.r.reconcile({ deferBusy: true });
    expect(t.applies() - before).toBe(1);
    expect(r).toMatchObject({ added: [], replaced: ['a', 'b'], kept: [], deferred: [] });
    expect(first.stopped).toBe(true);
    expect(t.pool('a').config.eraCache).toBe(false);
  });

  it('runs one at a time, each planned when it starts', async () => {
    const t = setup([cfg('a')]);
    await t.r.reconcile({ deferBusy: false });
    let release!: () => void;
    t.pool('a').slowStop = new Promise<void>((res) => (release = res));
    t.want([cfg('a', { preference: 'prefer-initialize' })]);
    const one = t.r.reconcile({ deferBusy: false });
    await tick();
    t.want([cfg('a', { preference: 'prefer-initialize' }), cfg('b')]);
    const two = t.r.reconcile({ deferBusy: false });
    await tick();
    expect(t.applies()).toBe(2); // the second run has not started: it waits for the first
    release();
    expect(await one).toMatchObject({ replaced: ['a'] });
    expect(await two).toMatchObject({ added: ['b'], kept: ['a'] });
    expect(t.applies()).toBe(3);
  });

  it('a caller of a server being replaced waits, then gets the new pool', async () => {
    const t = setup([cfg('a')]);
    await t.r.reconcile({ deferBusy: false });
    const old = t.pool('a');
    let release!: () => void;
    old.slowStop = new Promise<void>((res) => (release = res));
    t.want([cfg('a', { preference: 'prefer-initialize' })]);
    const run = t.r.reconcile({ deferBusy: false });
    await tick();
    let ran = false;
    const call = t.r.withPool('a', async (p) => {
      ran = true;
      return p as unknown as FakePool;
    });
    await tick();
    expect(ran).toBe(false); // waits until the old pool is gone
    release();
    await run;
    const got = await call;
    expect(got).not.toBe(old);
    expect(got.config.preference).toBe('prefer-initialize');
  });

  it('defers a server with a call in flight and catches it up when the call ends', async () => {
    const t = setup([cfg('a'), cfg('b')]);
    await t.r.reconcile({ deferBusy: true });
    let finish!: () => void;
    const call = t.r.withPool('a', () => new Promise<void>((res) => (finish = res)));
    t.want([cfg('a', { preference: 'prefer-initialize' }), cfg('b', { preference: 'prefer-initialize' })]);
    const r = await t.r.reconcile({ deferBusy: true });
    expect(r).toMatchObject({ replaced: ['b'], deferred: ['a'] });
    expect(t.r.isDeferred('a')).toBe(true);
    expect(t.pool('a').config.preference).toBe('prefer-discover');
    finish();
    await call;
    await until(() => t.pool('a').config.preference === 'prefer-initialize');
    await until(() => !t.r.isDeferred('a'));
  });

  it('defers a server with live instances and catches it up when they stop', async () => {
    const t = setup([cfg('a')]);
    await t.r.reconcile({ deferBusy: true });
    t.pool('a').live = 1;
    t.want([cfg('a', { preference: 'prefer-initialize' })]);
    expect(await t.r.reconcile({ deferBusy: true })).toMatchObject({ deferred: ['a'] });
    t.r.instanceStopped('a'); // still one live: nothing happens
    await tick();
    await tick();
    expect(t.pool('a').config.preference).toBe('prefer-discover');
    t.pool('a').live = 0;
    t.r.instanceStopped('a');
    await until(() => t.pool('a').config.preference === 'prefer-initialize');
  });

  it('does nothing once stopped', async () => {
    const t = setup([cfg('a')]);
    t.r.stop();
    expect(await t.r.reconcile({ deferBusy: false })).toEqual({ added: [], removed: [], replaced: [], kept: [], failed: [], deferred: [] });
    expect(t.applies()).toBe(0);
  });

  it('a run whose configs cannot be resolved fails alone; the next one runs', async () => {
    const t = setup([cfg('a')]);
    t.failWith(new Error('no configs'));
    await expect(t.r.reconcile({ deferBusy: false })).rejects.toThrow('no configs');
    t.failWith(null);
    expect(await t.r.reconcile({ deferBusy: false })).toMatchObject({ added: ['a'] });
  });

  it('runs reloads one at a time', async () => {
    const t = setup([]);
    const order: string[] = [];
    let release!: () => void;
    const one = t.r.reload(async () => {
      order.push('one starts');
      await new Promise<void>((res) => (release = res));
      order.push('one ends');
    });
    const two = t.r.reload(async () => void order.push('two starts'));
    await tick();
    release();
    await Promise.all([one, two]);
    expect(order).toEqual(['one starts', 'one ends', 'two starts']);
  });
});
