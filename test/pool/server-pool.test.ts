/**
 * ServerPool behaviour over auto-answering simulated upstreams: scopes, sharing, eviction, idle stop,
 * crashes, start-failure backoff, waiting callers giving up, follow lanes, events and stop().
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { waiting } from '../../src/pool/pool.machine.js';
import type { EraCache, EraRecord } from '../../src/upstream/era-cache.js';
import { eraCacheKey } from '../../src/upstream/process-key.js';
import { AutoUpstream, settle, textOf } from '../support/auto-upstream.js';
import { LEGACY_CALLER, MODERN_CALLER, simPool, until, type SimPool } from './helpers.js';
import { callTool } from '../support/calls.js';

/** A record date within upstream.eraCacheMaxAge (older records are probed again). */
const RECENT = new Date(Date.now() - 60_000).toISOString();

const open: SimPool[] = [];
function make(...args: Parameters<typeof simPool>): SimPool {
  const p = simPool(...args);
  open.push(p);
  return p;
}
afterEach(async () => {
  await Promise.all(
    open.splice(0).map(async (p) => {
      for (const proc of p.up.processes) if (proc.stopping) proc.finishStop();
      await p.pool.stop();
      expect(p.up.alive(), 'no simulated process outlives its pool').toEqual([]);
    }),
  );
});

const held = (s: SimPool, tag: string, ctx = {}) => callTool(s.pool, 'hold', { tag }, ctx);

describe('scope: global', () => {
  it('shared: concurrent callers share one instance', async () => {
    const s = make({ limits: { scope: 'global', sharing: 'shared', max: 4 } });
    const calls = [held(s, 'a'), held(s, 'b'), held(s, 'c')];
    await until(() => s.up.held().length === 3, 2_000, 'three held calls');
    expect(s.up.processes).toHaveLength(1);
    expect(s.pool.instances()).toMatchObject([{ lane: 'own', scopeKey: 'global', state: 'ready', holders: 3, era: 'modern' }]);
    for (const t of ['a', 'b', 'c']) s.up.release(t);
    expect((await Promise.all(calls)).map(textOf)).toEqual(['held a', 'held b', 'held c']);
    expect(s.pool.instances()).toMatchObject([{ state: 'idle', holders: 0 }]);
  });

  it('exclusive: callers queue FIFO on the one instance; never a rival instance', async () => {
    const s = make({ limits: { scope: 'global', sharing: 'exclusive', max: 4 } });
    const order: string[] = [];
    const calls = ['a', 'b', 'c'].map((t) => held(s, t).then((r) => order.push(textOf(r))));
    await until(() => s.up.held().length === 1);
    expect(s.up.held()).toEqual(['a']);
    expect(waiting(s.pool.actor.getSnapshot().context).map((w) => w.requestId)).toEqual(['r2', 'r3']);
    s.up.release('a');
    await until(() => s.up.held().includes('b'));
    s.up.release('b');
    await until(() => s.up.held().includes('c'));
    s.up.release('c');
    await Promise.all(calls);
    expect(order).toEqual(['held a', 'held b', 'held c']);
    expect(s.up.processes).toHaveLength(1);
  });
});

