/**
 * Model-based test of the session statechart.
 *
 * For every simulated upstream (test/support/profiles.ts) × preference × cached era, xstate/graph
 * enumerates every simple path through the real machine, where the events a path may take are what
 * that upstream can do next: answer its oldest answerable request, exit, stay silent until a probe
 * timeout fires. Each complete path must end in the outcome docs/behaviour.md §2/§3 predicts, and is
 * then replayed step by step on a real UpstreamSession (adapter, RpcPeer, era-cache hooks) over a
 * simulated channel, with a SimulatedClock firing the timeouts. Every transition of the chart
 * must be taken by some replay.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { SimulatedClock, __unsafe_getAllOwnEventDescriptors } from 'xstate';
import { getSimplePaths, type StatePath } from 'xstate/graph';
import { answered as answerEvent, sessionMachine, type ProbeRequest, type SessionEvent, type SessionInput } from '../../src/machines/session.machine.js';
import { capabilitiesOf } from '../../src/transports/capabilities.js';
import type { EraCache, EraRecord } from '../../src/upstream/era-cache.js';
import { UpstreamSession, type SessionSnapshot } from '../../src/upstream/session.js';
import { MODERN_VERSIONS } from '../../src/machines/versions.js';
import {
  expected,
  HTTP_PROFILES,
  MACHINE_PREFERENCES,
  PROFILES,
  type CacheState,
  type Expectation,
  type MachinePreference,
  type Outcome,
  type Profile,
} from '../support/profiles.js';
import { SimulatedUpstream, type WireRecord } from '../support/simulated-channel.js';
import { allTransitions, transitionRecorder } from '../support/chart-coverage.js';

/** A record date within upstream.eraCacheMaxAge (older records are probed again). */
const RECENT = new Date(Date.now() - 60_000).toISOString();

const PROBE_TIMEOUT = 2_000;
const START_TIMEOUT = 60_000;
const MAX_PROBE_REQUESTS = 10;

// ---- the model: what a simulated upstream can do next, given the machine's state ----

const order = (id: string) => Number(id.slice(id.lastIndexOf('-') + 1));

