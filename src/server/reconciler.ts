/**
 * Reconciliation: bringing the pools in line with the effective per-server configs (the config file
 * over the settings), and every rule about when that may happen. The Controller asks this unit; it
 * keeps the API-facing methods.
 *
 * The rules, all here:
 * - **One run at a time.** `reconcile()` runs queue up; each decides from the configs and the pools as
 *   they are when it starts (a run after `stop()` does nothing). Reloads queue up on their own chain
 *   (`reload()`): a reload's reconcile joins the reconcile queue like any other.
 * - **What changes** is decided by `planReconcile` (pure): a server whose pool fingerprint (everything a
 *   running pool has baked in, the era-cache switch included) is unchanged keeps its pool; new ones are
 *   added, removed ones stopped, changed ones replaced — one `PoolRegistry.apply`.
 * - **Busy servers wait** (`deferBusy`, the settings API): a server that would change but has calls in
 *   flight or live instances keeps its pool and config for now — its sessions keep what they started
 *   with — and is *deferred*. A config reload does not defer (the user edited the server).
 * - **Deferred servers catch up**: when a deferred server's last call finishes or an instance of it stops
 *   and it has nothing running any more, one reconcile is queued (at most one waits at a time).
 * - **Callers of a changing server wait.** The plan is made, and the servers it adds, replaces or
 *   removes are marked changing, before anything is awaited; `withPool` waits while its server is
 *   changing, then counts its call in flight — from the check to the count is synchronous, so a run
 *   either saw the call in flight or starts after it is counted.
 */
import type { Logger } from '../log.js';
import { poolFingerprint, type ApplyResult, type PoolRegistry } from '../pool/pool-registry.js';
import type { ServerPool } from '../pool/server-pool.js';
import type { PoolServerConfig } from '../pool/types.js';

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

/**
 * Decides one run (pure). `current` are the configs of the pools there are now, `desired` the effective
 * configs, `busy` whether a server has calls in flight or live instances.
 */
export function planReconcile(
  current: ReadonlyMap<string, PoolServerConfig>,
  desired: readonly PoolServerConfig[],
  opts: ReconcileOptions,
  busy: (name: string) => boolean,
): ReconcilePlan {
  const configs: PoolServerConfig[] = [];
  const deferred: string[] = [];
  const changing: string[] = [...current.keys()].filter((name) => !desired.some((c) => c.name === name)); // removed
  for (const want of desired) {
    const have = current.get(want.name);
    if (have && poolFingerprint(have) === poolFingerprint(want)) {
      configs.push(want);
    } else if (have && opts.deferBusy && busy(want.name)) {
      configs.push(have);
      deferred.push(want.name);
    } else {
      configs.push(want);
      changing.push(want.name); // added or replaced
    }
  }
  return { configs, deferred, changing };
}

export interface ReconcilerDeps {
  registry: PoolRegistry;
  /** The effective per-server configs now (enabled servers only). */
  desired: () => PoolServerConfig[];
  /** Looks a server's pool up (throws for an unknown server). */
  pool: (server: string) => ServerPool;
  logger: Logger;
}

const nothing = (): ReconcileResult => ({ added: [], removed: [], replaced: [], kept: [], failed: [], deferred: [] });

export class Reconciler {
  private readonly deps: ReconcilerDeps;
  /** Calls in flight per server. */
  private readonly inflight = new Map<string, number>();
  /** Servers whose pool waits for its live instances to stop before taking a change (from the last run). */
  private deferred = new Set<string>();
  /** Servers a run is adding, replacing or removing right now, and when it is done. */
  private readonly changing = new Map<string, Promise<unknown>>();
  private runs: Promise<unknown> = Promise.resolve();
  private reloads: Promise<unknown> = Promise.resolve();
  private catchUpQueued = false;
  private stopped = false;

  constructor(deps: ReconcilerDeps) {
    this.deps = deps;
  }

  /** Queues a run; resolves with what it did (nothing once stopped). */
  reconcile(opts: ReconcileOptions): Promise<ReconcileResult> {
    const run = this.runs.then(() => (this.stopped ? nothing() : this.runNow(opts)));
    this.runs = run.catch(() => undefined);
    return run;
  }

  /** Runs `fn` (a config reload) after the reloads before it. */
  reload<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.reloads.then(fn);
    this.reloads = run.catch(() => undefined);
    return run;
  }

  /** Whether a server's last run left it waiting for its instances to stop. */
  isDeferred(server: string): boolean {
    return this.deferred.has(server);
  }

  /** Runs `fn` on the server's pool, counted as in flight (so a settings change does not replace the pool under it). */
  async withPool<T>(server: string, fn: (pool: ServerPool) => Promise<T>): Promise<T> {
    for (let c = this.changing.get(server); c; c = this.changing.get(server)) await c.catch(() => undefined);
    const pool = this.deps.pool(server);
    const name = pool.name;
    this.inflight.set(name, (this.inflight.get(name) ?? 0) + 1);
    try {
      return await fn(pool);
    } finally {
      const n = (this.inflight.get(name) ?? 1) - 1;
      if (n <= 0) this.inflight.delete(name);
      else this.inflight.set(name, n);
      this.catchUp(name);
    }
  }

  /** An instance of `server` stopped: a deferred server may now take its change. */
  instanceStopped(server: string): void {
    setImmediate(() => this.catchUp(server));
  }

  /** No further runs (queued ones resolve with nothing). */
  stop(): void {
    this.stopped = true;
  }

  private busy(name: string): boolean {
    const { registry } = this.deps;
    return (this.inflight.get(name) ?? 0) > 0 || (registry.has(name) && registry.get(name).instances().length > 0);
  }

  private runNow(opts: ReconcileOptions): Promise<ReconcileResult> {
    // Planned synchronously, and the servers it changes marked before anything is awaited, so no call slips in between.
    const { registry, logger } = this.deps;
    const current = new Map(registry.pools().map((p) => [p.name, p.config]));
    const plan = planReconcile(current, this.deps.desired(), opts, (name) => this.busy(name));
    const work = registry.apply(plan.configs);
    for (const name of plan.changing) this.changing.set(name, work);
    return work
      .then((result) => {
        this.deferred = new Set(plan.deferred);
        if (plan.deferred.length > 0) logger.info({ servers: plan.deferred }, 'settings change waits for these servers\' live instances to stop');
        return { ...result, deferred: plan.deferred };
      })
      .finally(() => {
        for (const [name, p] of this.changing) if (p === work) this.changing.delete(name);
      });
  }

  /** A deferred server with nothing running any more takes its pending change. */
  private catchUp(name: string): void {
    if (this.stopped || this.catchUpQueued || !this.deferred.has(name) || !this.deps.registry.has(name)) return;
    if (this.busy(name)) return;
    this.catchUpQueued = true;
    setImmediate(() => {
      this.catchUpQueued = false;
      void this.reconcile({ deferBusy: true }).catch((err: unknown) => this.deps.logger.error({ err }, 'could not apply a pending settings change'));
    });
  }
}
