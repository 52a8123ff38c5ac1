/**
 * The pool statechart: every lifecycle decision of one configured server's pool — which lane serves a
 * caller, which instance it gets, when one is started, evicted, stopped for idleness or forgotten after a
 * crash, and when a failing lane cools down. The rules are docs/behaviour.md §9; why sessions stay outside
 * the chart and slots are plain data, docs/decisions.md. Like the session chart it does no I/O: the
 * ServerPool (./server-pool.ts) carries out what it emits (`instance.start`/`stop`, `acquire.granted`/
 * `rejected`, `idle.alarm`) and feeds back what the sessions did (`instance.ready`/`failed`/`exited`/`stopped`,
 * `instance.idle` when an alarm is due). Its reducers are pure functions of the context.
 */
import { enqueueActions, setup, type ActorLogic, type AnyTransitionDefinition, type InspectionEvent, type SnapshotFrom } from 'xstate';
import type { ErrorCode } from '../errors.js';
import { isForced, laneSessionPreference, type Lane, type Preference, type SessionPreference } from '../machines/preference.js';
import type { Era } from '../machines/versions.js';
import { SlotTable } from './slot-table.js';
import { MAX_TIMER_MS } from '../timer-delay.js';
import type { BackoffPolicy, PoolLimits, Scope, Sharing, Slot, SlotStatus, Waiter } from './types.js';

export type { BackoffPolicy, Slot, SlotStatus, Waiter };

/**
 * The life of one instance slot. `ready` has holders; `idle` has none (its idle alarm is set);
 * `gone` means the slot was removed from context.
 */
export const SLOT_TRANSITIONS: Readonly<Record<SlotStatus | 'new', readonly (SlotStatus | 'gone')[]>> = Object.freeze({
  new: ['starting'],
  // granted at once | nobody waiting any more | call scope with nobody waiting, or pool stop | start failed
  starting: ['ready', 'idle', 'stopping', 'gone'],
  // holders come and go | last holder left | call scope finished, or pool stop | crashed
  ready: ['ready', 'idle', 'stopping', 'gone'],
  // acquired | just ready and nobody waiting: its idle alarm is set | idle timeout, eviction, pool stop | crashed
  idle: ['ready', 'idle', 'stopping', 'gone'],
  // the session and its process are gone
  stopping: ['gone'],
});

export interface PoolFailure {
  code: ErrorCode;
  message: string;
  data?: Record<string, unknown>;
}

export interface LaneHealth {
  /** Start failures since the lane's last successful start. */
  failures: number;
  cooling: boolean;
  cooldownMs: number;
  lastError: PoolFailure | null;
}

export type LegacyLaneState = 'off' | 'unused' | 'available' | 'refused';

export const DEFAULT_BACKOFF: BackoffPolicy = Object.freeze({ initialMs: 1_000, factor: 2, maxMs: 30_000 });

export type StopReason = 'idle' | 'evicted' | 'call-finished' | 'pool-stopped';

export interface PoolStats {
  acquires: number;
  starts: number;
  failures: number;
  crashes: number;
  evictions: number;
  idleStops: number;
}

/** What the pool is configured with: fixed for its life, one object shared by every context. */
export interface PoolConfig {
  server: string;
  preference: Preference;
  follow: boolean;
  scope: Scope;
  sharing: Sharing;
  max: number;
  idleTimeoutMs: number;
  backoff: BackoffPolicy;
}

export interface PoolContext {
  config: Readonly<PoolConfig>;
  /** Live instance slots (an immutable table with lookups by id, lane and key, and holder). */
  instances: SlotTable;
  /** Callers waiting for an instance that get a look on every event (new ones, and those waiting for room in their lane), oldest first. */
  waiters: Waiter[];
  /**
   * Callers waiting for their key's instance (starting, held exclusively or stopping): only a change to
   * that key's instances or to the routing facts (own era, legacy route, cooldowns) can move them, so
   * they get a look only then. Oldest first; `waiting(c)` lists both kinds in arrival order.
   */
  parked: readonly Waiter[];
  nextInstance: number;
  tick: number;
  /** What the own lane speaks, from its latest ready instance (or the era cache, before any). */
  ownEra: Era | null;
  lanes: Record<Lane, LaneHealth>;
  legacyLane: LegacyLaneState;
  legacyRefusal: string | null;
  stats: PoolStats;
}

export interface PoolInput {
  server: string;
  preference: Preference;
  limits: PoolLimits;
  backoff?: Partial<BackoffPolicy>;
  /** The era cache's era for this server, if any: a hint for routing legacy callers before any start. */
  cachedEra?: Era | null;
}

