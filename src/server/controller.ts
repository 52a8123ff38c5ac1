/**
 * The daemon's core, below the HTTP layer: the config in force, the live settings, the pools, the
 * event hub. Every /v1 route is a thin shell over one method here, so the API tests and the daemon
 * run the same code.
 *
 * Settings reach pools through `reconcile()` (the rules: ./reconcile.machine.ts): the effective
 * per-server configs are recomputed from the config file and the settings, and handed to
 * `PoolRegistry.apply`, which keeps unchanged pools and replaces changed ones. A runtime change
 * (`PUT /v1/settings/…`) applies to sessions started from now on: a pool with live instances (or
 * calls in flight) is left alone — its sessions keep what they started with — and is brought up to
 * date as soon as it has none; idle pools are replaced at once (nothing runs in them, so nothing is
 * lost). A config reload applies at once (the user edited the server), except that an unchanged
 * server keeps its running process.
 */
import type { AuthManager } from '../auth/auth-manager.js';
import stringify from 'safe-stable-stringify';
import { ConfigError, McpxError, type ConfigProblem } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import { resolvePoolConfigs } from '../config/config-file.js';
import { findSetting, SETTINGS, type SettingEntry, type Settings, type SettingsSources } from '../config/settings.js';
import type { Lane } from '../machines/preference.js';
import { laneCap } from '../pool/pool.machine.js';
import { PoolRegistry } from '../pool/pool-registry.js';
import { ServerPool, type ServerPoolDeps } from '../pool/server-pool.js';
import type { CallContext, InstanceStatus, PoolEvent, PoolServerConfig } from '../pool/types.js';
import { capabilitiesOf } from '../transports/capabilities.js';
import { wireOf } from '../upstream/definition.js';
import type { EraCache } from '../upstream/era-cache.js';
import type { Tool } from '../upstream/session.js';
import type { CatalogStore } from '../catalog/catalog-store.js';
import { RELAYED_METHODS, type RelayedMethod } from '../front/backend.js';
import { AskStore } from '../asks/ask-store.js';
import { RELAYABLE_CAPABILITIES } from '../asks/question-relay.js';
import { Catalog } from '../catalog/catalog.js';
import { exposeNames } from '../front/names.js';
import { EventHub, type DaemonEvent } from './events.js';
import type { RecordLog } from './record-log.js';
import { Reconciler, type ReconcileOptions, type ReconcileResult } from './reconciler.js';
import type {
  CallOutcome,
  ConfigView,
  DaemonConfig,
  InstanceView,
  LaneView,
  ProtocolRow,
  ReloadOutcome,
  ServerStatusView,
  ServerView,
  SettingChangeView,
  ToolsView,
} from './views.js';
import { describeConfig, serverView } from './config-view.js';
import { Scrubber } from './secrets.js';

// ---------------------------------------------------------------------------------------------
// The daemon's pool registry

export interface CreateRegistryOptions {
  /** Read for a pool config without `eraCache` (the Controller's configs always carry it). */
  settings: Settings;
  /** The shared era cache; pools whose config has `eraCache` on get it, the others get none. */
  cache?: EraCache | null;
  logger?: Logger;
  inspect?: ServerPoolDeps['inspect'];
  inspectPool?: ServerPoolDeps['inspectPool'];
  /** Per-request credentials of a server's HTTP sessions (OAuth). */
  authorizer?: ServerPoolDeps['authorizer'];
}

/**
 * A PoolRegistry whose pools take the era cache when their config says so (`eraCache`, the
 * `upstream.eraCache` setting when the config was resolved; it is in the pool fingerprint, so switching
 * the setting replaces the pools like any other change).
 */
export function createPoolRegistry(opts: CreateRegistryOptions): PoolRegistry {
  return new PoolRegistry({
    ...(opts.logger ? { logger: opts.logger } : {}),
    ...(opts.inspect ? { inspect: opts.inspect } : {}),
    ...(opts.inspectPool === undefined ? {} : { inspectPool: opts.inspectPool }),
    createPool: (config, deps) => {
      const on = (config.eraCache ?? opts.settings.get('upstream.eraCache') === true) && opts.cache != null;
      return new ServerPool(config, {
        // A legacy session declares at initialize the questions mcpx can relay (it is shared, and its server
        // asks only what it declared); a modern request declares its call's relay's, none without one.
        sessionCapabilities: { clientCapabilities: { ...RELAYABLE_CAPABILITIES }, capabilitiesWithoutRelay: {} },
        ...deps,
        ...(opts.authorizer ? { authorizer: opts.authorizer } : {}),
        cache: on ? (opts.cache ?? null) : null,
      });
    },
  });
}

