/**
 * The upstream session statechart: how mcpx decides which era to speak to one upstream
 * (docs/behaviour.md §2–§5). It is the single place where eras are decided.
 *
 * The machine does no I/O. A transport adapter (src/upstream/session.ts) carries out what it
 * emits — `spawn`, `kill`, `request`, `notify`, `cache.write`, `era.stale` — and feeds back what
 * happened: `transport.ready`, `transport.closed`, `rpc.result`, `rpc.error`. What an answer means
 * comes from the pure verdict table in ./verdict.ts.
 *
 * Shape: idle → connecting (spawn, route, discover / race / initialize, respawn) → ready → closed.
 * Errors end in `failed` with a typed error code and a message naming what the server answered.
 */
import { and, assign, enqueueActions, setup } from 'xstate';
import type { ErrorCode, RpcErrorObject } from '../errors.js';
import { discoverParams, initializeParams, type ClientCapabilities } from '../transports/mcp-messages.js';
import type { EraRecord } from '../upstream/era-cache.js';
import { isForced, type SessionPreference } from './preference.js';
import {
  discoverVerdict,
  initializeVerdict,
  isFatal,
  type Answer,
  type DiscoverVerdict,
  type HttpFailure,
  type InitializeVerdict,
  type ServerIdentity,
} from './verdict.js';
import { MODERN_VERSIONS, NEWEST_LEGACY, type Era } from './versions.js';

export type TransportKind = 'stdio' | 'http';
/** The wire a connection uses: a process, Streamable HTTP, or the deprecated HTTP+SSE transport. */
export type WireTransport = 'stdio' | 'streamable-http' | 'sse';
export type EraSource = 'probe' | 'cache' | 'forced';

export interface SessionInput {
  server: string;
  transport: TransportKind;
  /** `follow` is resolved by the pool into prefer-discover (own lane) or force-initialize (legacy lane). */
  preference: SessionPreference;
  /** The era cache's record for this process definition; ignored under force-*. */
  cached?: EraRecord | null;
  probeTimeoutMs?: number;
  startTimeoutMs?: number;
  /** Modern revisions to offer, newest first. Tests may offer more than mcpx ships. */
  modernVersions?: readonly string[];
  clientCapabilities?: ClientCapabilities;
  /** The config declared the HTTP+SSE transport (`type: "sse"`): use it from the start. */
  declaredSse?: boolean;
}

export interface SessionFailure {
  code: ErrorCode;
  message: string;
  data?: Record<string, unknown>;
}

