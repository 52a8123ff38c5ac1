/**
 * The contract between the pool (one per configured server, supervising its sessions) and
 * everything above it (the daemon's /v1 API, `mcpx serve`). docs/behaviour.md §6 and §7.
 */
import type { Lane, Preference } from '../machines/preference.js';
import type { EraSource } from '../machines/session.machine.js';
import type { Era } from '../machines/versions.js';
import type { ServerDefinition } from '../upstream/definition.js';
import type { EraRecord } from '../upstream/era-cache.js';
import type { Call } from '../call/call.js';
import type { ChangedList } from '../upstream/session.js';

export type Scope = 'global' | 'session' | 'call';
export type Sharing = 'shared' | 'exclusive';

/** Leasing knobs of one server (config `mcpx` block over the `pool.*` settings). */
export interface PoolLimits {
  scope: Scope;
  /** Instances per lane; a global scope holds one per lane whatever this says. */
  max: number;
  sharing: Sharing;
  idleTimeoutMs: number;
}

/** How long a lane whose start failed is left alone: initialMs · factor^(failures−1), capped at maxMs. */
export interface BackoffPolicy {
  /** Cooldown after the first failed start. */
  initialMs: number;
  /** Growth per further failure in a row. */
  factor: number;
  /** The cap. */
  maxMs: number;
}

/** Everything a pool needs to know about its server. */
export interface PoolServerConfig {
  name: string;
  definition: ServerDefinition;
  preference: Preference;
  limits: PoolLimits;
  probeTimeoutMs: number;
  startTimeoutMs?: number;
  requestTimeoutMs?: number;
  /** Start-failure backoff; defaults in src/pool/pool.machine.ts (DEFAULT_BACKOFF: 1 s, ×2, capped at 30 s). */
  backoff?: Partial<BackoffPolicy>;
  /**
   * Whether the pool's sessions use the shared era cache (the `upstream.eraCache` setting; the daemon's
   * registry, `createPoolRegistry`, reads it). In the pool fingerprint: switching it replaces the pool.
   * Absent: the registry decides.
   */
  eraCache?: boolean;
  /**
   * The folders mcpx gives the server as its roots (`mcpx.roots`). None: a session callers share declares
   * no `roots` capability, and the server keeps its own configuration. Whether there are any is in the
   * pool fingerprint (the capability is declared at initialize); a change of folders is announced to
   * running sessions (`notifications/roots/list_changed`) instead of replacing them.
   */
  roots?: readonly string[];
}

export interface InstanceStatus {
  id: string;
  lane: Lane;
  scopeKey: string;
  pid: number | undefined;
  state: string;
  holders: number;
  era: Era | null;
  negotiated: string | null;
  eraSource: EraSource | null;
  startedAt: string;
  uptimeMs: number;
  /** The session statechart's dotted state (e.g. `connecting.discovering`, `ready`). */
  sessionState?: string;
}

export interface LegacyLaneReport {
  /** `available`: legacy callers get their own legacy session; `refused`: the server refused it, they share the modern one. */
  state: 'unused' | 'available' | 'refused';
  reason?: string;
}

/** One row of `GET /v1/protocol` (docs/behaviour.md §7). */
export interface ProtocolReport {
  server: string;
  preference: Preference;
  era: Era | null;
  negotiated: string | null;
  eraSource: EraSource | null;
  cached: EraRecord | null;
  legacyLane: LegacyLaneReport | null;
}

/** What a lane's most recent ready instance said about itself (discover or initialize), for catalogues. */
export interface UpstreamInfo {
  lane: Lane;
  /** The instance it came from (it may have stopped since). */
  instance: string;
  era: Era | null;
  negotiated: string | null;
  serverInfo: unknown;
  capabilities: unknown;
  instructions: string | undefined;
}

/** Which actor an xstate inspection event came from: a pool's, or one of its session instances'. */
export type InspectSource = { actor: 'pool'; server: string } | { actor: 'session'; server: string; instance: string; lane: Lane };

/** Events a pool emits (for the daemon's event stream and logs). */
export type PoolEvent =
  | {
      type: 'server.start';
      server: string;
      instance: string;
      pid: number | undefined;
      lane: Lane;
      era: Era | null;
      negotiated: string | null;
      eraSource: EraSource | null;
      readyMs: number;
    }
  | { type: 'server.stop'; server: string; instance: string; lane: Lane; reason: string }
  | { type: 'server.era.stale'; server: string; cached: EraRecord; found: Era }
  | { type: 'session.state'; server: string; instance: string; lane: Lane; state: string; event: string }
  /** The upstream said `notifications/<list>/list_changed`: list it again. */
  | { type: 'server.list_changed'; server: string; instance: string; lane: Lane; list: ChangedList };

export interface ServerPoolApi {
  readonly name: string;
  /** One call on an instance of the caller's lane and scope key (a listing: every page, under the listing's key). */
  run(call: Call): Promise<Record<string, unknown>>;
  /** The last known self-description of a lane's ready instance; null before one was ready. */
  upstreamInfo(lane?: Lane): UpstreamInfo | null;
  instances(): InstanceStatus[];
  protocolReport(): ProtocolReport;
  /** Stop every instance and child process. */
  stop(): Promise<void>;
  on(event: 'event', listener: (e: PoolEvent) => void): this;
}

// ---- The pool chart's slots and waiters (its context; the slot table keeps the slots) ----

export type SlotStatus = 'starting' | 'ready' | 'idle' | 'stopping';

export interface Slot {
  id: string;
  lane: Lane;
  key: string;
  status: SlotStatus;
  /** Request ids of the callers holding it. */
  holders: string[];
  /** Logical time of the last grant or release, for LRU eviction. */
  lastUsed: number;
  /** The era the session settled on (null while starting). */
  era: Era | null;
  /** When an idle slot is stopped for idleness (the pool's clock, ms); null: not idle, or never. */
  idleAt: number | null;
}

export interface Waiter {
  requestId: string;
  /** The lane the caller's era asks for: `legacy` only under follow, for callers before 2026-07-28. */
  want: Lane;
  key: string;
  /** Arrival order (the pool's acquire count when it came): callers are served oldest first. */
  seq: number;
}
