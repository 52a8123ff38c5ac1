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
import { assign, enqueueActions, setup } from 'xstate';
import type { ErrorCode, RpcErrorObject } from '../errors.js';
import { discoverParams, initializeParams, type ClientCapabilities } from '../transports/mcp-messages.js';
import type { EraRecord } from '../upstream/era-cache.js';
import type { SessionPreference } from './preference.js';
import { discoverVerdict, initializeVerdict, type Answer, type DiscoverVerdict, type HttpFailure, type InitializeVerdict, type ServerIdentity } from './verdict.js';
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
  | { type: 'rpc.failed'; id: string; failure: HttpFailure };

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

function isAnswerTo(event: SessionEvent, id: string | null): boolean {
  return (event.type === 'rpc.result' || event.type === 'rpc.error' || event.type === 'rpc.failed') && id !== null && event.id === id;
}

/** The verdict of the discover answer in `event`, or null when the event is not that answer. */
export function discoverVerdictOf(context: SessionContext, event: SessionEvent): DiscoverVerdict | null {
  const answer = answerOf(event);
  if (!answer || !isAnswerTo(event, context.discoverId)) return null;
  return discoverVerdict(answer, context.modernVersions, context.versionRetried);
}

export function initializeVerdictOf(context: SessionContext, event: SessionEvent): InitializeVerdict | null {
  const answer = answerOf(event);
  if (!answer || !isAnswerTo(event, context.initializeId)) return null;
  return initializeVerdict(answer);
}

const isForced = (c: SessionContext) => c.preference === 'force-discover' || c.preference === 'force-initialize';

function eraSourceFor(c: SessionContext, era: Era): EraSource {
  if (isForced(c)) return 'forced';
  return c.cached && c.cached.era === era ? 'cache' : 'probe';
}