describe('scope: session', () => {
  it('keys instances by the caller session; the same session reuses its instance', async () => {
    const s = make({ limits: { scope: 'session', max: 4 } });
    const a1 = await callTool(s.pool, 'whoami', {}, { session: 'alice' });
    const b1 = await callTool(s.pool, 'whoami', {}, { session: 'bob' });
    const a2 = await callTool(s.pool, 'whoami', {}, { session: 'alice' });
    expect(textOf(a1)).toBe(textOf(a2));
    expect(textOf(a1)).not.toBe(textOf(b1));
    expect(
      s.pool
        .instances()
        .map((i) => i.scopeKey)
        .sort(),
    ).toEqual(['alice', 'bob']);
  });

  it('a call without a session is refused with MCPX_BAD_REQUEST, before anything starts', async () => {
    const s = make({ limits: { scope: 'session' } });
    await expect(callTool(s.pool, 'echo', { text: 'x' })).rejects.toMatchObject({ code: 'MCPX_BAD_REQUEST', message: expect.stringContaining('session') });
    await expect(callTool(s.pool, 'echo', { text: 'x' }, { session: '  ' })).rejects.toMatchObject({ code: 'MCPX_BAD_REQUEST' });
    expect(s.up.processes).toHaveLength(0);
  });

  it('eviction: a new key in a full lane stops the least recently used idle instance', async () => {
    const s = make({ limits: { scope: 'session', max: 2 } });
    await callTool(s.pool, 'echo', { text: '1' }, { session: 'a' });
    await callTool(s.pool, 'echo', { text: '2' }, { session: 'b' });
    await callTool(s.pool, 'echo', { text: '3' }, { session: 'a' }); // b is now the least recently used
    const ids = Object.fromEntries(s.pool.instances().map((i) => [i.scopeKey, i.id]));
    await callTool(s.pool, 'echo', { text: '4' }, { session: 'c' });
    expect(s.stops()).toEqual([expect.objectContaining({ instance: ids.b, reason: 'evicted' })]);
    expect(
      s.pool
        .instances()
        .map((i) => i.scopeKey)
        .sort(),
    ).toEqual(['a', 'c']);
    expect(s.up.alive()).toHaveLength(2);
  });

  it('a new key in a lane full of busy instances waits for one to free up (limits hold)', async () => {
    const s = make({ limits: { scope: 'session', max: 2 } });
    const a = held(s, 'a', { session: 'a' });
    const b = held(s, 'b', { session: 'b' });
    await until(() => s.up.held().length === 2);
    const c = held(s, 'c', { session: 'c' });
    await settle();
    expect(s.up.processes).toHaveLength(2);
    s.up.release('a');
    await a;
    // a's instance is now idle: evicted for c, which starts once it is gone.
    await until(() => s.up.held().includes('c'));
    expect(s.up.alive()).toHaveLength(2);
    s.up.release('b');
    s.up.release('c');
    await Promise.all([b, c]);
    expect(s.stops().map((e) => e.reason)).toEqual(['evicted']);
  });
});

describe('scope: call', () => {
  it('each call gets a fresh instance, stopped as soon as the call ends', async () => {
    const s = make({ limits: { scope: 'call', max: 2 } });
    const first = await callTool(s.pool, 'whoami', {});
    await until(() => s.up.alive().length === 0);
    const second = await callTool(s.pool, 'whoami', {});
    expect(textOf(first)).not.toBe(textOf(second));
    await until(() => s.stops().length === 2);
    expect(s.stops().map((e) => e.reason)).toEqual(['call-finished', 'call-finished']);
    expect(s.pool.instances()).toEqual([]);
  });

  it('max bounds the calls in flight; the next waits for a process to be gone', async () => {
    const s = make({ limits: { scope: 'call', max: 2 } });
    const calls = ['a', 'b', 'c'].map((t) => held(s, t));
    await until(() => s.up.held().length === 2);
    await settle();
    expect(s.up.processes).toHaveLength(2);
    s.up.release('a');
    await until(() => s.up.held().includes('c'));
    expect(s.up.processes).toHaveLength(3);
    s.up.release('b');
    s.up.release('c');
    await Promise.all(calls);
  });
});

