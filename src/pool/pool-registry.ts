/**
 * PoolRegistry: one ServerPool per configured server name, kept across config reloads.
 *
 * `apply(configs)` adds the new servers, stops the removed ones, keeps every pool whose settings did
 * not change (its running instances survive the reload), and replaces the rest. "Did not change"
 * means the same process definition (its era-cache key), the same preference, the same limits, the
 * same timeouts and backoff, and the same era-cache switch — anything a running pool has baked in. Pools are independent: one
 * server's failure (a pool that cannot be built, a stop that throws) never touches another's.
 */
import { EventEmitter } from 'node:events';
import stringify from 'safe-stable-stringify';
import { McpxError } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import { eraCacheKey } from '../upstream/process-key.js';
import { ServerPool, type ServerPoolDeps } from './server-pool.js';
import type { PoolEvent, PoolServerConfig, ProtocolReport } from './types.js';

export interface PoolRegistryDeps extends ServerPoolDeps {
  /** Builds a pool; defaults to `new ServerPool(config, deps)`. */
  createPool?: (config: PoolServerConfig, deps: ServerPoolDeps) => ServerPool;
}

export interface ApplyResult {
  added: string[];
  removed: string[];
  replaced: string[];
  kept: string[];
  /** Servers whose pool could not be built; the others are unaffected. */
  failed: Array<{ name: string; error: Error }>;
}

interface Entry {
  pool: ServerPool;
  fingerprint: string;
  forward: (e: PoolEvent) => void;
}

/** What a running pool has baked in; a change to any of it needs a new pool. */
export function poolFingerprint(config: PoolServerConfig): string {
  let process: string;
  try {
    process = eraCacheKey(config.definition as never);
  } catch {
    process = stringify(config.definition) ?? '';
  }
  return (
    stringify({
      process,
      // Not in the era-cache key (the program is the same), but a running process was started with or without it.
      inheritEnv: (config.definition as { inheritEnv?: boolean }).inheritEnv === true,
      preference: config.preference,
      limits: config.limits,
      probeTimeoutMs: config.probeTimeoutMs,
      startTimeoutMs: config.startTimeoutMs ?? null,
      requestTimeoutMs: config.requestTimeoutMs ?? null,
      backoff: config.backoff ?? null,
      // A running pool's sessions were built with or without the era cache.
      eraCache: config.eraCache ?? null,
      // Whether its sessions declare `roots` at initialize (a session cannot take that back or add it).
      roots: (config.roots?.length ?? 0) > 0,
    }) ?? ''
  );
}

export class PoolRegistry extends EventEmitter {
  private readonly entries = new Map<string, Entry>();
  private readonly deps: PoolRegistryDeps;
  private readonly log: Logger;
  /** Applies run one after another, so a reload never races another reload or stopAll. */
  private chain: Promise<unknown> = Promise.resolve();

  constructor(deps: PoolRegistryDeps = {}) {
    super();
    this.deps = deps;
    this.log = (deps.logger ?? silentLogger).child({ component: 'pools' });
  }

  /** @throws McpxError MCPX_UNKNOWN_SERVER naming the configured servers. */
  get(name: string): ServerPool {
    const entry = this.entries.get(name);
    if (!entry) {
      const known = [...this.entries.keys()];
      throw new McpxError(
        'MCPX_UNKNOWN_SERVER',
        `no server named ${JSON.stringify(name)} is configured${known.length ? ` (configured: ${known.join(', ')})` : ''}`,
        {
          data: { server: name, configured: known },
        },
      );
    }
    return entry.pool;
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  names(): string[] {
    return [...this.entries.keys()];
  }

  pools(): ServerPool[] {
    return [...this.entries.values()].map((e) => e.pool);
  }

  protocolReports(): ProtocolReport[] {
    return this.pools().map((p) => p.protocolReport());
  }

  override on(event: 'event', listener: (e: PoolEvent) => void): this;
  // EventEmitter's own signature: its listeners take any arguments.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override on(event: string | symbol, listener: (...args: any[]) => void): this;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override on(event: string | symbol, listener: (...args: any[]) => void): this {
    return super.on(event, listener);
  }

  /** Bring the pools in line with `configs` (the whole new server list). */
  apply(configs: readonly PoolServerConfig[]): Promise<ApplyResult> {
    const run = this.chain.then(() => this.applyNow(configs));
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Stop every pool; resolves when every instance of every server is gone. */
  stopAll(): Promise<void> {
    const run = this.chain.then(async () => {
      const entries = [...this.entries.entries()];
      this.entries.clear();
      await this.stopEntries(entries);
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async applyNow(configs: readonly PoolServerConfig[]): Promise<ApplyResult> {
    const result: ApplyResult = { added: [], removed: [], replaced: [], kept: [], failed: [] };
    const wanted = new Map(configs.map((c) => [c.name, c]));
    const retired: Array<[string, Entry]> = [];
    for (const [name, entry] of this.entries) {
      if (!wanted.has(name)) {
        retired.push([name, entry]);
        this.entries.delete(name);
        result.removed.push(name);
      }
    }
    for (const [name, config] of wanted) {
      const fingerprint = poolFingerprint(config);
      const old = this.entries.get(name);
      if (old && old.fingerprint === fingerprint) {
        old.pool.setRoots?.(config.roots);
        result.kept.push(name);
        continue;
      }
      let pool: ServerPool;
      try {
        pool = this.build(config);
      } catch (err) {
        const error = err instanceof Error ? err : new Error(String(err));
        this.log.error({ server: name, err: error }, 'could not build the pool');
        result.failed.push({ name, error });
        if (old) {
          // The old pool no longer matches the config; do not keep serving a stale definition.
          retired.push([name, old]);
          this.entries.delete(name);
        }
        continue;
      }
      const forward = (e: PoolEvent) => this.forward(e);
      pool.on('event', forward);
      this.entries.set(name, { pool, fingerprint, forward });
      if (old) {
        retired.push([name, old]);
        result.replaced.push(name);
      } else {
        result.added.push(name);
      }
    }
    await this.stopEntries(retired);
    return result;
  }

  private build(config: PoolServerConfig): ServerPool {
    const { createPool, ...deps } = this.deps;
    return createPool ? createPool(config, deps) : new ServerPool(config, deps);
  }

  private async stopEntries(entries: Array<[string, Entry]>): Promise<void> {
    const results = await Promise.allSettled(entries.map(([, e]) => e.pool.stop()));
    results.forEach((r, i) => {
      const [name, entry] = entries[i]!;
      entry.pool.off('event', entry.forward);
      if (r.status === 'rejected') this.log.error({ server: name, err: r.reason }, 'error while stopping a pool');
    });
  }

  private forward(e: PoolEvent): void {
    try {
      this.emit('event', e);
    } catch (err) {
      this.log.error({ err, event: e.type }, 'a pool event listener threw');
    }
  }
}
