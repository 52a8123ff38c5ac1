/**
 * Model-based test of the pool statechart (src/pool/pool.machine.ts).
 *
 * For a few small pool configurations, xstate/graph walks the real machine: getShortestPaths reaches
 * every state the model can get into, where the events a state may take are what the world can do
 * next — a caller acquires (within a budget), a holder releases, a waiter gives up, a starting
 * instance becomes ready or fails, a live one crashes, a stopping one is gone, an idle timer or a
 * cooldown fires, the pool is stopped.
 *
 * 1. Every reachable state is checked against the pool's invariants (limits, one instance per key,
 *    exclusivity, no waiter left behind that could be served, the chart regions in step with context).
 * 2. A set of paths that together take every transition of the chart is replayed on a real ServerPool
 *    whose sessions run over gated simulated upstreams: each model event becomes the real stimulus
 *    (a call, a process coming up or failing or crashing, a stop completing, a signal aborting), and
 *    after every step the real pool must be where the model is. Coverage is measured from the real
 *    pool's own inspection, and every transition of the chart must have been taken.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { SimulatedClock, __unsafe_getAllOwnEventDescriptors, createActor, transition, type SnapshotFrom } from 'xstate';
import { getShortestPaths, type StatePath } from 'xstate/graph';
import type { Lane, Preference } from '../../src/machines/preference.js';
import type { Era } from '../../src/machines/versions.js';
import {
  isSettled,
  laneCap,
  waiting,
  needsNewInstance,
  poolMachine,
  usableSlot,
  type PoolContext,
  type PoolInput,
  type PoolMachineEvent,
} from '../../src/pool/pool.machine.js';
import { ServerPool } from '../../src/pool/server-pool.js';
import type { PoolLimits } from '../../src/pool/types.js';
import type { EraCache, EraRecord } from '../../src/upstream/era-cache.js';
import { AutoUpstream, settle } from '../support/auto-upstream.js';
import { allTransitions, transitionRecorder } from '../support/chart-coverage.js';
import { callTool } from '../support/calls.js';

/** A record date within upstream.eraCacheMaxAge (older records are probed again). */
const RECENT = new Date(Date.now() - 60_000).toISOString();

type Snap = SnapshotFrom<typeof poolMachine>;
type Path = StatePath<Snap, PoolMachineEvent>;

interface ModelConfig {
  name: string;
  preference: Preference;
  limits: PoolLimits;
  /** Scope keys callers use (ignored under scope call: each call has its own). */
  keys: string[];
  wants: Lane[];
  /** What an own-lane start settles on. */
  ownEra: Era;
  /** The era cache's hint at pool start. */
  cachedEra?: Era;
  /** Legacy-lane starts may be refused (MCPX_ERA_MISMATCH). */
  legacyRefusal: boolean;
  acquires: number;
  failures: number;
  crashes: number;
}

const limits = (l: Partial<PoolLimits>): PoolLimits => ({ scope: 'global', max: 1, sharing: 'shared', idleTimeoutMs: 60_000, ...l });

const CONFIGS: ModelConfig[] = [
  {
    name: 'follow · session · max 1 · exclusive · dual',
    preference: 'follow',
    limits: limits({ scope: 'session', sharing: 'exclusive' }),
    keys: ['a', 'b'],
    wants: ['own', 'legacy'],
    ownEra: 'modern',
    legacyRefusal: true,
    acquires: 2,
    failures: 1,
    crashes: 1,
  },
  {
    name: 'follow · session · max 2 · shared · cached modern · failing starts',
    preference: 'follow',
    limits: limits({ scope: 'session', max: 2 }),
    keys: ['a', 'b'],
    wants: ['own', 'legacy'],
    ownEra: 'modern',
    cachedEra: 'modern',
    legacyRefusal: false,
    acquires: 2,
    failures: 2,
    crashes: 0,
  },
  {
    name: 'prefer-discover · call · max 1',
    preference: 'prefer-discover',
    limits: limits({ scope: 'call' }),
    keys: [],
    wants: ['own'],
    ownEra: 'modern',
    legacyRefusal: false,
    acquires: 3,
    failures: 1,
    crashes: 1,
  },
  {
    name: 'follow · global · legacy-only server',
    preference: 'follow',
    limits: limits({ scope: 'global', sharing: 'exclusive' }),
    keys: ['global'],
    wants: ['legacy', 'own'],
    ownEra: 'legacy',
    legacyRefusal: false,
    acquires: 3,
    failures: 0,
    crashes: 0,
  },
];