describe('idle stop', () => {
  it('an instance idle for idleTimeout is stopped; the next call starts a fresh one', async () => {
    const s = make({ limits: { scope: 'global', idleTimeoutMs: 40 } });
    const first = textOf(await callTool(s.pool, 'whoami', {}));
    await until(() => s.stops().length === 1, 2_000, 'idle stop');
    expect(s.stops()[0]).toMatchObject({ reason: 'idle' });
    expect(s.up.alive()).toEqual([]);
    const second = textOf(await callTool(s.pool, 'whoami', {}));
    expect(second).not.toBe(first);
  });

  it('a call before the timeout keeps the instance (the timer is re-armed after it)', async () => {
    // Time is the pool's SimulatedClock: no real sleep races the 60 ms timer, however busy the machine.
    const clock = new SimulatedClock();
    const s = make({ limits: { scope: 'global', idleTimeoutMs: 60 }, deps: { clock } });
    const first = textOf(await callTool(s.pool, 'whoami', {}));
    await settle();
    clock.increment(59);
    await settle();
    expect(s.stops(), 'not idle for 60 ms yet').toEqual([]);
    expect(textOf(await callTool(s.pool, 'whoami', {}))).toBe(first);
    await settle();
    clock.increment(59); // 118 ms after the first call, 59 after the second
    await settle();
    expect(s.stops(), 'the second call re-armed the timer').toEqual([]);
    clock.increment(1);
    await until(() => s.stops().length === 1, 5_000, 'idle stop');
    expect(s.stops()[0]).toMatchObject({ reason: 'idle' });
  });

  it('an idle alarm that rings while the instance is held does nothing; its release sets the next one', async () => {
    const clock = new SimulatedClock();
    const s = make({ limits: { scope: 'global', idleTimeoutMs: 60 }, deps: { clock } });
    await callTool(s.pool, 'whoami', {}); // idle from 0: its alarm is due at 60
    await settle();
    clock.increment(10);
    const call = held(s, 'a');
    await until(() => s.up.held().length === 1);
    clock.increment(60); // 70: the alarm rings, the instance is held
    await settle();
    expect(s.stops(), 'a held instance is not stopped').toEqual([]);
    expect(s.pool.instances()).toEqual([expect.objectContaining({ state: 'ready', holders: 1 })]);
    s.up.release('a');
    await call;
    await settle();
    clock.increment(59); // 129: idle for 59 since the release
    await settle();
    expect(s.stops()).toEqual([]);
    clock.increment(1);
    await until(() => s.stops().length === 1, 5_000, 'idle stop');
    expect(s.stops()[0]).toMatchObject({ reason: 'idle' });
  });
});

describe('crashes', () => {
  it('an instance that dies fails its calls in flight with a clear error; the next call restarts it', async () => {
    const s = make({ limits: { scope: 'global', sharing: 'shared' } });
    const inFlight = [held(s, 'a'), held(s, 'b')];
    await until(() => s.up.held().length === 2);
    const proc = s.up.processes[0]!;
    proc.crash(3);
    for (const err of await Promise.all(inFlight.map((call) => call.catch((e: unknown) => e)))) {
      expect(err).toMatchObject({ code: 'MCPX_TRANSPORT_CLOSED', data: expect.objectContaining({ pid: proc.pid }) });
      expect((err as Error).message).toMatch(/exited while this call was in flight \(exit, exit code 3\); the next call starts a fresh instance/);
    }
    expect(s.stops()).toEqual([expect.objectContaining({ reason: 'crashed: exit, exit code 3' })]);
    expect(s.pool.instances()).toEqual([]);
    expect(textOf(await callTool(s.pool, 'whoami', {}))).toBe(`era=modern pid=${s.up.processes[1]!.pid}`);
  });
});

describe('start-failure backoff', () => {
  it('the cooldown grows and is capped; acquires during it fail fast with the last error', async () => {
    // Cooldowns run on the pool's SimulatedClock: each boundary is checked to the millisecond, no sleeps.
    const clock = new SimulatedClock();
    let failing = true;
    const s = make({ upstream: { kind: 'dual', spawnFails: () => failing }, config: { backoff: { initialMs: 30, factor: 2, maxMs: 70 } }, deps: { clock } });
    const attempt = async () => callTool(s.pool, 'echo', { text: 'x' }).catch((e: { code: string; data?: { cooldownMs?: number } }) => e);
    const spawned = () => s.up.processes.length;
    const advance = async (ms: number) => {
      await settle();
      clock.increment(ms);
      await settle();
    };

    expect(await attempt()).toMatchObject({ code: 'MCPX_SPAWN_FAILED', data: { cooldownMs: 30, failures: 1 } });
    expect(spawned()).toBe(1);
    const fast = await attempt();
    expect(fast).toMatchObject({ code: 'MCPX_SPAWN_FAILED', data: { cooldownMs: 30 } });
    expect((fast as unknown as Error).message).toContain('30 ms cooldown');
    expect(spawned(), 'no new process during the cooldown').toBe(1);
    await advance(29);
    expect(await attempt()).toMatchObject({ data: { cooldownMs: 30, failures: 1 } });
    expect(spawned(), 'still cooling 1 ms before the end').toBe(1);

    await advance(1);
    expect(await attempt()).toMatchObject({ data: { cooldownMs: 60, failures: 2 } });
    expect(spawned()).toBe(2);
    await advance(59);
    expect(await attempt()).toMatchObject({ data: { cooldownMs: 60 } });
    expect(spawned()).toBe(2);

    await advance(1);
    expect(await attempt()).toMatchObject({ data: { cooldownMs: 70, failures: 3 } }); // 120 capped at 70
    await advance(70);
    expect(await attempt()).toMatchObject({ data: { cooldownMs: 70, failures: 4 } });
    expect(spawned()).toBe(4);

    failing = false;
    await advance(69);
    expect(await attempt(), 'still cooling').toMatchObject({ data: { cooldownMs: 70, failures: 4 } });
    await advance(1);
    expect(textOf(await callTool(s.pool, 'echo', { text: 'back' }))).toBe('back era=modern');
    expect(s.pool.actor.getSnapshot().context.lanes.own).toMatchObject({ failures: 0, cooling: false });
    expect(s.pool.actor.getSnapshot().value).toMatchObject({ running: { ownLane: 'healthy' } });
  });
});

