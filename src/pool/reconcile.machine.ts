/**
 * The reconcile statechart: when the pools are brought in line with the effective per-server configs
 * (the config file over the settings), and who waits for it. Every rule is here; the Reconciler
 * (./reconciler.ts) is its shell.
 *
 * Like the other machines it does no I/O. It emits `facts.needed` (the shell answers at once with
 * `facts`: the pools' configs now, the effective configs, the busy servers; or `facts.failed`), `apply` (the shell calls
 * `PoolRegistry.apply` and sends `applied` or `apply.failed`), `done` / `failed` (a run's outcome) and
 * `catchUp.schedule` (the shell sends `catchUp.due` on the next turn of the event loop).
 *
 * The rules:
 * - **One run at a time** (region `runs`): `reconcile` requests queue up; each run is planned from the
 *   facts as they are when it starts, so a queued run sees what the runs before it did. Once stopped,
 *   a run does nothing (its outcome is empty).
 * - **What changes** is `planReconcile` (pure): a server whose pool fingerprint (everything a running
 *   pool has baked in, the era-cache switch included) is unchanged keeps its pool; new ones are added,
 *   removed ones stopped, changed ones replaced — all in one `apply`.
 * - **Busy servers wait** (`deferBusy`, the settings API): a server that would change but has calls in
 *   flight or live instances keeps its pool and config for now — its sessions keep what they started
 *   with — and is *deferred* until the next run. A config reload does not defer (the user edited the
 *   server).
 * - **Callers of a changing server wait**: the servers a run adds, replaces or removes are `changing`
 *   from its plan until its apply is done; the shell makes a caller of one wait, then counts its call.
 * - **Deferred servers catch up** (region `catchUp`): when a deferred server has nothing running any
 *   more (`server.quiet`), one run with `deferBusy` is queued on the next turn (at most one waits).
 *
 * Config reloads also go one after another; that queue is in the shell (a reload reads the file and
 * resolves the settings before it asks for a run, which then queues here like any other).
 */
import { assign, enqueueActions, setup } from 'xstate';
import { poolFingerprint, type ApplyResult } from './pool-registry.js';
import type { PoolServerConfig } from './types.js';

export type ReconcileResult = ApplyResult & { deferred: string[] };

export interface ReconcileOptions {
  /** Leave servers with calls in flight or live instances as they are until they have none (settings changes). */
  deferBusy: boolean;
}

export interface ReconcilePlan {
  /** What to hand to `PoolRegistry.apply`: the wanted configs, a deferred server's current one. */
  configs: PoolServerConfig[];
  /** Servers that would change but are busy: they keep their pool for now. */
  deferred: string[];
  /** Servers the apply adds, replaces or removes (their callers wait until it is done). */
  changing: string[];
}

/** The facts a run is planned from, gathered by the shell when the run starts. */
export interface ReconcileFacts {
  /** The configs of the pools there are now. */
  current: PoolServerConfig[];
  /** The effective configs (enabled servers). */
  desired: PoolServerConfig[];
  /** Servers with calls in flight or live instances. */
  busy: string[];
}

/** Decides one run (pure). */
export function planReconcile(facts: ReconcileFacts, opts: ReconcileOptions): ReconcilePlan {
  const current = new Map(facts.current.map((c) => [c.name, c]));
  const wanted = new Set(facts.desired.map((c) => c.name));
  const configs: PoolServerConfig[] = [];
  const deferred: string[] = [];
  const changing: string[] = [...current.keys()].filter((name) => !wanted.has(name)); // removed
  for (const want of facts.desired) {
    const have = current.get(want.name);
    if (have && poolFingerprint(have) === poolFingerprint(want)) {
      configs.push(want);
    } else if (have && opts.deferBusy && facts.busy.includes(want.name)) {
      configs.push(have);
      deferred.push(want.name);
    } else {
      configs.push(want);
      changing.push(want.name); // added or replaced
    }
  }
  return { configs, deferred, changing };
}

interface Run {
  id: string;
  deferBusy: boolean;
}

export interface ReconcileContext {
  /** Runs asked for and not started yet, oldest first. */
  queue: Run[];
  /** The run being applied, with the servers it defers. */
  running: { id: string; deferred: string[] } | null;
  /** Servers the running apply adds, replaces or removes. */
  changing: string[];
  /** Servers the last finished run deferred. */
  deferred: string[];
  /** Catch-up runs asked for so far (their ids: `catch-up-<n>`). */
  catchUps: number;
  stopped: boolean;
}

export type ReconcileEvent =
  | { type: 'reconcile'; id: string; deferBusy: boolean }
  | { type: 'facts'; id: string; facts: ReconcileFacts }
  /** The facts could not be gathered (the effective configs could not be resolved). */
  | { type: 'facts.failed'; id: string; error: unknown }
  | { type: 'applied'; id: string; result: ApplyResult }
  | { type: 'apply.failed'; id: string; error: unknown }
  /** A server with no calls in flight and no live instances any more. */
  | { type: 'server.quiet'; server: string }
  | { type: 'catchUp.due' }
  | { type: 'stop' };