export type PoolMachineEvent =
  | { type: 'acquire'; requestId: string; want: Lane; key: string }
  /** `at`: the pool's clock (ms) when it came; an instance left idle is due for stopping idleTimeout after. */
  | { type: 'release'; requestId: string; at: number }
  /** A waiting caller gave up (signal or timeout). */
  | { type: 'cancel'; requestId: string }
  | { type: 'instance.ready'; id: string; era: Era; at: number }
  | { type: 'instance.failed'; id: string; error: PoolFailure }
  /** The instance's process or connection went away after it was ready (a crash). */
  | { type: 'instance.exited'; id: string; reason: string }
  /** The stop the pool asked for is complete: nothing of the instance is left running. */
  | { type: 'instance.stopped'; id: string }
  /** An idle alarm rang (`at`: the pool's clock then); acted on only if the slot is still idle and due. */
  | { type: 'instance.idle'; id: string; at: number }
  /** Internal, raised by the reducers: moves the lane regions in step with the context. */
  | { type: 'lane.failed'; lane: Lane; refused: boolean }
  | { type: 'lane.ready'; lane: Lane }
  | { type: 'stop' };

export type PoolEmitted =
  | { type: 'instance.start'; id: string; lane: Lane; key: string; preference: SessionPreference; useCache: boolean }
  | { type: 'instance.stop'; id: string; lane: Lane; reason: StopReason }
  | { type: 'acquire.granted'; requestId: string; id: string }
  | { type: 'acquire.rejected'; requestId: string; error: PoolFailure }
  /** A slot went idle: send `instance.idle` for it once the pool's clock reaches `at`. */
  | { type: 'idle.alarm'; id: string; at: number };

// ---- pure reducers ----

type Effect = { kind: 'emit'; event: PoolEmitted } | { kind: 'raise'; event: Extract<PoolMachineEvent, { type: 'lane.failed' | 'lane.ready' }> };

interface Step {
  context: PoolContext;
  effects: Effect[];
}

/** Instances a lane may hold at once (stopping ones included). */
export function laneCap(c: Pick<PoolConfig, 'scope' | 'max'>): number {
  return c.scope === 'global' ? 1 : Math.max(1, Math.floor(c.max));
}

export function cooldownFor(policy: BackoffPolicy, failures: number): number {
  const ms = policy.initialMs * policy.factor ** Math.max(0, failures - 1);
  return Math.min(policy.maxMs, Math.max(0, Math.round(ms)));
}

/** When a slot idle since `at` is due for stopping; null: never (an idle timeout past what a timer can wait). */
const idleDue = (config: PoolConfig, at: number): number | null =>
  Number.isFinite(config.idleTimeoutMs) && config.idleTimeoutMs < MAX_TIMER_MS ? at + config.idleTimeoutMs : null;

export function initialContext(input: PoolInput): PoolContext {
  const follow = input.preference === 'follow';
  const health = (): LaneHealth => ({ failures: 0, cooling: false, cooldownMs: 0, lastError: null });
  return {
    config: Object.freeze({
      server: input.server,
      preference: input.preference,
      follow,
      scope: input.limits.scope,
      sharing: input.limits.sharing,
      max: input.limits.max,
      idleTimeoutMs: Math.max(0, input.limits.idleTimeoutMs),
      backoff: Object.freeze({ ...DEFAULT_BACKOFF, ...input.backoff }),
    }),
    instances: SlotTable.EMPTY,
    waiters: [],
    parked: [],
    nextInstance: 1,
    tick: 0,
    // force-* never reads the era cache.
    ownEra: isForced(input.preference) ? null : (input.cachedEra ?? null),
    lanes: { own: health(), legacy: health() },
    legacyLane: follow ? 'unused' : 'off',
    legacyRefusal: null,
    stats: { acquires: 0, starts: 0, failures: 0, crashes: 0, evictions: 0, idleStops: 0 },
  };
}

/**
 * A working copy of a context for one step. Slots are values in an immutable SlotTable: every change
 * puts a changed copy, so the context the step started from (and every earlier snapshot) is untouched.
 */
