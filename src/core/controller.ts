/**
 * The daemon's core, below the HTTP layer: the config in force, the live settings, the pools, the
 * event hub. Every /v1 route is a thin shell over one method here, so the API tests and the daemon
 * run the same code. The Controller owns these and wires them; each job is its own module: config
 * reloads (./config-reload.ts), runtime settings (./setting-changes.ts), the status and protocol views
 * (./status-views.ts), calls and their records (./calls.ts, ./call-records.ts), the tool listing
 * (./tools-view.ts), authorization in the middle of a call (./in-place-auth.ts); the pools are made by
 * ./registry.ts.
 *
 * Settings reach pools through `reconcile()` (the rules: ../pool/reconcile.machine.ts): the effective
 * per-server configs are recomputed from the config file and the settings, and handed to
 * `PoolRegistry.apply`, which keeps unchanged pools and replaces changed ones. A runtime change
 * (`PUT /v1/settings/…`) applies to sessions started from now on: a pool with live instances (or
 * calls in flight) is left alone — its sessions keep what they started with — and is brought up to
 * date as soon as it has none; idle pools are replaced at once (nothing runs in them, so nothing is
 * lost). A config reload applies at once (the user edited the server), except that an unchanged
 * server keeps its running process.
 */
import type { AuthManager } from '../auth/auth-manager.js';
import { McpxError, type ErrorCode } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import type { SettingEntry, Settings, SettingsSources } from '../config/settings.js';
import type { PoolRegistry } from '../pool/pool-registry.js';
import type { ServerPool } from '../pool/server-pool.js';
import type { PoolEvent, PoolServerConfig } from '../pool/types.js';
import type { Call, Caller, ProgressListener } from '../call/call.js';
import type { CatalogChange, CatalogView } from '../catalog/view.js';
import type { CatalogStore } from '../catalog/catalog-store.js';
import { ToolDigests, type DigestStore } from '../catalog/tool-digests.js';
import type { ToolPolicy } from '../catalog/tool-policy.js';
import type { ChangedTool } from '../catalog/catalog.js';
import stringify from 'safe-stable-stringify';
import type { ResolvedServer } from '../config/config-file.js';
import { AskStore } from '../asks/ask-store.js';
import { Catalog } from '../catalog/catalog.js';
import { ToolSearch } from '../catalog/search-index.js';
import { CallRecords, recordLogger, type RecentCall } from './call-records.js';
import { Calls } from './calls.js';
import { reloadConfig } from './config-reload.js';
import { ConfigSet, PER_CONFIG_BLOCKS, type CallerKind, type LoadedConfig } from './configs.js';
import { describeConfig, serverView } from './config-view.js';
import { EventHub, type DaemonEvent } from './events.js';
import { InPlaceAuthorizer } from './in-place-auth.js';
import type { RecordLog } from './record-log.js';
import { Reconciler, type ReconcileOptions, type ReconcileResult } from '../pool/reconciler.js';
import { Scrubber } from './secrets.js';
import { SettingChanges } from './setting-changes.js';
import { orderedPools, protocolRows, serverStatus } from './status-views.js';
import { toolsView } from './tools-view.js';
import type {
  CallOutcome,
  ConfigStatusView,
  ConfigView,
  DaemonConfig,
  ProtocolRow,
  RejectedEdit,
  ReloadOutcome,
  ServerStatusView,
  ServerView,
  SettingChangeView,
  ToolSearchView,
  ToolsView,
} from './views.js';

/** Every server's tool policy, as one comparable text. */
/** Every server's tool policy and the `catalog.pinTools` in force, as one comparable text. */
function policies(servers: readonly ResolvedServer[], settings: Settings): string {
  return stringify([settings.get('catalog.pinTools'), servers.map((s) => [s.name, s.tools ?? null, s.pin ?? null, s.pinTools ?? null])]) ?? '';
}

