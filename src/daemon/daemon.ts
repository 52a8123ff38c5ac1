/**
 * `startDaemon`: the mcpx daemon (`mcpx daemon`, `npm start`).
 *
 * Config → settings (file < env < flags) → pools; the /v1 API and `/mcp` on `<state>/daemon.sock` (0600)
 * and, when daemon.port is set, on loopback TCP (bearer token in `<state>/daemon.json`, 0600); on the
 * socket also every `mcpx serve`'s stream (its client answered by the same MCP front as `/mcp`). One daemon
 * per state folder (daemon.lock; a crashed daemon's leftovers are cleaned up, its upstream processes
 * included: src/daemon/orphans.ts). The config file is watched (its folder, debounced) and reloaded
 * on change, on `POST /v1/reload` and on SIGHUP; a broken edit is reported and the last good config
 * stays. SIGINT/SIGTERM stop every pool (every upstream process), flush the era cache, remove the
 * socket, daemon.json, the process ledger and the lock.
 *
 * What the daemon loads before it listens is paid at every start (test/cli/lazy-loading.test.ts): the MCP
 * SDK (../api/fronts.ts), pino-pretty (./daemon-log.ts) and the Stately inspector load only when used.
 */
import { AuthManager } from '../auth/auth-manager.js';
import { CredentialStore } from '../auth/credential-store.js';
import { setOAuthLimits } from '../auth/oauth-client.js';
import { mkdir, rm } from 'node:fs/promises';
import { realpathSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger as PinoLogger } from 'pino';
import { ConfigError } from '../errors.js';
import { Settings, type SettingsSources } from '../config/settings.js';
import { EraCache } from '../upstream/era-cache.js';
import { CatalogStore } from '../catalog/catalog-store.js';
import { DigestStore } from '../catalog/tool-digests.js';
import type { DaemonInfo } from '../api/app.js';
import { loadDaemonConfig, loadNamedConfig, type ConfigSourceOptions } from './config-source.js';
import { watchConfigFile, type ConfigWatcher } from './config-watcher.js';
import { Controller } from '../core/controller.js';
import { makeLoggers, type DaemonLogOptions } from './daemon-log.js';
import { EventHub } from '../core/events.js';
import { LazyFronts } from '../api/fronts.js';
import { Listeners, type CommonAppDeps } from './listeners.js';
import { ProcessLedger, sweepOrphans } from './orphans.js';
import { demoConfigPath, packageVersion } from '../package-info.js';
import type { RecordLog } from '../core/record-log.js';
import { createPoolRegistry } from '../core/registry.js';
import { Scrubber } from '../core/secrets.js';
import { UiHub } from '../ui/hub.js';
import type { StatelyInspector } from '../inspect/stately.js';
import type { DaemonConfig } from '../core/views.js';
import { checkSocketTrust } from '../state/safe-files.js';
import { acquireLock, checkSocketPath, DAEMON_JSON, ensureStateDir, writeDaemonFile, type DaemonFile } from './state-dir.js';

export interface DaemonOptions extends DaemonLogOptions {
  /** `--config FILE`. */
  configFlag?: string;
  /** Setting flags by flag name (`--pool-max`, `poolMax`, …), as the CLI parsed them. */
  flags?: SettingsSources['flags'];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Install SIGINT/SIGTERM (stop) and SIGHUP (reload) handlers. Default false (the CLI turns it on). */
  handleSignals?: boolean;
  /** Debounce of the config watcher; default 200 ms. */
  watchDebounceMs?: number;
  /** The demo config used when no file is found; default the build's dist/demo/demo.json. */
  demoFile?: string;
  /** `--inspect[=PORT]`: stream every actor to the Stately inspector through a relay on 127.0.0.1 (src/inspect/stately.ts). */
  inspect?: { port?: number };
}

export interface DaemonHandle {
  pid: number;
  version: string;
  stateDir: string;
  socket: string;
  tcp: { host: string; port: number } | null;
  /** The TCP bearer token (undefined when TCP is off or daemon.auth is none). */
  token: string | undefined;
  controller: Controller;
  logger: PinoLogger;
  /** Stops everything (idempotent). */
  stop(reason?: string): Promise<void>;
  /** Settles when the daemon has stopped. */
  readonly stopped: Promise<void>;
}