class Draft {
  readonly c: PoolContext;
  readonly effects: Effect[] = [];
  /** Scope keys whose instances changed in this step (parked waiters of other keys need no look). */
  readonly touched = new Set<string>();
  constructor(readonly from: PoolContext) {
    // `lanes` and `stats` are copied when first changed (lanes(), stats()): most steps change neither.
    this.c = { ...from };
  }
  slot(id: string): Slot | undefined {
    return this.c.instances.get(id);
  }
  /** The lanes record, writable in this step. */
  lanes(): Record<Lane, LaneHealth> {
    if (this.c.lanes === this.from.lanes) this.c.lanes = { ...this.from.lanes };
    return this.c.lanes;
  }
  lane(lane: Lane): LaneHealth {
    const h = { ...this.c.lanes[lane] };
    this.lanes()[lane] = h;
    return h;
  }
  /** The counters, writable in this step. */
  stats(): PoolStats {
    if (this.c.stats === this.from.stats) this.c.stats = { ...this.from.stats };
    return this.c.stats;
  }
  emit(event: PoolEmitted): void {
    this.effects.push({ kind: 'emit', event });
  }
  /** A slot's fields other than its status (holders, lastUsed, era); returns the new value. */
  change(s: Slot, changes: SlotChanges): Slot {
    const next = { ...this.c.instances.get(s.id)!, ...changes };
    this.c.instances = this.c.instances.put(next);
    this.touched.add(s.key);
    return next;
  }
  /**
   * The one way a slot's status changes: a move SLOT_TRANSITIONS does not allow is a bug in this file, and
   * fails loudly (the model-based test walks every path) rather than leaving a slot in a state nothing handles.
   */
  move(s: Slot, to: SlotStatus | 'gone', changes: SlotChanges = {}): Slot | undefined {
    const current = this.c.instances.get(s.id) ?? s;
    checkMove(current.id, current.status, to);
    this.touched.add(current.key);
    if (to === 'gone') {
      this.c.instances = this.c.instances.remove(s.id);
      return undefined;
    }
    const next = { ...current, ...changes, status: to };
    if (to !== 'idle') next.idleAt = null; // only an idle slot is due for stopping
    this.c.instances = this.c.instances.put(next);
    return next;
  }
  create(slot: Slot): void {
    checkMove(slot.id, 'new', slot.status);
    this.c.instances = this.c.instances.put(slot);
    this.touched.add(slot.key);
  }
  remove(id: string): void {
    const s = this.c.instances.get(id);
    if (s) this.move(s, 'gone');
  }
  stopSlot(s: Slot, reason: StopReason, changes: SlotChanges = {}): void {
    const current = this.c.instances.get(s.id) ?? s;
    this.move(current, 'stopping', changes);
    this.emit({ type: 'instance.stop', id: s.id, lane: s.lane, reason });
  }
  /**
   * A slot with no holders left, as of `at`: idle with its alarm, or (call scope) stopped. `changes`
   * go into the same update (release: its holders and lastUsed), so the table is written once.
   */
  settleUnheld(s: Slot, at: number, changes: SlotChanges = {}): void {
    if (this.c.config.scope === 'call') {
      this.stopSlot(s, 'call-finished', changes);
      return;
    }
    const idleAt = idleDue(this.c.config, at);
    this.move(s, 'idle', { ...changes, idleAt });
    if (idleAt !== null) this.emit({ type: 'idle.alarm', id: s.id, at: idleAt });
  }
  done(): Step {
    return { context: this.c, effects: this.effects };
  }
}

type SlotChanges = Partial<Pick<Slot, 'holders' | 'lastUsed' | 'era' | 'idleAt'>>;

function checkMove(id: string, from: SlotStatus | 'new', to: SlotStatus | 'gone'): void {
  if (!SLOT_TRANSITIONS[from].includes(to)) throw new Error(`pool: instance ${id} cannot move from ${from} to ${to}`);
}

/** The slot of a lane and key (the one a caller of that key is served by). */
function slotFor(c: PoolContext, lane: Lane, key: string): Slot | undefined {
  return c.instances.forKey(lane, key);
}

const acquirable = (c: PoolContext, s: Slot | undefined): s is Slot =>
  s !== undefined && (s.status === 'ready' || s.status === 'idle') && (c.config.sharing === 'shared' || s.holders.length === 0);

/** Legacy callers share the own lane: not follow, the legacy lane refused, or the own lane speaks legacy. */
function legacyOnOwnLane(c: PoolContext): boolean {
  return !c.config.follow || c.legacyLane === 'refused' || c.legacyLane === 'off';
}

/** An existing instance that can serve the waiter now. */
export function usableSlot(c: PoolContext, w: Waiter): Slot | undefined {
  const own = slotFor(c, 'own', w.key);
  if (w.want === 'own' || legacyOnOwnLane(c)) return acquirable(c, own) ? own : undefined;
  const legacy = slotFor(c, 'legacy', w.key);
  if (acquirable(c, legacy)) return legacy;
  if (acquirable(c, own) && own.era === 'legacy') return own;
  return undefined;
}

/** The lane a new instance for this waiter belongs to. */
export function laneForNewInstance(c: PoolContext, w: Pick<Waiter, 'want'>): Lane {
  if (w.want === 'own' || legacyOnOwnLane(c)) return 'own';
  if (c.ownEra === 'legacy') return 'own';
  if (c.ownEra === 'modern') return 'legacy';
  // Unknown: learn it from an own-lane instance first (no second process for a legacy-only server),
  // unless the own lane is failing — then the legacy lane is the caller's only chance.
  return c.lanes.own.cooling ? 'legacy' : 'own';
}

