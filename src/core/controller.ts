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
import { resolvePoolConfigs } from '../config/config-file.js';
import type { SettingEntry, Settings, SettingsSources } from '../config/settings.js';
import type { PoolRegistry } from '../pool/pool-registry.js';
import type { ServerPool } from '../pool/server-pool.js';
import type { PoolEvent, PoolServerConfig } from '../pool/types.js';
import type { Call, Caller, ProgressListener } from '../call/call.js';
import type { CatalogView } from '../catalog/view.js';
import type { CatalogStore } from '../catalog/catalog-store.js';
import { AskStore } from '../asks/ask-store.js';
import { Catalog } from '../catalog/catalog.js';
import { ToolSearch } from '../catalog/search-index.js';
import { CallRecords, recordLogger, type RecentCall } from './call-records.js';
import { Calls } from './calls.js';
import { reloadConfig } from './config-reload.js';
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
  private readonly log: Logger;
  private cfg: DaemonConfig;
  /** The last edit a reload refused, until one succeeds: `mcpx status` and `mcpx servers` say so. */
  private rejectedEdit: RejectedEdit | undefined;
  private readonly loader: (() => Promise<DaemonConfig>) | undefined;
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
    this.cfg = opts.config;
    this.adopt(opts.config);
    this.loader = opts.loadConfig;
    this.sources = opts.settingsSources;
    this.registry.on('event', this.onPoolEvent);
    this.hub.subscribe((e) => {
      if (e.type === 'config.error')
        this.rejectedEdit = { file: e.file, at: new Date().toISOString(), problems: e.problems.length > 0 ? e.problems.map((p) => p.message) : [e.message] };
      else if (e.type === 'config.reloaded') this.rejectedEdit = undefined;
    });
    this.reconciler = new Reconciler({ registry: this.registry, desired: () => this.desired(), pool: (server) => this.pool(server), logger: this.log });
    this.records = new CallRecords(opts.records ?? { logger: recordLogger(opts.logger ?? silentLogger), flush: () => undefined }, this.hub, (t) =>
      this.scrubber.scrub(t),
    );
    this.calls = new Calls({ withPool: (server, fn) => this.withPool(server, fn), records: this.records });
    this.settingChanges = new SettingChanges({ settings: this.settings, log: this.log, hub: this.hub, reconcile: (o) => this.reconcile(o) });
    this.inPlace = new InPlaceAuthorizer(this.auth, this.log);
    this.catalog = new Catalog({
      store: opts.catalogStore ?? null,
      servers: () => this.cfg.servers.filter((s) => !s.disabled && this.registry.has(s.name)).map((s) => ({ name: s.name, definition: s.definition })),
      withPool: (server, fn) => this.withPool(server, fn),
      laneFor: (server, ctx) => this.pool(server).laneFor(ctx),
      logger: this.log,
    });
    this.catalog.onChange((c) => this.hub.publish({ type: 'catalog.changed', ...(c.server === undefined ? {} : { server: c.server }), lists: c.lists }));
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
    this.records.write(); // the records of calls already answered are not left to a later turn
    this.records.flushLog();
    this.reconciler.stop();
    this.asks.close();
    await this.registry.stopAll();
    this.registry.off('event', this.onPoolEvent);
    this.records.write(); // and those of calls the stop ended
  }

  // ---- reads ----

  servers(): ServerView[] {
    return this.cfg.servers.map((s) => serverView(s, this.settings, this.registry.has(s.name) ? this.registry.get(s.name).instances().length : 0));
  }

  /** The last config edit a reload refused (the config before it is in force), until a reload succeeds. */
  rejected(): RejectedEdit | undefined {
    return this.rejectedEdit;
  }

  configView(): ConfigView {
    return describeConfig(this.cfg, this.settings);
  }

  serverStatus(): ServerStatusView[] {
    return serverStatus(orderedPools(this.cfg, this.registry)).map((s) => {
      const v = this.auth?.authorizer(s.server)?.view();
      return v ? { ...s, auth: { state: v.state, ...(v.error ? { error: v.error } : {}), ...(v.unsaved ? { unsaved: v.unsaved } : {}) } } : s;
    });
  }

  protocol(): { servers: ProtocolRow[] } {
    return protocolRows(orderedPools(this.cfg, this.registry), this.desired(), (server) => this.reconciler.isDeferred(server));
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
   * Tools of one server, or of every server when `server` is undefined (./tools-view.ts).
   * @throws McpxError MCPX_UNKNOWN_SERVER; MCPX_BAD_REQUEST (one server pooled per session, and no session).
   */
  async tools(server: string | undefined, caller: Caller = {}, opts: { fresh?: boolean } = {}): Promise<ToolsView> {
    if (server !== undefined) this.pool(server);
    return toolsView(this.catalog, server, caller, opts);
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
      await this.catalog.view(caller, { ...(opts.onProgress ? { onProgress: opts.onProgress } : {}), ...(opts.knownOnly ? { only: [] } : {}) }),
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

  /** Re-reads the config (./config-reload.ts); a broken file leaves the last good config in force. */
  reload(reason = 'api'): Promise<ReloadOutcome> {
    return this.reconciler.reload(() =>
      reloadConfig(
        {
          loader: this.loader,
          sources: this.sources,
          settings: this.settings,
          current: () => this.cfg,
          adopt: (next) => this.adopt(next),
          reconcile: (o) => this.reconcile(o),
          serversChanged: () => this.catalog.serversChanged(),
          log: this.log,
          hub: this.hub,
        },
        reason,
      ),
    );
  }

  /** Puts a config in force: its servers' secrets are scrubbed and their OAuth state kept. */
  private adopt(next: DaemonConfig): void {
    this.cfg = next;
    this.scrubber.setFromServers(next.servers);
    this.auth?.setServers(next.servers);
  }

  // ---- bringing pools in line ----

  /** The effective per-server configs: the config file over the settings, with the era-cache switch. */
  private desired(): PoolServerConfig[] {
    const eraCache = this.settings.get('upstream.eraCache') === true;
    return resolvePoolConfigs(this.cfg, this.settings).map((c) => ({ ...c, eraCache }));
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
