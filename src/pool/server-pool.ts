/**
 * ServerPool: one configured server's pool — the shell around the pool statechart (./pool.machine.ts).
 *
 * The machine decides; this class carries out what it emits and reports back what happened:
 * - `instance.start` → create an UpstreamSession (own lane: with the era cache; legacy lane: cache
 *   null, force-initialize) and start it → `instance.ready` / `instance.failed`;
 * - `instance.stop` → stop the session (and its process) → `instance.stopped`;
 * - a session's process dying after it was ready → `instance.exited`;
 * - `acquire.granted` / `acquire.rejected` → settle the waiting caller.
 *
 * Sessions live here, in a Map keyed by instance id, never in the machine's context. Callers are
 * queued through the machine: a call acquires an instance (honouring its signal and timeout while it
 * waits), runs on that instance's session with its Call, and releases it.
 *
 * The session code (its chart, the transports, the wire schemas and with them zod) is loaded by the pool's first call,
 * not with the pool: a daemon builds every configured server's pool before it listens, and most of them
 * are not called for a while.
 */
import type { RequestAuthorizer } from '../transports/request-authorizer.js';
import { EventEmitter } from 'node:events';
import { createActor, waitFor, type Actor, type ActorOptions, type AnyActorLogic, type InspectionEvent } from 'xstate';
import { timerDelay } from '../timer-delay.js';
import { describeClose } from '../transports/close-info.js';
import type { CloseInfo } from '../transports/types.js';
import { McpxError } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import { callerLane, type Lane } from '../machines/preference.js';
import type { Era } from '../machines/versions.js';
import type { EraCache, EraRecord } from '../upstream/era-cache.js';
import { eraCacheKey } from '../upstream/process-key.js';
import { stateName } from '../machines/state-name.js';
import type { UpstreamSession, ChangedList, SessionInfo, SessionSnapshot, UpstreamSessionOptions } from '../upstream/session.js';
import { timeLeft, type Call } from '../call/call.js';
import { poolLogic, type PoolEmitted, type PoolLogic, type PoolFailure, type PoolMachineEvent } from './pool.machine.js';
import type { InspectSource, InstanceStatus, PoolEvent, PoolServerConfig, ProtocolReport, ServerPoolApi, UpstreamInfo } from './types.js';

/** xstate's clock (timers); one that also tells the time (xstate's SimulatedClock) is the pool's clock too. */
type Clock = NonNullable<ActorOptions<AnyActorLogic>['clock']> & { now?: () => number };

/** What the pool hands its session factory: the session's options, plus which slot it is for. */
export interface PoolSessionOptions extends UpstreamSessionOptions {
  instanceId: string;
  lane: Lane;
  scopeKey: string;
}

/** Creates the session of one instance. */
export type SessionFactory = (opts: PoolSessionOptions) => UpstreamSession;

/** The plain UpstreamSession, loaded on first use. */
const loadUpstreamSession = async (): Promise<SessionFactory> => {
  const { UpstreamSession } = await import('../upstream/session.js');
  return (o) => new UpstreamSession(o);
};

export interface ServerPoolDeps {
  /** The era cache (own lane only; the legacy lane is forced and never touches it). */
  cache?: EraCache | null;
  logger?: Logger;
  /** Creates sessions; tests pass one that plugs in simulated upstreams. */
  sessionFactory?: SessionFactory;
  /** Loads the session factory on the pool's first call, when `sessionFactory` is not given (default: UpstreamSession). */
  loadSessionFactory?: () => Promise<SessionFactory>;
  /** xstate inspection of the pool actor and of every session actor (live statecharts), with which actor it came from. */
  inspect?: (event: InspectionEvent, source: InspectSource) => void;
  /**
   * Whether `inspect` also gets the pool actor's events (default true). The daemon turns it off unless an
   * inspector is attached: its probe timelines read only session snapshots, and the pool actor's events
   * (several per call: acquire, release, their actions and snapshots) would be built for nobody.
   */
  inspectPool?: boolean;
  /**
   * xstate clock for the pool actor (cooldowns) and the idle alarms; tests pass a SimulatedClock. Its
   * `now()`, when it has one, is the time idle alarms are kept against (else a monotonic clock).
   */
  clock?: Clock;
  /** Per-request credentials for an HTTP server's sessions (OAuth), by server name; none: only configured headers. */
  authorizer?: (server: string) => RequestAuthorizer | undefined;
  /** The client capabilities every session declares (see UpstreamSessionOptions); none: the session's defaults. */
  sessionCapabilities?: Pick<UpstreamSessionOptions, 'clientCapabilities' | 'capabilitiesWithoutRelay'>;
}

