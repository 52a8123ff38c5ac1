/**
 * The probe timeline: what each session's probe did, step by step with times (discover sent, the probe
 * timeout, initialize sent alongside, each answer, the verdict), built from the session actors' xstate
 * inspection snapshots (docs/behaviour.md §2–§5 say what the steps mean).
 *
 * Kept in a bounded ring so the last probes of every server can be replayed after the fact: at most
 * `perServer` probes per server, `maxSteps` steps per probe, `maxServers` servers (the least recently
 * probed is forgotten first). Nothing from the config goes in: a step is built from the machine's own
 * fields (state, request ids, versions, error codes), every text passes the daemon's secret scrubber,
 * and long texts are clipped.
 */
import type { InspectionEvent } from 'xstate';
import type { SessionContext, SessionEvent } from '../machines/session.machine.js';
import type { Lane } from '../machines/preference.js';
import { stateName } from '../machines/state-name.js';
import { capabilitiesOf } from '../transports/capabilities.js';
import type { InspectSource } from '../pool/types.js';
import type { SessionSnapshot } from '../upstream/session.js';

export type ProbeStepKind =
  | 'start'
  | 'spawn'
  | 'process.ready'
  | 'discover.sent'
  | 'initialize.sent'
  | 'timeout'
  | 'answer'
  | 'closed'
  | 'respawn'
  | 'verdict'
  | 'stale'
  | 'stopped'
  | 'truncated';

export interface ProbeStep {
  /** Milliseconds since the probe started. */
  t: number;
  at: string;
  kind: ProbeStepKind;
  text: string;
  /** The session's state after this step (dotted, e.g. `connecting.discovering`). */
  state: string;
}

export interface ProbeVerdict {
  ok: boolean;
  era: string | null;
  negotiated: string | null;
  eraSource: string | null;
  code?: string;
  message?: string;
  /** Milliseconds from the start to the verdict. */
  ms: number;
}

export interface ProbeRecord {
  server: string;
  instance: string;
  lane: Lane;
  startedAt: string;
  state: string;
  steps: ProbeStep[];
  verdict: ProbeVerdict | null;
}

/** What a `server.era.stale` said, the last time it happened for a server. */
export interface StaleNote {
  at: string;
  instance: string;
  cached: { era: string; version: string; at: string };
  found: string;
}

export interface ProbeRingLimits {
  perServer: number;
  maxSteps: number;
  maxServers: number;
  maxText: number;
}

export const DEFAULT_PROBE_LIMITS: ProbeRingLimits = { perServer: 8, maxSteps: 64, maxServers: 64, maxText: 300 };

interface Tracked {
  record: ProbeRecord;
  started: number;
  prev: SessionContext | null;
  prevState: string | null;
}

interface ServerEntry {
  probes: Tracked[];
  stale: StaleNote | null;
}

export class ProbeRing {
  private readonly servers = new Map<string, ServerEntry>();
  private readonly live = new Map<string, Tracked>();
  private readonly limits: ProbeRingLimits;
  private readonly scrub: (text: string) => string;
  private readonly now: () => number;
  private readonly listeners = new Set<(r: ProbeRecord) => void>();

  constructor(opts: { scrub?: (text: string) => string; limits?: Partial<ProbeRingLimits>; now?: () => number } = {}) {
    this.scrub = opts.scrub ?? ((t) => t);
    this.limits = { ...DEFAULT_PROBE_LIMITS, ...opts.limits };
    this.now = opts.now ?? Date.now;
  }

  /** The xstate inspection hook (ServerPoolDeps['inspect']): only session snapshots are read. */
  readonly inspect = (ev: InspectionEvent, source: InspectSource): void => {
    if (source.actor !== 'session' || ev.type !== '@xstate.snapshot') return;
    try {
      this.onSnapshot(source, ev.snapshot as SessionSnapshot, ev.event as SessionEvent);
    } catch {
      // a timeline must never break a session
    }
  };

  /** Every server's kept probes, oldest first, and its last `server.era.stale`. */
  view(): Record<string, { probes: ProbeRecord[]; stale: StaleNote | null }> {
    const out: Record<string, { probes: ProbeRecord[]; stale: StaleNote | null }> = {};
    for (const [server, entry] of this.servers)
      out[server] = { probes: entry.probes.map((p) => structuredClone(p.record)), stale: entry.stale ? { ...entry.stale } : null };
    return out;
  }

  probes(server: string): ProbeRecord[] {
    return (this.servers.get(server)?.probes ?? []).map((p) => structuredClone(p.record));
  }