const inputOf = (m: ModelConfig): PoolInput => ({ server: 'sim', preference: m.preference, limits: m.limits, cachedEra: m.cachedEra ?? null });

// ---- the model: what the world can do next ----

function modelEvents(m: ModelConfig) {
  return (s: Snap): PoolMachineEvent[] => {
    if (s.status !== 'active') return [];
    const c = s.context;
    const slots = c.instances.list();
    const events: PoolMachineEvent[] = [];
    if (c.stats.acquires < m.acquires) {
      const requestId = `r${c.stats.acquires + 1}`;
      const keys = m.limits.scope === 'call' ? [`call:${c.stats.acquires + 1}`] : m.keys;
      for (const key of keys) for (const want of m.wants) events.push({ type: 'acquire', requestId, want, key });
    }
    for (const slot of slots) {
      if (s.matches('running')) {
        for (const requestId of slot.holders) events.push({ type: 'release', requestId, at: 0 });
        if (slot.status === 'starting') {
          events.push({ type: 'instance.ready', id: slot.id, era: slot.lane === 'legacy' ? 'legacy' : m.ownEra, at: 0 });
          if (c.stats.failures < m.failures) {
            events.push({ type: 'instance.failed', id: slot.id, error: { code: 'MCPX_SPAWN_FAILED', message: 'spawn failed' } });
            if (slot.lane === 'legacy' && m.legacyRefusal)
              events.push({ type: 'instance.failed', id: slot.id, error: { code: 'MCPX_ERA_MISMATCH', message: 'refused initialize' } });
          }
        }
        if ((slot.status === 'ready' || slot.status === 'idle') && c.stats.crashes < m.crashes)
          events.push({ type: 'instance.exited', id: slot.id, reason: 'exit, exit code 3' });
        // Its idle alarm rings (the real pool's simulated clock stands still: releases come at 0 there too).
        if (slot.status === 'idle' && slot.idleAt !== null) events.push({ type: 'instance.idle', id: slot.id, at: slot.idleAt });
      }
      if (slot.status === 'stopping') events.push({ type: 'instance.stopped', id: slot.id });
    }
    if (s.matches('running')) {
      for (const w of waiting(c)) events.push({ type: 'cancel', requestId: w.requestId });
      for (const t of __unsafe_getAllOwnEventDescriptors(s)) if (t.startsWith('xstate.after.')) events.push({ type: t } as unknown as PoolMachineEvent);
      events.push({ type: 'stop' });
    }
    return events;
  };
}

/**
 * The abstraction the traversal and the replay use: the chart state and everything in context that
 * decides what happens next — slots with their LRU rank rather than the raw logical clock, and no
 * counters that only count (and no wording: the real pool's error messages differ from the model's).
 */
function abstractOf(s: Snap): Record<string, unknown> {
  const c = s.context;
  const slots = c.instances.list();
  const rank = [...slots].sort((a, b) => a.lastUsed - b.lastUsed).map((x) => x.id);
  const lane = (h: PoolContext['lanes']['own']) => ({ ...h, lastError: h.lastError?.code ?? null });
  return {
    value: s.value,
    status: s.status,
    instances: slots.map((x) => ({ id: x.id, lane: x.lane, key: x.key, status: x.status, holders: x.holders, era: x.era, lru: rank.indexOf(x.id) })),
    waiters: waiting(c).map(({ seq: _, ...w }) => w),
    nextInstance: c.nextInstance,
    ownEra: c.ownEra,
    lanes: { own: lane(c.lanes.own), legacy: lane(c.lanes.legacy) },
    legacyLane: c.legacyLane,
    legacyRefused: c.legacyRefusal !== null,
    acquires: c.stats.acquires,
    failures: c.stats.failures,
    crashes: c.stats.crashes,
  };
}
const serializeState = (s: Snap) => JSON.stringify(abstractOf(s));

// ---- invariants of every reachable state ----

