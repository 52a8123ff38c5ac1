/**
 * UpstreamSession: one upstream connection, driven by the session statechart.
 *
 * This is the transport adapter of docs/behaviour.md §8: it creates the machine's actor, carries out what
 * the machine emits (spawn, kill, request, notify, cache.write) on a Channel, and feeds back what the
 * upstream did. It decides nothing about eras. Once the machine reaches `ready`, ordinary requests go
 * through RequestClient (./request-client.ts) in the era the machine chose.
 */
import type { RequestAuthorizer } from '../transports/request-authorizer.js';
import { EventEmitter } from 'node:events';
import { createActor, type Actor, type ActorOptions, type AnyActorLogic, type InspectionEvent, type SnapshotFrom } from 'xstate';
import { McpxError, UpstreamRpcError } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import { answered, sessionMachine, type EraSource, type SessionEmitted, type SessionFailure } from '../machines/session.machine.js';
import type { SessionPreference } from '../machines/preference.js';
import type { Answer, HttpFailure } from '../machines/verdict.js';
import { stateName } from '../machines/state-name.js';
import type { Era } from '../machines/versions.js';
import { capabilitiesOf, type WireTransport } from '../transports/capabilities.js';
import { requestParams, type ClientCapabilities } from '../transports/mcp-messages.js';
import { createChannel } from './transport-registry.js';
import type { Call, CallHandling, ChangedList, ListKind } from '../call/call.js';
export type { ChangedList } from '../call/call.js';
import { RequestClient, type ReadyConnection, type Tool } from './request-client.js';
import { describeClose } from '../transports/close-info.js';
import { RpcPeer } from '../transports/rpc-peer.js';
import type { Channel, CloseInfo, JsonRpcNotification } from '../transports/types.js';
import { wireOf, type ServerDefinition } from './definition.js';
import type { EraCache, EraRecord } from './era-cache.js';
import { eraCacheKey } from './process-key.js';

export type SessionSnapshot = SnapshotFrom<typeof sessionMachine>;
type Clock = NonNullable<ActorOptions<AnyActorLogic>['clock']>;

/** What the session learned, for reports (`GET /v1/protocol`) and logs. */
export interface SessionInfo {
  server: string;
  state: string;
  era: Era | null;
  negotiated: string | null;
  eraSource: EraSource | null;
  supportsModern: boolean;
  serverInfo: unknown;
  capabilities: unknown;
  instructions: string | undefined;
  pid: number | undefined;
  spawns: number;
  error: SessionFailure | null;
}

// The request side of a session (its types are part of this module's API).
export { LISTINGS, type Tool } from './request-client.js';

export interface UpstreamSessionOptions {
  name: string;
  definition: ServerDefinition;
  preference: SessionPreference;
  /** Consulted and updated unless the preference is force-*. */
  cache?: EraCache | null;
  probeTimeoutMs?: number;
  startTimeoutMs?: number;
  requestTimeoutMs?: number;
  stopGraceMs?: number;
  maxMessageBytes?: number;
  modernVersions?: readonly string[];
  /** Declared at `initialize` and in the discover probe (the daemon: RELAYABLE_CAPABILITIES, src/call/question-relay.ts). */
  clientCapabilities?: ClientCapabilities;
  /**
   * What a modern request declares in its `_meta` when its call has no relay (Call.relay); default
   * clientCapabilities. The daemon: `{}`, since a modern server must not infer a request's capabilities
   * from the session's, and a call that cannot answer must not claim it can.
   */
  capabilitiesWithoutRelay?: ClientCapabilities;
  logger?: Logger;
  /** Replaces the real transport (model-based tests run the machine against simulated upstreams). */
  channelFactory?: (attempt: number, transport: WireTransport) => Channel<CallHandling>;
  /**
   * The folders mcpx answers a legacy `roots/list` with itself (absolute paths), read when asked. Given,
   * no caller is ever asked for roots unless `rootsPerCaller` (the session is one caller's alone).
   */
  roots?: () => readonly string[];
  rootsPerCaller?: boolean;
  /** xstate inspection hook, for live statecharts. */
  inspect?: (event: InspectionEvent) => void;
  /** xstate clock; model-based tests pass a SimulatedClock to fire probe timeouts on cue. */
  clock?: Clock;
  /** HTTP servers: per-request credentials (OAuth bearer tokens), added by the channel to every request. */
  authorizer?: RequestAuthorizer;
}