function modelEvents(p: Profile) {
  return (s: SessionSnapshot): SessionEvent[] => {
    if (s.status !== 'active') return [];
    if (s.matches('idle')) return [{ type: 'start' }];
    if (s.matches({ connecting: 'spawning' })) {
      const wire = s.context.wire;
      const fails = p.spawnFails === true || (Array.isArray(p.spawnFails) && p.spawnFails.includes(wire));
      return [fails ? { type: 'transport.closed', reason: 'spawn-failed', detail: 'spawn ENOENT' } : { type: 'transport.ready' }];
    }
    const c = s.context;
    if (s.matches('renewing')) {
      // The fresh initialize after the server expired the legacy session is answered per `p.expires`.
      const r = p.expires!;
      const id = c.initializeId!;
      if (r.kind === 'silent')
        return __unsafe_getAllOwnEventDescriptors(s)
          .filter((t) => t.includes('startTimeout'))
          .map((type) => ({ type }) as unknown as SessionEvent);
      if (r.kind === 'exit') return [{ type: 'transport.closed', reason: 'connection-lost', detail: 'connection lost' }];
      const renewal: ProbeRequest = { id, method: 'initialize' };
      if (r.kind === 'fail') return [answerEvent(renewal, { failure: r.failure })];
      return [answerEvent(renewal, 'result' in r.answer ? { result: r.answer.result } : { error: (r.answer as { error: never }).error })];
    }
    // No probe needs this many requests; a chart that loops (say, retrying -32022 forever) would make the
    // graph infinite, so its paths end here, still open, and fail the oracle instead of exhausting memory.
    if (c.nextId > MAX_PROBE_REQUESTS) return [];
    const events: SessionEvent[] = [];
    // A stdio server answers in order; a request it never answers does not hold up later ones.
    const pending = [c.discoverId, c.initializeId].filter((id): id is string => id !== null).sort((a, b) => order(a) - order(b));
    let timersAllowed = true;
    let answered = false;
    let exits = false;
    for (const id of pending) {
      const method = id.startsWith('mcpx-discover') ? 'server/discover' : 'initialize';
      const wire = c.wire;
      // A process gets one initialize, and one discover plus at most the one -32022 retry.
      // What this process already answered with success: discover won (awaitingInitialize), or initialize did.
      const pinnedBy = s.matches({ connecting: 'awaitingInitialize' })
        ? 'server/discover'
        : s.matches('ready') && c.era === 'legacy'
          ? 'initialize'
          : undefined;
      const r = p.react(
        method,
        method === 'server/discover' ? c.discoverVersion! : '2025-11-25',
        wire,
        method === 'server/discover' && c.versionRetried ? 1 : 0,
        pinnedBy,
      );
      if (r.kind === 'silent') continue;
      // A server that exits on a request does so when it reads it, whatever else is pending.
      if (r.kind === 'exit') {
        exits = true;
        continue;
      }
      if (answered && !p.outOfOrder) continue;
      answered = true;
      // What the adapter sends for the answer: the verdict read against the request as the chart sent it.
      const request: ProbeRequest = method === 'server/discover' ? { id, method, offered: c.modernVersions, retried: c.versionRetried } : { id, method };
      if (r.kind === 'fail') events.push(answerEvent(request, { failure: r.failure }));
      else if ('result' in r.answer) events.push(answerEvent(request, { result: r.answer.result }));
      else if ('error' in r.answer) events.push(answerEvent(request, { error: r.answer.error }));
      timersAllowed &&= r.kind === 'answer' && r.late === true;
    }
    if (exits) {
      events.push({ type: 'transport.closed', reason: 'exit', detail: 'exit code 1' });
      timersAllowed = false;
    }
    if (p.mayExitIn?.some((state) => s.matches({ connecting: state } as never))) {
      events.push({ type: 'transport.closed', reason: 'exit', detail: 'crashed' });
    }
    if (s.matches('ready')) {
      // Once ready, only a late discover answer (after a legacy race win) or a crash can follow.
      const late = events.filter((e) => e.type !== 'transport.closed');
      // An HTTP legacy session the server expires, once (it is then opened again, or closed).
      if (p.expires && c.era === 'legacy' && capabilitiesOf(c.wire).serverSessions && c.renewals === 0) late.push({ type: 'transport.expired' });
      return p.crashAfterReady ? [...late, { type: 'transport.closed', reason: 'exit', detail: 'exit code 3' }] : late;
    }
    const timers = __unsafe_getAllOwnEventDescriptors(s).filter((t) => t.startsWith('xstate.after.'));
    const timer = (type: string) => ({ type }) as unknown as SessionEvent;
    // The probe timeout fires only if the server is slower than it (and a transition is waiting on it);
    // the start timeout (much longer) only when nothing else can happen any more.
    if (timersAllowed)
      events.push(
        ...timers
          .filter((t) => t.includes('probeTimeout'))
          .map(timer)
          .filter((e) => s.can(e)),
      );
    if (events.length === 0) events.push(...timers.filter((t) => t.includes('startTimeout')).map(timer));
    return events;
  };
}

function outcomeOf(s: SessionSnapshot): Outcome | 'open' {
  if (s.matches('ready')) return { era: s.context.era! };
  if (s.matches('closed')) return { era: s.context.era!, then: 'closed' };
  if (s.matches('failed')) return { error: s.context.error!.code };
  return 'open';
}

const serializeState = (s: SessionSnapshot) =>
  JSON.stringify({
    v: s.value,
    st: s.status,
    d: s.context.discoverId,
    i: s.context.initializeId,
    dv: s.context.discoverVersion,
    vr: s.context.versionRetried,
    sp: s.context.spawns,
    rn: s.context.renewals,
    r: s.context.afterRespawn,
    era: s.context.era,
    m: s.context.supportsModern,
    e: s.context.error?.code,
    w: s.context.wire,
  });

function cachedRecord(cache: CacheState): EraRecord | null {
  if (cache === 'none') return null;
  if (cache === 'legacy-sse') return { era: 'legacy', version: '2024-11-05', at: RECENT, source: 'probe', transport: 'sse' };
  if (cache === 'modern-refusing') return { era: 'modern', version: '2026-07-28', at: RECENT, source: 'probe', initialize: 'refused' };
  return { era: cache, version: cache === 'legacy' ? '2025-11-25' : '2026-07-28', at: RECENT, source: 'probe' };
}