export const APPLIES_TO = {
  sessions: 'sessions started from now on',
  now: 'now',
  restart: 'the next daemon start',
} as const;

/** When a change to `path` takes effect. */
export function appliesTo(path: string): string {
  const d = findSetting(path);
  if (d.restart) return APPLIES_TO.restart;
  if (d.path.startsWith('upstream.') || d.path.startsWith('pool.')) return APPLIES_TO.sessions;
  return APPLIES_TO.now;
}

const RESTART_PATHS = SETTINGS.filter((d) => d.restart).map((d) => d.path as string);

// Config descriptions: ./config-view.ts (shared with `mcpx config`, which loads it without the daemon).
export { describeConfig, serverView };

function errorOf(err: unknown): { code: string; message: string; data?: Record<string, unknown> } {
  if (err instanceof McpxError) return err.toJSON();
  return { code: 'MCPX_INTERNAL', message: err instanceof Error ? err.message : String(err) };
}

function textOfResult(result: Record<string, unknown>): string {
  const content = result['content'];
  if (Array.isArray(content)) {
    const texts = content.filter(
      (c): c is { type: string; text: string } =>
        typeof c === 'object' && c !== null && (c as { type?: unknown }).type === 'text' && typeof (c as { text?: unknown }).text === 'string',
    );
    if (texts.length > 0) return texts.map((t) => t.text).join('\n');
  }
  return 'the tool reported an error';
}

// ---------------------------------------------------------------------------------------------

export interface ControllerOptions {
  settings: Settings;
  registry: PoolRegistry;
  /** The config in force (its servers become pools on `start()`). */
  config: DaemonConfig;
  logger?: Logger;
  hub?: EventHub;
  scrubber?: Scrubber;
  /** Re-reads the config for `reload()` (the daemon's loadConfig + demo fallback). */
  loadConfig?: () => Promise<DaemonConfig>;
  /** Env, flags and working directory for `Settings.resolve` on reload (the file part comes from the new config). */
  settingsSources?: Omit<SettingsSources, 'file' | 'filePath' | 'runtime'>;
  /** The persisted tool catalogue (`<state>/tool-catalog.json`); none: listings are kept in memory only. */
  catalogStore?: CatalogStore | null;
  /** Where the `call finished` lines go; none: a child of `logger`, written line by line (see recordLogger). */
  records?: Pick<RecordLog, 'logger' | 'flush'>;
  /** OAuth for HTTP servers (`mcpx login`, tokens, refreshes); none: only configured headers are sent. */
  auth?: AuthManager | null;
}

/** What the record of one finished call holds. */
interface CallRecord {
  server: string;
  tool: string;
  ok: boolean;
  ms: number;
  code: string | undefined;
  lane: Lane | undefined;
  callerProtocol: string | undefined;
}

/**
 * The logger of the `call finished` lines: the daemon's, without its redaction paths (a record's fields are
 * names, numbers and codes, never a header, env or token; pino's wildcard paths cost a walk of every line).
 * Known secret values are still scrubbed from every line the daemon's logger writes (its streamWrite hook).
 */
function recordLogger(logger: Logger): Logger {
  return (logger as Logger & { child(bindings: Record<string, unknown>, options: { redact: string[] }): Logger }).child(
    { component: 'daemon' },
    { redact: [] },
  );
}