/** Which list a `notifications/<list>/list_changed` is about. */
const LIST_CHANGED: ReadonlyMap<string, ChangedList> = new Map([
  ['notifications/tools/list_changed', 'tools'],
  ['notifications/prompts/list_changed', 'prompts'],
  ['notifications/resources/list_changed', 'resources'],
]);

export class UpstreamSession extends EventEmitter {
  readonly name: string;
  readonly definition: ServerDefinition;
  readonly cacheKey: string;
  private readonly actor: Actor<typeof sessionMachine>;
  private readonly log: Logger;
  private channel: Channel<CallHandling> | undefined;
  private peer: RpcPeer<CallHandling> | undefined;
  private readonly closing = new Set<Promise<void>>();
  private readonly opts: UpstreamSessionOptions;
  private startPromise: Promise<SessionInfo> | undefined;
  private wire: WireTransport | undefined;
  private lastClose: CloseInfo | undefined;
  private closedAnnounced = false;
  /** isReady of the snapshot `readyOf`. */
  private readyOf: SessionSnapshot | undefined;
  private readyNow = false;
  /** The chart's renewal of an expired legacy session, while it runs (see renew). */
  private renewal: Promise<void> | undefined;
  /** Ordinary requests once the chart is ready (era envelope, input_required rounds, progress, Mcp-Param headers). */
  private readonly client: RequestClient;

  constructor(opts: UpstreamSessionOptions) {
    super();
    this.opts = opts;
    this.name = opts.name;
    this.definition = opts.definition;
    this.cacheKey = eraCacheKey(opts.definition);
    this.log = (opts.logger ?? silentLogger).child({ server: opts.name });
    this.client = new RequestClient({
      name: opts.name,
      log: this.log,
      ready: () => this.readyConnection(),
      requestTimeoutMs: opts.requestTimeoutMs,
      capabilitiesWithoutRelay: opts.capabilitiesWithoutRelay ?? opts.clientCapabilities,
      ...(opts.roots ? { roots: opts.roots, rootsPerCaller: opts.rootsPerCaller === true } : {}),
    });
    // The machine ignores the record under force-* (and never asks to write one).
    const cached = opts.cache?.usable(this.cacheKey) ?? null;
    this.actor = createActor(sessionMachine, {
      id: `session:${opts.name}`,
      input: {
        server: opts.name,
        wire: wireOf(opts.definition),
        preference: opts.preference,
        cached,
        ...(opts.probeTimeoutMs === undefined ? {} : { probeTimeoutMs: opts.probeTimeoutMs }),
        ...(opts.startTimeoutMs === undefined ? {} : { startTimeoutMs: opts.startTimeoutMs }),
        ...(opts.modernVersions === undefined ? {} : { modernVersions: opts.modernVersions }),
        ...(opts.clientCapabilities === undefined ? {} : { clientCapabilities: opts.clientCapabilities }),
      },
      ...(opts.inspect ? { inspect: opts.inspect } : {}),
      ...(opts.clock ? { clock: opts.clock } : {}),
    });
    this.actor.on('spawn', (e) => this.onSpawn(e.attempt, e.transport));
    this.actor.on('kill', () => this.onKill());
    this.actor.on('request', (e) => this.onProbeRequest(e));
    this.actor.on('notify', (e) => this.peer?.notify(e.method, e.params));
    this.actor.on('cache.write', (e) => {
      const write = this.onCacheWrite(e.record);
      this.closing.add(write);
      void write.finally(() => this.closing.delete(write));
    });
    this.actor.on('era.stale', (e) => {
      this.log.info({ cached: e.cached.era, found: e.found }, 'cached era was wrong; probed again');
      this.emit('era.stale', { server: this.name, cached: e.cached, found: e.found });
    });
    this.actor.subscribe({
      next: (snapshot) => {
        this.emit('state', snapshot);
        // `closed` means the chart closed a ready session (the upstream went away, or an expired legacy
        // session could not be opened again). A process lost while connecting is the chart's business (a
        // respawn, or a start failure start() reports): announcing it would let listeners take it for the
        // successor's.
        if (snapshot.matches('closed') && !this.closedAnnounced) {
          this.closedAnnounced = true;
          this.emit('closed', this.lastClose ?? { reason: 'connection-lost', error: new Error(snapshot.context.closeReason ?? 'closed') });
        }
      },
      error: (err) => this.log.error({ err }, 'session actor failed'),
    });
  }