function inputFor(p: Profile, pref: MachinePreference, cache: CacheState): SessionInput {
  return {
    server: 'sim',
    wire: p.http ? 'streamable-http' : 'stdio',
    preference: pref,
    cached: cachedRecord(cache),
    probeTimeoutMs: PROBE_TIMEOUT,
    startTimeoutMs: START_TIMEOUT,
    ...(p.modernVersions ? { modernVersions: p.modernVersions } : {}),
  };
}

function describePath(path: StatePath<SessionSnapshot, SessionEvent>): string {
  return path.steps
    .map((s) => s.event.type as string)
    .filter((t) => t !== 'xstate.init')
    .map((t) => t.replace(/^xstate\.after\.(\w+)\..*/, 'after $1'))
    .join(' → ');
}

// ---- coverage bookkeeping ----

const universe = allTransitions(sessionMachine.root);
const taken = new Set<object>();
const recordCoverage = transitionRecorder(taken);

// ---- replay on the real adapter ----

const tick = () => new Promise<void>((r) => setImmediate(r));
async function settle() {
  for (let i = 0; i < 5; i++) await tick();
}

interface Replay {
  session: UpstreamSession;
  upstream: SimulatedUpstream;
  writes: EraRecord[];
  stale: unknown[];
}

async function replay(p: Profile, pref: MachinePreference, cache: CacheState, path: StatePath<SessionSnapshot, SessionEvent>): Promise<Replay> {
  const upstream = new SimulatedUpstream(p);
  const clock = new SimulatedClock();
  const writes: EraRecord[] = [];
  const record = cachedRecord(cache);
  const fakeCache = {
    get: () => record ?? undefined,
    usable: () => record ?? undefined,
    set: async (_k: string, r: EraRecord) => void writes.push(r),
  } as unknown as EraCache;
  const input = inputFor(p, pref, cache);
  const session = new UpstreamSession({
    name: 'sim',
    definition: p.http ? { url: 'http://127.0.0.1:9/mcp' } : { command: 'simulated' },
    preference: pref,
    cache: fakeCache,
    probeTimeoutMs: PROBE_TIMEOUT,
    startTimeoutMs: START_TIMEOUT,
    ...(input.modernVersions ? { modernVersions: input.modernVersions } : {}),
    channelFactory: upstream.factory,
    clock,
    inspect: recordCoverage,
  });
  const stale: unknown[] = [];
  session.on('era.stale', (e) => stale.push(e));
  let startError: unknown;

  for (const [i, step] of path.steps.entries()) {
    const e = step.event;
    if ((e.type as string) === 'xstate.init') continue;
    if (e.type === 'start') session.start().catch((err) => (startError = err));
    else if (e.type === 'transport.ready') upstream.current.ready();
    else if (e.type === 'transport.closed' && e.reason === 'spawn-failed') upstream.current.ready();
    else if (e.type === 'transport.closed') upstream.current.exit(1);
    else if (e.type === 'verdict.discover' || e.type === 'verdict.initialize')
      expect(upstream.current.answer(e.id)).toBe('failure' in e.answer ? 'failed' : 'answered');
    else if (e.type === 'transport.expired') upstream.current.expire();
    else if (e.type.includes('probeTimeout')) clock.increment(PROBE_TIMEOUT);
    else if (e.type.includes('startTimeout')) clock.increment(START_TIMEOUT);
    else throw new Error(`no way to replay ${e.type}`);
    await settle();
    // The real actor must be where the model says this step leads.
    expect(session.snapshot.value, `after step ${i} (${e.type})`).toEqual(step.state.value);
  }
  if (session.snapshot.status === 'done' && !session.snapshot.matches('closed')) {
    expect(startError, 'start() rejects with the failure').toMatchObject({ code: session.snapshot.context.error?.code });
  }
  return { session, upstream, writes, stale };
}

/**
 * The -32022 rule, read off the wire (docs/decisions.md): on each process, a discover refused with -32022
 * whose `supported` names a version mcpx offers is sent again once, at the newest such version (even the
 * one just refused), unless a legacy session had already won the race; the refusal of that retry is
 * final (MCPX_NO_COMMON_VERSION), and no process ever gets a third discover.
 */