export interface SessionContext extends ServerIdentity {
  server: string;
  transport: TransportKind;
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
  /** For HTTP upstreams: Streamable HTTP, or the HTTP+SSE fallback (remembered in the era record). */
  httpTransport: 'streamable-http' | 'sse' | null;
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

export type SessionEvent =
  | { type: 'start' }
  | { type: 'stop' }
  | { type: 'transport.ready'; pid?: number }
  | { type: 'transport.closed'; reason: string; detail?: string }
  | { type: 'rpc.result'; id: string; result: unknown }
  | { type: 'rpc.error'; id: string; error: RpcErrorObject }
  /** HTTP only: the request failed without a JSON-RPC answer (status without a JSON-RPC body, no connection). */
  | { type: 'rpc.failed'; id: string; failure: HttpFailure }
  /** HTTP only: the server answered 404 to a request carrying the legacy session's id: that session is gone. */
  | { type: 'transport.expired' };

export type SessionEmitted =
  | { type: 'spawn'; attempt: number; transport: WireTransport }
  | { type: 'kill' }
  | { type: 'request'; id: string; method: 'server/discover' | 'initialize'; params: Record<string, unknown> }
  | { type: 'notify'; method: string; params?: Record<string, unknown> }
  | { type: 'cache.write'; record: Omit<EraRecord, 'at'> }
  | { type: 'era.stale'; cached: EraRecord; found: Era };

function answerOf(event: SessionEvent): Answer | null {
  if (event.type === 'rpc.result') return { result: event.result };
  if (event.type === 'rpc.error') return { error: event.error };
  if (event.type === 'rpc.failed') return { failure: event.failure };
  return null;
}

/** What an event means to the probe: an answer to the pending discover or initialize, with its verdict; or neither. */
export type Classified = { to: 'discover'; verdict: DiscoverVerdict } | { to: 'initialize'; verdict: InitializeVerdict } | { to: null };

const NEITHER: Classified = { to: null };
const classifications = new WeakMap<SessionEvent, Classified>();

/**
 * Classify an event once, against the context it arrived in: which pending request it answers (by id) and
 * the verdict table's reading of the answer. Guards and actions of the same step all read this one
 * classification, so an action that forgets the answered request (`note`) cannot change what the others see,
 * whatever their order. The transport adapter sends a fresh event object for every message.
 */
export function classify(context: SessionContext, event: SessionEvent): Classified {
  const known = classifications.get(event);
  if (known) return known;
  const answer = answerOf(event);
  const id = answer ? (event as { id: string }).id : null;
  const classified: Classified =
    !answer || id === null
      ? NEITHER
      : id === context.discoverId
        ? { to: 'discover', verdict: discoverVerdict(answer, context.modernVersions, context.versionRetried) }
        : id === context.initializeId
          ? { to: 'initialize', verdict: initializeVerdict(answer) }
          : NEITHER;
  classifications.set(event, classified);
  return classified;
}

/** The verdict of the discover answer in `event`, or null when the event is not that answer. */
export function discoverVerdictOf(context: SessionContext, event: SessionEvent): DiscoverVerdict | null {
  const c = classify(context, event);
  return c.to === 'discover' ? c.verdict : null;
}

export function initializeVerdictOf(context: SessionContext, event: SessionEvent): InitializeVerdict | null {
  const c = classify(context, event);
  return c.to === 'initialize' ? c.verdict : null;
}

/**
 * The one answer guard: `event` answers the pending `to` request and its verdict is one of `is` — a list of
 * kinds, `fatal` (a verdict that ends the probe, see verdict.ts `Fails`), or `any`.
 */
export interface AnswerGuardParams {
  to: 'discover' | 'initialize';
  is: readonly (DiscoverVerdict['kind'] | InitializeVerdict['kind'])[] | 'fatal' | 'any';
}

function answers(context: SessionContext, event: SessionEvent, p: AnswerGuardParams): boolean {
  const c = classify(context, event);
  if (c.to !== p.to) return false;
  if (p.is === 'any') return true;
  if (p.is === 'fatal') return isFatal(c.verdict);
  return (p.is as readonly string[]).includes(c.verdict.kind);
}

function eraSourceFor(c: SessionContext, era: Era): EraSource {
  if (isForced(c.preference)) return 'forced';
  return c.cached && c.cached.era === era ? 'cache' : 'probe';
}

/** The context update that fails the session: the error, with everything the server answered as evidence. */
function failure(context: SessionContext, event: SessionEvent, code: ErrorCode, why: string, connecting = false): Pick<SessionContext, 'evidence' | 'error'> {
  const last = discoverVerdictOf(context, event)?.why ?? initializeVerdictOf(context, event)?.why ?? describeClose(context, event, connecting);
  const evidence = last && context.evidence[context.evidence.length - 1] !== last ? [...context.evidence, last] : context.evidence;
  const message = `${context.server}: ${why}${evidence.length ? ` — ${evidence.join('; ')}` : ''}`;
  return { evidence, error: { code, message, data: { preference: context.preference, evidence } } };
}

/** What ended the wire, in the upstream's terms: a process (stdio), or a connection (HTTP). */
function describeClose(context: SessionContext, event: SessionEvent, connecting = false): string {
  if (event.type !== 'transport.closed') return '';
  const why = `(${event.reason}${event.detail ? `: ${event.detail}` : ''})`;
  if (context.transport === 'stdio') return `the process closed before answering ${why}`;
  return connecting ? `the connection failed ${why}` : `the connection closed before answering ${why}`;
}

/**
 * Why a start failed: a process that could not be spawned (MCPX_SPAWN_FAILED), or an HTTP upstream that
 * could not be reached (MCPX_UPSTREAM_UNAVAILABLE: nothing was concluded about it, nothing is cached).
 */
function startFailure(context: SessionContext, event: SessionEvent): Pick<SessionContext, 'evidence' | 'error'> {
  if (context.transport === 'stdio') return failure(context, event, 'MCPX_SPAWN_FAILED', 'could not start the upstream');
  const over = context.httpTransport === 'sse' ? 'HTTP+SSE' : 'Streamable HTTP';
  return failure(context, event, 'MCPX_UPSTREAM_UNAVAILABLE', `could not connect to the upstream over ${over}`, true);
}

/** Guards of the answer rows, by request and verdict kind (AnswerGuardParams). */
const discover = (is: AnswerGuardParams['is']) => ({ type: 'answer', params: { to: 'discover', is } }) as const;
const initialize = (is: AnswerGuardParams['is']) => ({ type: 'answer', params: { to: 'initialize', is } }) as const;
const failWith = (code: ErrorCode, why: string) => ({ type: 'fail', params: { code, why } }) as const;

/**
 * The discover rows every state waiting for a discover answer shares: modern settles (into `modernTarget`),
 * a -32022 with a usable version asks again once (in `retryIn`), and a verdict that ends the probe fails it.
 * What a legacy verdict leads to differs by state and follows these rows.
 */
const discoverRows = <M extends string, R extends string>(modernTarget: M, retryIn: R) =>
  [
    { guard: discover(['modern']), target: modernTarget, actions: ['settleModern', 'note'] },
    { guard: discover(['retry']), target: retryIn, reenter: true, actions: 'sendDiscover' },
    { guard: discover('fatal'), target: '#session.failed', actions: 'failOnVerdict' },
  ] as const;

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
    forceInitialize: ({ context }) => context.preference === 'force-initialize',
    forceDiscover: ({ context }) => context.preference === 'force-discover',
    /**
     * Initialize goes first under prefer-initialize, and for a cached legacy era. A cached modern era moves
     * discover first under prefer-initialize only when the record says initialize is refused: a dual server
     * cached modern must still get its legacy session there (the outcome of §2 does not change with a cache).
     */
    initializeFirst: ({ context }) => {
      if (isForced(context.preference)) return false;
      if (context.cached?.era === 'legacy') return true;
      if (context.preference !== 'prefer-initialize') return false;
      return !(context.cached?.era === 'modern' && context.cached.initialize === 'refused');
    },
    respawnedForInitialize: ({ context }) => context.afterRespawn === 'initialize',
    /** The HTTP+SSE transport is legacy-only: initialize, never discover. */
    onSse: ({ context }) => context.httpTransport === 'sse',
    /** On HTTP+SSE only because the cache said so: if that fails, the server may have moved on; probe afresh. */
    sseFromCache: ({ context }) => context.httpTransport === 'sse' && context.cached?.transport === 'sse' && context.spawns === 1,
    respawnedForDiscover: ({ context }) => context.afterRespawn === 'discover',
    respawnedForModern: ({ context }) => context.afterRespawn === 'modern',
    /** On stdio an unanswered discover gets an initialize alongside; not on HTTP, not once initialize was tried. */
    mayRace: ({ context }) => context.transport === 'stdio' && context.preference !== 'force-discover' && !context.initializeTried,
    mayDiscoverAfterInitialize: ({ context }) => context.preference !== 'force-initialize' && !context.discoverTried,
    mayInitializeAfterDiscover: ({ context }) => context.preference !== 'force-discover' && !context.initializeTried,