/**
 * Starts the daemon and resolves once it listens.
 * @throws ConfigError (bad config, naming file, server and key), SettingValueError / UnknownSettingError
 *   (bad env or flag), DaemonRunningError (another live daemon owns the state folder), or a listen error.
 */
export async function startDaemon(opts: DaemonOptions = {}): Promise<DaemonHandle> {
  const inputs = daemonInputs(opts);
  const config = await readConfig(inputs);
  const settings = resolveSettings(config, inputs);
  const scrubber = scrubberFor(config);
  const { logger, records } = await makeLoggers(settings.get('log.level'), scrubber, opts);
  followLogLevel(settings, logger, records);
  const log = logger.child({ component: 'daemon' });
  const life = new Lifetime(log);
  const { stateDir, socket } = await claimStateDir(settings, logger, life);
  const startedAt = Date.now();
  const listeners = new Listeners({ settings, scrubber, log, onStop: (close) => life.onStop(close), isStopping: () => life.stopping });
  const where: DaemonPlace = { version: inputs.version, stateDir, socket, startedAt, settings, listeners };
  let core: DaemonCore;
  try {
    const stores = await openStores(stateDir, settings, logger, scrubber);
    // The `mcpx ui` page: its probe ring reads every session; its listener is TCP's, or one opened for it.
    const ui = new UiHub({ scrub: (t) => scrubber.scrub(t), address: () => listeners.uiAddress() });
    const inspector = await startInspector(opts, scrubber, logger, ui, life);
    const controller = await startController({ inputs, config, settings, scrubber, logger, records, stateDir, stores, ui, inspector, life });
    core = { ...stores, controller };
    await listen({ where, controller, logger, ui, life, stop: (reason) => handle.stop(reason) });
    await writeDaemonFile(stateDir, daemonFile(where));
    life.onStop(() => rm(`${stateDir}/${DAEMON_JSON}`, { force: true }));
  } catch (err) {
    await life.undo();
    throw err;
  }
  followDaemonAuth(where, life, log);
  const watcher = watchConfigFile({ controller: core.controller, debounceMs: opts.watchDebounceMs ?? 200, log, isStopping: () => life.stopping });
  const handle = daemonHandle(where, core, logger, (reason) => stopDaemon({ core, life, watcher, unhook: () => unhook(), log }, reason));
  const unhook = hookProcess(opts, records, handle, core.controller, log);
  announceReady(where, config, log);
  startDemoServers(config, core.controller, log);
  return handle;
}

// ---- the steps, in the order startDaemon takes them ----

/** The options with their defaults: where the config is looked for, and the settings' env and flags. */
interface DaemonInputs {
  version: string;
  configOpts: ConfigSourceOptions;
  sources: Omit<SettingsSources, 'file' | 'filePath' | 'runtime'>;
}

function daemonInputs(opts: DaemonOptions): DaemonInputs {
  const env = opts.env ?? process.env;
  const cwd = opts.cwd ?? process.cwd();
  const configOpts = {
    ...(opts.configFlag === undefined ? {} : { configFlag: opts.configFlag }),
    env,
    cwd,
    ...(opts.demoFile ? { demoFile: opts.demoFile } : {}),
  };
  return { version: packageVersion(), configOpts, sources: { env, cwd, ...(opts.flags ? { flags: opts.flags } : {}) } };
}

/** @throws ConfigError naming the file, server and key of each problem. */
async function readConfig(inputs: DaemonInputs): Promise<DaemonConfig> {
  const config = await loadDaemonConfig(inputs.configOpts);
  if (config.errors.length > 0) throw new ConfigError(config.errors, config.file);
  return config;
}

function resolveSettings(config: DaemonConfig, inputs: DaemonInputs): Settings {
  return new Settings({ ...inputs.sources, file: config.settingsFile, ...(config.file === undefined ? {} : { filePath: config.file }) });
}

/** The secrets the config names (env and header values, credentials in URLs, expansions), blanked from every log line and /v1 answer. */
function scrubberFor(config: DaemonConfig): Scrubber {
  const scrubber = new Scrubber();
  scrubber.setFromServers(config.servers);
  return scrubber;
}

/** What the daemon undoes when it stops or fails to start, and whether it is stopping. */
class Lifetime {
  stopping = false;
  private readonly undos: Array<() => Promise<void>> = [];

  constructor(private readonly log: PinoLogger) {}

  /** `undo` runs at the stop, before everything registered earlier. */
  onStop(undo: () => Promise<void>): void {
    this.undos.push(undo);
  }