/** How long an in-place authorization waits for the browser (a login's own limit is longer). */
const LOGIN_WAIT_MS = 5 * 60_000;
export class Controller {
  readonly settings: Settings;
  readonly registry: PoolRegistry;
  readonly hub: EventHub;
  readonly scrubber: Scrubber;
  /** What each server offers, answered without starting servers (`mcpx serve`, `/mcp`). */
  readonly catalog: Catalog;
  /** Calls the upstream may interrupt with questions (`/v1/ask`). */
  readonly asks: AskStore;
  private readonly log: Logger;
  /** Writes the `call finished` lines (see recordLogger). */
  private readonly recordLog: Pick<RecordLog, 'logger' | 'flush'>;
  /** Call records not yet written: written together, once per turn of the event loop (and on stop). */
  private records: CallRecord[] = [];
  private readonly writeRecords = (): void => {
    const batch = this.records;
    this.records = [];
    for (const r of batch) this.record(r);
  };
  private cfg: DaemonConfig;
  private readonly loader: (() => Promise<DaemonConfig>) | undefined;
  private readonly sources: ControllerOptions['settingsSources'];
  /** When pools change, and which callers wait for it (the shell of ./reconcile.machine.ts). */
  private readonly reconciler: Reconciler;
  private nextCall = 0;
  /** OAuth state of the HTTP servers (null without a state folder to keep tokens in). */
  readonly auth: AuthManager | null;
  private readonly onPoolEvent = (e: PoolEvent) => this.poolEvent(e);

  constructor(opts: ControllerOptions) {
    this.settings = opts.settings;
    this.registry = opts.registry;
    this.cfg = opts.config;
    this.log = (opts.logger ?? silentLogger).child({ component: 'daemon' });
    this.recordLog = opts.records ?? { logger: recordLogger(opts.logger ?? silentLogger), flush: () => undefined };
    this.hub = opts.hub ?? new EventHub();
    this.scrubber = opts.scrubber ?? new Scrubber();
    this.scrubber.setFromServers(this.cfg.servers);
    this.auth = opts.auth ?? null;
    this.auth?.setServers(this.cfg.servers);
    this.loader = opts.loadConfig;
    this.sources = opts.settingsSources;
    this.registry.on('event', this.onPoolEvent);
    this.reconciler = new Reconciler({ registry: this.registry, desired: () => this.desired(), pool: (server) => this.pool(server), logger: this.log });
    this.catalog = new Catalog({
      store: opts.catalogStore ?? null,
      servers: () => this.cfg.servers.filter((s) => !s.disabled && this.registry.has(s.name)).map((s) => ({ name: s.name, definition: s.definition })),
      withPool: (server, fn) => this.withPool(server, fn),
      laneFor: (server, ctx) => this.pool(server).laneFor(ctx),
      logger: this.log,
    });
    this.catalog.onChange((c) => this.hub.publish({ type: 'catalog.changed', ...(c.server === undefined ? {} : { server: c.server }), lists: c.lists }));
    this.asks = new AskStore({
      // tools/call keeps /v1/call's outcome (an isError result is MCPX_TOOL_ERROR with the result); prompts/get
      // and resources/read, which may ask too, are relayed as they are.
      run: async (a, ctx) => {
        const once = () =>
          a.method === undefined || a.method === 'tools/call'
            ? this.call(a.server, a.tool, a.args, ctx)
            : this.request(a.server, a.method, a.params ?? {}, ctx);
        const outcome = await once();
        if (outcome.ok || outcome.error.code !== 'MCPX_UPSTREAM_UNAUTHORIZED' || !a.authorizeInPlace) return outcome;
        return (await this.authorizeInPlace(a.server, ctx)) ? once() : outcome;
      },
      // A question waits as long as an upstream request may: the server's own request timeout.
      questionTimeoutMs: (server) =>
        (this.registry.has(server) ? this.registry.get(server).config.requestTimeoutMs : undefined) ?? (this.settings.get('upstream.requestTimeout') as number),
      limits: { maxRunning: this.settings.get('serve.maxAsks') as number, maxPerCaller: this.settings.get('serve.maxAsksPerCaller') as number },
      logger: this.log,
    });
  }

  get config(): DaemonConfig {
    return this.cfg;
  }

  /** Builds the pools of the config in force. */
  async start(): Promise<ReconcileResult> {
    const r = await this.reconcile({ deferBusy: false });
    for (const f of r.failed) this.log.error({ server: f.name, err: f.error.message }, 'could not set up the server');
    return r;
  }

  /** Stops every pool (every upstream process). */
  async stop(): Promise<void> {
    this.writeRecords(); // the records of calls already answered are not left to a later turn
    this.recordLog.flush();
    this.reconciler.stop();
    this.asks.close();
    await this.registry.stopAll();
    this.registry.off('event', this.onPoolEvent);
    this.writeRecords(); // and those of calls the stop ended
  }

  // ---- reads ----

  servers(): ServerView[] {
    return this.cfg.servers.map((s) => serverView(s, this.settings, this.registry.has(s.name) ? this.registry.get(s.name).instances().length : 0));
  }

