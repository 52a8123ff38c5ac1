/**
 * The Reconciler: the shell of the reconcile statechart (./reconcile.machine.ts, where every rule about
 * when pools change and who waits is written). It gathers the facts a run is planned from, carries
 * out the machine's `apply` on the PoolRegistry, counts calls in flight (`withPool`, which waits while
 * its server is changing), tells the machine when a server has nothing running any more, and queues
 * config reloads one after another. The Controller asks it; it keeps the API-facing methods.
 */
import { createActor, type Actor } from 'xstate';
import type { Logger } from '../log.js';
import type { PoolRegistry } from './pool-registry.js';
import type { ServerPool } from './server-pool.js';
import type { PoolServerConfig } from './types.js';
import {
  reconcileMachine,
  type ReconcileEmitted,
  type ReconcileEvent,
  type ReconcileFacts,
  type ReconcileOptions,
  type ReconcileResult,
} from './reconcile.machine.js';

export { planReconcile, type ReconcileFacts, type ReconcileOptions, type ReconcilePlan, type ReconcileResult } from './reconcile.machine.js';

export interface ReconcilerDeps {
  registry: PoolRegistry;
  /** The effective per-server configs now (enabled servers only). */
  desired: () => PoolServerConfig[];
  /** Looks a server's pool up (throws for an unknown server). */
  pool: (server: string) => ServerPool;
  logger: Logger;
}

export class Reconciler {
  private readonly deps: ReconcilerDeps;
  private readonly actor: Actor<typeof reconcileMachine>;
  /** Calls in flight per server. */
  private readonly inflight = new Map<string, number>();
  /** The outcome each `reconcile()` caller waits for, by run id. */
  private readonly pending = new Map<string, { resolve: (r: ReconcileResult) => void; reject: (err: unknown) => void }>();
  /** The apply in progress (callers of a changing server wait for it). */
  private applying: Promise<unknown> = Promise.resolve();
  private reloads: Promise<unknown> = Promise.resolve();
  private nextRun = 0;

  constructor(deps: ReconcilerDeps) {
    this.deps = deps;
    this.actor = createActor(reconcileMachine);
    this.actor.on('*', (e) => this.perform(e as ReconcileEmitted));
    this.actor.subscribe({ error: (err) => this.deps.logger.error({ err }, 'reconcile actor failed') });
    this.actor.start();
  }

  /** Queues a run; resolves with what it did (nothing once stopped). */
  reconcile(opts: ReconcileOptions): Promise<ReconcileResult> {
    const id = `run-${++this.nextRun}`;
    const outcome = new Promise<ReconcileResult>((resolve, reject) => this.pending.set(id, { resolve, reject }));
    // On the next microtask, as a run always started: whatever the caller does right after asking is seen by the plan.
    queueMicrotask(() => this.send({ type: 'reconcile', id, deferBusy: opts.deferBusy }));
    return outcome;
  }

  /** Runs `fn` (a config reload) after the reloads before it. */
  reload<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.reloads.then(fn);
    this.reloads = run.catch(() => undefined);
    return run;
  }

  /** Whether a server's last run left it waiting for its instances to stop. */
  isDeferred(server: string): boolean {
    return this.actor.getSnapshot().context.deferred.includes(server);
  }

  /** Runs `fn` on the server's pool, counted as in flight (so a settings change does not replace the pool under it). */
  async withPool<T>(server: string, fn: (pool: ServerPool) => Promise<T>): Promise<T> {
    // From the last check to the count is synchronous: a run deciding about this server either saw this call in flight or starts after it.
    while (this.actor.getSnapshot().context.changing.includes(server)) await this.applying.catch(() => undefined);
    const pool = this.deps.pool(server);
    const name = pool.name;
    this.inflight.set(name, (this.inflight.get(name) ?? 0) + 1);
    try {
      return await fn(pool);
    } finally {
      const n = (this.inflight.get(name) ?? 1) - 1;
      if (n <= 0) this.inflight.delete(name);
      else this.inflight.set(name, n);
      this.quiet(name);
    }
  }

  /** An instance of `server` stopped (a pool event): it may have nothing running any more. */
  instanceStopped(server: string): void {
    setImmediate(() => this.quiet(server));
  }

  /** No further runs (those that start from now on do nothing). */
  stop(): void {
    this.send({ type: 'stop' });
  }

  private send(event: ReconcileEvent): void {
    if (this.actor.getSnapshot().status === 'active') this.actor.send(event);
  }

  private busy(name: string): boolean {
    const { registry } = this.deps;
    return (this.inflight.get(name) ?? 0) > 0 || (registry.has(name) && registry.get(name).instances().length > 0);
  }

  private quiet(name: string): void {
    // Only a deferred server waits for quiet (the machine ignores it otherwise): the usual call ends without
    // listing the pool's instances or an event through the machine.
    if (!this.isDeferred(name)) return;
    if (this.deps.registry.has(name) && !this.busy(name)) this.send({ type: 'server.quiet', server: name });
  }

  private perform(e: ReconcileEmitted): void {
    const { registry, logger } = this.deps;
    switch (e.type) {
      case 'facts.needed': {
        let facts: ReconcileFacts;
        try {
          const current = registry.pools().map((p) => p.config);
          facts = { current, desired: this.deps.desired(), busy: current.map((c) => c.name).filter((n) => this.busy(n)) };
        } catch (error) {
          this.send({ type: 'facts.failed', id: e.id, error });
          return;
        }
        this.send({ type: 'facts', id: e.id, facts });
        return;
      }
      case 'apply': {
        const work = registry.apply(e.configs);
        this.applying = work;
        work.then(
          (result) => this.send({ type: 'applied', id: e.id, result }),
          (error: unknown) => this.send({ type: 'apply.failed', id: e.id, error }),
        );
        return;
      }
      case 'done': {
        if (e.result.deferred.length > 0) logger.info({ servers: e.result.deferred }, "settings change waits for these servers' live instances to stop");
        const p = this.pending.get(e.id);
        this.pending.delete(e.id);
        p?.resolve(e.result);
        return;
      }
      case 'failed': {
        const p = this.pending.get(e.id);
        this.pending.delete(e.id);
        if (p) p.reject(e.error);
        else logger.error({ err: e.error }, 'could not apply a pending settings change');
        return;
      }
      case 'catchUp.schedule':
        setImmediate(() => this.send({ type: 'catchUp.due' }));
        return;
    }
  }
}