function expectVersionRule(wire: WireRecord[], offered: readonly string[], want: Expectation): void {
  const legacyWon = 'era' in want && want.era === 'legacy';
  for (const process of new Set(wire.map((w) => w.process))) {
    const discovers = wire.filter((w) => w.process === process && w.method === 'server/discover');
    expect(discovers.length, `process ${process} got at most a discover and its one retry`).toBeLessThanOrEqual(2);
    discovers.forEach((d, i) => {
      const error = d.answer && 'error' in d.answer ? d.answer.error : undefined;
      const supported =
        error?.code === -32022 && Array.isArray((error.data as { supported?: unknown })?.supported)
          ? (error.data as { supported: string[] }).supported
          : undefined;
      const best = supported && offered.find((v) => supported.includes(v));
      if (!best) return;
      if (i === 0) {
        if (discovers[1]) expect(discovers[1].version, 'the retry goes to the newest mutual version').toBe(best);
        else expect(legacyWon, 'a -32022 naming a mutual version is retried').toBe(true);
      } else if (!legacyWon) {
        expect(want, 'a second -32022 for the same request is final').toEqual({ error: 'MCPX_NO_COMMON_VERSION' });
      }
    });
  }
}

// ---- the tests ----

const combos: Array<[string, MachinePreference, CacheState, Profile]> = [];
for (const p of [...PROFILES, ...HTTP_PROFILES]) {
  for (const pref of MACHINE_PREFERENCES) {
    combos.push([p.name, pref, 'none', p]);
    if (pref.startsWith('prefer-')) combos.push([p.name, pref, 'legacy', p], [p.name, pref, 'modern', p], [p.name, pref, 'modern-refusing', p]);
    if (pref.startsWith('prefer-') && p.http) combos.push([p.name, pref, 'legacy-sse', p]);
  }
}

let pathCount = 0;

describe.each(combos)('%s under %s, cached era: %s', (_name, pref, cache, p) => {
  const paths = getSimplePaths(sessionMachine, {
    input: inputFor(p, pref, cache),
    events: modelEvents(p) as never,
    serializeState: serializeState as never,
  }) as unknown as StatePath<SessionSnapshot, SessionEvent>[];
  const complete = paths.filter((path) => modelEvents(p)(path.state).length === 0);

  it('the model has at least one complete path', () => {
    expect(complete.length).toBeGreaterThan(0);
  });

  it.each(complete.map((path) => [describePath(path), path] as const))('%s', async (_, path) => {
    pathCount++;
    let want = expected(p, pref, cache);
    if (path.steps.some((st) => st.event.type === 'transport.expired')) want = p.afterExpiry!;
    if ('firstWins' in want) {
      const first = path.steps.find((st) => st.event.type.startsWith('verdict.') && !('failure' in (st.event as { answer: object }).answer))?.event as {
        id: string;
      };
      want = { era: first.id.startsWith('mcpx-initialize') ? 'legacy' : 'modern' };
    }
    expect(outcomeOf(path.state), 'the model path ends where §2/§3 predict').toEqual(want);

    const { session, upstream, writes, stale } = await replay(p, pref, cache, path);
    const input = inputFor(p, pref, cache);
    expect(outcomeOf(session.snapshot)).toEqual(want);

    // force-* values never read or write the cache (§5).
    if (pref.startsWith('force-')) expect(writes).toEqual([]);
    // A cached legacy server gets initialize first and no discover at all — unless initialize is refused (§5).
    if (pref.startsWith('prefer-') && (cache === 'legacy' || cache === 'legacy-sse') && 'era' in want && want.era === 'legacy') {
      expect(upstream.wire.map((w) => w.method)).not.toContain('server/discover');
    }
    // A cached era that turns out wrong is reported stale and rewritten (§5).
    const cachedEra = cache === 'legacy-sse' ? 'legacy' : cache === 'modern-refusing' ? 'modern' : cache;
    if (pref.startsWith('prefer-') && cache !== 'none' && 'era' in want && want.era !== cachedEra && session.snapshot.context.discoverTried) {
      expect(stale).toHaveLength(1);
      // The cache describes the server: one that proved modern stays modern even if this session is legacy.
      expect(writes.at(-1)?.era).toBe(session.snapshot.context.supportsModern ? 'modern' : want.era);
    }
    expectVersionRule(upstream.wire, input.modernVersions ?? MODERN_VERSIONS, want);
    // Every modern request carries _meta with the version on the wire; initialize never does.
    for (const w of upstream.wire) if (w.method === 'server/discover') expect(w.version).toMatch(/^20\d\d-/);
    // HTTP: no probe timeout, so never an initialize alongside a pending discover, and never discover over HTTP+SSE.
    if (p.http) {
      expect(upstream.wire.filter((w) => w.transport === 'sse').map((w) => w.method)).not.toContain('server/discover');
    }
    // A dual server is never recorded as refusing initialize (a refusal on a process discover pinned says nothing).
    if (p.dual) for (const w of writes) expect(w, 'a dual server recorded as refusing initialize').not.toHaveProperty('initialize');
    // A start that fails writes nothing to the cache (no common version, unauthorized, unavailable, refused…).
    if ('error' in want) expect(writes).toEqual([]);
    // A server reached over HTTP+SSE is remembered with that transport (unless forced).
    if (!pref.startsWith('force-') && session.snapshot.matches('ready') && session.snapshot.context.wire === 'sse') {
      expect(writes.at(-1) ?? cachedRecord(cache)).toMatchObject({ era: 'legacy', transport: 'sse' });
    }
    await session.stop();
    expect(
      upstream.processes.every((c) => c.closed),
      'no simulated process is left running',
    ).toBe(true);
  });
});