/**
 * Where a waiter no existing instance can serve now needs a new instance — or null when one it may get
 * already exists: its key's instance in the lane it would start in (starting, held exclusively or
 * stopping: never a rival for the same key), or, for a legacy caller, a legacy-lane instance being
 * started for its key, or an own-lane one of its key still starting while the own era is unknown.
 */
export function needsNewInstance(c: PoolContext, w: Waiter): Lane | null {
  const lane = laneForNewInstance(c, w);
  if (slotFor(c, lane, w.key)) return null;
  if (w.want === 'legacy' && !legacyOnOwnLane(c)) {
    if (slotFor(c, 'legacy', w.key)?.status === 'starting') return null;
    const own = slotFor(c, 'own', w.key);
    if (own?.status === 'starting' && c.ownEra === null) return null;
  }
  return lane;
}

function cooldownError(c: PoolContext, lane: Lane): PoolFailure {
  const h = c.lanes[lane];
  const last = h.lastError ?? { code: 'MCPX_SPAWN_FAILED' as ErrorCode, message: `${c.config.server}: the last start failed` };
  const which = c.config.follow ? ` (${lane} lane)` : '';
  return {
    code: last.code,
    message:
      h.cooldownMs === 0
        ? last.message
        : `${last.message} — mcpx starts this server${which} again after a ${h.cooldownMs} ms cooldown (failed starts in a row: ${h.failures})`,
    data: { ...last.data, lane, cooldownMs: h.cooldownMs, failures: h.failures },
  };
}

/**
 * Serve the queue: first every waiter an existing instance can take (FIFO, so an exclusive instance
 * goes to the oldest caller of its key), then, oldest first, the waiters that need a new instance:
 * start one if the lane has room, else claim one already stopping, else evict the LRU idle one, else wait.
 */
function dispatch(d: Draft, all = false): void {
  const c = d.c;
  // Who gets a look: the active callers, and the parked ones whose key's instances changed (every parked
  // one when the routing facts changed). The others would only be parked again (see PoolContext.parked).
  let look: Waiter[] = c.waiters;
  if (c.parked.length > 0) {
    if (all || routingChanged(d.from, c)) {
      look = mergeBySeq(look, c.parked);
      c.parked = [];
    } else if (d.touched.size > 0) {
      const woken = c.parked.filter((w) => d.touched.has(w.key));
      if (woken.length > 0) {
        c.parked = c.parked.filter((w) => !d.touched.has(w.key));
        look = mergeBySeq(look, woken);
      }
    }
  }
  if (look.length === 0) return; // nobody waits (the common case of a release)
  /** Who this look parks, oldest first: merged into the parked list once, at the end. */
  const park: Waiter[] = [];
  const needNew: Waiter[] = [];
  const keep: Waiter[] = [];
  for (const w of look) {
    const s = usableSlot(c, w);
    if (!s) {
      needNew.push(w);
      continue;
    }
    d.move(s, 'ready', { holders: [...s.holders, w.requestId], lastUsed: ++c.tick });
    d.emit({ type: 'acquire.granted', requestId: w.requestId, id: s.id });
  }
  if (needNew.length === 0) {
    c.waiters = keep;
    return;
  }
  const cap = laneCap(c.config);
  const own = c.instances.count('own');
  const legacy = c.instances.count('legacy');
  const room: Record<Lane, number> = { own: cap - own.all, legacy: cap - legacy.all };
  const claimable: Record<Lane, number> = { own: own.stopping, legacy: legacy.stopping };
  for (const w of needNew) {
    const lane = needsNewInstance(c, w);
    if (lane === null) {
      park.push(w); // an instance it may get is starting, held exclusively, or stopping: wait for it
      continue;
    }
    if (c.lanes[lane].cooling) {
      d.emit({ type: 'acquire.rejected', requestId: w.requestId, error: cooldownError(c, lane) });
      continue;
    }
    if (room[lane] > 0) {
      room[lane]--;
      park.push(w); // it waits for the instance started for its key
      const id = `i${c.nextInstance++}`;
      d.create({ id, lane, key: w.key, status: 'starting', holders: [], lastUsed: ++c.tick, era: null, idleAt: null });
      d.stats().starts++;
      d.emit({ type: 'instance.start', id, lane, key: w.key, preference: laneSessionPreference(c.config.preference, lane), useCache: lane === 'own' });
      continue;
    }
    keep.push(w); // it waits for room in its lane
    if (claimable[lane] > 0) {
      claimable[lane]--;
    } else {
      // O(instances), only when a lane is full: the least recently used idle instance.
      let victim: Slot | undefined;
      for (const s of c.instances.list()) if (s.lane === lane && s.status === 'idle' && (!victim || s.lastUsed < victim.lastUsed)) victim = s;
      if (victim) {
        d.stats().evictions++;
        d.stopSlot(victim, 'evicted');
      }
    }
  }
  c.waiters = keep;
  if (park.length > 0) c.parked = mergeBySeq(c.parked, park);
}