function checkInvariants(s: Snap): string[] {
  const c = s.context;
  const bad: string[] = [];
  const slots = c.instances.list();
  for (const lane of ['own', 'legacy'] as const) {
    const mine = slots.filter((x) => x.lane === lane);
    if (mine.length > laneCap(c.config)) bad.push(`${lane} lane holds ${mine.length} > ${laneCap(c.config)}`);
    if (new Set(mine.map((x) => x.key)).size !== mine.length) bad.push(`two ${lane}-lane instances for one key`);
  }
  for (const x of slots) {
    if (c.config.sharing === 'exclusive' && x.holders.length > 1) bad.push(`${x.id} has ${x.holders.length} holders under exclusive`);
    if ((x.status === 'starting' || x.status === 'idle') && x.holders.length > 0) bad.push(`${x.id} is ${x.status} with holders`);
    if (x.status === 'ready' && x.holders.length === 0 && s.matches('running')) bad.push(`${x.id} is ready with no holder`);
    if (c.config.scope === 'call' && x.status === 'idle') bad.push(`${x.id}: a call-scope instance idles`);
  }
  const ids = [...waiting(c).map((w) => w.requestId), ...slots.flatMap((x) => x.holders)];
  if (new Set(ids).size !== ids.length) bad.push('a request is queued twice or both queued and holding');
  // Dispatch skips parked waiters whose key and routing did not change; a full dispatch must find nothing left to do.
  if (s.matches('running') && !isSettled(c)) bad.push('a full dispatch would still act (a waiter was skipped that should not have been)');
  for (const w of c.parked) if (needsNewInstance(c, w) !== null) bad.push(`${w.requestId} is parked but needs a new instance`);
  for (const w of waiting(c)) {
    if (usableSlot(c, w)) bad.push(`${w.requestId} waits although an instance could serve it`);
    const lane = needsNewInstance(c, w);
    if (lane !== null) {
      const inLane = slots.filter((x) => x.lane === lane);
      if (c.lanes[lane].cooling) bad.push(`${w.requestId} waits on a cooling lane instead of failing fast`);
      if (inLane.length < laneCap(c.config)) bad.push(`${w.requestId} waits although its lane has room`);
      if (inLane.some((x) => x.status === 'idle')) bad.push(`${w.requestId} waits although an idle instance could be evicted`);
    }
  }
  if (s.matches('running')) {
    const v = s.value as { running: Record<string, string> };
    if (v.running.ownLane !== (c.lanes.own.cooling ? 'coolingDown' : 'healthy')) bad.push('ownLane region out of step with context');
    if (v.running.legacyLane !== (c.lanes.legacy.cooling ? 'coolingDown' : 'healthy')) bad.push('legacyLane region out of step with context');
    if (v.running.legacyRoute !== c.legacyLane) bad.push('legacyRoute region out of step with context');
  } else if (waiting(c).length > 0) {
    bad.push('waiters left while stopping');
  }
  if (s.value === 'stopped' && slots.length > 0) bad.push('stopped with instances');
  return bad;
}

// ---- the chart's transitions, and which a run takes ----

const universe = allTransitions(poolMachine.root);
const takenByReplays = new Set<object>();
const recorder = (into: Set<object>) => transitionRecorder(into, universe);

/** The transitions a path takes, from a bare pool actor (no sessions, no I/O). */
function transitionsOf(m: ModelConfig, path: Path): Set<object> {
  const taken = new Set<object>();
  const actor = createActor(poolMachine, { input: inputOf(m), clock: new SimulatedClock(), inspect: recorder(taken) });
  actor.start();
  for (const step of path.steps) if ((step.event.type as string) !== 'xstate.init') actor.send(step.event);
  actor.stop();
  return taken;
}

function describePath(path: Path): string {
  return path.steps
    .map((st) => st.event as PoolMachineEvent & Record<string, unknown>)
    .filter((e) => (e.type as string) !== 'xstate.init')
    .map((e) => {
      if (e.type === 'acquire') return `acquire(${e.requestId} ${e.want} ${e.key})`;
      if (e.type === 'instance.failed') return `failed(${e.id} ${e.error.code.replace('MCPX_', '')})`;
      if (e.type.startsWith('xstate.after.')) return `after ${e.type.split('.')[2]}`;
      const arg = (e.id ?? e.requestId ?? '') as string;
      return arg ? `${e.type.replace('instance.', '')}(${arg})` : e.type;
    })
    .join(' → ');
}

// ---- replay on a real ServerPool over gated simulated upstreams ----

interface Sut {
  pool: ServerPool;
  up: AutoUpstream;
  calls: Map<string, { controller: AbortController; outcome: Promise<{ ok: true } | { ok: false; code: string }> }>;
  stopping: Promise<void> | undefined;
}