export interface ControllerOptions {
  settings: Settings;
  registry: PoolRegistry;
  /** The config in force (its servers become pools on `start()`). */
  config: DaemonConfig;
  logger?: Logger;
  hub?: EventHub;
  scrubber?: Scrubber;
  /** Re-reads the daemon's own config for `reload()` (the daemon's loadConfig + demo fallback). */
  loadConfig?: () => Promise<DaemonConfig>;
  /** Reads a config file a caller names (none: callers can name no config but the daemon's own). */
  loadNamedConfig?: (file: string) => Promise<DaemonConfig>;
  /** Config files callers may name whoever owns them (the bundled demo). */
  trustedConfigs?: readonly string[];
  /** Env, flags and working directory for `Settings.resolve` on reload (the file part comes from the new config). */
  settingsSources?: Omit<SettingsSources, 'file' | 'filePath' | 'runtime'>;
  /** The persisted tool catalogue (`<state>/tool-catalog.json`); none: listings are kept in memory only. */
  catalogStore?: CatalogStore | null;
  /** The tool definitions as first seen (`<state>/tool-digests.json`); none: kept in memory only. */
  digestStore?: DigestStore | null;
  /** Where the `call finished` lines go; none: a child of `logger`, written line by line (see recordLogger). */
  records?: Pick<RecordLog, 'logger' | 'flush'>;
  /** OAuth for HTTP servers (`mcpx login`, tokens, refreshes); none: only configured headers are sent. */
  auth?: AuthManager | null;
}

export class Controller {
  readonly settings: Settings;
  readonly registry: PoolRegistry;
  readonly hub: EventHub;
  readonly scrubber: Scrubber;
  /** What each server offers, answered without starting servers (`mcpx serve`, `/mcp`). */
  readonly catalog: Catalog;
  /** The tool search index over the known catalogue, built as it changes (search_tools, /v1/tools/search). */
  readonly toolSearch: ToolSearch;
  /** Calls the upstream may interrupt with questions (`/v1/ask`). */
  readonly asks: AskStore;
  /** OAuth state of the HTTP servers (null without a state folder to keep tokens in). */
  readonly auth: AuthManager | null;
  /** The configs this daemon holds: its own and every one a caller named (./configs.ts). */
  readonly configs: ConfigSet;
  private readonly log: Logger;
  /** The tool policies last adopted (see adopt). */
  private policyText: string | undefined;
  private readonly loader: (() => Promise<DaemonConfig>) | undefined;
  private readonly namedLoader: ((file: string) => Promise<DaemonConfig>) | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private readonly sources: ControllerOptions['settingsSources'];
  /** When pools change, and which callers wait for it (the shell of ../pool/reconcile.machine.ts). */
  private readonly reconciler: Reconciler;
  private readonly records: CallRecords;
  private readonly calls: Calls;
  private readonly settingChanges: SettingChanges;
  private readonly inPlace: InPlaceAuthorizer;
  private readonly onPoolEvent = (e: PoolEvent) => this.poolEvent(e);