/** Two lists each in arrival order, merged in arrival order. */
function mergeBySeq(a: readonly Waiter[], b: readonly Waiter[]): Waiter[] {
  if (a.length === 0) return [...b];
  const out: Waiter[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (j >= b.length || (i < a.length && a[i]!.seq < b[j]!.seq)) out.push(a[i++]!);
    else out.push(b[j++]!);
  }
  return out;
}

/** Every waiting caller, active and parked, in arrival order. */
export function waiting(c: Pick<PoolContext, 'waiters' | 'parked'>): Waiter[] {
  return mergeBySeq(c.waiters, c.parked);
}

/** Facts every waiter's routing reads, besides its key's instances. */
function routingChanged(a: PoolContext, b: PoolContext): boolean {
  return (
    a.ownEra !== b.ownEra || a.legacyLane !== b.legacyLane || a.lanes.own.cooling !== b.lanes.own.cooling || a.lanes.legacy.cooling !== b.lanes.legacy.cooling
  );
}

/**
 * True when a full dispatch of this context would do nothing: no waiter could be served, started for,
 * rejected or make room. Every step leaves the pool so; the model-based test checks it after every step
 * (it is what makes skipping parked waiters safe).
 */
export function isSettled(ctx: PoolContext): boolean {
  const d = new Draft(ctx);
  dispatch(d, true);
  const before = waiting(ctx)
    .map((w) => w.requestId)
    .join(' ');
  return (
    d.effects.length === 0 &&
    d.c.instances === ctx.instances &&
    waiting(d.c)
      .map((w) => w.requestId)
      .join(' ') === before
  );
}

export function acquire(ctx: PoolContext, e: { requestId: string; want: Lane; key: string }): Step {
  const d = new Draft(ctx);
  const seq = ++d.stats().acquires;
  d.c.waiters = [...d.c.waiters, { requestId: e.requestId, want: e.want, key: e.key, seq }];
  dispatch(d);
  return d.done();
}

/** A holder gives its slot back at `at`. The slot's new holders, lastUsed and status go in one update. */
export function release(ctx: PoolContext, requestId: string, at: number): Step {
  const d = new Draft(ctx);
  const held = ctx.instances.heldBy(requestId);
  if (held) {
    const changes = { holders: held.holders.filter((h) => h !== requestId), lastUsed: ++d.c.tick };
    if (changes.holders.length === 0 && held.status === 'ready') d.settleUnheld(held, at, changes);
    else d.change(held, changes);
  }
  dispatch(d);
  return d.done();
}

export function cancel(ctx: PoolContext, requestId: string): Step {
  const d = new Draft(ctx);
  d.c.waiters = d.c.waiters.filter((w) => w.requestId !== requestId);
  d.c.parked = d.c.parked.filter((w) => w.requestId !== requestId);
  dispatch(d);
  return d.done();
}

export function ready(ctx: PoolContext, id: string, era: Era, at: number): Step {
  const d = new Draft(ctx);
  const s = d.slot(id);
  if (!s) return d.done();
  d.move(s, 'idle', { era });
  if (s.lane === 'own') d.c.ownEra = era;
  d.lanes()[s.lane] = { failures: 0, cooling: false, cooldownMs: 0, lastError: null };
  if (s.lane === 'legacy' && d.c.legacyLane === 'unused') d.c.legacyLane = 'available';
  d.effects.push({ kind: 'raise', event: { type: 'lane.ready', lane: s.lane } });
  dispatch(d);
  const after = d.slot(id);
  if (after && after.status === 'idle' && after.holders.length === 0) d.settleUnheld(after, at);
  return d.done();
}

export function startFailed(ctx: PoolContext, id: string, error: PoolFailure): Step {
  const d = new Draft(ctx);
  const s = ctx.instances.get(id);
  if (!s) return d.done();
  d.remove(id);
  d.stats().failures++;
  if (s.lane === 'legacy' && d.c.config.follow && error.code === 'MCPX_ERA_MISMATCH') {
    // §6 fallback: the server refuses a legacy-only session; legacy callers share the own lane from now on.
    d.c.legacyLane = 'refused';
    d.c.legacyRefusal = error.message;
    d.effects.push({ kind: 'raise', event: { type: 'lane.failed', lane: 'legacy', refused: true } });
  } else {
    const h = d.lane(s.lane);
    // A server that wants a login is no flaky start: the callers waiting now get its answer, and the next
    // acquire (the one after `mcpx login`) starts afresh — a cooldown of zero, not a growing one.
    const wantsLogin = error.code === 'MCPX_UPSTREAM_UNAUTHORIZED';
    h.failures = wantsLogin ? 1 : h.failures + 1;
    h.cooling = true;
    h.cooldownMs = wantsLogin ? 0 : cooldownFor(d.c.config.backoff, h.failures);
    h.lastError = error;
    d.effects.push({ kind: 'raise', event: { type: 'lane.failed', lane: s.lane, refused: false } });
  }
  dispatch(d);
  return d.done();
}