  configView(): ConfigView {
    return describeConfig(this.cfg, this.settings);
  }

  /** The pools in config-file order. */
  private orderedPools(): ServerPool[] {
    const order = new Map(this.cfg.servers.map((s, i) => [s.name, i]));
    return this.registry.pools().sort((a, b) => (order.get(a.name) ?? Infinity) - (order.get(b.name) ?? Infinity));
  }

  serverStatus(): ServerStatusView[] {
    return this.orderedPools().map((pool) => {
      const c = pool.config;
      const instances = pool.instances();
      const report = pool.protocolReport();
      const cap = laneCap({ scope: c.limits.scope, max: c.limits.max });
      const lanes: LaneView[] = [{ lane: 'own', max: cap, instances: instances.filter((i) => i.lane === 'own').length }];
      if (c.preference === 'follow') {
        lanes.push({
          lane: 'legacy',
          max: cap,
          instances: instances.filter((i) => i.lane === 'legacy').length,
          ...(report.legacyLane ? { state: report.legacyLane.state, ...(report.legacyLane.reason ? { reason: report.legacyLane.reason } : {}) } : {}),
        });
      }
      return {
        server: pool.name,
        transport: capabilitiesOf(wireOf(c.definition)).kind,
        preference: c.preference,
        lanes,
        instances: instances.map(instanceView),
      };
    });
  }

  protocol(): { servers: ProtocolRow[] } {
    const desired = new Map(this.desired().map((c) => [c.name, c]));
    return {
      servers: this.orderedPools().map((pool) => {
        const row: ProtocolRow = pool.protocolReport();
        const want = desired.get(pool.name);
        if (this.reconciler.isDeferred(pool.name) && want && want.preference !== row.preference) row.pendingPreference = want.preference;
        return row;
      }),
    };
  }

  /** @throws McpxError MCPX_UNKNOWN_SERVER (a disabled server is named as such). */
  pool(server: string): ServerPool {
    if (!this.registry.has(server)) {
      const s = this.cfg.servers.find((x) => x.name === server);
      if (s?.disabled) {
        throw new McpxError('MCPX_UNKNOWN_SERVER', `server ${JSON.stringify(server)} is disabled in ${this.cfg.file ?? 'the config'}`, {
          data: { server, disabled: true },
        });
      }
    }
    return this.registry.get(server);
  }

  // ---- calls ----

  /**
   * Tools of one server, or of every server when `server` is undefined, from the tool catalogue
   * (servers with no listing yet are started and listed; `fresh` lists the asked ones live now),
   * each with the name MCP clients see. Names are given over every configured server's known
   * listing, exactly as the fronts give them, so the mapping shown is the one clients get.
   * @throws McpxError MCPX_UNKNOWN_SERVER; MCPX_BAD_REQUEST (one server pooled per session, and no session).
   */
  async tools(server: string | undefined, ctx: CallContext = {}, opts: { fresh?: boolean } = {}): Promise<ToolsView> {
    if (server !== undefined) this.pool(server);
    const view = await this.catalog.view(ctx, { ...(server === undefined ? {} : { only: [server] }), ...(opts.fresh ? { fresh: true } : {}) });
    const named = exposeNames(
      view.servers.flatMap((s) => s.tools.filter((t) => typeof t['name'] === 'string').map((t) => ({ server: s.server, name: t['name'] as string }))),
    );
    const exposed = new Map(named.map((n) => [`${n.server}\0${n.original}`, n.name]));
    const out: ToolsView = { ok: true, tools: [], lanes: {}, errors: [] };
    for (const row of view.servers) {
      if (server !== undefined && row.server !== server) continue;
      out.lanes[row.server] = row.lane;
      if (row.error) {
        if (server !== undefined && row.error.code === 'MCPX_BAD_REQUEST')
          throw new McpxError('MCPX_BAD_REQUEST', row.error.message, row.error.data ? { data: row.error.data } : undefined);
        out.ok = false;
        out.errors.push({ server: row.server, ...row.error });
        continue;
      }
      for (const t of row.tools) {
        if (typeof t['name'] !== 'string') continue;
        out.tools.push({ ...(t as Tool), server: row.server, exposed: exposed.get(`${row.server}\0${t['name']}`) ?? t['name'] });
      }
    }
    return out;
  }

