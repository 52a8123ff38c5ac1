/**
 * Simulated upstreams: how a server of each era and misbehaviour reacts to each probe request,
 * and the oracle — what docs/behaviour.md §2 and §3 predict for it under each preference.
 *
 * The oracle is written from the spec tables, independently of the machine: the model-based test
 * fails when the two disagree.
 */
import type { WireTransport } from '../../src/machines/session.machine.js';
import type { Answer, HttpFailure } from '../../src/machines/verdict.js';

export type Reaction =
  /** Answer at once (before any probe timeout could fire). */
  | { kind: 'answer'; answer: Answer; late?: false }
  /** Answer, but only after longer than the probe timeout (a slow `npx` download). */
  | { kind: 'answer'; answer: Answer; late: true }
  | { kind: 'silent' }
  | { kind: 'exit' }
  /** HTTP: the request fails without a JSON-RPC answer. */
  | { kind: 'fail'; failure: HttpFailure };

export type PinnedBy = 'server/discover' | 'initialize';

export type Outcome = { era: 'legacy' | 'modern'; then?: 'closed' } | { error: string };
/** "The first answer that settles the era wins" (§3): the era depends on which answer came first. */
export const FIRST_WINS = { firstWins: true } as const;
export type Expectation = Outcome | typeof FIRST_WINS;

export type MachinePreference = 'prefer-discover' | 'prefer-initialize' | 'force-discover' | 'force-initialize';
export const MACHINE_PREFERENCES: MachinePreference[] = ['prefer-discover', 'prefer-initialize', 'force-discover', 'force-initialize'];

export interface Profile {
  name: string;
  /**
   * How the server reacts to a probe request. `version` is what mcpx offered; `wire` the transport it came
   * over; `nth` how many requests of this method the same process received before this one; `pinnedBy` the
   * request the same process already answered with success, if any (a server may pin a process to that era).
   */
  react(method: 'server/discover' | 'initialize', version: string, wire: WireTransport, nth: number, pinnedBy?: PinnedBy): Reaction;
  /** An HTTP upstream (the session machine's HTTP rules apply). */
  http?: boolean;
  spawnFails?: boolean | WireTransport[];
  crashAfterReady?: boolean;
  /** HTTP legacy: the server expires the session once it is ready (404), and answers the fresh initialize so. */
  expires?: Reaction;
  /** The outcome after that expiry (docs/behaviour.md §4: a new session, or the session closed). */
  afterExpiry?: Outcome;
  /** Answers pending requests in any order (an SDK server with async handlers), not only oldest first. */
  outOfOrder?: boolean;
  /** A server that speaks both eras on a fresh process: the era cache must never record it refusing initialize. */
  dual?: boolean;
  /** States of the machine in which this server's process may crash. */
  mayExitIn?: string[];
  modernVersions?: string[];
  /** Expected outcome per preference, with no cache (docs/behaviour.md §2 / §3). */
  expect: Record<MachinePreference, Expectation>;
}

const discoverResult = (supportedVersions: string[] = ['2026-07-28']): Answer => ({
  result: {
    resultType: 'complete',
    supportedVersions,
    capabilities: { tools: {} },
    ttlMs: 0,
    cacheScope: 'private',
    _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'sim', version: '1.0.0' } },
  },
});
const initResult = (protocolVersion = '2025-11-25'): Answer => ({
  result: { protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'sim', version: '1.0.0' } },
});
const error = (code: number, data?: unknown): Answer => ({ error: { code, message: `error ${code}`, ...(data === undefined ? {} : { data }) } });
const refuseModern = error(-32022, { supported: ['2026-07-28'], requested: '2025-11-25' });

const now = (answer: Answer): Reaction => ({ kind: 'answer', answer });
const late = (answer: Answer): Reaction => ({ kind: 'answer', answer, late: true });

const L = { era: 'legacy' } as const;
const M = { era: 'modern' } as const;
const E = (code: string): Outcome => ({ error: code });

function profile(
  name: string,
  discover: Reaction | ((version: string, nth: number) => Reaction),
  initialize: Reaction | ((wire: WireTransport, pinnedBy?: PinnedBy) => Reaction),
  expect: [Expectation, Expectation, Expectation, Expectation],
  extra: Partial<Profile> = {},
): Profile {
  return {
    name,
    react: (method, version, wire, nth, pinnedBy) =>
      method === 'server/discover'
        ? typeof discover === 'function'
          ? discover(version, nth)
          : discover
        : typeof initialize === 'function'
          ? initialize(wire, pinnedBy)
          : initialize,
    expect: { 'prefer-discover': expect[0], 'prefer-initialize': expect[1], 'force-discover': expect[2], 'force-initialize': expect[3] },
    ...extra,
  };
}