export function exited(ctx: PoolContext, id: string): Step {
  const d = new Draft(ctx);
  if (!ctx.instances.get(id)) return d.done();
  d.remove(id);
  d.stats().crashes++;
  dispatch(d);
  return d.done();
}

export function stopped(ctx: PoolContext, id: string): Step {
  const d = new Draft(ctx);
  const s = d.slot(id);
  if (!s) return d.done();
  d.move(s, 'gone');
  dispatch(d);
  return d.done();
}

export function idleStop(ctx: PoolContext, id: string): Step {
  const d = new Draft(ctx);
  const s = d.slot(id);
  if (!s) return d.done();
  d.stats().idleStops++;
  d.stopSlot(s, 'idle');
  dispatch(d);
  return d.done();
}

export function endCooldown(ctx: PoolContext, lane: Lane): Step {
  const d = new Draft(ctx);
  d.lane(lane).cooling = false;
  // Routing may change with it: a legacy caller that went to the legacy lane while the own lane was
  // failing, and still waits, now learns the own era first.
  dispatch(d);
  return d.done();
}

const stoppedError = (c: PoolContext): PoolFailure => ({ code: 'MCPX_POOL_STOPPED', message: `${c.config.server}: the pool is stopping` });

export function stopAll(ctx: PoolContext): Step {
  const d = new Draft(ctx);
  for (const w of waiting(d.c)) d.emit({ type: 'acquire.rejected', requestId: w.requestId, error: stoppedError(d.c) });
  d.c.waiters = [];
  d.c.parked = [];
  for (const s of ctx.instances.list()) {
    if (s.status !== 'stopping') d.stopSlot(s, 'pool-stopped');
  }
  return d.done();
}

export function rejectStopped(ctx: PoolContext, requestId: string): Step {
  const d = new Draft(ctx);
  d.emit({ type: 'acquire.rejected', requestId, error: stoppedError(ctx) });
  return d.done();
}

// ---- the machine ----

const statusOf = (c: PoolContext, e: PoolMachineEvent): SlotStatus | undefined => ('id' in e ? c.instances.get(e.id)?.status : undefined);

/** The part of enqueueActions' `enqueue` that carrying out a Step needs. */
interface Enqueue {
  assign(fn: () => PoolContext): void;
  emit(event: PoolEmitted): void;
  raise(event: PoolMachineEvent): void;
}

function perform(enqueue: Enqueue, step: Step): void {
  enqueue.assign(() => step.context);
  for (const fx of step.effects) {
    if (fx.kind === 'emit') enqueue.emit(fx.event);
    else enqueue.raise(fx.event);
  }
}

type Ev<T extends PoolMachineEvent['type']> = Extract<PoolMachineEvent, { type: T }>;
const as = <T extends PoolMachineEvent['type']>(e: PoolMachineEvent) => e as Ev<T>;