  /**
   * Calls a tool. Upstream and tool failures come back as `{ok:false}` with a stable code (a result
   * with `isError: true` is MCPX_TOOL_ERROR, the result in `data.result`).
   * @throws McpxError MCPX_UNKNOWN_SERVER; MCPX_BAD_REQUEST (e.g. a session-scoped server and no session).
   */
  async call(server: string, tool: string, args: Record<string, unknown>, ctx: CallContext = {}): Promise<CallOutcome> {
    const started = Date.now();
    const callId = ctx.callId ?? `call-${++this.nextCall}`;
    let lane: Lane | undefined;
    let outcome: CallOutcome;
    try {
      const result = await this.withPool(server, (pool) => {
        lane = pool.laneFor(ctx);
        return pool.callTool(tool, args, { ...ctx, callId });
      });
      outcome =
        result['isError'] === true
          ? { ok: false, error: { code: 'MCPX_TOOL_ERROR', message: `${server}/${tool}: ${textOfResult(result)}`, data: { server, tool, result } } }
          : { ok: true, result };
    } catch (err) {
      if (err instanceof McpxError && (err.code === 'MCPX_UNKNOWN_SERVER' || err.code === 'MCPX_BAD_REQUEST')) {
        this.finished(server, tool, started, { ok: false, error: err.toJSON() }, lane, ctx);
        throw err;
      }
      outcome = { ok: false, error: errorOf(err) };
    }
    this.finished(server, tool, started, outcome, lane, ctx);
    return outcome;
  }

  /**
   * An MCP client met a server that needs authorization: when the client takes URL-mode elicitation, it is
   * asked to open the authorization URL; the login finishes on mcpx's own callback and the call is tried
   * once more. False (the refusal stands) when the client cannot or will not, the login fails, or a 403 asks
   * for scopes already held.
   */
  private async authorizeInPlace(server: string, ctx: CallContext): Promise<boolean> {
    const auth = this.auth?.authorizer(server);
    const relay = ctx.relay;
    const elicitation = relay?.capabilities['elicitation'] as { url?: unknown } | undefined;
    if (!this.auth || !auth || !relay || elicitation?.url === undefined) return false;
    const view = auth.view();
    const stepUp = (view.needsScopes?.length ?? 0) > 0;
    if (!stepUp && view.state === 'authorized') return false;
    let login;
    try {
      login = await this.auth.login(server, { stepUp });
    } catch (err) {
      this.log.warn({ server, err: (err as Error).message }, 'could not start the authorization asked for in place');
      return false;
    }
    if (!login.url) return false;
    const message = stepUp
      ? `${server} needs more permission (${view.needsScopes!.join(' ')}). Open this address to authorize mcpx, then the call goes on.`
      : `${server} needs you to sign in. Open this address to authorize mcpx, then the call goes on.`;
    let answer: unknown;
    try {
      answer = await relay.ask(
        {
          jsonrpc: '2.0',
          id: `mcpx-auth-${login.id}`,
          method: 'elicitation/create',
          params: { mode: 'url', message, url: login.url, elicitationId: login.id },
        },
        undefined,
      );
    } catch {
      answer = undefined;
    }
    if ((answer as { action?: unknown } | undefined)?.action !== 'accept') {
      this.auth.cancelLogin(login.id);
      return false;
    }
    const ended = await this.auth.waitLogin(login.id, LOGIN_WAIT_MS, ctx.signal);
    return ended.status === 'authorized';
  }

  /**
   * Relays one MCP request (tools/call, prompts/get, resources/read, completion/complete) to a
   * server's pool in the session's era, for the MCP fronts. The result is the upstream's own
   * (an `isError` tool result is `ok: true`: the caller shows it as it is).
   */
  async request(server: string, method: RelayedMethod, params: Record<string, unknown>, ctx: CallContext = {}): Promise<CallOutcome> {
    if (!(RELAYED_METHODS as readonly string[]).includes(method)) {
      throw new McpxError('MCPX_BAD_REQUEST', `method must be one of ${RELAYED_METHODS.join(', ')}`, { data: { field: 'method' } });
    }
    const started = Date.now();
    let lane: Lane | undefined;
    let outcome: CallOutcome;
    try {
      const result = await this.withPool(server, (pool) => {
        lane = pool.laneFor(ctx);
        return pool.request(method, params, ctx);
      });
      outcome = { ok: true, result };
    } catch (err) {
      if (err instanceof McpxError && (err.code === 'MCPX_UNKNOWN_SERVER' || err.code === 'MCPX_BAD_REQUEST')) throw err;
      outcome = { ok: false, error: errorOf(err) };
    }
    if (method === 'tools/call') this.finished(server, String(params['name'] ?? ''), started, outcome, lane, ctx);
    return outcome;
  }