export type ReconcileEmitted =
  | { type: 'facts.needed'; id: string }
  | { type: 'apply'; id: string; configs: PoolServerConfig[] }
  | { type: 'done'; id: string; result: ReconcileResult }
  | { type: 'failed'; id: string; error: unknown }
  | { type: 'catchUp.schedule' };

const emptyResult = (): ReconcileResult => ({ added: [], removed: [], replaced: [], kept: [], failed: [], deferred: [] });

export const reconcileMachine = setup({
  types: {
    context: {} as ReconcileContext,
    events: {} as ReconcileEvent,
    emitted: {} as ReconcileEmitted,
  },
  guards: {
    isStopped: ({ context }) => context.stopped,
    hasQueued: ({ context }) => context.queue.length > 0,
    answersHead: ({ context, event }) => (event.type === 'facts' || event.type === 'facts.failed') && context.queue[0]?.id === event.id,
    answersRun: ({ context, event }) => (event.type === 'applied' || event.type === 'apply.failed') && context.running?.id === event.id,
    isDeferred: ({ context, event }) => event.type === 'server.quiet' && !context.stopped && context.deferred.includes(event.server),
  },
  actions: {
    enqueue: assign({
      queue: ({ context, event }) => (event.type === 'reconcile' ? [...context.queue, { id: event.id, deferBusy: event.deferBusy }] : context.queue),
    }),
    /** Once stopped, a run does nothing: every waiting one ends empty. */
    endEmpty: enqueueActions(({ context, event, enqueue }) => {
      const ids = [...context.queue.map((r) => r.id), ...(event.type === 'reconcile' ? [event.id] : [])];
      enqueue.assign({ queue: [] });
      for (const id of ids) enqueue.emit({ type: 'done', id, result: emptyResult() });
    }),
    askFacts: enqueueActions(({ context, enqueue }) => enqueue.emit({ type: 'facts.needed', id: context.queue[0]!.id })),
    plan: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'facts') return;
      const [run, ...rest] = context.queue;
      const plan = planReconcile(event.facts, { deferBusy: run!.deferBusy });
      enqueue.assign({ queue: rest, running: { id: run!.id, deferred: plan.deferred }, changing: plan.changing });
      enqueue.emit({ type: 'apply', id: run!.id, configs: plan.configs });
    }),
    dropHead: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'facts.failed') return;
      enqueue.assign({ queue: context.queue.slice(1) });
      enqueue.emit({ type: 'failed', id: event.id, error: event.error });
    }),
    finish: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'applied') return;
      const deferred = context.running!.deferred;
      enqueue.assign({ running: null, changing: [], deferred });
      enqueue.emit({ type: 'done', id: event.id, result: { ...event.result, deferred } });
    }),
    /** A failed apply leaves the deferred servers as they were. */
    fail: enqueueActions(({ event, enqueue }) => {
      if (event.type !== 'apply.failed') return;
      enqueue.assign({ running: null, changing: [] });
      enqueue.emit({ type: 'failed', id: event.id, error: event.error });
    }),
    scheduleCatchUp: enqueueActions(({ enqueue }) => enqueue.emit({ type: 'catchUp.schedule' })),
    askCatchUp: enqueueActions(({ context, enqueue }) => {
      const n = context.catchUps + 1;
      enqueue.assign({ catchUps: n });
      enqueue.raise({ type: 'reconcile', id: `catch-up-${n}`, deferBusy: true });
    }),
    markStopped: assign({ stopped: true }),
  },
}).createMachine({
  id: 'reconcile',
  context: { queue: [], running: null, changing: [], deferred: [], catchUps: 0, stopped: false },
  type: 'parallel',
  on: { stop: { actions: 'markStopped' } },
  states: {
    /** One run at a time: plan from the facts of now, apply, then the next. */
    runs: {
      initial: 'idle',
      states: {
        idle: {
          on: {
            reconcile: [
              { guard: 'isStopped', actions: 'endEmpty' },
              { target: 'planning', actions: 'enqueue' },
            ],
          },
        },
        /** Waiting for the shell's facts (it answers at once). */
        planning: {
          entry: 'askFacts',
          on: {
            reconcile: { actions: 'enqueue' },
            facts: { guard: 'answersHead', target: 'applying', actions: 'plan' },
            'facts.failed': { guard: 'answersHead', target: 'next', actions: 'dropHead' },
          },
        },
        /** The registry is applying the plan; callers of a changing server wait. */
        applying: {
          on: {
            reconcile: { actions: 'enqueue' },
            applied: { guard: 'answersRun', target: 'next', actions: 'finish' },
            'apply.failed': { guard: 'answersRun', target: 'next', actions: 'fail' },
          },
        },
        next: {
          always: [{ guard: 'isStopped', target: 'idle', actions: 'endEmpty' }, { guard: 'hasQueued', target: 'planning' }, { target: 'idle' }],
        },
      },
    },
    /** A deferred server with nothing running any more takes its change: one run, on the next turn. */
    catchUp: {
      initial: 'idle',
      states: {
        idle: {
          on: { 'server.quiet': { guard: 'isDeferred', target: 'queued', actions: 'scheduleCatchUp' } },
        },
        queued: {
          on: { 'catchUp.due': { target: 'idle', actions: 'askCatchUp' } },
        },
      },
    },
  },
});

export type ReconcileMachine = typeof reconcileMachine;