describe('stopping', () => {
  const legacy = PROFILES[0]!;
  it('a session stopped before it started never starts a process', async () => {
    const upstream = new SimulatedUpstream(legacy);
    const session = new UpstreamSession({
      name: 'sim',
      definition: { command: 'simulated' },
      preference: 'prefer-discover',
      channelFactory: upstream.factory,
      inspect: recordCoverage,
    });
    await session.stop();
    expect(session.snapshot.value).toBe('stopped');
    expect(upstream.processes).toHaveLength(0);
  });

  it('a session stopped while connecting stops its process and rejects start()', async () => {
    const upstream = new SimulatedUpstream(legacy);
    const session = new UpstreamSession({
      name: 'sim',
      definition: { command: 'simulated' },
      preference: 'prefer-discover',
      channelFactory: upstream.factory,
      inspect: recordCoverage,
    });
    const started = session.start();
    upstream.current.ready();
    await settle();
    expect(session.snapshot.value).toEqual({ connecting: 'discovering' });
    await session.stop();
    await expect(started).rejects.toMatchObject({ code: 'MCPX_SESSION_CLOSED' });
    expect(session.snapshot.value).toBe('stopped');
    expect(upstream.current.closed).toBe(true);
  });
});

describe('stopping while an expired legacy session is opened again', () => {
  it('stops the session (and its connection) instead of waiting for the server', async () => {
    const p = HTTP_PROFILES.find((x) => x.name === 'http legacy, session expires, server silent after')!;
    const upstream = new SimulatedUpstream(p);
    const session = new UpstreamSession({
      name: 'sim',
      definition: { url: 'http://127.0.0.1:9/mcp' },
      preference: 'force-initialize',
      channelFactory: upstream.factory,
      inspect: recordCoverage,
    });
    const started = session.start();
    upstream.current.ready();
    await settle();
    expect(upstream.current.answer(upstream.current.pending[0]!.id)).toBe('answered');
    await started;
    upstream.current.expire();
    await settle();
    expect(session.snapshot.value).toBe('renewing');
    expect(upstream.current.pending.map((r) => r.method)).toEqual(['initialize']);
    await session.stop();
    expect(session.snapshot.value).toBe('stopped');
    expect(upstream.current.closed).toBe(true);
  });
});

afterAll(() => {
  const missing = [...universe].filter(([t]) => !taken.has(t)).map(([, label]) => label);
  console.log(
    `[model] ${combos.length} upstream×preference×cache combinations, ${pathCount} complete paths replayed, transitions covered ${universe.size - missing.length}/${universe.size}`,
  );
  expect(missing, 'transitions of the session chart no replay took').toEqual([]);
});
