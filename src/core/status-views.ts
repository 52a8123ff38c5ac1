/**
 * The pools as `/v1/status` and `/v1/protocol` show them: each server's lanes and instances, and each
 * server's protocol report.
 */
import { laneCap } from '../pool/pool.machine.js';
import type { ServerPool } from '../pool/server-pool.js';
import type { InstanceStatus, PoolServerConfig } from '../pool/types.js';
import { capabilitiesOf } from '../transports/capabilities.js';
import { wireOf } from '../upstream/definition.js';
import type { DaemonConfig, InstanceView, LaneView, ProtocolRow, ServerStatusView } from './views.js';

/** A config's enabled servers in file order, each with the instance it runs on. */
export function orderedPools(config: DaemonConfig, instances: ReadonlyMap<string, string>): Array<{ name: string; instance: string }> {
  return config.servers.flatMap((s) => {
    const instance = instances.get(s.name);
    return instance === undefined ? [] : [{ name: s.name, instance }];
  });
}

export function serverStatus(pools: ServerPool[]): ServerStatusView[] {
  return pools.map((pool) => {
    const c = pool.config;
    const instances = pool.instances();
    const report = pool.protocolReport();
    const cap = laneCap({ scope: c.limits.scope, max: c.limits.max });
    const lanes: LaneView[] = [{ lane: 'own', max: cap, instances: instances.filter((i) => i.lane === 'own').length }];
    if (c.preference === 'follow') {
      lanes.push({
        lane: 'legacy',
        max: cap,
        instances: instances.filter((i) => i.lane === 'legacy').length,
        ...(report.legacyLane ? { state: report.legacyLane.state, ...(report.legacyLane.reason ? { reason: report.legacyLane.reason } : {}) } : {}),
      });
    }
    return {
      server: pool.name,
      transport: capabilitiesOf(wireOf(c.definition)).kind,
      preference: c.preference,
      lanes,
      instances: instances.map(instanceView),
    };
  });
}

/**
 * Each pool's protocol report; a pool kept on its old config for now (`isDeferred`) names the preference
 * it will take (`pendingPreference`).
 */
export function protocolRows(pools: ServerPool[], desired: PoolServerConfig[], isDeferred: (server: string) => boolean): { servers: ProtocolRow[] } {
  const want = new Map(desired.map((c) => [c.name, c]));
  return {
    servers: pools.map((pool) => {
      const row: ProtocolRow = pool.protocolReport();
      const w = want.get(pool.name);
      if (isDeferred(pool.name) && w && w.preference !== row.preference) row.pendingPreference = w.preference;
      return row;
    }),
  };
}

function instanceView(i: InstanceStatus): InstanceView {
  return {
    id: i.id,
    lane: i.lane,
    pid: i.pid ?? null,
    scopeKey: i.scopeKey,
    holders: i.holders,
    state: i.state,
    sessionState: i.sessionState ?? null,
    era: i.era,
    negotiated: i.negotiated,
    eraSource: i.eraSource,
    startedAt: i.startedAt,
    uptimeMs: i.uptimeMs,
  };
}