  constructor(opts: ControllerOptions) {
    this.settings = opts.settings;
    this.registry = opts.registry;
    this.log = (opts.logger ?? silentLogger).child({ component: 'daemon' });
    this.hub = opts.hub ?? new EventHub();
    this.scrubber = opts.scrubber ?? new Scrubber();
    this.auth = opts.auth ?? null;
    const namedLoader = opts.loadNamedConfig;
    this.configs = new ConfigSet({
      settings: this.settings,
      home: opts.config,
      ...(opts.trustedConfigs ? { trusted: opts.trustedConfigs } : {}),
      load: (file) => (namedLoader ? namedLoader(file) : Promise.reject(new McpxError('MCPX_NOT_IMPLEMENTED', 'this daemon reads no config but its own'))),
    });
    this.adopt();
    this.loader = opts.loadConfig;
    this.namedLoader = opts.loadNamedConfig;
    this.sources = opts.settingsSources;
    this.registry.on('event', this.onPoolEvent);
    this.hub.subscribe((e) => {
      if (e.type !== 'config.error') return;
      const entry = this.configs.all().find((c) => c.cfg.file === e.file) ?? (e.file === null ? this.configs.home : undefined);
      if (entry)
        entry.rejected = { file: e.file, at: new Date().toISOString(), problems: e.problems.length > 0 ? e.problems.map((p) => p.message) : [e.message] };
    });
    this.reconciler = new Reconciler({ registry: this.registry, desired: () => this.desired(), pool: (server) => this.registry.get(server), logger: this.log });
    this.records = new CallRecords(opts.records ?? { logger: recordLogger(opts.logger ?? silentLogger), flush: () => undefined }, this.hub, (t) =>
      this.scrubber.scrub(t),
    );
    this.calls = new Calls({
      withPool: (call, fn) => this.withPool(this.instanceOf(call, call.server), fn),
      records: this.records,
      // A tool the config filters out, or one held for a changed definition, is refused before anything starts.
      admit: (call, lane) => {
        if (call.method !== 'tools/call') return;
        const refused = this.catalog.refusal(this.instanceOf(call, call.server), String(call.params['name'] ?? ''), lane);
        if (refused) throw refused;
      },
    });
    this.settingChanges = new SettingChanges({ settings: this.settings, log: this.log, hub: this.hub, reconcile: (o) => this.reconcile(o) });
    this.inPlace = new InPlaceAuthorizer(this.auth, this.log);
    this.catalog = new Catalog({
      store: opts.catalogStore ?? null,
      // The catalogue works on instances: a server two configs share is listed once.
      servers: () =>
        this.configs
          .instanceServers()
          .filter((s) => !s.disabled && this.registry.has(s.name))
          .map((s) => ({ name: s.name, definition: s.definition })),
      withPool: (server, fn) => this.withPool(server, fn),
      laneFor: (server, ctx) => this.registry.get(server).laneFor(ctx),
      policy: (server) => this.toolPolicy(server),
      digests: new ToolDigests(
        opts.digestStore ?? null,
        (t) => this.scrubber.scrub(t),
        (err) => this.log.warn({ err }, 'could not write the tool digests'),
      ),
      logger: this.log,
    });
    this.catalog.onChange((c) => this.hub.publish({ type: 'catalog.changed', ...(c.server === undefined ? {} : { server: c.server }), lists: c.lists }));
    this.catalog.onToolChanged((c) => this.hub.publish({ type: 'tool.changed', ...c }));
    // pinTools decides what is served: fronts list again when it changes.
    this.hub.subscribe((e) => {
      if (e.type !== 'setting.changed' || e.path !== 'catalog.pinTools') return;
      this.policyText = policies(this.configs.instanceServers(), this.settings);
      this.catalog.toolsChanged();
    });
    this.toolSearch = new ToolSearch({
      view: (caller) => this.offer(caller, { knownOnly: true }),
      revision: () => this.catalog.revision,
      onChange: (l) => this.catalog.onChange(l),
    });
    this.asks = new AskStore({
      // tools/call keeps /v1/call's outcome (an isError result is MCPX_TOOL_ERROR with the result); prompts/get
      // and resources/read, which may ask too, are relayed as they are.
      run: async (call, start) => {
        const once = () => (call.method === 'tools/call' ? this.call(call) : this.request(call));
        const outcome = await once();
        if (outcome.ok || outcome.error.code !== 'MCPX_UPSTREAM_UNAUTHORIZED' || !start.authorizeInPlace) return outcome;
        return (await this.inPlace.authorizeInPlace(call)) ? once() : outcome;
      },
      // A question waits as long as an upstream request may: the server's own request timeout.
      questionTimeoutMs: (call) => {
        const instance = this.configs.find(call.config)?.instances.get(call.server);
        return (
          (instance !== undefined && this.registry.has(instance) ? this.registry.get(instance).config.requestTimeoutMs : undefined) ??
          (this.settings.get('upstream.requestTimeout') as number)
        );
      },
      limits: { maxRunning: this.settings.get('serve.maxAsks') as number, maxPerCaller: this.settings.get('serve.maxAsksPerCaller') as number },
      logger: this.log,
    });
  }

  /** The daemon's own config (what callers that name none get). */
  get config(): DaemonConfig {
    return this.configs.home.cfg;
  }

  /** Builds the pools of the config in force. */
  async start(): Promise<ReconcileResult> {
    const r = await this.reconcile({ deferBusy: false });
    for (const f of r.failed) this.log.error({ server: f.name, err: f.error.message }, 'could not set up the server');
    this.idleTimer = setInterval(() => void this.unloadIdle(), 1_000);
    this.idleTimer.unref();
    return r;
  }