export const poolMachine = setup({
  types: {
    context: {} as PoolContext,
    events: {} as PoolMachineEvent,
    emitted: {} as PoolEmitted,
    input: {} as PoolInput,
  },
  delays: {
    ownCooldown: ({ context }) => context.lanes.own.cooldownMs,
    legacyCooldown: ({ context }) => context.lanes.legacy.cooldownMs,
  },
  guards: {
    isFollow: ({ context }) => context.config.follow,
    isHolder: ({ context, event }) => event.type === 'release' && context.instances.heldBy(event.requestId) !== undefined,
    isWaiting: ({ context, event }) =>
      event.type === 'cancel' && (context.parked.some((w) => w.requestId === event.requestId) || context.waiters.some((w) => w.requestId === event.requestId)),
    isStarting: ({ context, event }) => statusOf(context, event) === 'starting',
    isLive: ({ context, event }) => {
      const st = statusOf(context, event);
      return st === 'ready' || st === 'idle';
    },
    /** Still idle, and idle long enough: an alarm of a slot acquired (or released again) since is stale. */
    isIdleDue: ({ context, event }) => {
      if (event.type !== 'instance.idle') return false;
      const s = context.instances.get(event.id);
      return s?.status === 'idle' && s.idleAt !== null && event.at >= s.idleAt;
    },
    isStopping: ({ context, event }) => statusOf(context, event) === 'stopping',
    noInstances: ({ context }) => context.instances.size === 0,
    laneFailed: ({ event }, params: { lane: Lane }) => event.type === 'lane.failed' && event.lane === params.lane && !event.refused,
    laneReady: ({ event }, params: { lane: Lane }) => event.type === 'lane.ready' && event.lane === params.lane,
    legacyRefused: ({ event }) => event.type === 'lane.failed' && event.lane === 'legacy' && event.refused,
  },
  actions: {
    queue: enqueueActions(({ context, event, enqueue }) => perform(enqueue, acquire(context, as<'acquire'>(event)))),
    release: enqueueActions(({ context, event, enqueue }) => {
      const e = as<'release'>(event);
      perform(enqueue, release(context, e.requestId, e.at));
    }),
    leaveQueue: enqueueActions(({ context, event, enqueue }) => perform(enqueue, cancel(context, as<'cancel'>(event).requestId))),
    serveReady: enqueueActions(({ context, event, enqueue }) => {
      const e = as<'instance.ready'>(event);
      perform(enqueue, ready(context, e.id, e.era, e.at));
    }),
    startFailed: enqueueActions(({ context, event, enqueue }) => {
      const e = as<'instance.failed'>(event);
      perform(enqueue, startFailed(context, e.id, e.error));
    }),
    forgetCrashed: enqueueActions(({ context, event, enqueue }) => perform(enqueue, exited(context, as<'instance.exited'>(event).id))),
    forgetStopped: enqueueActions(({ context, event, enqueue }) => perform(enqueue, stopped(context, as<'instance.stopped'>(event).id))),
    stopIdle: enqueueActions(({ context, event, enqueue }) => perform(enqueue, idleStop(context, as<'instance.idle'>(event).id))),
    endCooldown: enqueueActions(({ context, enqueue }, params: { lane: Lane }) => perform(enqueue, endCooldown(context, params.lane))),
    stopAll: enqueueActions(({ context, enqueue }) => perform(enqueue, stopAll(context))),
    refuseStopping: enqueueActions(({ context, event, enqueue }) => perform(enqueue, rejectStopped(context, as<'acquire'>(event).requestId))),
  },
}).createMachine({
  id: 'pool',
  context: ({ input }) => initialContext(input),
  initial: 'running',
  states: {
    running: {
      type: 'parallel',
      on: {
        acquire: { actions: 'queue' },
        release: { guard: 'isHolder', actions: 'release' },
        cancel: { guard: 'isWaiting', actions: 'leaveQueue' },
        'instance.ready': { guard: 'isStarting', actions: 'serveReady' },
        'instance.failed': { guard: 'isStarting', actions: 'startFailed' },
        'instance.exited': { guard: 'isLive', actions: 'forgetCrashed' },
        'instance.stopped': { guard: 'isStopping', actions: 'forgetStopped' },
        'instance.idle': { guard: 'isIdleDue', actions: 'stopIdle' },
        stop: { target: 'stopping' },
      },
      states: {
        /** Start-failure backoff of the server's own lane. */
        ownLane: {
          initial: 'healthy',
          states: {
            healthy: {
              on: { 'lane.failed': { guard: { type: 'laneFailed', params: { lane: 'own' } }, target: 'coolingDown' } },
            },
            coolingDown: {
              after: { ownCooldown: { target: 'healthy', actions: { type: 'endCooldown', params: { lane: 'own' } } } },
              on: {
                'lane.failed': { guard: { type: 'laneFailed', params: { lane: 'own' } }, target: 'coolingDown', reenter: true },
                'lane.ready': { guard: { type: 'laneReady', params: { lane: 'own' } }, target: 'healthy' },
              },
            },
          },
        },
        /** Start-failure backoff of the legacy lane (follow only; a refusal is not a failure). */
        legacyLane: {
          initial: 'healthy',
          states: {
            healthy: {
              on: { 'lane.failed': { guard: { type: 'laneFailed', params: { lane: 'legacy' } }, target: 'coolingDown' } },
            },
            coolingDown: {
              after: { legacyCooldown: { target: 'healthy', actions: { type: 'endCooldown', params: { lane: 'legacy' } } } },
              on: {
                'lane.failed': { guard: { type: 'laneFailed', params: { lane: 'legacy' } }, target: 'coolingDown', reenter: true },
                'lane.ready': { guard: { type: 'laneReady', params: { lane: 'legacy' } }, target: 'healthy' },
              },
            },
          },
        },
        /** What legacy callers get (§6; §7 `legacyLane`): off unless follow. */
        legacyRoute: {
          initial: 'deciding',
          states: {
            deciding: { always: [{ guard: 'isFollow', target: 'unused' }, { target: 'off' }] },
            off: {},
            unused: {
              on: {
                'lane.ready': { guard: { type: 'laneReady', params: { lane: 'legacy' } }, target: 'available' },
                'lane.failed': { guard: 'legacyRefused', target: 'refused' },
              },
            },
            available: {
              on: { 'lane.failed': { guard: 'legacyRefused', target: 'refused' } },
            },
            refused: {},
          },
        },
      },
    },
    /** Every waiter is refused, every instance asked to stop; done when the last one is gone. */
    stopping: {
      entry: 'stopAll',
      always: { guard: 'noInstances', target: 'stopped' },
      on: {
        acquire: { actions: 'refuseStopping' },
        'instance.stopped': { guard: 'isStopping', actions: 'forgetStopped' },
      },
    },
    stopped: { type: 'final' },
  },
});