describe('callers waiting for capacity', () => {
  it('honour their signal and timeout, and leave the queue', async () => {
    const s = make({ limits: { scope: 'global', sharing: 'exclusive' } });
    const first = held(s, 'first');
    await until(() => s.up.held().length === 1);

    const ac = new AbortController();
    const cancelled = held(s, 'cancelled', { signal: ac.signal });
    const timedOut = held(s, 'late', { timeoutMs: 30 });
    await settle();
    expect(waiting(s.pool.actor.getSnapshot().context)).toHaveLength(2);
    ac.abort(new Error('caller went away'));
    await expect(cancelled).rejects.toMatchObject({ code: 'MCPX_REQUEST_CANCELLED', message: expect.stringContaining('caller went away') });
    await expect(timedOut).rejects.toMatchObject({ code: 'MCPX_REQUEST_TIMEOUT', message: expect.stringContaining('waiting for a free instance') });
    expect(waiting(s.pool.actor.getSnapshot().context)).toEqual([]);

    s.up.release('first');
    await first;
    expect(textOf(await callTool(s.pool, 'echo', { text: 'next' }))).toBe('next era=modern');
    expect(s.up.calls.map((c) => c.args.tag ?? c.args.text)).toEqual(['first', 'next']);
  });

  it('an already aborted signal is refused before queueing', async () => {
    const s = make();
    await expect(callTool(s.pool, 'echo', { text: 'x' }, { signal: AbortSignal.abort() })).rejects.toMatchObject({ code: 'MCPX_REQUEST_CANCELLED' });
    expect(s.up.processes).toHaveLength(0);
  });

  it('timeoutMs also bounds the call itself (what is left after waiting)', async () => {
    const s = make();
    await expect(callTool(s.pool, 'hang', {}, { timeoutMs: 40 })).rejects.toMatchObject({ code: 'MCPX_REQUEST_TIMEOUT' });
    expect(s.pool.instances()).toMatchObject([{ holders: 0 }]);
  });
});

