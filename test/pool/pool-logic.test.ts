/**
 * The pool chart as the ServerPool runs it (`poolLogic`: lease transitions taken without xstate's
 * interpreter) against the chart itself (`poolMachine`): long seeded random runs of every event the
 * world can send, in several pool configurations, fed to both. After every event the two must agree on
 * the state value, the context, the events emitted and the transitions an inspector sees. The lease
 * shortcut must actually be taken (most acquires and releases), or this test proves nothing.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createActor, SimulatedClock, type Actor, type InspectionEvent, type SnapshotFrom } from 'xstate';
import type { Lane, Preference } from '../../src/machines/preference.js';
import {
  leaseStep,
  poolLogic,
  poolMachine,
  type PoolEmitted,
  type PoolInput,
  type PoolLogic,
  type PoolMachineEvent,
  type PoolContext,
} from '../../src/pool/pool.machine.js';
import type { PoolLimits } from '../../src/pool/types.js';

type Snap = SnapshotFrom<typeof poolMachine>;

/** mulberry32: a small seeded generator, so a failing run can be replayed from its seed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Side {
  actor: Actor<PoolLogic> | Actor<typeof poolMachine>;
  clock: SimulatedClock;
  emitted: PoolEmitted[];
  steps: string[];
}

/** One side: the chart itself (`poolMachine`), or the ServerPool's logic over it (`poolLogic`), with its inspector. */
function side(which: 'chart' | 'poolLogic', input: PoolInput): Side {
  const clock = new SimulatedClock();
  const emitted: PoolEmitted[] = [];
  const steps: string[] = [];
  const inspect = (ev: InspectionEvent) => {
    if (ev.type !== '@xstate.microstep') return;
    // The root is the pool actor itself (so the two sides' steps differ if either names another).
    const root = ev.rootId === (ev.actorRef as { sessionId?: string }).sessionId ? '' : ` (root ${ev.rootId})`;
    steps.push(`${ev._transitions.map((d) => `${d.source.id}/${d.eventType}`).join(',')}:${JSON.stringify((ev.snapshot as Snap).value)}${root}`);
  };
  const actor: Side['actor'] =
    which === 'chart' ? createActor(poolMachine, { input, clock, inspect }) : createActor(poolLogic(inspect), { input, clock, inspect });
  actor.on('*', (e) => emitted.push(e as PoolEmitted));
  actor.start();
  return { actor, clock, emitted, steps };
}

const pick = <T>(r: () => number, xs: readonly T[]): T | undefined => (xs.length === 0 ? undefined : xs[Math.floor(r() * xs.length)]);

/** One event the world could send now, chosen at random from the context (both sides' contexts are equal). */
function nextEvent(r: () => number, c: PoolContext, keys: string[], at: number, n: { req: number }): PoolMachineEvent | 'tick' {
  const slots = c.instances.list();
  const holders = slots.flatMap((s) => s.holders);
  const waiters = [...c.waiters, ...c.parked];
  const roll = r();
  if (roll < 0.3) return { type: 'acquire', requestId: `r${++n.req}`, want: (r() < 0.7 ? 'own' : 'legacy') as Lane, key: pick(r, keys)! };
  if (roll < 0.55) {
    const h = pick(r, holders);
    if (h) return { type: 'release', requestId: h, at };
    return { type: 'release', requestId: `r${n.req + 1000}`, at }; // a release of no one: the chart ignores it
  }
  if (roll < 0.62) {
    const w = pick(r, waiters);
    if (w) return { type: 'cancel', requestId: w.requestId };
  }
  const starting = slots.filter((s) => s.status === 'starting');
  if (roll < 0.78) {
    const s = pick(r, starting);
    if (s) {
      if (r() < 0.75) return { type: 'instance.ready', id: s.id, era: s.lane === 'legacy' || r() < 0.3 ? 'legacy' : 'modern', at };
      const refused = s.lane === 'legacy' && r() < 0.5;
      return { type: 'instance.failed', id: s.id, error: { code: refused ? 'MCPX_ERA_MISMATCH' : 'MCPX_SPAWN_FAILED', message: 'simulated' } };
    }
  }
  if (roll < 0.83) {
    const s = pick(
      r,
      slots.filter((x) => x.status === 'ready' || x.status === 'idle'),
    );
    if (s) return { type: 'instance.exited', id: s.id, reason: 'simulated crash' };
  }
  if (roll < 0.92) {
    const s = pick(
      r,
      slots.filter((x) => x.status === 'stopping'),
    );
    if (s) return { type: 'instance.stopped', id: s.id };
  }
  if (roll < 0.97) {
    const s = pick(
      r,
      slots.filter((x) => x.status === 'idle' && x.idleAt !== null),
    );
    if (s) return { type: 'instance.idle', id: s.id, at: s.idleAt! + (r() < 0.8 ? 0 : -1) };
  }
  if (roll < 0.995) return 'tick'; // cooldowns end on the simulated clock
  return { type: 'stop' };
}