function newSut(m: ModelConfig): Sut {
  const up = new AutoUpstream({ kind: 'dual', gatedStart: true, gatedStop: true });
  const record: EraRecord | undefined = m.cachedEra
    ? { era: m.cachedEra, version: m.cachedEra === 'modern' ? '2026-07-28' : '2025-11-25', at: RECENT, source: 'probe' }
    : undefined;
  const cache = { get: () => record, usable: () => record, set: async () => undefined } as unknown as EraCache;
  const pool = new ServerPool(
    { name: 'sim', definition: { command: 'simulated-server' }, preference: m.preference, limits: m.limits, probeTimeoutMs: 60_000, startTimeoutMs: 600_000 },
    { sessionFactory: up.sessionFactory(), clock: new SimulatedClock(), inspect: recorder(takenByReplays), cache },
  );
  return { pool, up, calls: new Map(), stopping: undefined };
}

function execute(sut: Sut, e: PoolMachineEvent): void {
  const { pool, up } = sut;
  switch (e.type) {
    case 'acquire': {
      const controller = new AbortController();
      const scope = pool.config.limits.scope;
      const outcome = callTool(
        pool,
        'hold',
        { tag: e.requestId },
        {
          ...(scope === 'session' ? { session: e.key } : {}),
          ...(e.want === 'legacy' ? { callerProtocol: '2025-11-25' } : {}),
          signal: controller.signal,
        },
      ).then(
        () => ({ ok: true as const }),
        (err: { code: string }) => ({ ok: false as const, code: err.code }),
      );
      sut.calls.set(e.requestId, { controller, outcome });
      return;
    }
    case 'release':
      expect(up.release(e.requestId), `the upstream holds ${e.requestId}`).toBe(1);
      return;
    case 'cancel':
      sut.calls.get(e.requestId)!.controller.abort();
      return;
    case 'instance.ready': {
      const p = up.of(e.id);
      p.kind = e.era === 'legacy' && p.instance && pool.actor.getSnapshot().context.instances.get(e.id)?.lane === 'own' ? 'legacy' : 'dual';
      p.up();
      return;
    }
    case 'instance.failed': {
      const p = up.of(e.id);
      if (e.error.code === 'MCPX_ERA_MISMATCH') {
        p.kind = 'modern';
        p.up();
      } else {
        p.failSpawn();
      }
      return;
    }
    case 'instance.exited':
      up.of(e.id).crash(3);
      return;
    case 'instance.stopped':
      up.of(e.id).finishStop();
      return;
    case 'stop':
      sut.stopping = pool.stop();
      return;
    default:
      // Idle alarms and cooldown timers: delivered as the pool's clock would deliver them.
      pool.actor.send(e);
  }
}

async function teardown(sut: Sut): Promise<void> {
  let done = false;
  const stopped = (sut.stopping ?? sut.pool.stop()).then(() => (done = true));
  for (let i = 0; i < 100 && !done; i++) {
    for (const p of sut.up.processes) if (p.stopping) p.finishStop();
    await settle(2);
  }
  await stopped;
  expect(sut.up.alive(), 'no simulated process outlives the pool').toEqual([]);
  await Promise.all([...sut.calls.values()].map((c) => c.outcome));
}

async function replay(m: ModelConfig, path: Path): Promise<void> {
  const sut = newSut(m);
  try {
    for (const [i, step] of path.steps.entries()) {
      const e = step.event;
      if ((e.type as string) !== 'xstate.init') execute(sut, e);
      await settle();
      const model = step.state;
      // A failed or crashed instance's leftovers are cleaned up by the pool on its own: let those stops finish.
      for (const p of sut.up.processes) if (p.stopping && !model.context.instances.get(p.instance!)) p.finishStop();
      await settle();
      const real = sut.pool.actor.getSnapshot();
      expect(abstractOf(real), `after step ${i} (${e.type})`).toEqual(abstractOf(model));
      // Every instance the model holds as up has a live process; nothing else runs.
      const live = new Set(sut.up.alive().map((p) => p.instance));
      for (const slot of model.context.instances.list()) {
        if (slot.status === 'ready' || slot.status === 'idle') expect(live.has(slot.id), `${slot.id} runs`).toBe(true);
        // Holders are in a call the upstream is answering (a pool stop may already have cut them off).
        if (slot.status === 'ready') for (const h of slot.holders) expect(sut.up.held(), `${h} is in flight`).toContain(h);
      }
      for (const id of live) expect(model.context.instances.get(id!), `process of ${id} belongs to a slot`).toBeDefined();
      // A request that left the queue without holding was refused; its call says so.
      const prev = i > 0 ? path.steps[i - 1]!.state.context : undefined;
      for (const w of prev ? waiting(prev) : []) {
        const stillWaiting = waiting(model.context).some((x) => x.requestId === w.requestId);
        const holding = model.context.instances.list().some((x) => x.holders.includes(w.requestId));
        if (!stillWaiting && !holding && !(e.type === 'cancel' && e.requestId === w.requestId)) {
          const outcome = await sut.calls.get(w.requestId)!.outcome;
          expect(outcome.ok, `${w.requestId} was refused`).toBe(false);
        }
      }
    }
  } finally {
    await teardown(sut);
  }
}