  /** Stops every pool (every upstream process). */
  async stop(): Promise<void> {
    this.records.write(); // the records of calls already answered are not left to a later turn
    this.records.flushLog();
    if (this.idleTimer) clearInterval(this.idleTimer);
    this.reconciler.stop();
    this.asks.close();
    await this.registry.stopAll();
    this.registry.off('event', this.onPoolEvent);
    this.records.write(); // and those of calls the stop ended
  }

  // ---- reads ----

  /** The caller's config's servers (the daemon's own config when it names none). */
  servers(caller: Caller = {}): ServerView[] {
    const entry = this.configs.get(caller.config);
    return entry.cfg.servers.map((s) => {
      const instance = entry.instances.get(s.name);
      return serverView(s, entry.settings, instance !== undefined && this.registry.has(instance) ? this.registry.get(instance).instances().length : 0);
    });
  }

  /** The last edit of the caller's config a reload refused (the version before it is in force), until a reload succeeds. */
  rejected(caller: Caller = {}): RejectedEdit | undefined {
    return this.configs.get(caller.config).rejected;
  }

  configView(caller: Caller = {}): ConfigView {
    const entry = this.configs.get(caller.config);
    return describeConfig(entry.cfg, entry.settings);
  }

  /** The caller's config's servers with their lanes and instances, named as that config names them. */
  serverStatus(caller: Caller = {}): ServerStatusView[] {
    const pools = this.poolsOf(this.configs.get(caller.config));
    // OAuth state is the instance's; the row is named as the caller's config names the server.
    return this.withAuth(serverStatus(pools.map((p) => p.pool))).map((s, i) => ({ ...s, server: pools[i]!.name }));
  }

  /** Status rows (named by instance) with each HTTP instance's authorization, as /v1/auth says it. */
  private withAuth(rows: ServerStatusView[]): ServerStatusView[] {
    return rows.map((s) => {
      const v = this.auth?.authorizer(s.server)?.view();
      return v ? { ...s, auth: { state: v.state, ...(v.error ? { error: v.error } : {}), ...(v.unsaved ? { unsaved: v.unsaved } : {}) } } : s;
    });
  }

  /** Every instance (each server definition running for any config), named by instance: the live page. */
  instanceStatus(): { status: ServerStatusView[]; protocol: ProtocolRow[] } {
    const order = new Map(this.configs.instanceServers().map((s, i) => [s.name, i]));
    const pools = this.registry.pools().sort((a, b) => (order.get(a.name) ?? Infinity) - (order.get(b.name) ?? Infinity));
    return {
      status: this.withAuth(serverStatus(pools)),
      protocol: protocolRows(pools, this.desired(), (server) => this.reconciler.isDeferred(server)).servers,
    };
  }

  protocol(caller: Caller = {}): { servers: ProtocolRow[] } {
    const entry = this.configs.get(caller.config);
    const pools = this.poolsOf(entry);
    const rows = protocolRows(
      pools.map((p) => p.pool),
      this.desired(),
      (server) => this.reconciler.isDeferred(server),
    );
    return { servers: rows.servers.map((r, i) => ({ ...r, server: pools[i]!.name })) };
  }

  /** A config's pools in file order, each with the name the config gives it (the instance's name is `pool.name`). */
  private poolsOf(entry: LoadedConfig): Array<{ name: string; pool: ServerPool }> {
    return orderedPools(entry.cfg, entry.instances)
      .filter((x) => this.registry.has(x.instance))
      .map((x) => ({ name: x.name, pool: this.registry.get(x.instance) }));
  }

  /** The instance a caller's server runs on. @throws McpxError MCPX_UNKNOWN_SERVER (a disabled server is named as such). */
  instanceOf(caller: Caller, server: string): string {
    return this.configs.instance(this.configs.get(caller.config), server);
  }

  /** The pool of a server in the caller's config. @throws McpxError MCPX_UNKNOWN_SERVER (a disabled server is named as such). */
  pool(server: string, caller: Caller = {}): ServerPool {
    return this.registry.get(this.instanceOf(caller, server));
  }

  // ---- configs ----