const MISMATCH = 'MCPX_ERA_MISMATCH';

//                                                                   prefer-discover  prefer-initialize  force-discover  force-initialize
export const PROFILES: Profile[] = [
  // §2 columns: old-only, dual, new-only
  profile('legacy (-32601)', now(error(-32601)), now(initResult()), [L, L, E(MISMATCH), L]),
  profile('dual', now(discoverResult()), now(initResult()), [M, L, M, L], { dual: true }),
  profile('modern-only', now(discoverResult()), now(refuseModern), [M, M, M, E(MISMATCH)]),
  // §3 rows
  profile('legacy (-32602 before initialize)', now(error(-32602)), now(initResult()), [L, L, E(MISMATCH), L]),
  profile('legacy (-32000)', now(error(-32000)), now(initResult()), [L, L, E(MISMATCH), L]),
  profile('legacy, silent before initialize', { kind: 'silent' }, now(initResult()), [L, L, E('MCPX_START_TIMEOUT'), L]),
  profile('legacy, exits on discover', { kind: 'exit' }, now(initResult()), [L, L, E(MISMATCH), L]),
  profile('legacy, catch-all {}', now({ result: {} }), now(initResult()), [L, L, E(MISMATCH), L]),
  profile('legacy, discover lists only legacy revisions', now(discoverResult(['2025-06-18'])), now(initResult('2025-06-18')), [L, L, E(MISMATCH), L]),
  profile('modern, discover slower than the probe timeout', late(discoverResult()), now(refuseModern), [M, M, M, E(MISMATCH)]),
  profile('dual, discover slower than the probe timeout', late(discoverResult()), late(initResult()), [M, L, M, L], { dual: true }),
  profile('modern, exits on initialize', now(discoverResult()), { kind: 'exit' }, [M, M, M, E(MISMATCH)]),
  profile('-32022 naming only legacy revisions', now(error(-32022, { supported: ['2025-06-18'] })), now(initResult('2025-06-18')), [L, L, E(MISMATCH), L]),
  profile('-32022 naming no revision mcpx speaks', now(error(-32022, { supported: ['2031-01-01'] })), now(error(-32022, { supported: ['2031-01-01'] })), [
    E('MCPX_NO_COMMON_VERSION'),
    E('MCPX_NO_COMMON_VERSION'),
    E('MCPX_NO_COMMON_VERSION'),
    E(MISMATCH),
  ]),
  profile(
    '-32022 then retry with a mutual version',
    (v) => (v === '2026-07-28' ? now(discoverResult(['2026-07-28'])) : now(error(-32022, { supported: ['2026-07-28'], requested: v }))),
    now(refuseModern),
    [M, M, M, E(MISMATCH)],
    { modernVersions: ['2027-03-01', '2026-07-28'] },
  ),
  // The -32022 rule: one retry at the best mutual version, even the one just refused; a second -32022 is final.
  profile(
    'modern, refuses the first discover listing the version it refused (request-metadata)',
    (v, nth) => (nth === 0 ? now(error(-32022, { supported: ['2026-07-28'], requested: v })) : now(discoverResult())),
    now(refuseModern),
    [M, M, M, E(MISMATCH)],
  ),
  profile(
    'modern, refuses every discover listing the version it refused',
    (v) => now(error(-32022, { supported: ['2026-07-28'], requested: v })),
    now(refuseModern),
    [E('MCPX_NO_COMMON_VERSION'), E('MCPX_NO_COMMON_VERSION'), E('MCPX_NO_COMMON_VERSION'), E(MISMATCH)],
  ),
  profile(
    'modern, refuses every discover at any version it lists',
    (v) => now(error(-32022, { supported: ['2027-03-01', '2026-07-28'], requested: v })),
    now(refuseModern),
    [E('MCPX_NO_COMMON_VERSION'), E('MCPX_NO_COMMON_VERSION'), E('MCPX_NO_COMMON_VERSION'), E(MISMATCH)],
    { modernVersions: ['2027-03-01', '2026-07-28'] },
  ),
  profile('modern error -32020', now(error(-32020)), now(initResult()), [E('MCPX_MODERN_PROTOCOL_ERROR'), L, E('MCPX_MODERN_PROTOCOL_ERROR'), L]),
  profile('modern error -32021', now(error(-32021, { requiredCapabilities: { elicitation: {} } })), now(initResult()), [
    E('MCPX_MODERN_PROTOCOL_ERROR'),
    L,
    E('MCPX_MODERN_PROTOCOL_ERROR'),
    L,
  ]),
  profile('legacy answering an unknown revision', now(error(-32601)), now(initResult('1999-01-01')), [
    E('MCPX_UNSUPPORTED_LEGACY_VERSION'),
    E('MCPX_UNSUPPORTED_LEGACY_VERSION'),
    E(MISMATCH),
    E('MCPX_UNSUPPORTED_LEGACY_VERSION'),
  ]),
  profile('refuses everything', now(error(-32601)), now(error(-32600)), [E('MCPX_PROBE_REFUSED'), E('MCPX_PROBE_REFUSED'), E(MISMATCH), E(MISMATCH)]),
  profile('exits on everything', { kind: 'exit' }, { kind: 'exit' }, [E('MCPX_TRANSPORT_CLOSED'), E('MCPX_TRANSPORT_CLOSED'), E(MISMATCH), E(MISMATCH)]),
  profile('silent forever', { kind: 'silent' }, { kind: 'silent' }, [
    E('MCPX_START_TIMEOUT'),
    E('MCPX_START_TIMEOUT'),
    E('MCPX_START_TIMEOUT'),
    E('MCPX_START_TIMEOUT'),
  ]),
  profile(
    'command not found',
    now(error(-32601)),
    now(initResult()),
    [E('MCPX_SPAWN_FAILED'), E('MCPX_SPAWN_FAILED'), E('MCPX_SPAWN_FAILED'), E('MCPX_SPAWN_FAILED')],
    { spawnFails: true },
  ),
  profile('dual, async handlers answer out of order', late(discoverResult()), late(initResult()), [FIRST_WINS, L, M, L], { outOfOrder: true }),
  profile('legacy, slow refusal of discover, out of order', late(error(-32601)), now(initResult()), [L, L, E(MISMATCH), L], { outOfOrder: true }),
  // Slow discover answers of every kind, meeting an initialize sent alongside.
  profile(
    'modern, slow -32022 then retry',
    (v) => late(v === '2026-07-28' ? discoverResult() : error(-32022, { supported: ['2026-07-28'], requested: v })),
    now(refuseModern),
    [M, M, M, E(MISMATCH)],
    { modernVersions: ['2027-03-01', '2026-07-28'] },
  ),
  profile(
    'modern, slow -32022 then retry, answers out of order',
    (v) => late(v === '2026-07-28' ? discoverResult() : error(-32022, { supported: ['2026-07-28'], requested: v })),
    now(refuseModern),
    [M, M, M, E(MISMATCH)],
    { modernVersions: ['2027-03-01', '2026-07-28'], outOfOrder: true },
  ),
  profile(
    'modern, slow, refuses the first discover listing the version it refused',
    (v, nth) => late(nth === 0 ? error(-32022, { supported: ['2026-07-28'], requested: v }) : discoverResult()),
    now(refuseModern),
    [M, M, M, E(MISMATCH)],
  ),
  profile(
    'modern, slow, refuses every discover listing the version it refused',
    (v) => late(error(-32022, { supported: ['2026-07-28'], requested: v })),
    now(refuseModern),
    [E('MCPX_NO_COMMON_VERSION'), E('MCPX_NO_COMMON_VERSION'), E('MCPX_NO_COMMON_VERSION'), E(MISMATCH)],
  ),
  profile(
    'modern, slow, refuses every discover listing the version it refused, out of order',
    (v) => late(error(-32022, { supported: ['2026-07-28'], requested: v })),
    now(refuseModern),
    [E('MCPX_NO_COMMON_VERSION'), E('MCPX_NO_COMMON_VERSION'), E('MCPX_NO_COMMON_VERSION'), E(MISMATCH)],
    { outOfOrder: true },
  ),
  profile('modern error -32020, slow', late(error(-32020)), now(initResult()), [E('MCPX_MODERN_PROTOCOL_ERROR'), L, E('MCPX_MODERN_PROTOCOL_ERROR'), L]),
  profile(
    'modern error -32020, slow, refusal out of order',
    late(error(-32020)),
    now(refuseModern),
    [E('MCPX_MODERN_PROTOCOL_ERROR'), E('MCPX_MODERN_PROTOCOL_ERROR'), E('MCPX_MODERN_PROTOCOL_ERROR'), E(MISMATCH)],
    { outOfOrder: true },
  ),
  profile('no common revision, slow', late(error(-32022, { supported: ['2031-01-01'] })), now(error(-32022, { supported: ['2031-01-01'] })), [
    E('MCPX_NO_COMMON_VERSION'),
    E('MCPX_NO_COMMON_VERSION'),
    E('MCPX_NO_COMMON_VERSION'),
    E(MISMATCH),
  ]),
  profile(
    'no common revision, slow, refusal out of order',
    late(error(-32022, { supported: ['2031-01-01'] })),
    now(error(-32022, { supported: ['2031-01-01'] })),
    [E('MCPX_NO_COMMON_VERSION'), E('MCPX_NO_COMMON_VERSION'), E('MCPX_NO_COMMON_VERSION'), E(MISMATCH)],
    { outOfOrder: true },
  ),
  profile(
    'refuses everything, slowly, out of order',
    late(error(-32601)),
    now(error(-32600)),
    [E('MCPX_PROBE_REFUSED'), E('MCPX_PROBE_REFUSED'), E(MISMATCH), E(MISMATCH)],
    { outOfOrder: true },
  ),
  profile('silent discover, initialize answers an unknown revision', { kind: 'silent' }, now(initResult('1999-01-01')), [
    E('MCPX_UNSUPPORTED_LEGACY_VERSION'),
    E('MCPX_UNSUPPORTED_LEGACY_VERSION'),
    E('MCPX_START_TIMEOUT'),
    E('MCPX_UNSUPPORTED_LEGACY_VERSION'),
  ]),
  profile(
    'modern, slow discover, refuses initialize first (out of order), may crash after',
    late(discoverResult()),
    now(refuseModern),
    [M, M, M, E(MISMATCH)],
    { outOfOrder: true, mayExitIn: ['discoverOnly'] },
  ),
  profile('modern, slow discover, exits on initialize', late(discoverResult()), { kind: 'exit' }, [M, M, M, E(MISMATCH)]),
  // A dual server slow to start that keeps a process in the era it answered first (the Python SDK): the
  // initialize sent alongside a slow discover meets a process discover pinned, and gets -32022 there.
  profile(
    'dual, slow, pins a process to the era answered first',
    late(discoverResult()),
    (_wire, pinnedBy) => (pinnedBy === 'server/discover' ? now(refuseModern) : late(initResult())),
    [M, L, M, L],
    { dual: true },
  ),
  profile('dual, slow, may crash while initialize is pending', late(discoverResult()), late(initResult()), [M, L, M, L], {
    dual: true,
    mayExitIn: ['awaitingInitialize'],
  }),
  profile('modern, slow, answers initialize with an unknown revision', late(discoverResult()), late(initResult('1999-01-01')), [
    M,
    E('MCPX_UNSUPPORTED_LEGACY_VERSION'),
    M,
    E('MCPX_UNSUPPORTED_LEGACY_VERSION'),
  ]),
  profile(
    'legacy, crashes after the handshake',
    now(error(-32601)),
    now(initResult()),
    [{ era: 'legacy', then: 'closed' }, { era: 'legacy', then: 'closed' }, E(MISMATCH), { era: 'legacy', then: 'closed' }],
    { crashAfterReady: true },
  ),
];