  async undo(): Promise<void> {
    // A file that cannot be removed (a read-only state folder) is logged with its errno and path; `mcpx stop` reports it too.
    for (const c of this.undos.splice(0).reverse()) await c().catch((err: unknown) => this.log.error({ err }, 'could not clean up the state folder'));
  }
}

/**
 * The state folder and the socket's folder made (private), the lock taken, and the upstreams a crashed
 * daemon left running stopped before this one starts any; from here this daemon records its own.
 */
async function claimStateDir(settings: Settings, logger: PinoLogger, life: Lifetime): Promise<{ stateDir: string; socket: string }> {
  const log = logger.child({ component: 'daemon' });
  const stateDir = settings.get('paths.state');
  const socket = settings.get('daemon.socket');
  checkSocketPath(socket); // before anything is created: a cut path would bind outside the folder
  await ensureStateDir(stateDir);
  // A socket configured outside the state folder: create its folder if missing, never loosen or tighten an existing one.
  await mkdir(dirname(socket), { recursive: true, mode: 0o700 });
  checkSocketTrust(socket, { folderOnly: true }); // a folder others can write: clients would refuse a socket there
  const lock = await acquireLock(stateDir, socket);
  if (lock.cleaned.length > 0) log.warn({ files: lock.cleaned }, 'cleaned up after a daemon that exited without doing so');
  // Upstreams a crashed daemon left running (recorded in the folder), before this one starts any.
  await sweepOrphans(stateDir, { logger: log });
  const processLedger = new ProcessLedger(stateDir, logger.child({ component: 'processes' }));
  life.onStop(() => lock.release());
  life.onStop(() => processLedger.close());
  return { stateDir, socket };
}

/** The state folder's stores: the era cache (its max age follows the setting), the tool catalogue and its tool digests. */
interface DaemonStores {
  cache: EraCache;
  catalogStore: CatalogStore;
  digestStore: DigestStore;
}

async function openStores(stateDir: string, settings: Settings, logger: PinoLogger, scrubber: Scrubber): Promise<DaemonStores> {
  const cache = await EraCache.open(stateDir, { logger: logger.child({ component: 'era-cache' }) });
  cache.maxAgeMs = settings.get('upstream.eraCacheMaxAge');
  settings.onChange((c) => {
    if (c.path === 'upstream.eraCacheMaxAge') cache.maxAgeMs = Number(c.value);
  });
  const catalogStore = await CatalogStore.open(stateDir, { logger: logger.child({ component: 'catalog' }), scrub: (t) => scrubber.scrub(t) });
  const digestStore = await DigestStore.open(stateDir, { logger: logger.child({ component: 'tool-digests' }) });
  return { cache, catalogStore, digestStore };
}

/** `--inspect`: the relay to the Stately inspector, loaded only then; its page is linked from the ui page. */
async function startInspector(opts: DaemonOptions, scrubber: Scrubber, logger: PinoLogger, ui: UiHub, life: Lifetime): Promise<StatelyInspector | undefined> {
  if (!opts.inspect) return undefined;
  const { startStatelyInspector } = await import('../inspect/stately.js');
  const started = await startStatelyInspector({ ...opts.inspect, scrub: (t) => scrubber.scrub(t), logger });
  ui.inspectorUrl = started.url;
  life.onStop(() => started.stop());
  return started;
}

/** What the steps after the start need: the controller over the pools, and the stores to flush at the stop. */
interface DaemonCore extends DaemonStores {
  controller: Controller;
}

/** Where the daemon runs and listens: what daemon.json, /v1/status and the handle say. */
interface DaemonPlace {
  version: string;
  stateDir: string;
  socket: string;
  startedAt: number;
  settings: Settings;
  listeners: Listeners;
}

interface ControllerParts {
  inputs: DaemonInputs;
  config: DaemonConfig;
  settings: Settings;
  scrubber: Scrubber;
  logger: PinoLogger;
  records: RecordLog | undefined;
  stateDir: string;
  stores: DaemonStores;
  ui: UiHub;
  inspector: StatelyInspector | undefined;
  life: Lifetime;
}