  /**
   * The config a caller names, loaded on first use (its servers' pools made; nothing starts until used) and
   * marked used; undefined: the daemon's own. Returns the id callers carry (`Caller.config`).
   * @throws ConfigError naming the file (line, column) when it does not exist or does not parse.
   */
  async useConfig(file: string | undefined): Promise<string | undefined> {
    if (file === undefined) return undefined;
    const { entry, loaded } = await this.configs.ensure(file);
    this.configs.touch(entry);
    if (loaded) {
      this.adopt();
      await this.reconcile({ deferBusy: false });
      this.log.info({ config: entry.id, servers: [...entry.instances.keys()] }, 'config loaded');
      for (const w of entry.cfg.warnings) this.log.warn({ file: entry.id }, w.message);
      const wide = Object.keys(entry.cfg.settingsFile).filter((k) => !(PER_CONFIG_BLOCKS as readonly string[]).includes(k));
      if (wide.length > 0)
        this.log.warn(
          { file: entry.id, blocks: wide },
          `${entry.id}: its ${wide.join(', ')} block(s) are daemon-wide settings, read only from the daemon's own config; here only upstream and pool apply`,
        );
      this.hub.publish({ type: 'config.loaded', file: entry.id, servers: [...entry.instances.keys()] });
    }
    return entry.home ? undefined : entry.id;
  }

  /** Every config the daemon holds, its own first: callers, servers, and the instances shared between configs. */
  configsStatus(): ConfigStatusView[] {
    const iso = (t: number) => new Date(t).toISOString();
    return this.configs.all().map((e) => ({
      file: e.cfg.file ?? null,
      home: e.home,
      demo: e.cfg.demo === true,
      loadedAt: iso(e.loadedAt),
      lastUsedAt: iso(e.lastUsed),
      callers: [...e.callers.values()],
      servers: [...e.instances].map(([server, instance]) => ({
        server,
        instance,
        sharedWith: this.configs
          .usersOf(instance)
          .filter((u) => u.entry !== e)
          .map((u) => ({ file: u.entry.cfg.file ?? null, server: u.server })),
      })),
      ...(e.rejected ? { rejected: e.rejected } : {}),
    }));
  }

  /** A caller that stays (a serve stream, an `/mcp` session) keeps its config loaded until it detaches. */
  attachCaller(config: string | undefined, caller: { id: string; kind: CallerKind }): () => void {
    return this.configs.attach(this.configs.get(config), caller);
  }

  /** Unloads the configs idle past `daemon.configIdleTimeout`: their servers that no other config uses stop. */
  async unloadIdle(): Promise<string[]> {
    const idle = this.configs.idle(this.settings.get('daemon.configIdleTimeout') as number);
    if (idle.length === 0) return [];
    for (const entry of idle) this.configs.unload(entry);
    this.adopt();
    await this.reconcile({ deferBusy: false });
    for (const entry of idle) {
      this.log.info({ config: entry.id }, 'config unloaded: no caller used it within daemon.configIdleTimeout');
      this.hub.publish({ type: 'config.unloaded', file: entry.id });
    }
    return idle.map((e) => e.id);
  }

  /** Catalogue changes as one config's callers see them: its servers, under its names. */
  onCatalogChange(config: string | undefined, listener: (change: CatalogChange) => void): () => void {
    return this.catalog.onChange((change) => {
      const entry = this.configs.find(config);
      if (!entry) return;
      if (change.config !== undefined && change.config !== entry.id) return;
      if (change.server === undefined) {
        listener(change);
        return;
      }
      for (const [name, instance] of entry.instances) if (instance === change.server) listener({ ...change, server: name });
    });
  }

  /** Problems with a config's latest edit (`config.error`), for its own callers only. */
  onConfigError(config: string | undefined, listener: (message: string) => void): () => void {
    return this.hub.subscribe((e) => {
      if (e.type !== 'config.error') return;
      const entry = this.configs.find(config);
      if (entry && (e.file ?? null) === (entry.cfg.file ?? null)) listener(e.message);
    });
  }

  // ---- calls ----

  /**
   * Tools of one server, or of every server when `server` is undefined (./tools-view.ts).
   * @throws McpxError MCPX_UNKNOWN_SERVER; MCPX_BAD_REQUEST (one server pooled per session, and no session).
   */
  async tools(server: string | undefined, caller: Caller = {}, opts: { fresh?: boolean } = {}): Promise<ToolsView> {
    if (server !== undefined) this.pool(server, caller);
    return toolsView((o) => this.catalogView(caller, o), server, opts);
  }