const fail = (kind: HttpFailure['kind'], status?: number): Reaction => ({
  kind: 'fail',
  failure: { kind, ...(status ? { status } : {}), message: `HTTP ${status ?? 'connection'} failure` },
});
const UNAVAILABLE = 'MCPX_UPSTREAM_UNAVAILABLE';
const http = { http: true };

/** HTTP upstreams (docs/behaviour.md §4): statuses decide, there is no probe timeout. */
export const HTTP_PROFILES: Profile[] = [
  profile('http dual (createMcpHandler)', now(discoverResult()), now(initResult()), [M, L, M, L], http),
  profile('http modern-only (400 + -32022 to initialize)', now(discoverResult()), now(refuseModern), [M, M, M, E(MISMATCH)], http),
  profile('http legacy (400 + -32000, id null)', now(error(-32000)), now(initResult()), [L, L, E(MISMATCH), L], http),
  profile('http legacy (bare 400)', fail('status', 400), now(initResult()), [L, L, E(MISMATCH), L], http),
  profile(
    'http old HTTP+SSE server',
    fail('status', 405),
    (wire) => (wire === 'sse' ? now(initResult('2024-11-05')) : fail('status', 405)),
    [L, L, E(MISMATCH), L],
    http,
  ),
  profile(
    'http old HTTP+SSE server refusing initialize',
    fail('status', 404),
    (wire) => (wire === 'sse' ? now(error(-32600)) : fail('status', 404)),
    [E('MCPX_PROBE_REFUSED'), E('MCPX_PROBE_REFUSED'), E(MISMATCH), E(MISMATCH)],
    http,
  ),
  profile('http cached HTTP+SSE, but the server moved to Streamable HTTP', now(error(-32601)), now(initResult()), [L, L, E(MISMATCH), L], {
    ...http,
    spawnFails: ['sse'],
  }),
  profile('http 500 to everything', fail('status', 500), fail('status', 500), [E(UNAVAILABLE), E(UNAVAILABLE), E(UNAVAILABLE), E(UNAVAILABLE)], http),
  profile('http 503 to initialize', now(error(-32601)), fail('status', 503), [E(UNAVAILABLE), E(UNAVAILABLE), E(MISMATCH), E(UNAVAILABLE)], http),
  profile(
    'http 401',
    fail('unauthorized', 401),
    fail('unauthorized', 401),
    [E('MCPX_UPSTREAM_UNAUTHORIZED'), E('MCPX_UPSTREAM_UNAUTHORIZED'), E('MCPX_UPSTREAM_UNAUTHORIZED'), E('MCPX_UPSTREAM_UNAUTHORIZED')],
    http,
  ),
  profile('http connection refused', fail('connection'), fail('connection'), [E(UNAVAILABLE), E(UNAVAILABLE), E(UNAVAILABLE), E(UNAVAILABLE)], http),
  profile(
    'http modern, refuses the first request listing the version it refused (request-metadata)',
    (v, nth) => (nth === 0 ? now(error(-32022, { supported: ['2026-07-28'], requested: v })) : now(discoverResult())),
    now(refuseModern),
    [M, M, M, E(MISMATCH)],
    http,
  ),
  // A legacy session the server expires (404): opened again with a fresh initialize, or closed.
  profile('http legacy, session expires, opened again', now(error(-32601)), now(initResult()), [L, L, E(MISMATCH), L], {
    ...http,
    expires: now(initResult()),
    afterExpiry: L,
  }),
  profile('http legacy, session expires, initialize refused after', now(error(-32601)), now(initResult()), [L, L, E(MISMATCH), L], {
    ...http,
    expires: fail('status', 404),
    afterExpiry: { era: 'legacy', then: 'closed' },
  }),
  profile('http legacy, session expires, server silent after', now(error(-32601)), now(initResult()), [L, L, E(MISMATCH), L], {
    ...http,
    expires: { kind: 'silent' },
    afterExpiry: { era: 'legacy', then: 'closed' },
  }),
  profile('http legacy, session expires, connection lost after', now(error(-32601)), now(initResult()), [L, L, E(MISMATCH), L], {
    ...http,
    expires: { kind: 'exit' },
    afterExpiry: { era: 'legacy', then: 'closed' },
  }),
  profile(
    'http -32022 in a 400, then retry',
    (v) => (v === '2026-07-28' ? now(discoverResult()) : now(error(-32022, { supported: ['2026-07-28'], requested: v }))),
    now(refuseModern),
    [M, M, M, E(MISMATCH)],
    { ...http, modernVersions: ['2027-03-01', '2026-07-28'] },
  ),
];

export type CacheState = 'none' | 'legacy' | 'modern' | 'modern-refusing' | 'legacy-sse';

/**
 * What the spec predicts with a cached era (§2 last line, §5): the cached era is tried first. A cached
 * legacy era makes the prefer-* values behave like prefer-initialize. A cached modern era is what
 * prefer-discover tries anyway, and moves prefer-initialize to discover-first only when the record says
 * the server refuses initialize — so for a cache that describes the server, the outcome is unchanged.
 * force-* never read the cache.
 */
export function expected(p: Profile, pref: MachinePreference, cache: CacheState): Expectation {
  if (pref === 'force-discover' || pref === 'force-initialize' || cache === 'none' || cache === 'modern') return p.expect[pref];
  return p.expect[cache === 'modern-refusing' ? 'prefer-discover' : 'prefer-initialize'];
}