  /** Called after each step is added (for tests and live views). */
  onStep(listener: (r: ProbeRecord) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** How many probes and steps are held (the bound is what tests check). */
  get size(): { servers: number; probes: number; steps: number } {
    let probes = 0;
    let steps = 0;
    for (const e of this.servers.values()) {
      probes += e.probes.length;
      for (const p of e.probes) steps += p.record.steps.length;
    }
    return { servers: this.servers.size, probes, steps };
  }

  private entry(server: string): ServerEntry {
    let e = this.servers.get(server);
    if (e) {
      // most recently probed last: Map order is the eviction order
      this.servers.delete(server);
      this.servers.set(server, e);
      return e;
    }
    e = { probes: [], stale: null };
    this.servers.set(server, e);
    while (this.servers.size > this.limits.maxServers) {
      const oldest = this.servers.keys().next().value as string;
      const gone = this.servers.get(oldest)!;
      for (const p of gone.probes) this.forgetLive(p);
      this.servers.delete(oldest);
    }
    return e;
  }

  private forgetLive(t: Tracked): void {
    const key = `${t.record.server}\0${t.record.instance}`;
    if (this.live.get(key) === t) this.live.delete(key);
  }

  private onSnapshot(source: Extract<InspectSource, { actor: 'session' }>, snapshot: SessionSnapshot, event: SessionEvent): void {
    const key = `${source.server}\0${source.instance}`;
    let t = this.live.get(key);
    const state = stateName(snapshot);
    const c = snapshot.context;
    if (!t) {
      if (event.type !== 'start' && state !== 'idle') return; // joined late: nothing to tell from the middle
      const now = this.now();
      t = {
        record: {
          server: source.server,
          instance: source.instance,
          lane: source.lane,
          startedAt: new Date(now).toISOString(),
          state,
          steps: [],
          verdict: null,
        },
        started: now,
        prev: null,
        prevState: null,
      };
      this.live.set(key, t);
      const entry = this.entry(source.server);
      entry.probes.push(t);
      while (entry.probes.length > this.limits.perServer) this.forgetLive(entry.probes.shift()!);
      if (event.type !== 'start') {
        t.prev = c;
        t.prevState = state;
        return;
      }
    } else {
      this.entry(source.server);
    }
    this.steps(t, state, c, event);
    t.prev = c;
    t.prevState = state;
    t.record.state = state;
    if (snapshot.status !== 'active') this.forgetLive(t);
  }

  private steps(t: Tracked, state: string, c: SessionContext, event: SessionEvent): void {
    const p = t.prev;
    const add = (kind: ProbeStepKind, text: string) => this.add(t, kind, text, state);
    const e = event as {
      type: string;
      id?: unknown;
      answer?: { result?: unknown; error?: { code?: unknown; message?: unknown }; failure?: { kind?: unknown; status?: unknown; message?: unknown } };
      reason?: unknown;
      detail?: unknown;
      pid?: unknown;
    };

    if (e.type === 'start') {
      const cached = c.cached ? `, cached ${c.cached.era} ${c.cached.version}` : ', nothing cached';
      add('start', `probe started: ${c.preference}${cached}; probe timeout ${c.probeTimeoutMs} ms; ${capabilitiesOf(c.wire).kind}`);
    }
    if (e.type.startsWith('xstate.after.')) {
      if (e.type.includes('probeTimeout')) {
        const waiting = t.prevState?.endsWith('awaitingInitialize') ? 'initialize' : 'server/discover';
        add('timeout', `probe timeout: no answer to ${waiting} within ${c.probeTimeoutMs} ms`);
      } else if (e.type.includes('startTimeout')) {
        add('timeout', `start timeout: not connected within ${c.startTimeoutMs} ms`);
      }
    }
    if (e.type === 'transport.ready') add('process.ready', typeof e.pid === 'number' ? `process ready (pid ${e.pid})` : 'connection ready');
    if ((e.type === 'verdict.discover' || e.type === 'verdict.initialize') && e.answer) {
      const to = p && e.id === p.discoverId ? 'server/discover' : p && e.id === p.initializeId ? 'initialize' : `${String(e.id)}`;
      const a = e.answer;
      let what: string;
      if ('result' in a) {
        const r = a.result as { protocolVersion?: unknown; supportedVersions?: unknown } | null;
        const v =
          r && typeof r === 'object'
            ? typeof r.protocolVersion === 'string'
              ? ` (protocolVersion ${r.protocolVersion})`
              : Array.isArray(r.supportedVersions)
                ? ` (supportedVersions ${r.supportedVersions.filter((x) => typeof x === 'string').join(', ')})`
                : ''
            : '';
        what = `result${v}`;
      } else if ('error' in a) {
        what = `error ${String(a.error?.code)}: ${String(a.error?.message ?? '')}`;
      } else {
        what = `failed (${String(a.failure?.kind)}${typeof a.failure?.status === 'number' ? ` ${a.failure.status}` : ''}): ${String(a.failure?.message ?? '')}`;
      }
      const late = t.record.verdict ? ' (after the verdict)' : '';
      const why = p ? c.evidence.slice(p.evidence.length).join('; ') : '';
      add('answer', `answer to ${to}${late}: ${what}${why ? ` → ${why}` : ''}`);
    }
    if (e.type === 'transport.closed') add('closed', `process closed: ${String(e.reason)}${e.detail ? ` (${String(e.detail)})` : ''}`);
    if (p && c.spawns > p.spawns)
      add(
        'spawn',
        c.spawns === 1
          ? `process started (${c.wire})`
          : `process started again (attempt ${c.spawns}${capabilitiesOf(c.wire).processBound ? '' : `, ${c.wire}`})`,
      );
    if (p && c.discoverId && c.discoverId !== p.discoverId) {
      add(
        'discover.sent',
        `server/discover sent (${c.discoverId}, version ${c.discoverVersion ?? '?'}${c.versionRetried ? ', the one retry after -32022' : ''})`,
      );
    }
    if (p && c.initializeId && c.initializeId !== p.initializeId) {
      add(
        'initialize.sent',
        state.endsWith('racing') ? `initialize sent alongside the pending server/discover (${c.initializeId})` : `initialize sent (${c.initializeId})`,
      );
    }
    if (state.endsWith('respawning') || (p && c.afterRespawn !== p.afterRespawn && c.afterRespawn !== null)) {
      if (t.prevState !== state) add('respawn', `replacing the process${c.afterRespawn ? ` (next: ${c.afterRespawn})` : ''}`);
    }
    if (state === 'ready' && t.prevState !== 'ready') {
      this.verdict(t, { ok: true, era: c.era, negotiated: c.negotiated, eraSource: c.eraSource, ms: this.now() - t.started });
      add('verdict', `verdict: ${c.era ?? '?'} ${c.negotiated ?? ''} (eraSource ${c.eraSource ?? '?'})`);
      if (c.cached && c.era && c.cached.era !== c.era) {
        const note: StaleNote = {
          at: new Date(this.now()).toISOString(),
          instance: t.record.instance,
          cached: { era: c.cached.era, version: c.cached.version, at: c.cached.at },
          found: c.era,
        };
        this.servers.get(t.record.server)!.stale = note;
        add('stale', `server.era.stale: the cached record said ${c.cached.era} ${c.cached.version}, the server answered ${c.era}`);
      }
    }
    if (state === 'failed' && t.prevState !== 'failed') {
      const err = c.error;
      this.verdict(t, {
        ok: false,
        era: null,
        negotiated: null,
        eraSource: null,
        ...(err ? { code: err.code, message: this.clip(err.message) } : {}),
        ms: this.now() - t.started,
      });
      add('verdict', `verdict: failed${err ? ` ${err.code}: ${err.message}` : ''}`);
    }
    if ((state === 'closed' || state === 'stopped') && t.prevState !== state)
      add('stopped', state === 'closed' ? `session closed (${c.closeReason ?? 'closed'})` : 'session stopped');
  }

  private verdict(t: Tracked, v: ProbeVerdict): void {
    t.record.verdict = v;
  }

  private clip(text: string): string {
    const s = this.scrub(text);
    return s.length > this.limits.maxText ? `${s.slice(0, this.limits.maxText - 1)}…` : s;
  }

  private add(t: Tracked, kind: ProbeStepKind, text: string, state: string): void {
    const steps = t.record.steps;
    if (steps.length >= this.limits.maxSteps) return;
    const now = this.now();
    const step: ProbeStep = { t: now - t.started, at: new Date(now).toISOString(), kind, text: this.clip(text), state };
    if (steps.length === this.limits.maxSteps - 1) {
      steps.push({ ...step, kind: 'truncated', text: `(later steps of this probe are not kept: ${this.limits.maxSteps} at most)` });
    } else {
      steps.push(step);
    }
    for (const l of this.listeners) {
      try {
        l(t.record);
      } catch {
        // a listener's problem
      }
    }
  }
}