  /**
   * The catalogue as one config's caller sees it: its servers, named as it names them. `only` names its
   * servers to start and list (the others answer from what is known).
   */
  async catalogView(caller: Caller = {}, opts: { only?: readonly string[]; fresh?: boolean; onProgress?: ProgressListener } = {}): Promise<CatalogView> {
    const entry = this.configs.get(caller.config);
    const servers = entry.cfg.servers
      .filter((s) => !s.disabled && entry.instances.has(s.name) && this.registry.has(entry.instances.get(s.name)!))
      .map((s) => ({ name: s.name, instance: entry.instances.get(s.name)! }));
    return this.catalog.view(caller, { ...opts, servers });
  }

  /** Tools whose definition changed since first seen (`GET /v1/tools/changed`, `mcpx tools --changed`). */
  changedTools(): { tools: ChangedTool[] } {
    return { tools: this.catalog.changedTools() };
  }

  /**
   * Approves a changed tool's definition as it is listed now (`POST /v1/tools/accept`): a held tool is
   * served again. `name`: the tool's own name with `server`, else its exposed name.
   * @throws McpxError MCPX_NOT_FOUND, MCPX_UNKNOWN_SERVER, MCPX_BAD_REQUEST (a name several servers' changed tools share).
   */
  acceptTool(server: string | undefined, name: string, caller: Caller = {}): { ok: true; server: string; tool: string; lanes: Array<'own' | 'legacy'> } {
    // A server is named as the caller's config names it; its definitions are its instance's.
    return { ok: true, ...this.catalog.accept(server === undefined ? undefined : this.instanceOf(caller, server), name) };
  }

  /** A server's say over its tools: its `mcpx.tools`, `mcpx.pin`, and `mcpx.pinTools` over `catalog.pinTools`. */
  /** An instance's tool policy (servers with different policies never share an instance: ./configs.ts). */
  private toolPolicy(server: string): ToolPolicy {
    const s = this.configs.instanceServers().find((x) => x.name === server);
    const pinTools = s?.pinTools ?? this.settings.get('catalog.pinTools') === true;
    return { ...(s?.tools ? { tools: s.tools } : {}), ...(s?.pin !== undefined ? { pin: s.pin } : {}), pinTools };
  }

  /**
   * The tools that best match a query, ranked as `search_tools` ranks them, from the known catalogue
   * (nothing is started): `GET /v1/tools/search`, `mcpx tools --search`.
   */
  async searchTools(query: string, limit: number | undefined, caller: Caller = {}): Promise<ToolSearchView> {
    const found = await this.toolSearch.scope(caller);
    return {
      ok: true,
      tools: found.search(query, limit).map((h) => ({
        server: h.server,
        name: h.name,
        exposed: h.exposed,
        description: h.description,
        signature: h.signature,
        score: h.score,
      })),
    };
  }

  /** The last finished calls, scrubbed (./call-records.ts): the `mcpx ui` page's recent calls. */
  recentCalls(): RecentCall[] {
    return this.records.recent();
  }

  /** Calls a tool (./calls.ts). @throws McpxError MCPX_UNKNOWN_SERVER; MCPX_BAD_REQUEST. */
  call(call: Call): Promise<CallOutcome> {
    return this.calls.call(call);
  }

  /** Relays one request as it is: `/v1/request` and the MCP fronts (./calls.ts). */
  request(call: Call): Promise<CallOutcome> {
    return this.calls.request(call);
  }

  /**
   * An MCP client's request (`/mcp`, `mcpx serve`), relayed as it is: the result, or the failure thrown
   * as an McpxError; both pass the secret scrubber, as every /v1 answer does.
   */
  async relay(call: Call): Promise<Record<string, unknown>> {
    let outcome: CallOutcome;
    try {
      outcome = await this.calls.request(call);
    } catch (err) {
      const e = err instanceof McpxError ? err : new McpxError('MCPX_INTERNAL', err instanceof Error ? err.message : String(err));
      throw new McpxError(e.code, this.scrubber.scrub(e.message), e.data === undefined ? undefined : { data: this.scrubbed(e.data) });
    }
    if (outcome.ok) return this.scrubbed(outcome.result);
    const error = this.scrubbed(outcome.error);
    throw new McpxError(error.code as ErrorCode, error.message, error.data === undefined ? undefined : { data: error.data });
  }

