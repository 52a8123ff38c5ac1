/**
 * `GET /ui/api/state`: everything the page draws, in one read — per server the protocol row
 * (preference, era, negotiated version, eraSource, cached record, legacy lane), its lanes and live
 * instances with the chart ids of their session states, the pool's own state, the last
 * `server.era.stale`, and the kept probe timelines; plus the session, pool and reconcile charts as Mermaid text.
 */
import { describeLeftOut } from '../catalog/left-out.js';
import { activeStateIds, toMermaid } from '../machines/statechart-doc.js';
import { CHARTS } from '../machines/charts.js';
import type { Controller } from '../server/controller.js';
import type { LaneView, ProtocolRow } from '../server/views.js';
import { statechartView } from '../server/statechart-view.js';
import type { ProbeRecord, StaleNote } from './probe-ring.js';
import type { UiHub } from './hub.js';

export interface UiInstance {
  id: string;
  lane: string;
  pid: number | null;
  poolState: string;
  sessionState: string | null;
  era: string | null;
  negotiated: string | null;
  eraSource: string | null;
  holders: number;
  /** The request ids of the callers holding it now (the pool's slot table). */
  holderIds: string[];
  startedAt: string;
  uptimeMs: number;
  activeStateIds: string[];
}

export interface UiServer extends ProtocolRow {
  transport: 'stdio' | 'http';
  lanes: LaneView[];
  instances: UiInstance[];
  pool: { state: string; activeStateIds: string[] };
  stale: StaleNote | null;
  probes: ProbeRecord[];
  /** What the server last listed that mcpx does not serve (docs/serving.md), each as one line. */
  leftOut: Array<{ list: string; name: string; reason: string; text: string }>;
  /** OAuth (HTTP servers that may use it): needed, authorized until when, or why it failed; never a token. */
  auth: { state: string; scopes?: string[]; expiresAt?: string; error?: string; unsaved?: string } | null;
}

export interface UiState {
  at: string;
  inspector: string | null;
  charts: { session: string; pool: string; reconcile: string };
  servers: UiServer[];
}

let charts: UiState['charts'] | undefined;

/** Both charts as Mermaid text, drawn from the machines exactly as docs/statecharts draws them. */
export function chartTexts(): UiState['charts'] {
  if (charts) return charts;
  const session = CHARTS.find((c) => c.file === 'session.md')!;
  const pool = CHARTS.find((c) => c.file === 'pool.md')!;
  const reconcile = CHARTS.find((c) => c.file === 'reconcile.md')!;
  charts = {
    session: toMermaid(session.machine, session.options),
    pool: toMermaid(pool.machine, pool.options),
    reconcile: toMermaid(reconcile.machine, reconcile.options),
  };
  return charts;
}

function poolStateText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') {
    return Object.entries(value as Record<string, unknown>)
      .map(([k, v]) => {
        const sub = poolStateText(v);
        return sub ? `${k}.${sub.includes(',') ? `(${sub})` : sub}` : k;
      })
      .join(', ');
  }
  return '';
}

function authOf(controller: Controller, server: string): UiServer['auth'] {
  const v = controller.auth?.authorizer(server)?.view();
  if (!v) return null;
  return {
    state: v.state,
    ...(v.scopes ? { scopes: v.scopes } : {}),
    ...(v.expiresAt ? { expiresAt: v.expiresAt } : {}),
    ...(v.error ? { error: v.error } : {}),
    ...(v.unsaved ? { unsaved: v.unsaved } : {}),
  };
}

export function uiState(controller: Controller, hub: UiHub): UiState {
  const rows = new Map(controller.protocol().servers.map((r) => [r.server, r]));
  const probes = hub.probes.view();
  const servers: UiServer[] = controller.serverStatus().map((s) => {
    const row = rows.get(s.server)!;
    const pool = controller.pool(s.server);
    const chart = statechartView(pool);
    const ids = new Map(chart.instances.map((i) => [i.id, i.activeStateIds]));
    const snap = pool.actor.getSnapshot();
    const slots = (snap.context as { instances?: { get(id: string): { holders: string[] } | undefined } }).instances;
    return {
      ...row,
      transport: s.transport,
      lanes: s.lanes,
      instances: s.instances.map((i) => ({
        id: i.id,
        lane: i.lane,
        pid: i.pid,
        poolState: i.state,
        sessionState: i.sessionState,
        era: i.era,
        negotiated: i.negotiated,
        eraSource: i.eraSource,
        holders: i.holders,
        holderIds: [...(slots?.get(i.id)?.holders ?? [])].slice(0, 16),
        startedAt: i.startedAt,
        uptimeMs: i.uptimeMs,
        activeStateIds: ids.get(i.id) ?? [],
      })),
      pool: { state: poolStateText(snap.value), activeStateIds: activeStateIds(snap) },
      stale: probes[s.server]?.stale ?? null,
      probes: probes[s.server]?.probes ?? [],
      auth: authOf(controller, s.server),
      leftOut: controller.catalog.leftOut(s.server).map((l) => ({ ...l, text: describeLeftOut(l) })),
    };
  });
  return { at: new Date().toISOString(), inspector: hub.inspectorUrl, charts: chartTexts(), servers };
}