    /** Every answer row: see AnswerGuardParams. */
    answer: ({ context, event }, params: AnswerGuardParams) => answers(context, event, params),
    /** Only a legacy session has a server-side session that can expire. */
    isLegacy: ({ context }) => context.era === 'legacy',
    /** A bare 400/404/405 to initialize means HTTP+SSE only while mcpx is still on Streamable HTTP. */
    onStreamableHttp: ({ context }) => context.httpTransport === 'streamable-http',
  },
  actions: {
    spawn: enqueueActions(({ context, enqueue }) => {
      enqueue.assign({ spawns: context.spawns + 1, discoverId: null, initializeId: null });
      enqueue.emit({
        type: 'spawn',
        attempt: context.spawns + 1,
        transport: context.transport === 'stdio' ? 'stdio' : (context.httpTransport ?? 'streamable-http'),
      });
    }),
    kill: enqueueActions(({ enqueue }) => enqueue.emit({ type: 'kill' })),
    respawnFor: assign((_, params: { next: 'initialize' | 'discover' | 'modern' | null }) => ({ afterRespawn: params.next })),
    useTransport: assign((_, params: { transport: 'streamable-http' | 'sse' }) => ({ httpTransport: params.transport })),

    /**
     * Send server/discover at the newest offered version, or — the one retry a -32022 allows — at the version
     * the verdict picked (possibly the one just refused).
     */
    sendDiscover: enqueueActions(({ context, event, enqueue }) => {
      const verdict = discoverVerdictOf(context, event);
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
      enqueue.emit({ type: 'request', id, method: 'server/discover', params: discoverParams(version, context.clientCapabilities) });
    }),
    /** Send initialize offering 2025-11-25, or the newest legacy revision a discover answer named. */
    sendInitialize: enqueueActions(({ context, event, enqueue }) => {
      const verdict = discoverVerdictOf(context, event);
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
      const d = discoverVerdictOf(context, event);
      const i = initializeVerdictOf(context, event);
      const line = d?.why ?? i?.why ?? describeClose(context, event);
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
      const i = initializeVerdictOf(context, event);
      const what = i?.why ?? describeClose(context, event);
      const line = what ? `${what}, on the process server/discover had already pinned to 2026-07-28 (not evidence about a fresh process)` : '';
      enqueue.assign({
        evidence: line ? [...context.evidence, line] : context.evidence,
        initializeId: i ? null : context.initializeId,
        initializePinned: true,
      });
    }),

    settleModern: assign(({ context, event }) => {
      const v = discoverVerdictOf(context, event);
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
      const v = initializeVerdictOf(context, event);
      if (v?.kind !== 'legacy') return {};
      const { serverInfo, capabilities, instructions } = v;
      return { era: 'legacy' as const, negotiated: v.version, eraSource: eraSourceFor(context, 'legacy'), serverInfo, capabilities, instructions };
    }),
    /**
     * On reaching ready: what the era cache should now say about this server, and whether the cached
     * record was wrong. The cache describes the server, not this session: legacy is only recorded when
     * discover was asked and did not prove modern (a dual server reached initialize-first must not be
     * cached legacy, or discover-first starts would never find its modern side); an HTTP+SSE server is
     * legacy-only by its transport, so that is worth recording whatever came first.
     */
    recordEra: enqueueActions(({ context, enqueue }) => {
      // A renewed session is the same server as before: what the probe learned was recorded then.
      if (isForced(context.preference) || !context.era || !context.negotiated || context.renewals > 0) return;
      const cached = context.cached;
      let record: Omit<EraRecord, 'at'> | null = null;
      if (context.era === 'modern') {
        // A cached refusal stands unless this session heard initialize answered on a process of its own.
        const refused =
          context.initializeRefused || (cached?.era === 'modern' && cached.initialize === 'refused' && (!context.initializeTried || context.initializePinned));
        record = { era: 'modern', version: context.negotiated, source: 'probe', ...(refused ? { initialize: 'refused' as const } : {}) };
      } else if ((context.discoverTried || context.httpTransport === 'sse') && !context.supportsModern) {
        record = { era: 'legacy', version: context.negotiated, source: 'probe', ...(context.httpTransport === 'sse' ? { transport: 'sse' as const } : {}) };
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
      const v = discoverVerdictOf(context, event);
      if (v?.kind !== 'modern') return;
      enqueue.assign({ supportsModern: true });
      if (!isForced(context.preference)) enqueue.emit({ type: 'cache.write', record: { era: 'modern', version: v.version, source: 'probe' } });
    }),

    fail: assign(({ context, event }, params: { code: ErrorCode; why: string }) => failure(context, event, params.code, params.why)),
    /** Fail a start: worded and coded for the wire (a process, or an HTTP connection). */
    failToStart: assign(({ context, event }) => startFailure(context, event)),
    /** Fail as the answer's verdict says (verdict.ts `Fails`). */
    failOnVerdict: assign(({ context, event }) => {
      const c = classify(context, event);
      return c.to !== null && isFatal(c.verdict) ? failure(context, event, c.verdict.fails.code, c.verdict.fails.headline) : {};
    }),
    closedBy: assign((_, params: { reason: string }) => ({ closeReason: params.reason })),
  },
}).createMachine({
  id: 'session',
  context: ({ input }) => ({
    server: input.server,
    transport: input.transport,
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
    httpTransport:
      input.transport === 'stdio'
        ? null
        : input.declaredSse
          ? 'sse'
          : !isForced(input.preference) && input.cached?.transport === 'sse'
            ? 'sse'
            : 'streamable-http',
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
              {
                guard: 'sseFromCache',
                target: 'respawning',
                actions: [
                  { type: 'useTransport', params: { transport: 'streamable-http' } },
                  { type: 'respawnFor', params: { next: null } },
                ],
              },
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
            { guard: 'onSse', target: 'initializing', actions: 'sendInitialize' },
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
            'rpc.*': [
              ...discoverRows('#session.ready', 'discovering'),
              {
                guard: and([discover(['legacy']), 'forceDiscover']),
                target: '#session.failed',
                actions: failWith(
                  'MCPX_ERA_MISMATCH',
                  'upstream.protocol is force-discover (no fallback to initialize), and the server does not speak 2026-07-28',
                ),
              },
              { guard: and([discover(['legacy']), 'mayInitializeAfterDiscover']), target: 'initializing', actions: ['sendInitialize', 'note'] },
              {
                guard: discover(['legacy']),
                target: '#session.failed',
                actions: failWith('MCPX_PROBE_REFUSED', 'the server refused both initialize and server/discover'),
              },
            ],
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
            'rpc.*': [
              ...discoverRows('awaitingInitialize', 'racing'),
              { guard: discover(['legacy']), target: 'initializing', actions: 'note' },
              { guard: initialize(['legacy']), target: '#session.ready', actions: ['settleLegacy', 'note', 'sendInitialized'] },
              { guard: initialize('fatal'), target: '#session.failed', actions: 'failOnVerdict' },
              { guard: initialize(['refused', 'http-refused']), target: 'discoverOnly', actions: 'note' },
            ],
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
            'rpc.*': [
              { guard: initialize(['refused', 'http-refused']), target: '#session.ready', actions: 'notePinned' },
              { guard: initialize('any'), target: 'respawning', actions: ['note', { type: 'respawnFor', params: { next: 'modern' } }] },
            ],
            'transport.closed': { target: 'respawning', actions: ['notePinned', { type: 'respawnFor', params: { next: 'modern' } }] },
          },
        },

        /** initialize was refused (what a modern-only server does); keep waiting for discover. */
        discoverOnly: {
          on: {
            'rpc.*': [
              ...discoverRows('#session.ready', 'discoverOnly'),
              {
                guard: discover('any'),
                target: '#session.failed',
                actions: failWith('MCPX_PROBE_REFUSED', 'the server refused both initialize and server/discover'),
              },
            ],
            'transport.closed': { target: 'respawning', actions: ['note', { type: 'respawnFor', params: { next: 'discover' } }] },
          },
        },

        /** initialize is pending (first, as a fallback, or after a respawn). */
        initializing: {
          on: {
            'rpc.*': [
              { guard: initialize(['legacy']), target: '#session.ready', actions: ['settleLegacy', 'note', 'sendInitialized'] },
              { guard: initialize('fatal'), target: '#session.failed', actions: 'failOnVerdict' },
              {
                guard: and([initialize(['http-refused']), 'onStreamableHttp']),
                target: 'respawning',
                actions: ['note', { type: 'useTransport', params: { transport: 'sse' } }, { type: 'respawnFor', params: { next: 'initialize' } }],
              },
              { guard: initialize(['refused', 'http-refused']), target: 'refusedInitialize', actions: 'note' },
            ],
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
              actions: {
                type: 'fail',
                params: {
                  code: 'MCPX_ERA_MISMATCH',
                  why: 'upstream.protocol is force-initialize (no fallback to server/discover), and the server refused initialize',
                },
              },
            },
            {
              guard: 'sseFromCache',
              target: 'respawning',
              actions: [
                { type: 'useTransport', params: { transport: 'streamable-http' } },
                { type: 'respawnFor', params: { next: null } },
              ],
            },
            {
              guard: 'onSse',
              target: '#session.failed',
              actions: {
                type: 'fail',
                params: { code: 'MCPX_PROBE_REFUSED', why: 'the HTTP+SSE server refused initialize (that transport has no server/discover)' },
              },
            },
            { guard: 'mayDiscoverAfterInitialize', target: 'discovering', actions: 'sendDiscover' },
            {
              target: '#session.failed',
              actions: { type: 'fail', params: { code: 'MCPX_PROBE_REFUSED', why: 'the server refused both server/discover and initialize' } },
            },
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
        'rpc.*': [
          { guard: discover(['modern']), actions: ['learnLateModern', 'note'] },
          { guard: discover('any'), actions: 'note' },
        ],
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
        'rpc.*': [
          { guard: initialize(['legacy']), target: 'ready', actions: ['settleLegacy', 'note', 'sendInitialized'] },
          {
            guard: initialize('any'),
            target: 'closed',
            actions: ['note', { type: 'closedBy', params: { reason: 'the server would not open the expired legacy session again' } }],
          },
        ],
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
