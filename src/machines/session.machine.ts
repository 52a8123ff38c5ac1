/**
 * The upstream session statechart: how mcpx decides which era to speak to one upstream
 * (docs/behaviour.md §2–§5). It is the single place where eras are decided.
 *
 * The machine does no I/O. A transport adapter (src/upstream/session.ts) carries out what it
 * emits — `spawn`, `kill`, `request`, `notify`, `cache.write`, `era.stale` — and feeds back what
 * happened: `transport.ready`, `transport.closed`, and each probe answer as a `verdict.discover` /
 * `verdict.initialize` event whose verdict (./verdict.ts) was read once, where the answer arrived
 * (`answered`). Every state that waits for an answer routes it by verdict kind through a table that
 * names every kind (`discoverRoutes` / `initializeRoutes`); what the wire can do comes from
 * src/transports/capabilities.ts.
 *
 * Shape: idle → connecting (spawn, route, discover / race / initialize, respawn) → ready → closed.
 * Errors end in `failed` with a typed error code and a message naming what the server answered.
 */
import { assign, enqueueActions, setup } from 'xstate';
import type { ErrorCode } from '../errors.js';
import { capabilitiesOf, WIRES, type WireTransport } from '../transports/capabilities.js';
import { discoverParams, initializeParams, type ClientCapabilities } from '../transports/mcp-messages.js';
import type { EraRecord } from '../state/records.js';
import { isForced, type SessionPreference } from './preference.js';
import { discoverVerdict, initializeVerdict, isFatal, type Answer, type DiscoverVerdict, type InitializeVerdict, type ServerIdentity } from './verdict.js';
import { verdictRoutes, type VerdictGuardParams as RouteParams } from './verdict-routes.js';
import { MODERN_VERSIONS, NEWEST_LEGACY, type Era } from './versions.js';

export type { WireTransport } from '../transports/capabilities.js';
export type EraSource = 'probe' | 'cache' | 'forced';

export interface SessionInput {
  server: string;
  /** The wire the server's definition names (a probe over HTTP may fall back from it: capabilities `fallback`). */
  wire: WireTransport;
  /** `follow` is resolved by the pool into prefer-discover (own lane) or force-initialize (legacy lane). */
  preference: SessionPreference;
  /** The era cache's record for this process definition; ignored under force-*. */
  cached?: EraRecord | null;
  probeTimeoutMs?: number;
  startTimeoutMs?: number;
  /** Modern revisions to offer, newest first. Tests may offer more than mcpx ships. */
  modernVersions?: readonly string[];
  clientCapabilities?: ClientCapabilities;
}

export interface SessionFailure {
  code: ErrorCode;
  message: string;
  data?: Record<string, unknown>;
}

export interface SessionContext extends ServerIdentity {
  server: string;
  /** The wire the definition names. */
  declaredWire: WireTransport;
  /** The wire the current (or next) connection uses: the declared one, its fallback, or the one the era record names. */
  wire: WireTransport;
  preference: SessionPreference;
  cached: EraRecord | null;
  probeTimeoutMs: number;
  startTimeoutMs: number;
  modernVersions: readonly string[];
  clientCapabilities: ClientCapabilities;
  /** Counter for probe request ids (`mcpx-discover-1`, `mcpx-initialize-2`, …). */
  nextId: number;
  /** The id of the discover / initialize request still waiting for an answer, if any. */
  discoverId: string | null;
  initializeId: string | null;
  /** The version the latest server/discover was sent at. */
  discoverVersion: string | null;
  /** The pending discover is the one retry a -32022 allows (verdict.ts versionRefusal); another -32022 is final. */
  versionRetried: boolean;
  discoverTried: boolean;
  initializeTried: boolean;
  /** Processes (or connections) started so far; a probe may replace one process once. */
  spawns: number;
  /** HTTP legacy sessions the server expired (404) and mcpx opened again with a fresh initialize. */
  renewals: number;
  /** What the next process is for, after a respawn. */
  afterRespawn: 'initialize' | 'discover' | 'modern' | null;
  era: Era | null;
  negotiated: string | null;
  eraSource: EraSource | null;
  /** True once a DiscoverResult proved the server speaks modern (even if the session ended up legacy). */
  supportsModern: boolean;
  /** True once the server refused initialize, or died with one pending (a modern-only server). */
  initializeRefused: boolean;
  /**
   * True when the only answer to initialize came on a process server/discover had already pinned to
   * 2026-07-28 (awaitingInitialize): it says nothing about what initialize gets on a fresh process.
   */
  initializePinned: boolean;
  /** What the server answered, in order, for error messages and reports. */
  evidence: string[];
  error: SessionFailure | null;
  closeReason: string | null;
}