  /** Start the upstream and run the probe. Resolves when the session is ready; rejects with an McpxError. */
  start(): Promise<SessionInfo> {
    this.startPromise ??= new Promise<SessionInfo>((resolve, reject) => {
      const check = (snapshot: SessionSnapshot) => {
        if (snapshot.matches('ready')) {
          sub.unsubscribe();
          const info = this.info();
          this.log.info({ era: info.era, negotiated: info.negotiated, eraSource: info.eraSource, pid: info.pid }, 'upstream ready');
          this.listen();
          resolve(info);
        } else if (snapshot.status === 'done') {
          sub.unsubscribe();
          reject(this.failure(snapshot));
        }
      };
      const sub = this.actor.subscribe(check);
      this.actor.start();
      this.actor.send({ type: 'start' });
      check(this.actor.getSnapshot());
    });
    return this.startPromise;
  }

  get snapshot(): SessionSnapshot {
    return this.actor.getSnapshot();
  }

  get isReady(): boolean {
    // Asked several times per request: worked out once per snapshot (a snapshot never changes).
    const snapshot = this.actor.getSnapshot();
    if (snapshot !== this.readyOf) {
      this.readyOf = snapshot;
      this.readyNow = snapshot.matches('ready');
    }
    return this.readyNow;
  }

  info(): SessionInfo {
    const s = this.actor.getSnapshot();
    const c = s.context;
    return {
      server: this.name,
      state: stateName(s),
      era: c.era,
      negotiated: c.negotiated,
      eraSource: c.eraSource,
      supportsModern: c.supportsModern,
      serverInfo: c.serverInfo,
      capabilities: c.capabilities,
      instructions: c.instructions,
      pid: this.channel?.pid,
      spawns: c.spawns,
      error: c.error,
    };
  }

  /** The connection a request goes out on, once the chart is ready (starting the session first if needed). */
  private async readyConnection(): Promise<ReadyConnection> {
    // A request that arrives while an expired legacy session is being opened again waits for it.
    if (this.renewal) await this.renewal.catch(() => undefined);
    if (!this.isReady) await this.start();
    const { era, negotiated, capabilities, modernVersions } = this.actor.getSnapshot().context;
    if (!this.peer || !era || !negotiated || !this.wire || !this.isReady) {
      throw new McpxError('MCPX_SESSION_CLOSED', `${this.name}: the session is not open (${stateName(this.actor.getSnapshot())})`);
    }
    return { peer: this.peer, era, negotiated, transport: capabilitiesOf(this.wire), capabilities, modernVersions };
  }

  // ---- requests (RequestClient) ----

  /** Send a request in the session's era (see RequestClient.request). */
  request(method: string, params?: Record<string, unknown>, call: CallHandling = {}): Promise<Record<string, unknown>> {
    return this.client.request(method, params, call);
  }

  listTools(call: CallHandling = {}): Promise<Tool[]> {
    return this.client.listTools(call);
  }

  listAll(kind: ListKind, call: CallHandling = {}): Promise<Array<Record<string, unknown>>> {
    return this.client.listAll(kind, call);
  }

  /** One call, in the session's era (see RequestClient.run). */
  run(call: Call): Promise<Record<string, unknown>> {
    return this.client.run(call);
  }

  callTool(name: string, args: Record<string, unknown> = {}, call: CallHandling = {}): Promise<Record<string, unknown>> {
    return this.client.callTool(name, args, call);
  }

  excludedTools(): Array<{ name: string; reason: string }> {
    return this.client.excludedTools();
  }

  /** The roots mcpx answers with changed: a ready legacy session is told (`notifications/roots/list_changed`). */
  rootsChanged(): void {
    if (!this.isReady || this.actor.getSnapshot().context.era !== 'legacy') return;
    this.peer?.notify('notifications/roots/list_changed');
  }

  /** Stop the session and its process. Resolves when nothing is left running and the era cache is written. */
  async stop(): Promise<void> {
    const s = this.actor.getSnapshot();
    if (!this.startPromise) {
      // Never started: record the stop in the chart (idle → stopped) without starting anything.
      this.actor.start();
      this.actor.send({ type: 'stop' });
      this.actor.stop();
      return;
    }
    if (s.status === 'active') this.actor.send({ type: 'stop' });
    else if (this.channel && !this.channel.closed) this.onKill();
    await Promise.all([...this.closing]);
    this.actor.stop();
  }

  // ---- carrying out what the machine emits ----

