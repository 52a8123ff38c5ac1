/**
 * `GET /ui/api/state`: everything the page draws, in one read — per server the protocol row
 * (preference, era, negotiated version, eraSource, cached record, legacy lane), its lanes and live
 * instances with the chart ids of their session states, the pool's own state, the last
 * `server.era.stale`, and the kept probe timelines; its summary (state, tool count, last error) for the
 * table at the top of the page; the recent calls (scrubbed, ../core/call-records.ts); plus the session,
 * pool and reconcile charts as Mermaid text.
 */
import { describeLeftOut } from '../catalog/left-out.js';
import { activeStateIds, toMermaid } from '../machines/statechart-doc.js';
import { CHARTS } from '../inspect/charts.js';
import type { Controller } from '../core/controller.js';
import type { RecentCall } from '../core/call-records.js';
import type { ConfigStatusView, LaneView, ProtocolRow } from '../core/views.js';
import { statechartView } from './statechart-view.js';
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
  /** Tools whose definition changed since first seen (docs/serving.md), each as one line; `held` ones are not served until accepted. */
  changedTools: Array<{ tool: string; lane: string; changed: string[]; since: string; held: boolean; text: string }>;
  /** OAuth (HTTP servers that may use it): needed, authorized until when, or why it failed; never a token. */
  auth: { state: string; scopes?: string[]; expiresAt?: string; error?: string; unsaved?: string } | null;
  /** One line for a person: what it is doing now (`ready`, `idle`, `failed`, `needs login`…). */
  state: string;
  /** Tools in its known listing (own lane); null before it was ever listed. */
  tools: number | null;
  /** The latest failure seen: a probe that failed, a failed call, an authorization error. */
  lastError: { at: string; text: string } | null;
}

export interface UiError {
  at: string;
  server: string;
  text: string;
}

export interface UiState {
  at: string;
  inspector: string | null;
  charts: { session: string; pool: string; reconcile: string };
  /** One per instance (a server two configs define alike runs once). */
  servers: UiServer[];
  /** The configs the daemon holds, its own first: the summary groups servers by them. */
  configs: ConfigStatusView[];
  /** The last finished calls, newest first. */
  calls: RecentCall[];
  /** The latest failures of every server (probes, calls), newest first. */
  errors: UiError[];
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

/** The errors a server's probes and calls ended with, oldest first. */
function errorsOf(server: string, probes: ProbeRecord[], calls: RecentCall[], auth: UiServer['auth']): UiError[] {
  const out: UiError[] = [];
  for (const p of probes) {
    if (p.verdict && !p.verdict.ok) {
      const at = p.steps.length ? p.steps[p.steps.length - 1]!.at : p.startedAt;
      out.push({ at, server, text: `start failed: ${[p.verdict.code, p.verdict.message].filter(Boolean).join(' ')}`.trim() });
    }
  }
  for (const c of calls) if (c.server === server && !c.ok) out.push({ at: c.at, server, text: `${c.tool}: ${c.message ?? c.code ?? 'failed'}` });
  if (auth?.state === 'failed' && auth.error) out.push({ at: '', server, text: `authorization failed: ${auth.error}` });
  return out.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
}

/** The lanes with a state each: the legacy lane's own, else what its instances are doing. */
function lanesWithState(lanes: LaneView[], instances: UiInstance[]): LaneView[] {
  return lanes.map((l) => {
    if (l.state) return l;
    const states = instances.filter((i) => i.lane === l.lane).map((i) => i.sessionState ?? i.poolState);
    if (states.length === 0) return { ...l, state: 'idle' };
    const counts = new Map<string, number>();
    for (const x of states) counts.set(x, (counts.get(x) ?? 0) + 1);
    return { ...l, state: [...counts].map(([x, n]) => (n > 1 ? `${n} ${x}` : x)).join(', ') };
  });
}

function summaryState(instances: UiInstance[], probes: ProbeRecord[], auth: UiServer['auth']): string {
  if (auth?.state === 'needed') return 'needs login';
  if (instances.length > 0) {
    const states = [...new Set(instances.map((i) => i.sessionState ?? i.poolState))];
    return states.join(', ');
  }
  const last = probes[probes.length - 1];
  if (last?.verdict && !last.verdict.ok) return 'failed';
  if (auth?.state === 'failed') return 'authorization failed';
  return 'idle';
}

export function uiState(controller: Controller, hub: UiHub): UiState {
  // One row per instance (a server two configs define alike is one); `configs` says which config names it how.
  const every = controller.instanceStatus();
  const rows = new Map(every.protocol.map((r) => [r.server, r]));
  const probes = hub.probes.view();
  const calls = controller.recentCalls();
  const changed = controller.catalog.changedTools();
  const errors: UiError[] = [];
  const servers: UiServer[] = every.status.map((s) => {
    const row = rows.get(s.server)!;
    const pool = controller.registry.get(s.server);
    const chart = statechartView(pool);
    const ids = new Map(chart.instances.map((i) => [i.id, i.activeStateIds]));
    const snap = pool.actor.getSnapshot();
    const slots = (snap.context as { instances?: { get(id: string): { holders: string[] } | undefined } }).instances;
    const instances: UiInstance[] = s.instances.map((i) => ({
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
    }));
    const kept = probes[s.server]?.probes ?? [];
    const auth = authOf(controller, s.server);
    const own = errorsOf(s.server, kept, calls, auth);
    errors.push(...own);
    const last = own[own.length - 1];
    return {
      ...row,
      transport: s.transport,
      lanes: lanesWithState(s.lanes, instances),
      instances,
      pool: { state: poolStateText(snap.value), activeStateIds: activeStateIds(snap) },
      stale: probes[s.server]?.stale ?? null,
      probes: kept,
      auth,
      leftOut: controller.catalog.leftOut(s.server).map((l) => ({ ...l, text: describeLeftOut(l) })),
      changedTools: changed
        .filter((c) => c.server === s.server)
        .map((c) => ({
          tool: c.tool,
          lane: c.lane,
          changed: c.changed,
          since: c.since,
          held: c.held,
          text: `tool ${JSON.stringify(c.tool)} changed its ${c.changed.join(', ') || 'definition'} since it was first seen (${c.since})${c.held ? `: held until accepted (mcpx tools --accept ${c.server} ${c.tool})` : ''}`,
        })),
      state: summaryState(instances, kept, auth),
      tools: controller.catalog.toolCount(s.server),
      lastError: last ? { at: last.at, text: last.text } : null,
    };
  });
  errors.sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0));
  return {
    at: new Date().toISOString(),
    inspector: hub.inspectorUrl,
    charts: chartTexts(),
    servers,
    configs: controller.configsStatus(),
    calls: calls.slice().reverse(),
    errors: errors.slice(0, 50),
  };
}