/**
 * The answer to a probe request (or, over HTTP, its failure without one) with its verdict, read once by
 * `answered` where the answer arrived. `answer` is what the server sent, for reports (the probe timeline).
 */
export type VerdictEvent =
  | { type: 'verdict.discover'; id: string; answer: Answer; verdict: DiscoverVerdict }
  | { type: 'verdict.initialize'; id: string; answer: Answer; verdict: InitializeVerdict };

export type SessionEvent =
  | { type: 'start' }
  | { type: 'stop' }
  | { type: 'transport.ready'; pid?: number }
  | { type: 'transport.closed'; reason: string; detail?: string }
  | VerdictEvent
  /** HTTP only: the server answered 404 to a request carrying the legacy session's id: that session is gone. */
  | { type: 'transport.expired' };

/** A probe request, with what reading its answer takes (the -32022 rule needs the offered versions and whether this is the retry). */
export type ProbeRequest = { id: string } & ({ method: 'server/discover'; offered: readonly string[]; retried: boolean } | { method: 'initialize' });

export type SessionEmitted =
  | { type: 'spawn'; attempt: number; transport: WireTransport }
  | { type: 'kill' }
  | ({ type: 'request'; params: Record<string, unknown> } & ProbeRequest)
  | { type: 'notify'; method: string; params?: Record<string, unknown> }
  | { type: 'cache.write'; record: Omit<EraRecord, 'at'> }
  | { type: 'era.stale'; cached: EraRecord; found: Era };

/** The event the chart gets for `answer` to `request`: the verdict is worked out here, once. */
export function answered(request: ProbeRequest, answer: Answer): VerdictEvent {
  if (request.method === 'server/discover') {
    return { type: 'verdict.discover', id: request.id, answer, verdict: discoverVerdict(answer, request.offered, request.retried) };
  }
  return { type: 'verdict.initialize', id: request.id, answer, verdict: initializeVerdict(answer) };
}

export type DiscoverKind = DiscoverVerdict['kind'];
export type InitializeKind = InitializeVerdict['kind'];
export type VerdictKind = DiscoverKind | InitializeKind;

/** The verdict in `event` when it is a discover (initialize) answer; actions run only on answers a verdict guard let in. */
const discoverAnswer = (event: SessionEvent): DiscoverVerdict | null => (event.type === 'verdict.discover' ? event.verdict : null);
const initializeAnswer = (event: SessionEvent): InitializeVerdict | null => (event.type === 'verdict.initialize' ? event.verdict : null);

/** Whether `event` answers the request still pending (by id): an answer to any other moves nothing. */
function answersPending(context: SessionContext, event: SessionEvent): event is VerdictEvent {
  if (event.type === 'verdict.discover') return event.id === context.discoverId;
  if (event.type === 'verdict.initialize') return event.id === context.initializeId;
  return false;
}

const caps = (context: SessionContext) => capabilitiesOf(context.wire);

/** The wire that falls back to `wire` (Streamable HTTP for HTTP+SSE), if any. */
function fallingBackTo(wire: WireTransport): WireTransport | undefined {
  return WIRES.find((w) => capabilitiesOf(w).fallback === wire);
}

/** Where a session starts: the declared wire, or the fallback the era record says this server needs (unless forced). */
function startingWire(input: SessionInput): WireTransport {
  const remembered = isForced(input.preference) ? undefined : input.cached?.transport;
  return remembered !== undefined && capabilitiesOf(input.wire).fallback === remembered ? remembered : input.wire;
}

/**
 * The guards that read only the context. A verdict route adds one of them to a kind by name (`when`),
 * and the verdict guard evaluates it.
 */