  /**
   * The call's record (the `call finished` log line, `call.finished` on /v1/events), made once its answer
   * has gone out: the caller should not wait for its log line to be formatted.
   */
  private finished(server: string, tool: string, started: number, outcome: CallOutcome, lane: Lane | undefined, ctx: CallContext): void {
    const ms = Date.now() - started;
    const ok = outcome.ok;
    const code = outcome.ok ? undefined : outcome.error.code;
    const callerProtocol = ctx.callerProtocol;
    // One timer per turn for every call answered in it, not one per call.
    if (this.records.push({ server, tool, ok, ms, code, lane, callerProtocol }) === 1) setImmediate(this.writeRecords);
  }

  private record({ server, tool, ok, ms, code, lane, callerProtocol }: CallRecord): void {
    this.recordLog.logger.info({ server, tool, ok, ms, ...(code ? { code } : {}), ...(lane ? { lane } : {}) }, 'call finished');
    this.hub.publish({
      type: 'call.finished',
      server,
      tool,
      ok,
      ms,
      ...(code ? { code } : {}),
      ...(lane ? { lane } : {}),
      ...(callerProtocol ? { callerProtocol } : {}),
    });
  }

  /**
   * Runs `fn` on the server's pool, counted as in flight (so a settings change does not replace the pool
   * under it); a call to a server being replaced waits for its new pool.
   */
  private withPool<T>(server: string, fn: (pool: ServerPool) => Promise<T>): Promise<T> {
    return this.reconciler.withPool(server, fn);
  }

  // ---- settings ----

  settingsList(): { settings: SettingEntry[] } {
    return { settings: this.settings.list() };
  }

  setting(path: string): SettingEntry {
    return this.settings.entry(path);
  }

  /** @throws UnknownSettingError; SettingValueError (MCPX_BAD_SETTING, with `data.allowed` for an enum). */
  async setSetting(path: string, value: unknown): Promise<SettingChangeView> {
    const entry = this.settings.setRuntime(path, value);
    return this.afterSettingChange(entry);
  }

  async unsetSetting(path: string): Promise<SettingChangeView> {
    const entry = this.settings.unsetRuntime(path);
    return this.afterSettingChange(entry);
  }

  private async afterSettingChange(entry: SettingEntry): Promise<SettingChangeView> {
    const applies = appliesTo(entry.path);
    this.log.info({ setting: entry.path, value: entry.display, source: entry.source, appliesTo: applies }, 'setting changed');
    this.hub.publish({ type: 'setting.changed', path: entry.path, value: entry.value, source: entry.source });
    if (applies !== APPLIES_TO.sessions) return { setting: entry, appliesTo: applies };
    const r = await this.reconcile({ deferBusy: true });
    return { setting: entry, appliesTo: applies, servers: { applied: [...r.added, ...r.replaced], deferred: r.deferred } };
  }

  // ---- config ----

  /**
   * Re-reads the config. A broken file is reported (log, `config.error`, the result) and the last good
   * config stays in force; a good one is applied (added servers appear, removed ones stop, unchanged
   * ones keep their processes).
   */
  reload(reason = 'api'): Promise<ReloadOutcome> {
    return this.reconciler.reload(() => this.reloadNow(reason));
  }