  private onSpawn(attempt: number, wire: WireTransport): void {
    this.wire = wire;
    const channel = this.opts.channelFactory ? this.opts.channelFactory(attempt, wire) : this.createChannel(wire);
    const peer = new RpcPeer(channel, { logger: this.log });
    this.channel = channel;
    this.peer = peer;
    peer.onRequest((req, ctx) => this.client.answerServerRequest(req, ctx.context));
    peer.onNotification((n, ctx) => {
      if (peer === this.peer) this.onNotification(n, ctx.context);
    });
    channel.onClose((info) => {
      this.lastClose = info;
      if (channel !== this.channel) return; // a replaced process: the machine already moved on
      const detail = describeClose(info, { stderr: true });
      this.log.info({ reason: info.reason, code: info.code, signal: info.signal }, 'upstream closed');
      this.actor.send({ type: 'transport.closed', reason: info.reason, ...(detail ? { detail } : {}) });
    });
    if (capabilitiesOf(wire).serverSessions) channel.onSessionExpired?.(() => this.renew(channel));
    channel.start().then(
      () => {
        if (channel !== this.channel) return;
        this.log.debug({ pid: channel.pid, attempt }, 'upstream started');
        this.actor.send({ type: 'transport.ready', ...(channel.pid === undefined ? {} : { pid: channel.pid }) });
      },
      (err: unknown) => {
        if (channel !== this.channel) return;
        const message = err instanceof Error ? err.message : String(err);
        this.actor.send({ type: 'transport.closed', reason: 'spawn-failed', detail: message });
      },
    );
  }

  /**
   * The transport says the server expired the legacy session: the chart decides (renewing: a fresh
   * initialize). Resolves when the chart is ready again; rejects when it closed the session instead.
   */
  private renew(channel: Channel): Promise<void> {
    if (channel !== this.channel) return Promise.reject(new McpxError('MCPX_SESSION_CLOSED', `${this.name}: the connection was replaced`));
    this.renewal ??= new Promise<void>((resolve, reject) => {
      const check = (snapshot: SessionSnapshot): void => {
        if (snapshot.matches('renewing')) return;
        sub.unsubscribe();
        this.renewal = undefined;
        if (snapshot.matches('ready')) resolve();
        else
          reject(
            new McpxError('MCPX_SESSION_CLOSED', `${this.name}: ${snapshot.context.closeReason ?? `the legacy session expired (${stateName(snapshot)})`}`),
          );
      };
      const sub = this.actor.subscribe(check);
      this.log.info({ renewals: this.actor.getSnapshot().context.renewals }, 'the server expired the legacy session (HTTP 404); opening it again');
      this.actor.send({ type: 'transport.expired' });
      check(this.actor.getSnapshot());
    });
    return this.renewal;
  }

  private onKill(): void {
    const channel = this.channel;
    if (!channel) return;
    this.channel = undefined;
    this.peer = undefined;
    // Requests still waiting learn why the chart closed the session (an expired session not opened again).
    const s = this.actor.getSnapshot();
    const why = s.matches('closed') && s.context.closeReason ? new McpxError('MCPX_SESSION_CLOSED', `${this.name}: ${s.context.closeReason}`) : undefined;
    const done = channel.close(why).catch((err: unknown) => this.log.warn({ err }, 'error while stopping upstream'));
    this.closing.add(done);
    void done.finally(() => this.closing.delete(done));
  }

  /** A channel over `wire` to this session's server (the per-session limits and log go with it). */
  private createChannel(wire: WireTransport): Channel<CallHandling> {
    return createChannel<CallHandling>(this.definition, wire, {
      logger: this.log,
      ...(this.opts.maxMessageBytes === undefined ? {} : { maxMessageBytes: this.opts.maxMessageBytes }),
      ...(this.opts.stopGraceMs === undefined ? {} : { stopGraceMs: this.opts.stopGraceMs }),
      ...(this.opts.authorizer ? { authorizer: this.opts.authorizer } : {}),
    });
  }

  /** Sends a probe request; its answer reaches the chart with its verdict, read here once (`answered`). */
  private onProbeRequest(e: Extract<SessionEmitted, { type: 'request' }>): void {
    const peer = this.peer;
    if (!peer) return;
    this.log.debug({ id: e.id, method: e.method }, 'probe request');
    const deliver = (answer: Answer) => this.actor.send(answered(e, answer));
    // No timeout here: the machine owns probe timing (probeTimeout, startTimeout).
    peer.request(e.method, e.params, { id: e.id }).then(
      (result) => {
        if (peer === this.peer) deliver({ result });
      },
      (err: unknown) => {
        if (peer !== this.peer) return;
        if (err instanceof UpstreamRpcError) deliver({ error: err.rpc });
        else if (!peer.channel.closed) deliver({ failure: httpFailureOf(err) });
        // Otherwise the channel closed; its close event reaches the machine on its own.
      },
    );
  }