describe('follow: lanes', () => {
  it('dual server: legacy callers get a second, legacy session; modern callers the own one', async () => {
    const s = make({ preference: 'follow', upstream: { kind: 'dual' } });
    expect(textOf(await callTool(s.pool, 'whoami', {}, { callerProtocol: MODERN_CALLER }))).toMatch(/^era=modern /);
    expect(textOf(await callTool(s.pool, 'whoami', {}, { callerProtocol: LEGACY_CALLER }))).toMatch(/^era=legacy /);
    expect(textOf(await callTool(s.pool, 'whoami', {}))).toMatch(/^era=modern /); // no caller revision: modern
    expect(s.pool.instances().map((i) => [i.lane, i.era])).toEqual([
      ['own', 'modern'],
      ['legacy', 'legacy'],
    ]);
    // The legacy lane is forced: initialize only, no probe.
    expect(s.up.processes[1]!.received.slice(0, 2)).toEqual(['initialize', 'notifications/initialized']);
    expect(s.pool.protocolReport()).toMatchObject({ preference: 'follow', era: 'modern', eraSource: 'probe', legacyLane: { state: 'available' } });
  });

  it('dual server, a legacy caller first: the own lane is learned first, then the legacy lane serves it', async () => {
    const s = make({ preference: 'follow', upstream: { kind: 'dual' } });
    expect(s.pool.protocolReport()).toMatchObject({ era: null, legacyLane: { state: 'unused' } });
    expect(textOf(await callTool(s.pool, 'echo', { text: 'old' }, { callerProtocol: LEGACY_CALLER }))).toBe('old era=legacy');
    expect(s.pool.instances().map((i) => [i.lane, i.era])).toEqual([
      ['own', 'modern'],
      ['legacy', 'legacy'],
    ]);
  });

  it('legacy-only server: legacy callers use the own lane, which settled legacy — one process', async () => {
    const s = make({ preference: 'follow', upstream: { kind: 'legacy' } });
    expect(textOf(await callTool(s.pool, 'echo', { text: 'old' }, { callerProtocol: LEGACY_CALLER }))).toBe('old era=legacy');
    expect(textOf(await callTool(s.pool, 'echo', { text: 'new' }, { callerProtocol: MODERN_CALLER }))).toBe('new era=legacy');
    expect(s.up.processes).toHaveLength(1);
    expect(s.pool.protocolReport()).toMatchObject({ era: 'legacy', legacyLane: { state: 'unused' } });
  });

  it('modern-only server: the legacy lane is refused (remembered), legacy callers share the modern session', async () => {
    const s = make({ preference: 'follow', upstream: { kind: 'modern' } });
    await callTool(s.pool, 'echo', { text: 'warm' });
    expect(textOf(await callTool(s.pool, 'echo', { text: 'old' }, { callerProtocol: LEGACY_CALLER }))).toBe('old era=modern');
    expect(textOf(await callTool(s.pool, 'echo', { text: 'old2' }, { callerProtocol: '2024-11-05' }))).toBe('old2 era=modern');
    expect(s.up.processes).toHaveLength(2); // the own process, and the one legacy-lane attempt
    expect(s.up.alive()).toHaveLength(1);
    expect(s.pool.protocolReport().legacyLane).toMatchObject({ state: 'refused', reason: expect.stringContaining('force-initialize') });
    expect(s.pool.actor.getSnapshot().value).toMatchObject({ running: { legacyRoute: 'refused', legacyLane: 'healthy' } });
  });

  it('a legacy call that never finishes does not stall modern callers', async () => {
    const s = make({ preference: 'follow', upstream: { kind: 'dual' }, limits: { scope: 'global', sharing: 'exclusive' } });
    const stuck = callTool(s.pool, 'hang', {}, { callerProtocol: LEGACY_CALLER });
    await until(() => s.up.calls.some((c) => c.tool === 'hang'));
    expect(s.up.calls.find((c) => c.tool === 'hang')).toMatchObject({ era: 'legacy' });
    const modern = await Promise.all([1, 2, 3].map((n) => callTool(s.pool, 'echo', { text: `m${n}` }, { callerProtocol: MODERN_CALLER })));
    expect(modern.map(textOf)).toEqual(['m1 era=modern', 'm2 era=modern', 'm3 era=modern']);
    // Another legacy caller queues behind the stuck one (exclusive) and gives up on its own deadline.
    await expect(callTool(s.pool, 'echo', { text: 'old' }, { callerProtocol: LEGACY_CALLER, timeoutMs: 30 })).rejects.toMatchObject({
      code: 'MCPX_REQUEST_TIMEOUT',
    });
    await s.pool.stop();
    await expect(stuck).rejects.toMatchObject({ code: 'MCPX_POOL_STOPPED' });
  });

  it('eviction stays within a lane', async () => {
    const s = make({ preference: 'follow', upstream: { kind: 'dual' }, limits: { scope: 'session', max: 1 } });
    await callTool(s.pool, 'echo', { text: '1' }, { session: 'a', callerProtocol: MODERN_CALLER });
    await callTool(s.pool, 'echo', { text: '2' }, { session: 'a', callerProtocol: LEGACY_CALLER });
    const before = Object.fromEntries(s.pool.instances().map((i) => [i.lane, i.id]));
    await callTool(s.pool, 'echo', { text: '3' }, { session: 'b', callerProtocol: MODERN_CALLER });
    expect(s.stops()).toEqual([expect.objectContaining({ instance: before.own, lane: 'own', reason: 'evicted' })]);
    expect(s.pool.instances().map((i) => [i.lane, i.scopeKey])).toEqual([
      ['legacy', 'a'],
      ['own', 'b'],
    ]);
  });

  it('non-follow preferences have only the own lane, whatever the caller revision', async () => {
    const s = make({ preference: 'prefer-discover', upstream: { kind: 'dual' } });
    expect(textOf(await callTool(s.pool, 'echo', { text: 'old' }, { callerProtocol: LEGACY_CALLER }))).toBe('old era=modern');
    expect(s.pool.protocolReport().legacyLane).toBeNull();
    expect(s.up.processes).toHaveLength(1);
  });
});