interface Live {
  id: string;
  lane: Lane;
  key: string;
  session: UpstreamSession;
  startedAt: number;
  /** The same moment on the pool's clock (monotonic): uptime never goes negative when the wall clock is set back. */
  startedMono: number;
  /** The process id once ready (the session forgets it when the process goes). */
  pid: number | undefined;
  ready: boolean;
  /** The pool asked it to stop (idle, eviction, call end, pool stop). */
  stopRequested: boolean;
  /** Why its process went away on its own, after (or just before) it was ready. */
  crashed: string | null;
  lastState: string | null;
}

interface Waiting {
  grant(id: string): void;
  fail(error: McpxError): void;
}

interface Lease {
  requestId: string;
  live: Live;
}

const SESSION_GONE = new Set(['MCPX_TRANSPORT_CLOSED', 'MCPX_SESSION_CLOSED']);

export class ServerPool extends EventEmitter implements ServerPoolApi {
  readonly name: string;
  readonly config: PoolServerConfig;
  /** @internal The pool statechart's actor: for tests, the live statechart view and debugging. */
  readonly actor: Actor<PoolLogic>;
  private readonly deps: ServerPoolDeps;
  /** Set from deps, or by the first call (see the header). */
  private sessionFactory: SessionFactory | undefined;
  private factoryLoad: Promise<SessionFactory> | undefined;
  private readonly log: Logger;
  private readonly cacheKey: string | null;
  private readonly sessions = new Map<string, Live>();
  private readonly waiting = new Map<string, Waiting>();
  private readonly cleanups = new Set<Promise<void>>();
  private nextRequest = 0;
  private nextCall = 0;
  private stopPromise: Promise<void> | undefined;
  /** The own lane's most recent ready instance, as it was when ready (§7). */
  private ownReport: (Pick<SessionInfo, 'era' | 'negotiated' | 'eraSource'> & { id: string }) | null = null;
  /** Each lane's most recent ready instance's self-description, kept after it stops (for catalogues). */
  private readonly laneInfo = new Map<Lane, UpstreamInfo>();
  /**
   * Idle alarms the chart asked for (`idle.alarm`): instance id → when it is due. One timer, for the
   * earliest; a later alarm for the same instance replaces the earlier, and a stale one (the instance
   * was acquired again, or is gone) is ignored by the chart. No timer is set or cleared per call.
   */
  private readonly alarms = new Map<string, number>();
  private alarmTimer: { cancel: () => void; due: number } | undefined;

  /** The folders roots/list is answered with (config.roots, updated in place by setRoots). */
  private roots: readonly string[];
  /**
   * Scope keys whose caller, waiting for an instance, declared roots: a session that is that caller's
   * alone is started declaring them (startInstance), and its roots/list goes to that caller.
   */
  private readonly callerRoots = new Map<string, number>();

  /** The configured roots changed: running legacy sessions are told (`notifications/roots/list_changed`). */
  setRoots(roots: readonly string[] | undefined): void {
    const next = roots ?? [];
    if (JSON.stringify(next) === JSON.stringify(this.roots)) return;
    this.roots = next;
    for (const live of this.sessions.values()) live.session.rootsChanged?.();
  }

  constructor(config: PoolServerConfig, deps: ServerPoolDeps = {}) {
    super();
    this.name = config.name;
    this.config = config;
    this.roots = config.roots ?? [];
    this.deps = deps;
    this.sessionFactory = deps.sessionFactory;
    this.log = (deps.logger ?? silentLogger).child({ server: config.name, component: 'pool' });
    let key: string | null = null;
    try {
      key = eraCacheKey(config.definition as never);
    } catch {
      key = null; // a definition with neither command nor url: every start will fail and say why
    }
    this.cacheKey = key;
    // The pool machine ignores the record under force-* (as the session machine does).
    const cached = key ? (deps.cache?.usable(key) ?? null) : null;
    const inspect =
      deps.inspect && deps.inspectPool !== false ? (ev: InspectionEvent) => deps.inspect?.(ev, { actor: 'pool', server: config.name }) : undefined;
    this.actor = createActor(poolLogic(inspect), {
      id: `pool:${config.name}`,
      input: {
        server: config.name,
        preference: config.preference,
        limits: config.limits,
        ...(config.backoff ? { backoff: config.backoff } : {}),
        cachedEra: cached?.era ?? null,
      },
      ...(inspect ? { inspect } : {}),
      ...(deps.clock ? { clock: deps.clock } : {}),
    });
    this.actor.on('*', (e) => this.perform(e as PoolEmitted));
    this.actor.subscribe({ error: (err) => this.log.error({ err }, 'pool actor failed') });
    this.actor.start();
  }