const CONFIGS: Array<{ name: string; preference: Preference; limits: PoolLimits; keys: string[] }> = [
  { name: 'global shared, auto', preference: 'auto', limits: { scope: 'global', sharing: 'shared', max: 1, idleTimeoutMs: 1_000 }, keys: ['global'] },
  { name: 'global shared, follow', preference: 'follow', limits: { scope: 'global', sharing: 'shared', max: 1, idleTimeoutMs: 1_000 }, keys: ['global'] },
  {
    name: 'session exclusive, max 2, follow',
    preference: 'follow',
    limits: { scope: 'session', sharing: 'exclusive', max: 2, idleTimeoutMs: 1_000 },
    keys: ['a', 'b', 'c'],
  },
  {
    name: 'session shared, max 3',
    preference: 'prefer-discover',
    limits: { scope: 'session', sharing: 'shared', max: 3, idleTimeoutMs: 500 },
    keys: ['a', 'b'],
  },
  { name: 'call scope', preference: 'auto', limits: { scope: 'call', sharing: 'shared', max: 2, idleTimeoutMs: 1_000 }, keys: ['call'] },
];

describe('poolLogic takes the chart’s lease steps directly, and nothing else changes', () => {
  for (const cfg of CONFIGS) {
    it(`${cfg.name}: 40 seeded runs of 400 events agree with the chart after every event`, () => {
      let shortcuts = 0;
      let leases = 0;
      for (let seed = 1; seed <= 40; seed += 1) {
        const r = rng(seed * 7919);
        const input: PoolInput = { server: 's', preference: cfg.preference, limits: cfg.limits, backoff: { initialMs: 100, factor: 2, maxMs: 400 } };
        const chart = side('chart', input);
        const fast = side('poolLogic', input);
        const n = { req: 0 };
        let at = 0;
        for (let i = 0; i < 400; i += 1) {
          const before = chart.actor.getSnapshot();
          if (before.status !== 'active') break;
          const keyOf = (k: string) => (cfg.limits.scope === 'call' ? `call:${n.req + 1}` : k);
          const ev = nextEvent(r, before.context, cfg.keys.map(keyOf), at, n);
          const where = `seed ${seed}, event ${i}: ${JSON.stringify(ev)}`;
          if (ev === 'tick') {
            at += 150;
            chart.clock.increment(150);
            fast.clock.increment(150);
          } else {
            if (ev.type === 'acquire' || ev.type === 'release') {
              leases += 1;
              if (leaseStep(fast.actor.getSnapshot(), ev) !== undefined) shortcuts += 1;
            }
            chart.actor.send(ev);
            fast.actor.send(ev);
          }
          const a = chart.actor.getSnapshot();
          const b = fast.actor.getSnapshot();
          expect(b.status, where).toBe(a.status);
          expect(b.value, where).toEqual(a.value);
          expect(b.context, where).toEqual(a.context);
          expect(fast.emitted, where).toEqual(chart.emitted);
          expect(fast.steps, where).toEqual(chart.steps);
        }
        chart.actor.stop();
        fast.actor.stop();
      }
      expect(leases).toBeGreaterThan(2_000);
      // A release of no one, and an acquire once the pool stops, go through the chart; the rest is the shortcut.
      expect(shortcuts / leases).toBeGreaterThan(0.6);
    });
  }
});

describe('poolLogic is xstate’s public custom-logic interface over the chart', () => {
  it('is a plain ActorLogic object (not derived from the machine) and the pool reads no private part of xstate', () => {
    const logic = poolLogic();
    expect(Object.getPrototypeOf(logic)).toBe(Object.prototype);
    expect(Object.keys(logic).sort()).toEqual(['config', 'getInitialSnapshot', 'getPersistedSnapshot', 'restoreSnapshot', 'start', 'transition']);
    expect(logic.config).toBe(poolMachine.config);
    for (const file of ['src/pool/pool.machine.ts', 'src/pool/server-pool.ts']) {
      // xstate's underscore members (the system's `_sendInspectionEvent`, the actor's `_actorScope`, …) are its own.
      expect(readFileSync(file, 'utf8'), file).not.toMatch(/\.\s*_(?!meta\b|transitions\b)[A-Za-z]|Object\.create\(/);
    }
  });
});