function describeClose(event: SessionEvent): string {
  return event.type === 'transport.closed' ? `the process closed before answering (${event.reason}${event.detail ? `: ${event.detail}` : ''})` : '';
}

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
      if (isForced(context)) return false;
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

    discoverModern: ({ context, event }) => discoverVerdictOf(context, event)?.kind === 'modern',
    discoverRetry: ({ context, event }) => discoverVerdictOf(context, event)?.kind === 'retry',
    discoverModernError: ({ context, event }) => discoverVerdictOf(context, event)?.kind === 'modern-error',
    discoverNoCommon: ({ context, event }) => discoverVerdictOf(context, event)?.kind === 'no-common',
    discoverLegacy: ({ context, event }) => discoverVerdictOf(context, event)?.kind === 'legacy',
    discoverUnauthorized: ({ context, event }) => discoverVerdictOf(context, event)?.kind === 'unauthorized',
    discoverUnavailable: ({ context, event }) => discoverVerdictOf(context, event)?.kind === 'unavailable',
    isDiscoverAnswer: ({ context, event }) => isAnswerTo(event, context.discoverId),

    initializeAccepted: ({ context, event }) => initializeVerdictOf(context, event)?.kind === 'legacy',
    initializeUnusable: ({ context, event }) => {
      const kind = initializeVerdictOf(context, event)?.kind;
      return kind === 'bad-version' || kind === 'malformed';
    },
    initializeRefused: ({ context, event }) => {
      const kind = initializeVerdictOf(context, event)?.kind;
      return kind === 'refused' || kind === 'http-refused';
    },
    /** A bare 400/404/405 to initialize on Streamable HTTP: fall back to the HTTP+SSE transport. */
    initializeWantsSse: ({ context, event }) => context.httpTransport === 'streamable-http' && initializeVerdictOf(context, event)?.kind === 'http-refused',
    initializeUnauthorized: ({ context, event }) => initializeVerdictOf(context, event)?.kind === 'unauthorized',
    initializeUnavailable: ({ context, event }) => initializeVerdictOf(context, event)?.kind === 'unavailable',
  },
  actions: {
    spawn: enqueueActions(({ context, enqueue }) => {
      enqueue.assign({ spawns: context.spawns + 1, discoverId: null, initializeId: null });
      enqueue.emit({ type: 'spawn', attempt: context.spawns + 1, transport: context.transport === 'stdio' ? 'stdio' : context.httpTransport ?? 'streamable-http' });
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
        nextId: context.nextId + 1, discoverId: id, discoverTried: true, discoverVersion: version, versionRetried: retry,
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

    /** Record what an answer (or a close) said, for error messages, and forget the answered request. Runs last. */
    note: enqueueActions(({ context, event, enqueue }) => {
      const d = discoverVerdictOf(context, event);
      const i = initializeVerdictOf(context, event);
      const line = d?.why ?? i?.why ?? describeClose(event);
      // A refusal, or a process dying with initialize pending, marks initialize as refused for the cache.
      const refused = i?.kind === 'refused' || i?.kind === 'http-refused' || (event.type === 'transport.closed' && context.initializeId !== null);
      enqueue.assign({
        evidence: line ? [...context.evidence, line] : context.evidence,
        discoverId: d ? null : context.discoverId,
        initializeId: i ? null : context.initializeId,
        initializeRefused: context.initializeRefused || refused,
      });
    }),

    settleModern: assign(({ context, event }) => {
      const v = discoverVerdictOf(context, event);
      if (v?.kind !== 'modern') return {};
      const { serverInfo, capabilities, instructions } = v;
      return { era: 'modern' as const, negotiated: v.version, eraSource: eraSourceFor(context, 'modern'), supportsModern: true, serverInfo, capabilities, instructions };
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
      if (isForced(context) || !context.era || !context.negotiated) return;
      const cached = context.cached;
      let record: Omit<EraRecord, 'at'> | null = null;
      if (context.era === 'modern') {
        record = { era: 'modern', version: context.negotiated, source: 'probe', ...(context.initializeRefused ? { initialize: 'refused' as const } : {}) };
      } else if ((context.discoverTried || context.httpTransport === 'sse') && !context.supportsModern) {
        record = { era: 'legacy', version: context.negotiated, source: 'probe', ...(context.httpTransport === 'sse' ? { transport: 'sse' as const } : {}) };
      }
      if (!record) return;
      if (cached && cached.era !== record.era) enqueue.emit({ type: 'era.stale', cached, found: record.era });
      const same = cached && cached.era === record.era && cached.version === record.version && cached.transport === record.transport
        && (cached.initialize === record.initialize || (record.era === 'modern' && !record.initialize && cached.initialize === 'refused' && !context.initializeTried));
      if (!same) enqueue.emit({ type: 'cache.write', record });
    }),
    /** A discover answered after a legacy session won the race: the server speaks modern too; tell the cache. */
    learnLateModern: enqueueActions(({ context, event, enqueue }) => {
      const v = discoverVerdictOf(context, event);
      if (v?.kind !== 'modern') return;
      enqueue.assign({ supportsModern: true });
      if (!isForced(context)) enqueue.emit({ type: 'cache.write', record: { era: 'modern', version: v.version, source: 'probe' } });
    }),

    fail: assign(({ context, event }, params: { code: ErrorCode; why: string }) => {
      const last = discoverVerdictOf(context, event)?.why ?? initializeVerdictOf(context, event)?.why ?? describeClose(event);
      const evidence = last && context.evidence[context.evidence.length - 1] !== last ? [...context.evidence, last] : context.evidence;
      const message = `${context.server}: ${params.why}${evidence.length ? ` — ${evidence.join('; ')}` : ''}`;
      return { evidence, error: { code: params.code, message, data: { preference: context.preference, evidence } } };
    }),
    closedBy: assign((_, params: { reason: string }) => ({ closeReason: params.reason })),
  },
}).createMachine({
  id: 'session',
  context: ({ input }) => ({
    server: input.server,
    transport: input.transport,
    preference: input.preference,
    cached: input.preference === 'force-discover' || input.preference === 'force-initialize' ? null : input.cached ?? null,
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
    httpTransport:
      input.transport === 'stdio' ? null
      : input.declaredSse ? 'sse'
      : input.preference !== 'force-discover' && input.preference !== 'force-initialize' && input.cached?.transport === 'sse' ? 'sse'
      : 'streamable-http',
    afterRespawn: null,
    era: null,
    negotiated: null,
    eraSource: null,
    supportsModern: false,
    initializeRefused: false,
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
        startTimeout: { target: 'failed', actions: { type: 'fail', params: { code: 'MCPX_START_TIMEOUT', why: 'did not finish connecting within upstream.startTimeout' } } },
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
              { guard: 'sseFromCache', target: 'respawning', actions: [{ type: 'useTransport', params: { transport: 'streamable-http' } }, { type: 'respawnFor', params: { next: null } }] },
              { target: '#session.failed', actions: { type: 'fail', params: { code: 'MCPX_SPAWN_FAILED', why: 'could not start the upstream' } } },
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
              { guard: 'discoverModern', target: '#session.ready', actions: ['settleModern', 'note'] },
              { guard: 'discoverRetry', target: 'discovering', reenter: true, actions: 'sendDiscover' },
              { guard: 'discoverUnauthorized', target: '#session.failed', actions: { type: 'fail', params: { code: 'MCPX_UNAUTHORIZED', why: 'the server refused mcpx as unauthorized (not evidence of an era; nothing cached)' } } },
              { guard: 'discoverUnavailable', target: '#session.failed', actions: { type: 'fail', params: { code: 'MCPX_UPSTREAM_UNAVAILABLE', why: 'the server is unavailable (nothing concluded, nothing cached)' } } },
              { guard: 'discoverModernError', target: '#session.failed', actions: { type: 'fail', params: { code: 'MCPX_MODERN_PROTOCOL_ERROR', why: 'the modern server refused server/discover; mcpx never falls back to initialize after a modern error' } } },
              { guard: 'discoverNoCommon', target: '#session.failed', actions: { type: 'fail', params: { code: 'MCPX_NO_COMMON_VERSION', why: 'no protocol revision in common' } } },
              { guard: 'forceDiscover', target: '#session.failed', actions: { type: 'fail', params: { code: 'MCPX_ERA_MISMATCH', why: 'upstream.protocol is force-discover (no fallback to initialize), and the server does not speak 2026-07-28' } } },
              { guard: 'mayInitializeAfterDiscover', target: 'initializing', actions: ['sendInitialize', 'note'] },
              { guard: 'isDiscoverAnswer', target: '#session.failed', actions: { type: 'fail', params: { code: 'MCPX_PROBE_REFUSED', why: 'the server refused both initialize and server/discover' } } },
            ],
            'transport.closed': [
              { guard: 'forceDiscover', target: '#session.failed', actions: { type: 'fail', params: { code: 'MCPX_ERA_MISMATCH', why: 'upstream.protocol is force-discover (no fallback to initialize), and the server exited on server/discover' } } },
              { guard: 'mayInitializeAfterDiscover', target: 'respawning', actions: ['note', { type: 'respawnFor', params: { next: 'initialize' } }] },
              { target: '#session.failed', actions: { type: 'fail', params: { code: 'MCPX_TRANSPORT_CLOSED', why: 'the server exited during the probe' } } },
            ],
          },
        },

        /** discover unanswered past probeTimeout: initialize was sent alongside; the first answer that settles the era wins. */
        racing: {
          on: {
            'rpc.*': [
              { guard: 'discoverModern', target: 'awaitingInitialize', actions: ['settleModern', 'note'] },
              { guard: 'discoverRetry', target: 'racing', actions: 'sendDiscover' },
              { guard: 'discoverModernError', target: '#session.failed', actions: { type: 'fail', params: { code: 'MCPX_MODERN_PROTOCOL_ERROR', why: 'the modern server refused server/discover' } } },
              { guard: 'discoverNoCommon', target: '#session.failed', actions: { type: 'fail', params: { code: 'MCPX_NO_COMMON_VERSION', why: 'no protocol revision in common' } } },
              { guard: 'discoverLegacy', target: 'initializing', actions: 'note' },
              { guard: 'initializeAccepted', target: '#session.ready', actions: ['settleLegacy', 'note', 'sendInitialized'] },
              { guard: 'initializeUnusable', target: '#session.failed', actions: { type: 'fail', params: { code: 'MCPX_UNSUPPORTED_LEGACY_VERSION', why: 'initialize answered with a revision mcpx does not speak' } } },
              { guard: 'initializeRefused', target: 'discoverOnly', actions: 'note' },
            ],
            // Both requests were out; the likeliest killer is the initialize (a slow modern server exiting on
            // it), since a server that dies on discover does so before the probe timeout. Try discover alone.
            'transport.closed': { target: 'respawning', actions: ['note', { type: 'respawnFor', params: { next: 'discover' } }] },
          },
        },

        /**
         * discover won with a modern answer while initialize is still pending. If initialize is refused the
         * process is ours, modern. If it is accepted, the process is now pinned legacy: start a fresh one
         * and speak modern to it (no probe needed: the era is known).
         */
        awaitingInitialize: {
          after: {
            probeTimeout: { target: 'respawning', actions: { type: 'respawnFor', params: { next: 'modern' } } },
          },
          on: {
            'rpc.*': [
              { guard: 'initializeRefused', target: '#session.ready', actions: 'note' },
              { guard: 'initializeAccepted', target: 'respawning', actions: ['note', { type: 'respawnFor', params: { next: 'modern' } }] },
              { guard: 'initializeUnusable', target: 'respawning', actions: ['note', { type: 'respawnFor', params: { next: 'modern' } }] },
            ],
            'transport.closed': { target: 'respawning', actions: ['note', { type: 'respawnFor', params: { next: 'modern' } }] },
          },
        },

        /** initialize was refused (what a modern-only server does); keep waiting for discover. */
        discoverOnly: {
          on: {
            'rpc.*': [
              { guard: 'discoverModern', target: '#session.ready', actions: ['settleModern', 'note'] },
              { guard: 'discoverRetry', target: 'discoverOnly', actions: 'sendDiscover' },
              { guard: 'discoverModernError', target: '#session.failed', actions: { type: 'fail', params: { code: 'MCPX_MODERN_PROTOCOL_ERROR', why: 'the modern server refused server/discover' } } },
              { guard: 'discoverNoCommon', target: '#session.failed', actions: { type: 'fail', params: { code: 'MCPX_NO_COMMON_VERSION', why: 'no protocol revision in common' } } },
              { guard: 'isDiscoverAnswer', target: '#session.failed', actions: { type: 'fail', params: { code: 'MCPX_PROBE_REFUSED', why: 'the server refused both initialize and server/discover' } } },
            ],
            'transport.closed': { target: 'respawning', actions: ['note', { type: 'respawnFor', params: { next: 'discover' } }] },
          },
        },

        /** initialize is pending (first, as a fallback, or after a respawn). */
        initializing: {
          on: {
            'rpc.*': [
              { guard: 'initializeAccepted', target: '#session.ready', actions: ['settleLegacy', 'note', 'sendInitialized'] },
              { guard: 'initializeUnusable', target: '#session.failed', actions: { type: 'fail', params: { code: 'MCPX_UNSUPPORTED_LEGACY_VERSION', why: 'initialize answered with a revision mcpx does not speak' } } },
              { guard: 'initializeWantsSse', target: 'respawning', actions: ['note', { type: 'useTransport', params: { transport: 'sse' } }, { type: 'respawnFor', params: { next: 'initialize' } }] },
              { guard: 'initializeUnauthorized', target: '#session.failed', actions: { type: 'fail', params: { code: 'MCPX_UNAUTHORIZED', why: 'the server refused mcpx as unauthorized (not evidence of an era; nothing cached)' } } },
              { guard: 'initializeUnavailable', target: '#session.failed', actions: { type: 'fail', params: { code: 'MCPX_UPSTREAM_UNAVAILABLE', why: 'the server is unavailable (nothing concluded, nothing cached)' } } },
              { guard: 'initializeRefused', target: 'refusedInitialize', actions: 'note' },
            ],
            'transport.closed': [
              { guard: 'forceInitialize', target: '#session.failed', actions: { type: 'fail', params: { code: 'MCPX_ERA_MISMATCH', why: 'upstream.protocol is force-initialize (no fallback to server/discover), and the server exited on initialize' } } },
              { guard: 'mayDiscoverAfterInitialize', target: 'respawning', actions: ['note', { type: 'respawnFor', params: { next: 'discover' } }] },
              { target: '#session.failed', actions: { type: 'fail', params: { code: 'MCPX_TRANSPORT_CLOSED', why: 'the server exited during initialize' } } },
            ],
          },
        },

        /** initialize was refused: discover next, unless the preference or history forbids it. */
        refusedInitialize: {
          always: [
            { guard: 'forceInitialize', target: '#session.failed', actions: { type: 'fail', params: { code: 'MCPX_ERA_MISMATCH', why: 'upstream.protocol is force-initialize (no fallback to server/discover), and the server refused initialize' } } },
            { guard: 'sseFromCache', target: 'respawning', actions: [{ type: 'useTransport', params: { transport: 'streamable-http' } }, { type: 'respawnFor', params: { next: null } }] },
            { guard: 'onSse', target: '#session.failed', actions: { type: 'fail', params: { code: 'MCPX_PROBE_REFUSED', why: 'the HTTP+SSE server refused initialize (that transport has no server/discover)' } } },
            { guard: 'mayDiscoverAfterInitialize', target: 'discovering', actions: 'sendDiscover' },
            { target: '#session.failed', actions: { type: 'fail', params: { code: 'MCPX_PROBE_REFUSED', why: 'the server refused both server/discover and initialize' } } },
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
          { guard: 'discoverModern', actions: ['learnLateModern', 'note'] },
          { guard: 'isDiscoverAnswer', actions: 'note' },
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