/** OAuth, the pool registry and the Controller over them; the config's pools built. */
async function startController(p: ControllerParts): Promise<Controller> {
  const { settings, scrubber, logger, records, life } = p;
  // OAuth: the credentials of HTTP servers, kept and refreshed here alone (src/auth).
  const hub = new EventHub();
  // Every OAuth request (discovery, registration, token, refresh) is timed and bounded by these, read per request.
  setOAuthLimits(() => ({ timeoutMs: settings.get('oauth.requestTimeout'), maxBytes: settings.get('oauth.maxResponseBytes') }));
  const auth = new AuthManager({
    backoffMaxMs: () => settings.get('oauth.refreshBackoffMax'),
    loginUnwatchedMs: settings.get('oauth.loginUnwatchedTimeout'),
    store: await CredentialStore.open(p.stateDir, { logger: logger.child({ component: 'credentials' }) }),
    onChange: (view) => hub.publish({ type: 'server.auth', ...view }),
    onSecrets: (owner, secrets) => scrubber.setDynamic(owner, secrets),
    log: logger.child({ component: 'oauth' }),
  });
  life.onStop(() => auth.close());
  const probes = p.ui.probes;
  const inspector = p.inspector;
  const registry = createPoolRegistry({
    settings,
    cache: p.stores.cache,
    authorizer: (server) => auth.authorizer(server),
    logger,
    inspectPool: inspector !== undefined,
    inspect: (ev, source) => {
      probes.inspect(ev, source);
      inspector?.inspect(ev, source);
    },
  });
  const controller = new Controller({
    settings,
    registry,
    config: p.config,
    logger,
    ...(records ? { records } : {}),
    hub,
    scrubber,
    auth,
    settingsSources: p.inputs.sources,
    loadConfig: () => loadDaemonConfig(p.inputs.configOpts),
    loadNamedConfig: (file) => loadNamedConfig(file, { ...(p.inputs.configOpts.env ? { env: p.inputs.configOpts.env } : {}) }),
    trustedConfigs: trustedConfigs(p.inputs),
    catalogStore: p.stores.catalogStore,
    digestStore: p.stores.digestStore,
  });
  life.onStop(() => controller.stop());
  await controller.start();
  return controller;
}

/** The bundled demo (whoever installed mcpx owns it), by its real path. */
function trustedConfigs(inputs: DaemonInputs): string[] {
  const demo = inputs.configOpts.demoFile ?? demoConfigPath();
  try {
    return [realpathSync(demo)];
  } catch {
    return [];
  }
}

/** log.level applies at once, to the daemon's lines and to the call records. */
function followLogLevel(settings: Settings, logger: PinoLogger, records: RecordLog | undefined): void {
  settings.onChange((c) => {
    if (c.path !== 'log.level') return;
    logger.level = String(c.value);
    records?.setLevel(String(c.value));
  });
}

interface ListenParts {
  where: DaemonPlace;
  controller: Controller;
  logger: PinoLogger;
  ui: UiHub;
  life: Lifetime;
  /** `POST /v1/shutdown`. */
  stop(reason: string): Promise<void>;
}

/** The socket listener (with `mcpx serve`'s streams), then loopback TCP when daemon.port is set; `/mcp` on both. */
async function listen(p: ListenParts): Promise<void> {
  const { version, stateDir, socket, startedAt, settings, listeners } = p.where;
  const { controller, logger, life } = p;
  const info = (): DaemonInfo => ({
    stateDir,
    socket,
    tcp: listeners.tcp ? { ...listeners.tcp, auth: settings.get('daemon.auth') } : null,
  });
  const fronts = new LazyFronts({ controller, settings, version, logger });
  life.onStop(fronts.closeMcp);
  const common: CommonAppDeps = {
    controller,
    logger,
    version,
    startedAt,
    info,
    shutdown: () => void p.stop('shutdown requested over the API'),
    isStopping: () => life.stopping,
    mcp: fronts.mcp,
    ui: p.ui,
  };
  await listeners.listenSocket(socket, common, { entry: fronts.serve, close: fronts.closeServe });
  await listeners.listenTcp(common);
}

function daemonFile(w: DaemonPlace): DaemonFile {
  const auth = w.settings.get('daemon.auth');
  const { tcp, token } = w.listeners;
  return {
    pid: process.pid,
    version: w.version,
    stateDir: w.stateDir,
    socket: w.socket,
    host: tcp?.host ?? null,
    port: tcp?.port ?? null,
    auth,
    ...(tcp && token && auth !== 'none' ? { token } : {}),
    startedAt: new Date(w.startedAt).toISOString(),
  };
}