const conditions = {
  forceInitialize: ({ context }: { context: SessionContext }) => context.preference === 'force-initialize',
  forceDiscover: ({ context }: { context: SessionContext }) => context.preference === 'force-discover',
  /**
   * Initialize goes first under prefer-initialize, and for a cached legacy era. A cached modern era moves
   * discover first under prefer-initialize only when the record says initialize is refused: a dual server
   * cached modern must still get its legacy session there (the outcome of §2 does not change with a cache).
   */
  initializeFirst: ({ context }: { context: SessionContext }) => {
    if (isForced(context.preference)) return false;
    if (context.cached?.era === 'legacy') return true;
    if (context.preference !== 'prefer-initialize') return false;
    return !(context.cached?.era === 'modern' && context.cached.initialize === 'refused');
  },
  respawnedForInitialize: ({ context }: { context: SessionContext }) => context.afterRespawn === 'initialize',
  respawnedForDiscover: ({ context }: { context: SessionContext }) => context.afterRespawn === 'discover',
  respawnedForModern: ({ context }: { context: SessionContext }) => context.afterRespawn === 'modern',
  /** A legacy-only wire (HTTP+SSE): initialize, never discover. */
  legacyOnlyWire: ({ context }: { context: SessionContext }) => caps(context).legacyOnly,
  /** On a wire only because the era record named it: if that fails, the server may have moved on; probe afresh. */
  wireFromCache: ({ context }: { context: SessionContext }) =>
    context.cached?.transport === context.wire && context.spawns === 1 && fallingBackTo(context.wire) !== undefined,
  /** An unanswered discover gets an initialize alongside where the wire races the probe (a process), not once initialize was tried. */
  mayRace: ({ context }: { context: SessionContext }) => caps(context).probeRace && context.preference !== 'force-discover' && !context.initializeTried,
  mayDiscoverAfterInitialize: ({ context }: { context: SessionContext }) => context.preference !== 'force-initialize' && !context.discoverTried,
  mayInitializeAfterDiscover: ({ context }: { context: SessionContext }) => context.preference !== 'force-discover' && !context.initializeTried,
  /** Only a legacy session has a server-side session that can expire. */
  isLegacy: ({ context }: { context: SessionContext }) => context.era === 'legacy',
  /** A bare 400/404/405 to initialize means "not this transport" only on a wire with a fallback to try. */
  hasFallbackWire: ({ context }: { context: SessionContext }) => caps(context).fallback !== null,
};
type Condition = keyof typeof conditions;

/** The verdict guard's params (./verdict-routes.ts builds them from a state's table). */
export type VerdictGuardParams = RouteParams<VerdictKind, Condition>;

function verdictGuard({ context, event }: { context: SessionContext; event: SessionEvent }, params: VerdictGuardParams): boolean {
  if (!answersPending(context, event) || !params.is.includes(event.verdict.kind)) return false;
  return params.when === undefined || conditions[params.when]({ context });
}

const discoverRoutes = verdictRoutes<DiscoverKind, Condition>();
const initializeRoutes = verdictRoutes<InitializeKind, Condition>();

function eraSourceFor(c: SessionContext, era: Era): EraSource {
  if (isForced(c.preference)) return 'forced';
  return c.cached && c.cached.era === era ? 'cache' : 'probe';
}

/** The context update that fails the session: the error, with everything the server answered as evidence. */
function failure(context: SessionContext, event: SessionEvent, code: ErrorCode, why: string, connecting = false): Pick<SessionContext, 'evidence' | 'error'> {
  const last = discoverAnswer(event)?.why ?? initializeAnswer(event)?.why ?? closeEvidence(context, event, connecting);
  // Once: the two processes of one attempt (discover, then initialize) often die the same way.
  const evidence = last && !context.evidence.includes(last) ? [...context.evidence, last] : context.evidence;
  const message = `${context.server}: ${why}${evidence.length ? ` — ${evidence.join('; ')}` : ''}`;
  return { evidence, error: { code, message, data: { preference: context.preference, evidence } } };
}

/** What ended the wire, in the upstream's terms: a process, or a connection. */
function closeEvidence(context: SessionContext, event: SessionEvent, connecting = false): string {
  if (event.type !== 'transport.closed') return '';
  // Nothing ran: the spawn error says what it is (a command not found, and the PATH searched).
  if (event.reason === 'spawn-failed' && event.detail) return event.detail;
  const why = `(${event.reason}${event.detail ? `: ${event.detail}` : ''})`;
  if (caps(context).processBound) return `the process closed before answering ${why}`;
  return connecting ? `the connection failed ${why}` : `the connection closed before answering ${why}`;
}

/**
 * Why a start failed: a process that could not be spawned (MCPX_SPAWN_FAILED), or an HTTP upstream that
 * could not be reached (MCPX_UPSTREAM_UNAVAILABLE: nothing was concluded about it, nothing is cached).
 */
function startFailure(context: SessionContext, event: SessionEvent): Pick<SessionContext, 'evidence' | 'error'> {
  const wire = caps(context);
  if (wire.processBound) return failure(context, event, 'MCPX_SPAWN_FAILED', 'could not start the upstream');
  return failure(context, event, 'MCPX_UPSTREAM_UNAVAILABLE', `could not connect to the upstream over ${wire.label}`, true);
}