// ---- the tests ----

interface Prepared {
  m: ModelConfig;
  paths: Path[];
  chosen: Path[];
  taken: Set<object>;
}

function prepare(m: ModelConfig): Prepared {
  const paths = getShortestPaths(poolMachine, {
    input: inputOf(m),
    events: modelEvents(m) as never,
    serializeState: serializeState as never,
  }) as unknown as Path[];
  // Greedy: the fewest paths that take every transition any path takes (longest contribution first).
  const per = paths.map((p) => ({ p, t: transitionsOf(m, p) }));
  const taken = new Set<object>();
  for (const { t } of per) for (const x of t) taken.add(x);
  const chosen: Path[] = [];
  const covered = new Set<object>();
  for (;;) {
    let best: { p: Path; t: Set<object> } | undefined;
    let gain = 0;
    for (const cand of per) {
      const g = [...cand.t].filter((x) => !covered.has(x)).length;
      if (g > gain) [best, gain] = [cand, g];
    }
    if (!best) break;
    chosen.push(best.p);
    for (const x of best.t) covered.add(x);
  }
  // Transitions that leave the abstract state unchanged (self-loops) lie on no shortest path: take the
  // edge from each reached state whose first step would take one not covered yet.
  const gen = modelEvents(m);
  for (const path of paths) {
    for (const e of gen(path.state)) {
      const first = poolMachine.getTransitionData(path.state as never, e as never) as object[];
      if (!first.some((t) => universe.has(t) && !covered.has(t))) continue;
      const [next] = transition(poolMachine, path.state, e);
      const extended: Path = { ...path, state: next, steps: [...path.steps, { state: next, event: e }], weight: path.weight + 1 };
      const t = transitionsOf(m, extended);
      for (const x of t) {
        covered.add(x);
        taken.add(x);
      }
      chosen.push(extended);
    }
  }
  // Plus a spread of other paths, for the replay to check more than one way through each transition.
  const stride = Math.max(1, Math.floor(paths.length / 12));
  for (let i = stride - 1; i < paths.length; i += stride) if (!chosen.includes(paths[i]!)) chosen.push(paths[i]!);
  return { m, paths, chosen, taken };
}

const prepared = CONFIGS.map(prepare);
const modelTaken = new Set<object>();
for (const p of prepared) for (const t of p.taken) modelTaken.add(t);

describe.each(prepared.map((p) => [p.m.name, p] as const))('pool model: %s', (_name, p) => {
  it('every reachable state keeps the invariants', () => {
    const problems = new Map<string, string>();
    for (const path of p.paths)
      for (const st of [path.state, ...path.steps.map((x) => x.state)]) for (const b of checkInvariants(st)) problems.set(b, describePath(path));
    expect([...problems].map(([b, via]) => `${b} (via ${via})`)).toEqual([]);
    expect(p.paths.length).toBeGreaterThan(10);
  });

  it.each(p.chosen.map((path) => [describePath(path), path] as const))('replay: %s', async (_d, path) => {
    await replay(p.m, path);
  });
});

afterAll(() => {
  const missingModel = [...universe].filter(([t]) => !modelTaken.has(t)).map(([, name]) => name);
  const missingReplay = [...universe].filter(([t]) => !takenByReplays.has(t)).map(([, name]) => name);
  const counts = prepared.map((p) => `${p.m.name}: ${p.paths.length} states, ${p.chosen.length} replayed`).join('; ');
  console.log(
    `[pool model] ${counts}; transitions: model ${universe.size - missingModel.length}/${universe.size}, replays ${universe.size - missingReplay.length}/${universe.size}`,
  );
  expect(missingModel, 'transitions no model path takes').toEqual([]);
  expect(missingReplay, 'transitions no replay took on the real pool').toEqual([]);
});