/** daemon.auth applies at once; daemon.json says whether a token is needed. */
function followDaemonAuth(w: DaemonPlace, life: Lifetime, log: PinoLogger): void {
  w.settings.onChange((c) => {
    if (c.path === 'daemon.auth' && !life.stopping)
      void writeDaemonFile(w.stateDir, daemonFile(w)).catch((err: unknown) => log.error({ err }, 'could not rewrite daemon.json'));
  });
}

function daemonHandle(w: DaemonPlace, core: DaemonCore, logger: PinoLogger, stopDaemonOnce: (reason: string) => Promise<void>): DaemonHandle {
  let resolveStopped!: () => void;
  const stopped = new Promise<void>((r) => (resolveStopped = r));
  let stopPromise: Promise<void> | undefined;
  return {
    pid: process.pid,
    version: w.version,
    stateDir: w.stateDir,
    socket: w.socket,
    get tcp() {
      return w.listeners.tcp;
    },
    get token() {
      return w.listeners.tcp && w.settings.get('daemon.auth') !== 'none' ? w.listeners.token : undefined;
    },
    controller: core.controller,
    logger,
    stopped,
    stop(reason = 'stop') {
      stopPromise ??= stopDaemonOnce(reason).then(resolveStopped);
      return stopPromise;
    },
  };
}

interface StopParts {
  core: DaemonCore;
  life: Lifetime;
  watcher: ConfigWatcher;
  /** Removes the process's exit and signal handlers. */
  unhook(): void;
  log: PinoLogger;
}

async function stopDaemon(s: StopParts, reason: string): Promise<void> {
  const { core, log } = s;
  s.life.stopping = true;
  const t0 = Date.now();
  s.watcher.close();
  s.unhook();
  log.info({ reason }, 'stopping every server');
  // Pools first: calls in flight fail at once, so closing the listeners does not wait on them.
  await core.controller.stop().catch((err: unknown) => log.error({ err }, 'error while stopping the servers'));
  await core.cache.whenIdle().catch((err: unknown) => log.error({ err }, 'could not flush the era cache'));
  await core.catalogStore.whenIdle().catch((err: unknown) => log.error({ err }, 'could not flush the tool catalogue'));
  await core.digestStore.whenIdle().catch((err: unknown) => log.error({ err }, 'could not flush the tool digests'));
  await s.life.undo();
  log.info({ ms: Date.now() - t0 }, 'daemon stopped');
}

/**
 * The call records still buffered when the process exits (an uncaught error included) are written then;
 * with `handleSignals`, SIGINT/SIGTERM stop the daemon and SIGHUP reloads the config. Returns their removal.
 */
function hookProcess(opts: DaemonOptions, records: RecordLog | undefined, handle: DaemonHandle, controller: Controller, log: PinoLogger): () => void {
  const onSignal = (signal: NodeJS.Signals) => {
    log.info({ signal }, 'stopping');
    void handle.stop(signal);
  };
  const onHup = () => {
    void controller.reloadAll('SIGHUP');
  };
  if (records) process.on('exit', records.flush);
  if (opts.handleSignals) {
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    process.on('SIGHUP', onHup);
  }
  return () => {
    if (records) process.off('exit', records.flush);
    if (opts.handleSignals) {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      process.off('SIGHUP', onHup);
    }
  };
}

function announceReady(w: DaemonPlace, config: DaemonConfig, log: PinoLogger): void {
  const tcp = w.listeners.tcp;
  log.info(
    {
      version: w.version,
      socket: w.socket,
      ...(tcp ? { tcp: `${tcp.host}:${tcp.port}`, auth: w.settings.get('daemon.auth') } : {}),
      config: config.file ?? null,
      demo: config.demo === true,
      servers: config.servers.filter((s) => !s.disabled).map((s) => s.name),
    },
    'mcpx daemon ready',
  );
  for (const warning of config.warnings) log.warn({ file: config.file }, warning.message);
}

/**
 * The bundled demo exists to show the three eras: its servers start now, so the first `mcpx protocol`
 * already shows them. A user's own servers start on first use (some are heavy: a browser, an index).
 */
function startDemoServers(config: DaemonConfig, controller: Controller, log: PinoLogger): void {
  if (config.demo !== true) return;
  for (const s of config.servers) {
    if (!s.disabled)
      void controller.tools(s.name, {}, { fresh: true }).catch((err: unknown) => log.warn({ server: s.name, err }, 'could not start a demo server'));
  }
}