const failWith = (code: ErrorCode, why: string) => ({ type: 'fail', params: { code, why } }) as const;

// Rows several kinds share (one transition each, see routesFor).
/** A verdict that ends the probe fails it as the verdict says (verdict.ts `Fails`). */
const FAIL = { target: '#session.failed', actions: 'failOnVerdict' } as const;
/** initialize refused while discover races it (what a modern-only server does): wait for discover alone. */
const TO_DISCOVER_ONLY = { target: 'discoverOnly', actions: 'note' } as const;
/** initialize refused with no fallback wire to try: discover next, if allowed (refusedInitialize). */
const REFUSED_INITIALIZE = { target: 'refusedInitialize', actions: 'note' } as const;
/** initialize refused on the process discover already pinned to 2026-07-28: that process is ours, modern. */
const PINNED_REFUSAL = { target: '#session.ready', actions: 'notePinned' } as const;
/** initialize answered (or unusable) on the process discover won: it may be pinned legacy now; speak modern to a fresh one. */
const FRESH_FOR_MODERN = { target: 'respawning', actions: ['note', { type: 'respawnFor', params: { next: 'modern' } }] } as const;
/** Once ready, any other discover answer is only noted. */
const NOTE_ONLY = { actions: 'note' } as const;
/** The server would not open the expired legacy session again: the session closes (its pool replaces it). */
const NOT_RENEWED = {
  target: 'closed',
  actions: ['note', { type: 'closedBy', params: { reason: 'the server would not open the expired legacy session again' } }],
} as const;