  private async reloadNow(reason: string): Promise<ReloadOutcome> {
    if (!this.loader) {
      return {
        ok: false,
        file: this.cfg.file ?? null,
        error: { code: 'MCPX_NOT_IMPLEMENTED', message: 'this daemon was started without a config source to reload' },
      };
    }
    let next: DaemonConfig;
    try {
      next = await this.loader();
    } catch (err) {
      return this.reloadFailed(
        this.cfg.file ?? null,
        new ConfigError([{ source: 'file', message: err instanceof Error ? err.message : String(err) }], this.cfg.file),
        reason,
      );
    }
    if (next.errors.length > 0) return this.reloadFailed(next.file ?? null, new ConfigError(next.errors, next.file), reason);
    const before = Object.fromEntries(RESTART_PATHS.map((p) => [p, stringify(this.settings.get(p))]));
    try {
      this.settings.resolve({ ...this.sources, file: next.settingsFile, ...(next.file === undefined ? {} : { filePath: next.file }) });
    } catch (err) {
      const problems: ConfigProblem[] = (err as { problems?: ConfigProblem[] }).problems ?? [
        { source: 'file', message: err instanceof Error ? err.message : String(err) },
      ];
      return this.reloadFailed(next.file ?? null, new ConfigError(problems, next.file), reason);
    }
    this.cfg = next;
    this.scrubber.setFromServers(next.servers);
    this.auth?.setServers(next.servers);
    const r = await this.reconcile({ deferBusy: false });
    const restartNeeded = RESTART_PATHS.filter((p) => stringify(this.settings.get(p)) !== before[p]);
    const failed = r.failed.map((f) => ({ server: f.name, message: f.error.message }));
    const outcome: ReloadOutcome = {
      ok: true,
      file: next.file ?? null,
      demo: next.demo === true,
      added: r.added,
      removed: r.removed,
      replaced: r.replaced,
      kept: r.kept,
      failed,
      warnings: next.warnings.map((w) => w.message),
      restartNeeded,
    };
    this.log.info(
      { reason, file: next.file, added: r.added, removed: r.removed, replaced: r.replaced, kept: r.kept.length, failed: failed.length },
      'config reloaded',
    );
    for (const w of next.warnings) this.log.warn({ file: next.file }, w.message);
    if (restartNeeded.length > 0) this.log.warn({ settings: restartNeeded }, 'these settings changed and take effect when the daemon restarts');
    this.hub.publish({
      type: 'config.reloaded',
      file: next.file ?? null,
      demo: next.demo === true,
      added: r.added,
      removed: r.removed,
      replaced: r.replaced,
      kept: r.kept,
      failed,
      restartNeeded,
    });
    if (r.added.length > 0 || r.removed.length > 0 || r.replaced.length > 0) this.catalog.serversChanged();
    return outcome;
  }

  private reloadFailed(file: string | null, err: ConfigError, reason: string): ReloadOutcome {
    this.log.error({ reason, file, problems: err.problems.length }, `config not reloaded; the last good config stays in force: ${err.message}`);
    this.hub.publish({
      type: 'config.error',
      file,
      message: err.message,
      problems: err.problems.map((p) => ({
        message: p.message,
        ...(p.key === undefined ? {} : { key: p.key }),
        ...(p.server === undefined ? {} : { server: p.server }),
        ...(p.line === undefined ? {} : { line: p.line }),
        ...(p.column === undefined ? {} : { column: p.column }),
      })),
    });
    return { ok: false, file, error: err.toJSON() };
  }

  // ---- bringing pools in line ----

  /** The effective per-server configs: the config file over the settings, with the era-cache switch. */
  private desired(): PoolServerConfig[] {
    const eraCache = this.settings.get('upstream.eraCache') === true;
    return resolvePoolConfigs(this.cfg, this.settings).map((c) => ({ ...c, eraCache }));
  }

  /**
   * Brings the pools in line with the effective configs (./reconcile.machine.ts). With `deferBusy`, a pool that
   * would change but has live instances or calls in flight keeps its config for now (and is caught up
   * once it has none).
   */
  reconcile(opts: ReconcileOptions): Promise<ReconcileResult> {
    return this.reconciler.reconcile(opts);
  }

  private poolEvent(e: PoolEvent): void {
    this.hub.publish(e as DaemonEvent);
    if (e.type === 'server.stop') this.reconciler.instanceStopped(e.server);
    // A fresh instance, or an upstream that says its lists changed: list it again (in the background).
    if (e.type === 'server.start' || e.type === 'server.list_changed') setImmediate(() => this.catalog.refresh(e.server, e.lane));
  }
}

function instanceView(i: InstanceStatus): InstanceView {
  return {
    id: i.id,
    lane: i.lane,
    pid: i.pid ?? null,
    scopeKey: i.scopeKey,
    holders: i.holders,
    state: i.state,
    sessionState: i.sessionState ?? null,
    era: i.era,
    negotiated: i.negotiated,
    eraSource: i.eraSource,
    startedAt: i.startedAt,
    uptimeMs: i.uptimeMs,
  };
}