  /** What an MCP client sees of the catalogue (./catalog/catalog.ts `view`), scrubbed. */
  async offer(caller: Caller, opts: { knownOnly?: boolean; onProgress?: ProgressListener } = {}): Promise<CatalogView> {
    return this.scrubbed(
      await this.catalogView(caller, { ...(opts.onProgress ? { onProgress: opts.onProgress } : {}), ...(opts.knownOnly ? { only: [] } : {}) }),
    );
  }

  /** A value as callers may see it: no known secret in it (the same value when there is none to find). */
  scrubbed<T>(value: T): T {
    if (!this.scrubber.active) return value; // no secret known: nothing to look for, no copy to make
    const text = JSON.stringify(value);
    const clean = this.scrubber.scrub(text);
    return clean === text ? value : (JSON.parse(clean) as T);
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
    return this.settingChanges.list();
  }

  setting(path: string): SettingEntry {
    return this.settingChanges.entry(path);
  }

  /** @throws UnknownSettingError; SettingValueError (MCPX_BAD_SETTING, with `data.allowed` for an enum). */
  setSetting(path: string, value: unknown): Promise<SettingChangeView> {
    return this.settingChanges.set(path, value);
  }

  unsetSetting(path: string): Promise<SettingChangeView> {
    return this.settingChanges.unset(path);
  }

  // ---- config ----

  /**
   * Re-reads the caller's config (./config-reload.ts); a broken file leaves its last good version in force.
   * The daemon's own config (no `config`) is read the way the daemon first found it.
   */
  reload(reason = 'api', caller: Caller = {}): Promise<ReloadOutcome> {
    const entry = this.configs.get(caller.config);
    const namedLoader = this.namedLoader;
    const loader = entry.home ? this.loader : namedLoader ? () => namedLoader(entry.id) : undefined;
    return this.reconciler.reload(() =>
      reloadConfig(
        {
          loader,
          sources: entry.home ? this.sources : { env: {} },
          ...(entry.home ? {} : { ownBlocks: PER_CONFIG_BLOCKS }),
          settings: entry.home ? this.settings : (entry.own ?? this.settings),
          current: () => entry.cfg,
          adopt: (next) => {
            this.configs.replace(entry, next);
            this.adopt();
          },
          reconcile: (o) => this.reconcile(o),
          serversChanged: () => this.catalog.serversChanged(entry.id),
          log: this.log,
          hub: this.hub,
        },
        reason,
      ),
    );
  }

  /** Every loaded config reloaded (`mcpx reload --all`), the daemon's own first. */
  async reloadAll(reason = 'api'): Promise<ReloadOutcome[]> {
    const out: ReloadOutcome[] = [];
    for (const entry of this.configs.all()) out.push(await this.reload(reason, entry.home ? {} : { config: entry.id }));
    return out;
  }

  /** The configs in force changed: every config's secrets are scrubbed and every instance's OAuth state kept. */
  private adopt(): void {
    // A changed filter, pin or pinTools (a server's, or the file's catalog.pinTools, resolved before this)
    // changes what is served, though no server restarts: fronts list again. The first adopt runs before
    // the catalogue exists.
    const policy = policies(this.configs.instanceServers(), this.settings);
    if (this.policyText !== undefined && policy !== this.policyText) this.catalog.toolsChanged();
    this.policyText = policy;
    this.scrubber.setFromServers(this.configs.everyServer());
    this.auth?.setServers(this.configs.instanceServers());
  }

  // ---- bringing pools in line ----

  /** The effective per-instance configs: every loaded config's servers over the settings, with the era-cache switch. */
  private desired(): PoolServerConfig[] {
    return this.configs.desired(this.settings.get('upstream.eraCache') === true);
  }

  /**
   * Brings the pools in line with the effective configs (../pool/reconcile.machine.ts). With `deferBusy`, a pool that
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