export const sessionMachine = setup({
  types: {
    context: {} as SessionContext,
    events: {} as SessionEvent,
    emitted: {} as SessionEmitted,
    input: {} as SessionInput,
  },
  delays: {
    probeTimeout: ({ context }) => context.probeTimeoutMs,
    startTimeout: ({ context }) => context.startTimeoutMs,
  },
  guards: {
    ...conditions,
    /** Every verdict route: see VerdictGuardParams. */
    verdict: verdictGuard,
  },
  actions: {
    spawn: enqueueActions(({ context, enqueue }) => {
      enqueue.assign({ spawns: context.spawns + 1, discoverId: null, initializeId: null });
      enqueue.emit({ type: 'spawn', attempt: context.spawns + 1, transport: context.wire });
    }),
    kill: enqueueActions(({ enqueue }) => enqueue.emit({ type: 'kill' })),
    respawnFor: assign((_, params: { next: 'initialize' | 'discover' | 'modern' | null }) => ({ afterRespawn: params.next })),
    /** Initialize said this is not an endpoint of the wire: try its fallback (HTTP+SSE for Streamable HTTP). */
    useFallbackWire: assign(({ context }) => ({ wire: caps(context).fallback ?? context.wire })),
    /** Leave the wire the era record named for the one that falls back to it, and probe afresh. */
    leaveCachedWire: assign(({ context }) => ({ wire: fallingBackTo(context.wire) ?? context.wire })),

    /**
     * Send server/discover at the newest offered version, or — the one retry a -32022 allows — at the version
     * the verdict picked (possibly the one just refused).
     */
    sendDiscover: enqueueActions(({ context, event, enqueue }) => {
      const verdict = discoverAnswer(event);
      const retry = verdict?.kind === 'retry';
      const version = retry ? verdict.version : context.modernVersions[0]!;
      const id = `mcpx-discover-${context.nextId}`;
      enqueue.assign({
        nextId: context.nextId + 1,
        discoverId: id,
        discoverTried: true,
        discoverVersion: version,
        versionRetried: retry,
        evidence: verdict ? [...context.evidence, verdict.why] : context.evidence,
      });
      enqueue.emit({
        type: 'request',
        id,
        method: 'server/discover',
        params: discoverParams(version, context.clientCapabilities),
        offered: context.modernVersions,
        retried: retry,
      });
    }),
    /** Send initialize offering 2025-11-25, or the newest legacy revision a discover answer named. */
    sendInitialize: enqueueActions(({ context, event, enqueue }) => {
      const verdict = discoverAnswer(event);
      const version = verdict?.kind === 'legacy' && verdict.legacyVersions[0] ? verdict.legacyVersions[0] : NEWEST_LEGACY;
      const id = `mcpx-initialize-${context.nextId}`;
      enqueue.assign({ nextId: context.nextId + 1, initializeId: id, initializeTried: true });
      enqueue.emit({ type: 'request', id, method: 'initialize', params: initializeParams(version, context.clientCapabilities) });
    }),
    sendInitialized: enqueueActions(({ enqueue }) => enqueue.emit({ type: 'notify', method: 'notifications/initialized' })),
    /** Open an expired legacy session again: a fresh initialize at the revision the session spoke. */
    sendRenewal: enqueueActions(({ context, enqueue }) => {
      const id = `mcpx-initialize-${context.nextId}`;
      enqueue.assign({ nextId: context.nextId + 1, initializeId: id, renewals: context.renewals + 1 });
      enqueue.emit({ type: 'request', id, method: 'initialize', params: initializeParams(context.negotiated ?? NEWEST_LEGACY, context.clientCapabilities) });
    }),

    /** Record what an answer (or a close) said, for error messages, and forget the answered request. */
    note: enqueueActions(({ context, event, enqueue }) => {
      const d = discoverAnswer(event);
      const i = initializeAnswer(event);
      const line = d?.why ?? i?.why ?? closeEvidence(context, event);
      // A refusal, or a process dying with initialize pending, marks initialize as refused for the cache.
      const refused = i?.kind === 'refused' || i?.kind === 'http-refused' || (event.type === 'transport.closed' && context.initializeId !== null);
      enqueue.assign({
        evidence: line ? [...context.evidence, line] : context.evidence,
        discoverId: d ? null : context.discoverId,
        initializeId: i ? null : context.initializeId,
        initializeRefused: context.initializeRefused || refused,
      });
    }),

    /**
     * Like note, for an initialize refused on a process whose discover already won: a dual server that pins a
     * connection to the first era it answered (the Python SDK) refuses it there and accepts it on a fresh one.
     * Not era evidence: initialize is not marked refused, so the cache does not learn it (docs/behaviour.md §3).
     * A process that exits there is read the same way.
     */
    notePinned: enqueueActions(({ context, event, enqueue }) => {
      const i = initializeAnswer(event);
      const what = i?.why ?? closeEvidence(context, event);
      const line = what ? `${what}, on the process server/discover had already pinned to 2026-07-28 (not evidence about a fresh process)` : '';
      enqueue.assign({
        evidence: line ? [...context.evidence, line] : context.evidence,
        initializeId: i ? null : context.initializeId,
        initializePinned: true,
      });
    }),

    settleModern: assign(({ context, event }) => {
      const v = discoverAnswer(event);
      if (v?.kind !== 'modern') return {};
      const { serverInfo, capabilities, instructions } = v;
      return {
        era: 'modern' as const,
        negotiated: v.version,
        eraSource: eraSourceFor(context, 'modern'),
        supportsModern: true,
        serverInfo,
        capabilities,
        instructions,
      };
    }),
    settleLegacy: assign(({ context, event }) => {
      const v = initializeAnswer(event);
      if (v?.kind !== 'legacy') return {};
      const { serverInfo, capabilities, instructions } = v;
      return { era: 'legacy' as const, negotiated: v.version, eraSource: eraSourceFor(context, 'legacy'), serverInfo, capabilities, instructions };
    }),
    /**
     * On reaching ready: what the era cache should now say about this server, and whether the cached
     * record was wrong. The cache describes the server, not this session: legacy is only recorded when
     * discover was asked and did not prove modern (a dual server reached initialize-first must not be
     * cached legacy, or discover-first starts would never find its modern side); a server on a legacy-only
     * wire (HTTP+SSE) is legacy by its transport, so that is worth recording whatever came first, with the wire.
     */
    recordEra: enqueueActions(({ context, enqueue }) => {
      // A renewed session is the same server as before: what the probe learned was recorded then.
      if (isForced(context.preference) || !context.era || !context.negotiated || context.renewals > 0) return;
      const cached = context.cached;
      const legacyOnly = caps(context).legacyOnly;
      let record: Omit<EraRecord, 'at'> | null = null;
      if (context.era === 'modern') {
        // A cached refusal stands unless this session heard initialize answered on a process of its own.
        const refused =
          context.initializeRefused || (cached?.era === 'modern' && cached.initialize === 'refused' && (!context.initializeTried || context.initializePinned));
        record = { era: 'modern', version: context.negotiated, source: 'probe', ...(refused ? { initialize: 'refused' as const } : {}) };
      } else if ((context.discoverTried || legacyOnly) && !context.supportsModern) {
        record = { era: 'legacy', version: context.negotiated, source: 'probe', ...(legacyOnly ? { transport: context.wire } : {}) };
      }
      if (!record) return;
      if (cached && cached.era !== record.era) enqueue.emit({ type: 'era.stale', cached, found: record.era });
      const same =
        cached &&
        cached.era === record.era &&
        cached.version === record.version &&
        cached.transport === record.transport &&
        cached.initialize === record.initialize;
      if (!same) enqueue.emit({ type: 'cache.write', record });
    }),
    /** A discover answered after a legacy session won the race: the server speaks modern too; tell the cache. */
    learnLateModern: enqueueActions(({ context, event, enqueue }) => {
      const v = discoverAnswer(event);
      if (v?.kind !== 'modern') return;
      enqueue.assign({ supportsModern: true });
      if (!isForced(context.preference)) enqueue.emit({ type: 'cache.write', record: { era: 'modern', version: v.version, source: 'probe' } });
    }),

    fail: assign(({ context, event }, params: { code: ErrorCode; why: string }) => failure(context, event, params.code, params.why)),
    /** Fail a start: worded and coded for the wire (a process, or an HTTP connection). */
    failToStart: assign(({ context, event }) => startFailure(context, event)),
    /** A legacy-only wire whose server refused initialize: there is nothing else to ask over it. */
    failLegacyOnlyRefused: assign(({ context, event }) =>
      failure(context, event, 'MCPX_PROBE_REFUSED', `the ${caps(context).label} server refused initialize (that transport has no server/discover)`),
    ),
    /** Fail as the answer's verdict says (verdict.ts `Fails`). */
    failOnVerdict: assign(({ context, event }) => {
      const verdict = discoverAnswer(event) ?? initializeAnswer(event);
      return verdict && isFatal(verdict) ? failure(context, event, verdict.fails.code, verdict.fails.headline) : {};
    }),
    closedBy: assign((_, params: { reason: string }) => ({ closeReason: params.reason })),
  },
}).createMachine({
  id: 'session',
  context: ({ input }) => ({
    server: input.server,
    declaredWire: input.wire,
    wire: startingWire(input),
    preference: input.preference,
    // force-* never reads the era cache (nor writes it: recordEra, learnLateModern).
    cached: isForced(input.preference) ? null : (input.cached ?? null),
    probeTimeoutMs: input.probeTimeoutMs ?? 2_000,
    startTimeoutMs: input.startTimeoutMs ?? 120_000,
    modernVersions: input.modernVersions ?? MODERN_VERSIONS,
    clientCapabilities: input.clientCapabilities ?? {},
    nextId: 1,
    discoverId: null,
    initializeId: null,
    discoverVersion: null,
    versionRetried: false,
    discoverTried: false,
    initializeTried: false,
    spawns: 0,
    renewals: 0,
    afterRespawn: null,
    era: null,
    negotiated: null,
    eraSource: null,
    supportsModern: false,
    initializeRefused: false,
    initializePinned: false,
    evidence: [],
    error: null,
    closeReason: null,
  }),
  initial: 'idle',
  states: {
    idle: {
      on: { start: 'connecting', stop: { target: 'stopped', actions: { type: 'closedBy', params: { reason: 'stopped' } } } },
    },

    connecting: {
      initial: 'spawning',
      after: {
        startTimeout: {
          target: 'failed',
          actions: { type: 'fail', params: { code: 'MCPX_START_TIMEOUT', why: 'did not finish connecting within upstream.startTimeout' } },
        },
      },
      on: {
        stop: { target: 'stopped', actions: { type: 'closedBy', params: { reason: 'stopped' } } },
      },
      states: {
        spawning: {
          entry: 'spawn',
          on: {
            'transport.ready': 'routing',
            'transport.closed': [
              { guard: 'wireFromCache', target: 'respawning', actions: ['leaveCachedWire', { type: 'respawnFor', params: { next: null } }] },
              { target: '#session.failed', actions: 'failToStart' },
            ],
          },
        },

        /** Choose the first request: the cached era, the preference, or what a respawn was for. */
        routing: {
          always: [
            { guard: 'respawnedForModern', target: '#session.ready' },
            { guard: 'respawnedForInitialize', target: 'initializing', actions: 'sendInitialize' },
            { guard: 'respawnedForDiscover', target: 'discovering', actions: 'sendDiscover' },
            { guard: 'legacyOnlyWire', target: 'initializing', actions: 'sendInitialize' },
            { guard: 'forceInitialize', target: 'initializing', actions: 'sendInitialize' },
            { guard: 'initializeFirst', target: 'initializing', actions: 'sendInitialize' },
            { target: 'discovering', actions: 'sendDiscover' },
          ],
        },

        /** server/discover is pending, nothing else. */
        discovering: {
          after: {
            probeTimeout: { guard: 'mayRace', target: 'racing', actions: 'sendInitialize' },
          },
          on: {
            'verdict.discover': discoverRoutes({
              modern: { target: '#session.ready', actions: ['settleModern', 'note'] },
              retry: { target: 'discovering', reenter: true, actions: 'sendDiscover' },
              'modern-error': FAIL,
              'no-common': FAIL,
              unauthorized: FAIL,
              unavailable: FAIL,
              legacy: [
                {
                  when: 'forceDiscover',
                  target: '#session.failed',
                  actions: failWith(
                    'MCPX_ERA_MISMATCH',
                    'upstream.protocol is force-discover (no fallback to initialize), and the server does not speak 2026-07-28',
                  ),
                },
                { when: 'mayInitializeAfterDiscover', target: 'initializing', actions: ['sendInitialize', 'note'] },
                { target: '#session.failed', actions: failWith('MCPX_PROBE_REFUSED', 'the server refused both initialize and server/discover') },
              ],
            }),
            'transport.closed': [
              {
                guard: 'forceDiscover',
                target: '#session.failed',
                actions: failWith(
                  'MCPX_ERA_MISMATCH',
                  'upstream.protocol is force-discover (no fallback to initialize), and the server exited on server/discover',
                ),
              },
              { guard: 'mayInitializeAfterDiscover', target: 'respawning', actions: ['note', { type: 'respawnFor', params: { next: 'initialize' } }] },
              { target: '#session.failed', actions: failWith('MCPX_TRANSPORT_CLOSED', 'the server exited during the probe') },
            ],
          },
        },

        /** discover unanswered past probeTimeout: initialize was sent alongside; the first answer that settles the era wins. */
        racing: {
          on: {
            'verdict.discover': discoverRoutes({
              modern: { target: 'awaitingInitialize', actions: ['settleModern', 'note'] },
              retry: { target: 'racing', reenter: true, actions: 'sendDiscover' },
              'modern-error': FAIL,
              'no-common': FAIL,
              unauthorized: FAIL,
              unavailable: FAIL,
              legacy: { target: 'initializing', actions: 'note' },
            }),
            'verdict.initialize': initializeRoutes({
              legacy: { target: '#session.ready', actions: ['settleLegacy', 'note', 'sendInitialized'] },
              'bad-version': FAIL,
              malformed: FAIL,
              unauthorized: FAIL,
              unavailable: FAIL,
              refused: TO_DISCOVER_ONLY,
              'http-refused': TO_DISCOVER_ONLY,
            }),
            // Both requests were out; the likeliest killer is the initialize (a slow modern server exiting on
            // it), since a server that dies on discover does so before the probe timeout. Try discover alone.
            'transport.closed': { target: 'respawning', actions: ['note', { type: 'respawnFor', params: { next: 'discover' } }] },
          },
        },

        /**
         * discover won with a modern answer while initialize is still pending. If initialize is refused the
         * process is ours, modern. If it is accepted (or unusable), the process may now be pinned legacy: start a
         * fresh one and speak modern to it (no probe needed: the era is known).
         */
        awaitingInitialize: {
          after: {
            probeTimeout: { target: 'respawning', actions: { type: 'respawnFor', params: { next: 'modern' } } },
          },
          on: {
            'verdict.initialize': initializeRoutes({
              refused: PINNED_REFUSAL,
              'http-refused': PINNED_REFUSAL,
              legacy: FRESH_FOR_MODERN,
              'bad-version': FRESH_FOR_MODERN,
              malformed: FRESH_FOR_MODERN,
              unauthorized: FRESH_FOR_MODERN,
              unavailable: FRESH_FOR_MODERN,
            }),
            'transport.closed': { target: 'respawning', actions: ['notePinned', { type: 'respawnFor', params: { next: 'modern' } }] },
          },
        },

        /** initialize was refused (what a modern-only server does); keep waiting for discover. */
        discoverOnly: {
          on: {
            'verdict.discover': discoverRoutes({
              modern: { target: '#session.ready', actions: ['settleModern', 'note'] },
              retry: { target: 'discoverOnly', reenter: true, actions: 'sendDiscover' },
              'modern-error': FAIL,
              'no-common': FAIL,
              unauthorized: FAIL,
              unavailable: FAIL,
              legacy: { target: '#session.failed', actions: failWith('MCPX_PROBE_REFUSED', 'the server refused both initialize and server/discover') },
            }),
            'transport.closed': { target: 'respawning', actions: ['note', { type: 'respawnFor', params: { next: 'discover' } }] },
          },
        },

        /** initialize is pending (first, as a fallback, or after a respawn). */
        initializing: {
          on: {
            'verdict.initialize': initializeRoutes({
              legacy: { target: '#session.ready', actions: ['settleLegacy', 'note', 'sendInitialized'] },
              'bad-version': FAIL,
              malformed: FAIL,
              unauthorized: FAIL,
              unavailable: FAIL,
              refused: REFUSED_INITIALIZE,
              'http-refused': [
                {
                  when: 'hasFallbackWire',
                  target: 'respawning',
                  actions: ['note', 'useFallbackWire', { type: 'respawnFor', params: { next: 'initialize' } }],
                },
                REFUSED_INITIALIZE,
              ],
            }),
            'transport.closed': [
              {
                guard: 'forceInitialize',
                target: '#session.failed',
                actions: failWith(
                  'MCPX_ERA_MISMATCH',
                  'upstream.protocol is force-initialize (no fallback to server/discover), and the server exited on initialize',
                ),
              },
              { guard: 'mayDiscoverAfterInitialize', target: 'respawning', actions: ['note', { type: 'respawnFor', params: { next: 'discover' } }] },
              { target: '#session.failed', actions: failWith('MCPX_TRANSPORT_CLOSED', 'the server exited during initialize') },
            ],
          },
        },

        /** initialize was refused: discover next, unless the preference or history forbids it. */
        refusedInitialize: {
          always: [
            {
              guard: 'forceInitialize',
              target: '#session.failed',
              actions: failWith(
                'MCPX_ERA_MISMATCH',
                'upstream.protocol is force-initialize (no fallback to server/discover), and the server refused initialize',
              ),
            },
            { guard: 'wireFromCache', target: 'respawning', actions: ['leaveCachedWire', { type: 'respawnFor', params: { next: null } }] },
            { guard: 'legacyOnlyWire', target: '#session.failed', actions: 'failLegacyOnlyRefused' },
            { guard: 'mayDiscoverAfterInitialize', target: 'discovering', actions: 'sendDiscover' },
            { target: '#session.failed', actions: failWith('MCPX_PROBE_REFUSED', 'the server refused both server/discover and initialize') },
          ],
        },

        /**
         * Replace the process: some servers exit on a request they do not understand. Each respawn is for a
         * step not tried yet (discoverTried / initializeTried), so a probe replaces its process at most once.
         */
        respawning: {
          entry: 'kill',
          always: { target: 'spawning' },
        },
      },
    },

    ready: {
      entry: 'recordEra',
      on: {
        // A discover still pending after a legacy race win: its answer is noted (and a modern one tells the cache).
        'verdict.discover': discoverRoutes({
          modern: { actions: ['learnLateModern', 'note'] },
          retry: NOTE_ONLY,
          'modern-error': NOTE_ONLY,
          'no-common': NOTE_ONLY,
          unauthorized: NOTE_ONLY,
          unavailable: NOTE_ONLY,
          legacy: NOTE_ONLY,
        }),
        'transport.expired': { guard: 'isLegacy', target: 'renewing' },
        'transport.closed': { target: 'closed', actions: { type: 'closedBy', params: { reason: 'upstream closed' } } },
        stop: { target: 'stopped', actions: { type: 'closedBy', params: { reason: 'stopped' } } },
      },
    },

    /**
     * HTTP: the server expired the legacy session (404 to a request carrying its id). Open a new one with a
     * fresh initialize (the transport holds the requests that met the 404 and sends them again once this is
     * ready); if the server will not, the session is closed and its pool replaces it.
     */
    renewing: {
      entry: 'sendRenewal',
      after: {
        startTimeout: {
          target: 'closed',
          actions: { type: 'closedBy', params: { reason: 'the expired legacy session was not opened again within upstream.startTimeout' } },
        },
      },
      on: {
        'verdict.initialize': initializeRoutes({
          legacy: { target: 'ready', actions: ['settleLegacy', 'note', 'sendInitialized'] },
          'bad-version': NOT_RENEWED,
          malformed: NOT_RENEWED,
          refused: NOT_RENEWED,
          'http-refused': NOT_RENEWED,
          unauthorized: NOT_RENEWED,
          unavailable: NOT_RENEWED,
        }),
        'transport.closed': { target: 'closed', actions: { type: 'closedBy', params: { reason: 'upstream closed' } } },
        stop: { target: 'stopped', actions: { type: 'closedBy', params: { reason: 'stopped' } } },
      },
    },

    failed: { type: 'final', entry: 'kill' },
    closed: { type: 'final', entry: 'kill' },
    stopped: { type: 'final', entry: 'kill' },
  },
});

export type SessionMachine = typeof sessionMachine;