export type PoolMachine = typeof poolMachine;

/** The lease events: what every call sends, twice (docs/decisions.md, "Leases skip xstate's interpreter"). */
type LeaseEvent = Ev<'acquire'> | Ev<'release'>;

/**
 * The lease step the chart would take, when it can be taken without xstate's interpreter: in `running`
 * an `acquire` (action `queue`) or a held `release` (guard `isHolder`, action `release`) is a targetless
 * transition whose whole effect is its reducer's Step. A Step that raises (none does today) goes
 * through the chart.
 */
export function leaseStep(snapshot: SnapshotFrom<PoolMachine>, event: PoolMachineEvent): Step | undefined {
  if (event.type !== 'acquire' && event.type !== 'release') return undefined;
  if (snapshot.status !== 'active' || typeof snapshot.value !== 'object' || !('running' in snapshot.value)) return undefined;
  const e = event as LeaseEvent;
  let step: Step;
  if (e.type === 'acquire') step = acquire(snapshot.context, e);
  else if (snapshot.context.instances.heldBy(e.requestId) !== undefined) step = release(snapshot.context, e.requestId, e.at);
  else return undefined;
  return step.effects.every((fx) => fx.kind === 'emit') ? step : undefined;
}

/** An observer of the pool actor's inspection events (createActor's `inspect` option). */
export type PoolInspector = (event: InspectionEvent) => void;

export type PoolLogic = ActorLogic<SnapshotFrom<PoolMachine>, PoolMachineEvent, PoolInput, Parameters<PoolMachine['transition']>[2]['system'], PoolEmitted>;

/**
 * The pool chart as the ServerPool runs it: the chart, with its lease transitions taken directly. Each
 * call sends an acquire and a release, and through xstate's interpreter the pair costs several times
 * what its reducers do (docs/decisions.md, "Leases skip xstate's interpreter"). This is xstate's public
 * custom-logic interface (ActorLogic) over the chart: every member is the chart's own, except that
 * `transition` takes a lease step (`leaseStep`) by running the reducer the chart's action runs, keeping
 * the snapshot's state and taking the new context, and deferring emitted events to after the update as
 * xstate's `emit` does. Every other event, and a lease step that would do anything else, goes through the
 * chart. test/pool/pool-logic.test.ts holds the two to the same snapshots, emitted events and inspection.
 *
 * `inspect`: the actor's inspector, the same one given to createActor. The interpreter tells it of the
 * chart's microsteps; the lease steps it does not see are told here, as the same `@xstate.microstep`
 * (the chart's own transition definition, and the snapshot after it), so the live page, the Stately
 * inspector and the model-based test's coverage see what the chart would show them.
 */
export function poolLogic(inspect?: PoolInspector): PoolLogic {
  return inspect === undefined ? uninspected : logicOver(inspect);
}

function logicOver(inspect: PoolInspector | undefined): PoolLogic {
  return {
    config: poolMachine.config,
    getInitialSnapshot: (scope, input) => poolMachine.getInitialSnapshot(scope, input),
    restoreSnapshot: (persisted, scope) => poolMachine.restoreSnapshot(persisted, scope),
    getPersistedSnapshot: (snapshot, options) => poolMachine.getPersistedSnapshot(snapshot, options),
    start: (snapshot) => poolMachine.start(snapshot),
    transition(snapshot, event, scope) {
      const step = leaseStep(snapshot, event);
      if (step === undefined) return poolMachine.transition(snapshot, event, scope);
      for (const fx of step.effects) if (fx.kind === 'emit') scope.defer(() => scope.emit(fx.event));
      const next = step.context === snapshot.context ? snapshot : ({ ...snapshot, context: step.context } as typeof snapshot);
      inspect?.({
        type: '@xstate.microstep',
        rootId: scope.self.sessionId,
        actorRef: scope.self,
        event,
        snapshot: next,
        _transitions: [leaseTransition(event.type as LeaseEvent['type'])],
      });
      return next;
    },
  };
}

/** The one logic of every pool actor nobody inspects (the daemon's, unless an inspector is attached). */
const uninspected = logicOver(undefined);

/** The chart's own transition definitions of the lease events (the objects an inspector is shown), looked up once. */
let leaseTransitions: Record<LeaseEvent['type'], AnyTransitionDefinition> | undefined;
function leaseTransition(type: LeaseEvent['type']): AnyTransitionDefinition {
  leaseTransitions ??= (() => {
    const running = poolMachine.getStateNodeById('pool.running').transitions;
    return { acquire: running.get('acquire')![0]!, release: running.get('release')![0]! };
  })();
  return leaseTransitions[type];
}