  // ---- ServerPoolApi ----

  /**
   * One call, run like every call: the caller's lane and scope key, a lease (waited for within the
   * call's deadline and signal), and the session's era.
   */
  run(call: Call): Promise<Record<string, unknown>> {
    return this.use(call, (session) => session.run(call));
  }

  /** The last known serverInfo, capabilities and instructions of a lane's ready instance (null: none was ready yet). */
  upstreamInfo(lane: Lane = 'own'): UpstreamInfo | null {
    const known = this.laneInfo.get(lane);
    return known ? { ...known } : null;
  }

  instances(): InstanceStatus[] {
    const now = Date.now();
    const mono = this.now();
    return this.actor
      .getSnapshot()
      .context.instances.list()
      .map((slot) => {
        const live = this.sessions.get(slot.id);
        const info = live?.session.info();
        return {
          id: slot.id,
          lane: slot.lane,
          scopeKey: slot.key,
          pid: info?.pid ?? live?.pid,
          state: slot.status,
          holders: slot.holders.length,
          era: info?.era ?? slot.era,
          negotiated: info?.negotiated ?? null,
          eraSource: info?.eraSource ?? null,
          startedAt: new Date(live?.startedAt ?? now).toISOString(),
          uptimeMs: live ? Math.max(0, Math.round(mono - live.startedMono)) : 0,
          ...(info ? { sessionState: info.state } : {}),
        };
      });
  }

  protocolReport(): ProtocolReport {
    const c = this.actor.getSnapshot().context;
    // The live session when it is still there; what it settled on when it has since stopped.
    const live = this.ownReport ? this.sessions.get(this.ownReport.id) : undefined;
    const info = live?.ready ? live.session.info() : this.ownReport;
    const follow = this.config.preference === 'follow';
    const legacy = c.legacyLane === 'off' ? 'unused' : c.legacyLane;
    return {
      server: this.name,
      preference: this.config.preference,
      era: info?.era ?? null,
      negotiated: info?.negotiated ?? null,
      eraSource: info?.eraSource ?? null,
      cached: (this.cacheKey ? this.deps.cache?.get(this.cacheKey) : undefined) ?? null,
      legacyLane: follow ? { state: legacy, ...(c.legacyRefusal ? { reason: c.legacyRefusal } : {}) } : null,
    };
  }

  /** Stops every instance and its process; resolves when nothing is left running. Calls in flight fail. */
  stop(): Promise<void> {
    this.stopPromise ??= (async () => {
      this.clearAlarms();
      if (this.actor.getSnapshot().status === 'active') this.send({ type: 'stop' });
      await waitFor(this.actor, (s) => s.status !== 'active');
      while (this.cleanups.size > 0) await Promise.allSettled([...this.cleanups]);
      this.actor.stop();
    })();
    return this.stopPromise;
  }