describe('events, reports, era cache', () => {
  it('emits server.start (readyMs), session.state for each session transition, server.stop with the reason', async () => {
    const s = make({ limits: { scope: 'call' } });
    await callTool(s.pool, 'echo', { text: 'x' });
    await until(() => s.stops().length === 1);
    const start = s.events.find((e) => e.type === 'server.start');
    expect(start).toMatchObject({
      server: 'sim',
      instance: 'i1',
      lane: 'own',
      era: 'modern',
      negotiated: '2026-07-28',
      eraSource: 'probe',
      pid: s.up.processes[0]!.pid,
    });
    expect((start as { readyMs: number }).readyMs).toBeGreaterThanOrEqual(0);
    const states = s.events.filter((e) => e.type === 'session.state').map((e) => `${(e as { event: string }).event} → ${(e as { state: string }).state}`);
    expect(states).toEqual([
      'xstate.init → idle',
      'start → connecting.spawning',
      'transport.ready → connecting.discovering',
      'verdict.discover → ready',
      'stop → stopped',
    ]);
    expect(s.stops()).toEqual([{ type: 'server.stop', server: 'sim', instance: 'i1', lane: 'own', reason: 'call-finished' }]);
  });

  it('the own lane reads and writes the era cache; the legacy lane never touches it', async () => {
    const writes: Array<[string, EraRecord]> = [];
    const gets: string[] = [];
    const records = new Map<string, EraRecord>();
    const cache = {
      get: (k: string) => (gets.push(k), records.get(k)),
      usable: (k: string) => (gets.push(k), records.get(k)),
      set: async (k: string, r: EraRecord) => (writes.push([k, r]), void records.set(k, r)),
    } as unknown as EraCache;
    const s = make({ preference: 'follow', upstream: { kind: 'dual' }, deps: { cache } });
    const key = eraCacheKey({ command: 'simulated-server' });
    await callTool(s.pool, 'echo', { text: 'new' });
    await callTool(s.pool, 'echo', { text: 'old' }, { callerProtocol: LEGACY_CALLER });
    await until(() => writes.length === 1);
    expect(writes).toEqual([[key, expect.objectContaining({ era: 'modern', version: '2026-07-28', source: 'probe' })]]);
    expect(s.pool.protocolReport()).toMatchObject({ era: 'modern', cached: { era: 'modern' }, legacyLane: { state: 'available' } });
    const legacy = s.pool.instances().find((i) => i.lane === 'legacy');
    expect(legacy).toMatchObject({ era: 'legacy', eraSource: 'forced' });
  });

  it('a wrong cached era is reported as server.era.stale', async () => {
    const key = eraCacheKey({ command: 'simulated-server' });
    const stale: EraRecord = { era: 'legacy', version: '2025-11-25', at: RECENT, source: 'probe' };
    const cache = {
      get: (k: string) => (k === key ? stale : undefined),
      usable: (k: string) => (k === key ? stale : undefined),
      set: async () => undefined,
    } as unknown as EraCache;
    const s = make({ upstream: { kind: 'modern' }, deps: { cache } });
    await callTool(s.pool, 'echo', { text: 'x' });
    expect(s.events.filter((e) => e.type === 'server.era.stale')).toEqual([{ type: 'server.era.stale', server: 'sim', cached: stale, found: 'modern' }]);
  });

  it('a throwing event listener does not break the pool', async () => {
    const s = make();
    s.pool.on('event', () => {
      throw new Error('bad listener');
    });
    expect(textOf(await callTool(s.pool, 'echo', { text: 'x' }))).toBe('x era=modern');
  });
});

