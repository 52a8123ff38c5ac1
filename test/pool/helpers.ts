/** Building pools over auto-answering simulated upstreams, and watching what they emit. */
import type { Preference } from '../../src/machines/preference.js';
import { ServerPool, type ServerPoolDeps } from '../../src/pool/server-pool.js';
import type { PoolEvent, PoolLimits, PoolServerConfig } from '../../src/pool/types.js';
import { AutoUpstream, type AutoUpstreamOptions } from '../support/auto-upstream.js';

export interface SimPool {
  pool: ServerPool;
  up: AutoUpstream;
  events: PoolEvent[];
  stops(): Array<Extract<PoolEvent, { type: 'server.stop' }>>;
}

export interface SimPoolOptions {
  preference?: Preference;
  limits?: Partial<PoolLimits>;
  upstream?: AutoUpstreamOptions;
  config?: Partial<PoolServerConfig>;
  deps?: ServerPoolDeps;
}

export function simPool(o: SimPoolOptions = {}): SimPool {
  const up = new AutoUpstream(o.upstream ?? { kind: 'dual' });
  const config: PoolServerConfig = {
    name: 'sim',
    definition: { command: 'simulated-server' },
    preference: o.preference ?? 'prefer-discover',
    limits: { scope: 'global', max: 4, sharing: 'shared', idleTimeoutMs: 60_000, ...o.limits },
    probeTimeoutMs: 1_000,
    startTimeoutMs: 5_000,
    ...o.config,
  };
  const pool = new ServerPool(config, { sessionFactory: up.sessionFactory(), ...o.deps });
  const events: PoolEvent[] = [];
  pool.on('event', (e) => events.push(e));
  return {
    pool,
    up,
    events,
    stops: () => events.filter((e): e is Extract<PoolEvent, { type: 'server.stop' }> => e.type === 'server.stop'),
  };
}

export const LEGACY_CALLER = '2025-11-25';
export const MODERN_CALLER = '2026-07-28';

/** Wait until `check` holds (polling), or fail after `ms`. */
export async function until(check: () => boolean, ms = 2_000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}