  override on(event: 'event', listener: (e: PoolEvent) => void): this;
  // EventEmitter's own signature: its listeners take any arguments.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override on(event: string | symbol, listener: (...args: any[]) => void): this;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override on(event: string | symbol, listener: (...args: any[]) => void): this {
    return super.on(event, listener);
  }

  // ---- calls ----

  /** The lane the caller's era asks for (the rule: callerLane in src/machines/preference.ts). */
  laneFor(call: Pick<Call, 'callerProtocol'>): Lane {
    return callerLane(this.config.preference, call.callerProtocol);
  }

  private keyFor(call: Call): string {
    switch (this.config.limits.scope) {
      case 'global':
        return 'global';
      case 'call':
        return `call:${++this.nextCall}`;
      case 'session': {
        const key = typeof call.session === 'string' ? call.session.trim() : '';
        if (!key) {
          throw new McpxError('MCPX_BAD_REQUEST', `${this.name}: this server is pooled per caller session (scope "session"), and the call names no session`, {
            data: { server: this.name, scope: 'session', field: 'session' },
          });
        }
        return key;
      }
    }
  }

  private async use<T>(call: Call, op: (session: UpstreamSession) => Promise<T>): Promise<T> {
    // While the pool is stopping, the machine refuses the acquire; once it is stopped, nothing answers.
    if (this.actor.getSnapshot().status !== 'active') throw this.stoppedError();
    const want = this.laneFor(call);
    const key = this.keyFor(call);
    if (this.sessionFactory === undefined) {
      this.sessionFactory = await (this.factoryLoad ??= (this.deps.loadSessionFactory ?? loadUpstreamSession)().catch((err: unknown) => {
        this.factoryLoad = undefined; // the next call tries again
        throw err;
      }));
      if (this.actor.getSnapshot().status !== 'active') throw this.stoppedError(); // stopped while it loaded
    }
    // Counted while the acquire waits: the instance it may start is started within it.
    const rootsCaller = this.config.limits.scope !== 'global' && call.relay?.capabilities.roots !== undefined;
    if (rootsCaller) this.callerRoots.set(key, (this.callerRoots.get(key) ?? 0) + 1);
    let lease: Lease;
    try {
      lease = await this.acquire(want, key, call);
    } finally {
      if (rootsCaller) {
        const n = (this.callerRoots.get(key) ?? 1) - 1;
        if (n > 0) this.callerRoots.set(key, n);
        else this.callerRoots.delete(key);
      }
    }
    const { live } = lease;
    try {
      const remaining = timeLeft(call);
      if (remaining !== undefined && remaining <= 0) throw this.timeoutError(call.timeoutMs ?? 0, 'before the call could be sent');
      return await op(live.session);
    } catch (err) {
      throw this.explain(err, live);
    } finally {
      this.send({ type: 'release', requestId: lease.requestId, at: this.now() });
    }
  }

  /** Queue for an instance; resolves with the granted one. Leaves the queue on abort or timeout. */
  private acquire(want: Lane, key: string, call: Call): Promise<Lease> {
    const { signal } = call;
    const left = timeLeft(call);
    const deadline = left === undefined ? undefined : Date.now() + left;
    if (signal?.aborted) return Promise.reject(this.cancelledError(signal.reason));
    return new Promise<Lease>((resolve, reject) => {
      const requestId = `r${++this.nextRequest}`;
      let timer: NodeJS.Timeout | undefined;
      let settled = false;
      const cleanup = () => {
        settled = true;
        if (timer) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.waiting.delete(requestId);
      };
      const leave = (error: McpxError) => {
        cleanup();
        this.send({ type: 'cancel', requestId });
        reject(error);
      };
      const onAbort = () => leave(this.cancelledError(signal?.reason));
      this.waiting.set(requestId, {
        grant: (id) => {
          cleanup();
          const live = this.sessions.get(id);
          if (live) return resolve({ requestId, live });
          this.send({ type: 'release', requestId, at: this.now() });
          reject(new McpxError('MCPX_SESSION_CLOSED', `${this.name}: instance ${id} was granted but is gone`));
        },
        fail: (error) => {
          cleanup();
          reject(error);
        },
      });
      this.send({ type: 'acquire', requestId, want, key });
      // A warm instance is granted (or the acquire refused) within the send: no watch needed then.
      if (settled) return;
      signal?.addEventListener('abort', onAbort, { once: true });
      if (deadline !== undefined) {
        timer = setTimeout(
          () => leave(this.timeoutError(call.timeoutMs ?? 0, `waiting for a free instance (key ${JSON.stringify(key)})`)),
          timerDelay(deadline - Date.now()),
        );
      }
    });
  }

  /** A session-gone error on a call in flight, worded for what really happened to the instance. */
  private explain(err: unknown, live: Live): unknown {
    if (err instanceof McpxError && (err.code === 'MCPX_MESSAGE_TOO_LARGE' || err.code === 'MCPX_BAD_UPSTREAM') && !err.message.startsWith(`${this.name}:`)) {
      return new McpxError(err.code, `${this.name}: ${err.message}; the next call starts a fresh instance`, {
        cause: err,
        data: { server: this.name, instance: live.id, ...err.data },
      });
    }
    if (!(err instanceof McpxError) || !SESSION_GONE.has(err.code)) return err;
    const pid = live.session.info().pid ?? live.pid;
    const which = `the upstream process${pid === undefined ? '' : ` (pid ${pid})`}`;
    if (live.crashed !== null) {
      return new McpxError(
        'MCPX_TRANSPORT_CLOSED',
        `${this.name}: ${which} exited while this call was in flight (${live.crashed}); the next call starts a fresh instance`,
        {
          cause: err,
          data: { server: this.name, instance: live.id, lane: live.lane, ...(pid === undefined ? {} : { pid }), ...err.data },
        },
      );
    }
    if (live.stopRequested && this.stopPromise) {
      return new McpxError('MCPX_POOL_STOPPED', `${this.name}: the pool was stopped while this call was in flight`, {
        cause: err,
        data: { server: this.name, instance: live.id },
      });
    }
    return err;
  }

  // ---- carrying out what the machine emits ----

  private send(event: PoolMachineEvent): void {
    if (this.actor.getSnapshot().status === 'active') this.actor.send(event);
  }

  private perform(e: PoolEmitted): void {
    switch (e.type) {
      case 'acquire.granted':
        this.waiting.get(e.requestId)?.grant(e.id);
        return;
      case 'acquire.rejected':
        this.waiting.get(e.requestId)?.fail(new McpxError(e.error.code, e.error.message, e.error.data ? { data: e.error.data } : undefined));
        return;
      case 'instance.start':
        this.startInstance(e);
        return;
      case 'instance.stop':
        this.stopInstance(e.id, e.reason);
        return;
      case 'idle.alarm':
        this.setAlarm(e.id, e.at);
        return;
    }
  }

  // ---- idle alarms ----

  /** The pool's time in ms: the injected clock's when it tells one, else monotonic. */
  private now(): number {
    return this.deps.clock?.now?.() ?? performance.now();
  }

  private setAlarm(id: string, at: number): void {
    this.alarms.set(id, at);
    if (this.alarmTimer === undefined || at < this.alarmTimer.due) this.armAlarmTimer(at);
  }

  private armAlarmTimer(due: number): void {
    this.alarmTimer?.cancel();
    const delay = timerDelay(due - this.now());
    const clock = this.deps.clock;
    if (clock) {
      const id = clock.setTimeout(() => this.ringAlarms(), delay);
      this.alarmTimer = { cancel: () => clock.clearTimeout(id), due };
    } else {
      const timer = setTimeout(() => this.ringAlarms(), delay);
      this.alarmTimer = { cancel: () => clearTimeout(timer), due };
    }
  }

  /** Sends `instance.idle` for every alarm due, and sets the timer for the next one. */
  private ringAlarms(): void {
    this.alarmTimer = undefined;
    const now = this.now();
    const due: string[] = [];
    let next = Infinity;
    for (const [id, at] of this.alarms) {
      if (at <= now) due.push(id);
      else if (at < next) next = at;
    }
    for (const id of due) this.alarms.delete(id);
    if (next !== Infinity) this.armAlarmTimer(next);
    for (const id of due) this.send({ type: 'instance.idle', id, at: now });
  }

  private clearAlarms(): void {
    this.alarmTimer?.cancel();
    this.alarmTimer = undefined;
    this.alarms.clear();
  }

  /**
   * What a new session declares at initialize: the deps' capabilities, and `roots` only when mcpx has
   * roots to give it — the server's `mcpx.roots`, or, on a session that is one caller's alone, a caller
   * that declared roots. A server told of roots it was not meant to have may trade the folders of its own
   * command line for them (server-filesystem does), so with none it is told nothing of roots.
   */
  private sessionCapabilities(key: string): Pick<UpstreamSessionOptions, 'clientCapabilities' | 'capabilitiesWithoutRelay'> {
    const given = this.deps.sessionCapabilities ?? {};
    const giveRoots = this.roots.length > 0 || (this.config.limits.scope !== 'global' && this.callerRoots.has(key));
    if (!giveRoots) return given;
    const base = given.clientCapabilities ?? {};
    return {
      // mcpx tells the server when the roots change (a reload of mcpx.roots).
      clientCapabilities: { ...base, roots: { listChanged: true } },
      // A modern request declares roots only for a caller that can answer them (its relay's capabilities).
      capabilitiesWithoutRelay: given.capabilitiesWithoutRelay ?? base,
    };
  }

  private startInstance(e: Extract<PoolEmitted, { type: 'instance.start' }>): void {
    const c = this.config;
    const opts: PoolSessionOptions = {
      name: c.name,
      definition: c.definition,
      preference: e.preference,
      cache: e.useCache ? (this.deps.cache ?? null) : null,
      probeTimeoutMs: c.probeTimeoutMs,
      ...(c.startTimeoutMs === undefined ? {} : { startTimeoutMs: c.startTimeoutMs }),
      ...(c.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: c.requestTimeoutMs }),
      logger: (this.deps.logger ?? silentLogger).child({ instance: e.id, lane: e.lane }),
      ...(this.deps.authorizer?.(c.name) ? { authorizer: this.deps.authorizer(c.name)! } : {}),
      ...this.sessionCapabilities(e.key),
      instanceId: e.id,
      lane: e.lane,
      scopeKey: e.key,
      // The session of a global scope is everyone's: mcpx answers its roots/list (mcpx.roots); under scope
      // session or call it is one caller's, who is asked when it declared roots.
      roots: () => this.roots,
      rootsPerCaller: c.limits.scope !== 'global',
    };
    let live: Live | undefined;
    opts.inspect = (ev) => {
      this.deps.inspect?.(ev, { actor: 'session', server: this.name, instance: e.id, lane: e.lane });
      if (live && ev.type === '@xstate.snapshot') this.onSessionSnapshot(live, ev.snapshot as SessionSnapshot, ev.event.type);
    };
    let session: UpstreamSession;
    try {
      // Loaded by use() before any acquire, and only an acquire starts an instance.
      session = this.sessionFactory!(opts);
    } catch (err) {
      queueMicrotask(() => this.send({ type: 'instance.failed', id: e.id, error: failureOf(err, this.name) }));
      return;
    }
    const l: Live = {
      id: e.id,
      lane: e.lane,
      key: e.key,
      session,
      startedAt: Date.now(),
      startedMono: this.now(),
      pid: undefined,
      ready: false,
      stopRequested: false,
      crashed: null,
      lastState: null,
    };
    live = l;
    this.sessions.set(e.id, l);
    session.on('era.stale', (s: { cached: EraRecord; found: Era }) => {
      this.publish({ type: 'server.era.stale', server: this.name, cached: s.cached, found: s.found });
    });
    session.on('list_changed', (c: { list: ChangedList }) => {
      if (l.stopRequested) return;
      this.log.debug({ instance: l.id, lane: l.lane, list: c.list }, 'upstream list changed');
      this.publish({ type: 'server.list_changed', server: this.name, instance: l.id, lane: l.lane, list: c.list });
    });
    session.on('closed', (info: CloseInfo) => {
      if (l.stopRequested || l.crashed !== null) return;
      l.crashed = describeClose(info, { reason: true }) ?? 'closed';
      if (l.ready) this.onCrash(l);
      // Not ready yet: start() rejects (a start failure) or has just resolved (handled there).
    });
    this.log.debug({ instance: e.id, lane: e.lane, key: e.key, preference: e.preference }, 'starting an instance');
    const failed = (err: unknown): void => {
      if (l.stopRequested) return;
      const failure = failureOf(err, this.name);
      this.log.warn({ instance: l.id, lane: l.lane, code: failure.code, err: failure.message }, 'instance failed to start');
      this.publish({ type: 'server.stop', server: this.name, instance: l.id, lane: l.lane, reason: `start failed: ${failure.message}` });
      this.send({ type: 'instance.failed', id: l.id, error: failure });
      this.dispose(l);
    };
    session.start().then((info) => {
      if (l.stopRequested) return;
      // The session chart reaches ready only with an era; no default is guessed here.
      if (info.era === null) return failed(new McpxError('MCPX_INTERNAL', `${this.name}: the session became ready without an era`));
      const era = info.era;
      l.ready = true;
      l.pid = info.pid;
      const readyMs = Date.now() - l.startedAt;
      if (l.lane === 'own') this.ownReport = { id: l.id, era: info.era, negotiated: info.negotiated, eraSource: info.eraSource };
      this.laneInfo.set(l.lane, {
        lane: l.lane,
        instance: l.id,
        era: info.era,
        negotiated: info.negotiated,
        serverInfo: info.serverInfo,
        capabilities: info.capabilities,
        instructions: info.instructions,
      });
      this.log.info({ instance: l.id, lane: l.lane, pid: info.pid, era: info.era, readyMs }, 'instance ready');
      this.publish({
        type: 'server.start',
        server: this.name,
        instance: l.id,
        pid: info.pid,
        lane: l.lane,
        era: info.era,
        negotiated: info.negotiated,
        eraSource: info.eraSource,
        readyMs,
      });
      this.send({ type: 'instance.ready', id: l.id, era, at: this.now() });
      if (l.crashed !== null) this.onCrash(l); // it died between becoming ready and now
    }, failed);
  }

  private onCrash(l: Live): void {
    this.log.warn({ instance: l.id, lane: l.lane, reason: l.crashed }, 'instance exited on its own');
    this.publish({ type: 'server.stop', server: this.name, instance: l.id, lane: l.lane, reason: `crashed: ${l.crashed}` });
    this.send({ type: 'instance.exited', id: l.id, reason: l.crashed ?? 'exited' });
    this.dispose(l);
  }

  private stopInstance(id: string, reason: string): void {
    const l = this.sessions.get(id);
    if (!l) {
      // Its session could not even be created; nothing runs.
      queueMicrotask(() => this.send({ type: 'instance.stopped', id }));
      return;
    }
    l.stopRequested = true;
    this.log.debug({ instance: id, lane: l.lane, reason }, 'stopping an instance');
    this.track(
      l.session
        .stop()
        .catch((err: unknown) => this.log.warn({ err, instance: id }, 'error while stopping an instance'))
        .then(() => {
          this.sessions.delete(id);
          this.publish({ type: 'server.stop', server: this.name, instance: id, lane: l.lane, reason });
          this.send({ type: 'instance.stopped', id });
        }),
    );
  }

  /** Stop what is left of a session the machine has already forgotten (failed or crashed). */
  private dispose(l: Live): void {
    this.track(
      l.session
        .stop()
        .catch((err: unknown) => this.log.warn({ err, instance: l.id }, 'error while cleaning up an instance'))
        .then(() => {
          if (this.sessions.get(l.id) === l) this.sessions.delete(l.id);
        }),
    );
  }

  private track(p: Promise<void>): void {
    this.cleanups.add(p);
    void p.finally(() => this.cleanups.delete(p));
  }

  private onSessionSnapshot(l: Live, snapshot: SessionSnapshot, event: string): void {
    const state = stateName(snapshot);
    if (state === l.lastState) return;
    l.lastState = state;
    this.publish({ type: 'session.state', server: this.name, instance: l.id, lane: l.lane, state, event });
  }

  /** Listeners never break the pool: a throwing one is logged. */
  private publish(e: PoolEvent): void {
    try {
      this.emit('event', e);
    } catch (err) {
      this.log.error({ err, event: e.type }, 'a pool event listener threw');
    }
  }

  private stoppedError(): McpxError {
    return new McpxError('MCPX_POOL_STOPPED', `${this.name}: the pool is stopped`, { data: { server: this.name } });
  }

  private cancelledError(reason: unknown): McpxError {
    const why = reason instanceof Error ? reason.message : reason === undefined ? 'aborted' : String(reason);
    return new McpxError('MCPX_REQUEST_CANCELLED', `${this.name}: the call was cancelled while waiting for an instance (${why})`, {
      data: { server: this.name },
    });
  }

  private timeoutError(ms: number, what: string): McpxError {
    return new McpxError('MCPX_REQUEST_TIMEOUT', `${this.name}: no answer within ${ms} ms — timed out ${what}`, { data: { server: this.name, timeoutMs: ms } });
  }
}

function failureOf(err: unknown, server: string): PoolFailure {
  if (err instanceof McpxError) return { code: err.code, message: err.message, ...(err.data ? { data: err.data } : {}) };
  return { code: 'MCPX_SPAWN_FAILED', message: `${server}: ${err instanceof Error ? err.message : String(err)}` };
}