describe('stop()', () => {
  it('refuses waiters, stops every instance, and resolves only when every process is gone', async () => {
    const s = make({ upstream: { kind: 'dual', gatedStop: true }, limits: { scope: 'session', sharing: 'exclusive', max: 2 } });
    const a = held(s, 'a', { session: 'a' }).catch((e: unknown) => e);
    const b = held(s, 'b', { session: 'b' }).catch((e: unknown) => e);
    await until(() => s.up.held().length === 2);
    const waiter = held(s, 'a2', { session: 'a' });
    await settle();
    let done = false;
    const stopping = s.pool.stop().then(() => (done = true));
    await expect(waiter).rejects.toMatchObject({ code: 'MCPX_POOL_STOPPED' });
    await settle();
    expect(done).toBe(false);
    expect(s.up.processes.filter((p) => p.stopping)).toHaveLength(2);
    s.up.processes[0]!.finishStop();
    await settle();
    expect(done).toBe(false);
    s.up.processes[1]!.finishStop();
    await stopping;
    expect(s.up.alive()).toEqual([]);
    expect(await a).toMatchObject({ code: 'MCPX_POOL_STOPPED', message: 'sim: the pool was stopped while this call was in flight' });
    expect(await b).toMatchObject({ code: 'MCPX_POOL_STOPPED' });
    await expect(callTool(s.pool, 'echo', { text: 'x' })).rejects.toMatchObject({ code: 'MCPX_POOL_STOPPED' });
    expect(s.pool.actor.getSnapshot().value).toBe('stopped');
    expect(s.stops().map((e) => e.reason)).toEqual(['pool-stopped', 'pool-stopped']);
  });

  it('the session code loads on the first call, once; a pool stopped while it loads refuses that call, and starts nothing', async () => {
    const up = new AutoUpstream({ kind: 'dual' });
    let loads = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const loadSessionFactory = async () => {
      loads++;
      await gate;
      return up.sessionFactory();
    };
    const s = make({ deps: { sessionFactory: undefined, loadSessionFactory } });
    expect(loads).toBe(0); // building the pool loads nothing
    const first = callTool(s.pool, 'echo', { text: 'a' });
    const second = callTool(s.pool, 'echo', { text: 'b' });
    await settle();
    expect(s.pool.instances()).toEqual([]); // nothing starts before the factory is there
    release();
    expect((await Promise.all([first, second])).map(textOf)).toEqual(['a era=modern', 'b era=modern']);
    expect(await callTool(s.pool, 'echo', { text: 'c' }).then(textOf)).toBe('c era=modern');
    expect(loads).toBe(1); // the two first callers waited for the same load; the third found it loaded

    let late!: () => void;
    const lateGate = new Promise<void>((r) => (late = r));
    const t = make({ deps: { sessionFactory: undefined, loadSessionFactory: async () => (await lateGate, up.sessionFactory()) } });
    const call = callTool(t.pool, 'echo', { text: 'x' });
    await settle();
    await t.pool.stop();
    late();
    await expect(call).rejects.toMatchObject({ code: 'MCPX_POOL_STOPPED' });
    expect(t.pool.instances()).toEqual([]);
  });

  it('stops an instance that is still starting', async () => {
    const s = make({ upstream: { kind: 'dual', gatedStart: true } });
    const call = callTool(s.pool, 'echo', { text: 'x' });
    await settle();
    expect(s.pool.instances()).toMatchObject([{ state: 'starting' }]);
    await s.pool.stop();
    await expect(call).rejects.toMatchObject({ code: 'MCPX_POOL_STOPPED' });
    expect(s.pool.instances()).toEqual([]);
  });
});