  private async onCacheWrite(record: Omit<EraRecord, 'at'>): Promise<void> {
    const cache = this.opts.cache;
    if (!cache) return;
    try {
      await cache.set(this.cacheKey, { ...record, at: new Date().toISOString() });
      this.emit('cache.write', record);
    } catch (err) {
      // A cache that cannot be written costs a probe next time; it never breaks the session.
      this.log.warn({ err }, 'could not write the era cache');
    }
  }

  /**
   * A 2026-07-28 server announces its own list changes only on `subscriptions/listen` streams: open one
   * for the lists its capabilities say change, for the session's life (stdio: a request left pending;
   * HTTP: a POST whose event stream stays open). Its list_changed notifications take the ordinary
   * path (onNotification). A stream the server ends is opened again, a few times at most; the session's
   * end ends it. It is not a call: nothing waits on it and it asks no questions.
   */
  private listen(attempt = 0): void {
    const peer = this.peer;
    const { era, negotiated, capabilities } = this.actor.getSnapshot().context;
    if (!peer || era !== 'modern' || !negotiated || !this.isReady || attempt >= 5) return;
    const caps = (capabilities ?? {}) as Record<string, { listChanged?: unknown } | undefined>;
    const notifications: Record<string, boolean> = {};
    if (caps['tools']?.listChanged) notifications['toolsListChanged'] = true;
    if (caps['prompts']?.listChanged) notifications['promptsListChanged'] = true;
    if (caps['resources']?.listChanged) notifications['resourcesListChanged'] = true;
    if (Object.keys(notifications).length === 0) return;
    peer.request('subscriptions/listen', requestParams(era, negotiated, { notifications }, {}), {}).then(
      () => {
        if (peer === this.peer && this.isReady) setTimeout(() => this.listen(attempt + 1), 1_000).unref();
      },
      (err: unknown) => {
        if (peer !== this.peer || !this.isReady) return; // the session ended: so did its stream
        this.log.debug({ err }, 'subscriptions/listen ended with an error');
        setTimeout(() => this.listen(attempt + 1), 1_000 * 2 ** attempt).unref();
      },
    );
  }

  /**
   * Notifications mcpx acts on: progress for a request in flight (RequestClient), and `list_changed`,
   * re-emitted as a `list_changed` event once the session is ready. The rest are logged and dropped.
   */
  private onNotification(n: JsonRpcNotification, context: CallHandling | undefined): void {
    if (n.method === 'notifications/progress') return this.client.progressArrived(n, context);
    const list = LIST_CHANGED.get(n.method);
    if (list !== undefined) {
      if (!this.isReady) return; // whoever starts using the session lists it afresh anyway
      this.log.debug({ list }, 'upstream list changed');
      this.emit('list_changed', { server: this.name, list });
      return;
    }
    this.log.debug({ method: n.method }, 'ignoring an upstream notification');
  }

  private failure(snapshot: SessionSnapshot): McpxError {
    const e = snapshot.context.error;
    if (e) return new McpxError(e.code, e.message, e.data ? { data: e.data } : undefined);
    if (snapshot.matches('stopped')) return new McpxError('MCPX_SESSION_CLOSED', `${this.name}: stopped before it was ready`);
    return new McpxError('MCPX_SESSION_CLOSED', `${this.name}: closed (${(this.lastClose && describeClose(this.lastClose, { stderr: true })) ?? 'no detail'})`);
  }
}

/** The facts of a failed HTTP request, for the machine's verdict (no decision here). */
function httpFailureOf(err: unknown): HttpFailure {
  const code = err instanceof McpxError ? err.code : undefined;
  const own = (err as { status?: unknown } | null)?.status;
  const status = typeof own === 'number' ? own : err instanceof McpxError && typeof err.data?.status === 'number' ? err.data.status : undefined;
  const message = err instanceof Error ? err.message : String(err);
  if (code === 'MCPX_UPSTREAM_UNAUTHORIZED') {
    const hint = (err as { hint?: unknown }).hint;
    return { kind: 'unauthorized', ...(status ? { status } : {}), message, ...(typeof hint === 'string' ? { hint } : {}) };
  }
  if (code === 'MCPX_HTTP_STATUS' && status !== undefined) return { kind: 'status', status, message };
  return { kind: 'connection', message };
}
