/**
 * `startDaemon`: the mcpx daemon (`mcpx daemon`, `npm start`).
 *
 * Config → settings (file < env < flags) → pools; the /v1 API and `/mcp` on `<state>/daemon.sock` (0600)
 * and, when daemon.port is set, on loopback TCP (bearer token in `<state>/daemon.json`, 0600); on the
 * socket also every `mcpx serve`'s stream (its client answered by the same MCP front as `/mcp`). One daemon
 * per state folder (daemon.lock; a crashed daemon's leftovers are cleaned up, its upstream processes
 * included: src/server/orphans.ts). The config file is watched (its folder, debounced) and reloaded
 * on change, on `POST /v1/reload` and on SIGHUP; a broken edit is reported and the last good config
 * stays. SIGINT/SIGTERM stop every pool (every upstream process), flush the era cache, remove the
 * socket, daemon.json, the process ledger and the lock.
 */
import { AuthManager } from '../auth/auth-manager.js';
import { CredentialStore } from '../auth/credential-store.js';
import { randomBytes } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { chmod, mkdir, rm, stat } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { basename, dirname } from 'node:path';
import type { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { pino, type Logger as PinoLogger } from 'pino';
import { ConfigError, McpxError } from '../errors.js';
import { Settings, type SettingsSources } from '../config/settings.js';
import { EraCache } from '../upstream/era-cache.js';
import { CatalogStore } from '../catalog/catalog-store.js';
import type { McpHttpEntry } from '../front/http-entry.js';
import type { SocketEntry } from '../front/socket-entry.js';
import { buildApp, type DaemonInfo } from './app.js';
import { boundConnections } from './connection-limit.js';
import { loadDaemonConfig } from './config-source.js';
import { Controller } from './controller.js';
import { createPoolRegistry } from './registry.js';
import { makeRecordLog, type RecordLog } from './record-log.js';
import { safeLogStream } from './log-stream.js';
import { EventHub } from './events.js';
import { ProcessLedger, sweepOrphans } from './orphans.js';
import { packageVersion } from '../package-info.js';
import { Scrubber } from './secrets.js';
import { UiHub, type UiAddress } from '../ui/hub.js';
import type { StatelyInspector } from '../inspect/stately.js';
import { checkSocketTrust } from '../state/safe-files.js';
import { acquireLock, checkSocketPath, DAEMON_JSON, ensureStateDir, socketAnswers, writeDaemonFile, type DaemonFile, type Lock } from './state-dir.js';

export interface DaemonOptions {
  /** `--config FILE`. */
  configFlag?: string;
  /** Setting flags by flag name (`--pool-max`, `poolMax`, …), as the CLI parsed them. */
  flags?: SettingsSources['flags'];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Install SIGINT/SIGTERM (stop) and SIGHUP (reload) handlers. Default false (the CLI turns it on). */
  handleSignals?: boolean;
  /** Where log lines go; default stdout (pretty on a TTY, JSON otherwise). */
  logStream?: Writable;
  /** Pretty logs; default: stdout is a TTY and no logStream was given. */
  prettyLogs?: boolean;
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

interface DaemonLoggers {
  logger: PinoLogger;
  /** The `call finished` lines, buffered until flushed (see makeRecordLog); none for a terminal. */
  records: RecordLog | undefined;
}

async function makeLoggers(level: string, scrubber: Scrubber, opts: DaemonOptions): Promise<DaemonLoggers> {
  const usePretty = opts.prettyLogs ?? (opts.logStream === undefined && process.stdout.isTTY === true);
  // pino-pretty loads only for a terminal: a background daemon logs JSON to its file.
  const pretty = usePretty && !opts.logStream ? (await import('pino-pretty')).default : undefined;
  const base = { daemon: process.pid };
  // A line that cannot be written (a full disk) is dropped and counted, never thrown into the caller's code.
  const stream: Writable | pino.DestinationStream =
    opts.logStream ??
    (pretty ? pretty({ colorize: true, sync: true, singleLine: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'hostname,daemon' }) : safeLogStream(1, base));
  // Belt and braces: known secret values never reach a log line, whatever field they hide in.
  const hooks = { streamWrite: (s: string) => scrubber.scrub(s) };
  const logger = pino(
    {
      level,
      base,
      hooks,
      redact: {
        paths: ['req.headers.authorization', 'headers.authorization', 'token', '*.token', 'definition.env', 'definition.headers', 'env', 'headers'],
        censor: '<redacted>',
      },
    },
    stream as pino.DestinationStream,
  );
  return { logger, records: pretty ? undefined : makeRecordLog(level, base, hooks, stream) };
}

/**
 * Starts the daemon and resolves once it listens.
 * @throws ConfigError (bad config, naming file, server and key), SettingValueError / UnknownSettingError
 *   (bad env or flag), DaemonRunningError (another live daemon owns the state folder), or a listen error.
 */
export async function startDaemon(opts: DaemonOptions = {}): Promise<DaemonHandle> {
  const env = opts.env ?? process.env;
  const cwd = opts.cwd ?? process.cwd();
  const version = packageVersion();
  const configOpts = {
    ...(opts.configFlag === undefined ? {} : { configFlag: opts.configFlag }),
    env,
    cwd,
    ...(opts.demoFile ? { demoFile: opts.demoFile } : {}),
  };

  const config = await loadDaemonConfig(configOpts);
  if (config.errors.length > 0) throw new ConfigError(config.errors, config.file);
  const sources: Omit<SettingsSources, 'file' | 'filePath' | 'runtime'> = { env, cwd, ...(opts.flags ? { flags: opts.flags } : {}) };
  const settings = new Settings({ ...sources, file: config.settingsFile, ...(config.file === undefined ? {} : { filePath: config.file }) });

  const scrubber = new Scrubber();
  scrubber.setFromServers(config.servers);
  const { logger, records } = await makeLoggers(settings.get('log.level'), scrubber, opts);
  const log = logger.child({ component: 'daemon' });

  const stateDir = settings.get('paths.state');
  const socket = settings.get('daemon.socket');
  checkSocketPath(socket); // before anything is created: a cut path would bind outside the folder
  await ensureStateDir(stateDir);
  // A socket configured outside the state folder: create its folder if missing, never loosen or tighten an existing one.
  await mkdir(dirname(socket), { recursive: true, mode: 0o700 });
  checkSocketTrust(socket, { folderOnly: true }); // a folder others can write: clients would refuse a socket there
  const lock: Lock = await acquireLock(stateDir, socket);
  if (lock.cleaned.length > 0) log.warn({ files: lock.cleaned }, 'cleaned up after a daemon that exited without doing so');
  // Upstreams a crashed daemon left running (recorded in the folder), before this one starts any.
  await sweepOrphans(stateDir, { logger: log });
  const processLedger = new ProcessLedger(stateDir, logger.child({ component: 'processes' }));

  const cleanups: Array<() => Promise<void>> = [() => lock.release(), () => processLedger.close()];
  const undo = async () => {
    // A file that cannot be removed (a read-only state folder) is logged with its errno and path; `mcpx stop` reports it too.
    for (const c of cleanups.reverse()) await c().catch((err: unknown) => log.error({ err }, 'could not clean up the state folder'));
  };

  let controller: Controller;
  let cache: EraCache;
  let catalogStore: CatalogStore;
  const apps: FastifyInstance[] = [];
  let token: string | undefined;
  let tcp: { host: string; port: number } | null = null;
  let stopping = false;
  const startedAt = Date.now();
  let ui!: UiHub;
  let uiListener: Promise<UiAddress> | undefined;
  let buildCommon: (() => Parameters<typeof buildApp>[0]) | undefined;
  /** The page's address: the TCP listener, or (daemon.port off) one opened on 127.0.0.1 for it with the same rules. */
  const uiAddress = (): Promise<UiAddress> => {
    if (tcp) return Promise.resolve(tcp);
    uiListener ??= (async () => {
      if (stopping || !buildCommon) throw new McpxError('MCPX_SHUTTING_DOWN', stopping ? 'the daemon is stopping' : 'the daemon is not ready for the page yet');
      token ??= randomBytes(32).toString('base64url');
      scrubber.addFixed(token);
      const uiApp = await buildApp({ ...buildCommon(), listener: 'tcp', token: () => token });
      apps.push(uiApp);
      cleanups.push(() => uiApp.close());
      boundConnections(uiApp.server, settings.get('daemon.maxConnections'), log, 'ui');
      await uiApp.listen({ host: '127.0.0.1', port: 0 });
      return { host: '127.0.0.1', port: (uiApp.server.address() as AddressInfo).port };
    })();
    uiListener.catch(() => (uiListener = undefined));
    return uiListener;
  };
  try {
    cache = await EraCache.open(stateDir, { logger: logger.child({ component: 'era-cache' }) });
    cache.maxAgeMs = settings.get('upstream.eraCacheMaxAge');
    const eraCache = cache;
    settings.onChange((c) => {
      if (c.path === 'upstream.eraCacheMaxAge') eraCache.maxAgeMs = Number(c.value);
    });
    catalogStore = await CatalogStore.open(stateDir, { logger: logger.child({ component: 'catalog' }), scrub: (t) => scrubber.scrub(t) });
    // The `mcpx ui` page: its probe ring reads every session; its listener is TCP's, or one opened for it.
    ui = new UiHub({ scrub: (t) => scrubber.scrub(t), address: () => uiAddress() });
    const probes = ui.probes;
    let inspector: StatelyInspector | undefined;
    if (opts.inspect) {
      const { startStatelyInspector } = await import('../inspect/stately.js');
      const started = await startStatelyInspector({ ...opts.inspect, scrub: (t) => scrubber.scrub(t), logger });
      inspector = started;
      ui.inspectorUrl = started.url;
      cleanups.push(() => started.stop());
    }
    // OAuth: the credentials of HTTP servers, kept and refreshed here alone (src/auth).
    let hub: EventHub | undefined;
    const auth = new AuthManager({
      store: await CredentialStore.open(stateDir, { logger: logger.child({ component: 'credentials' }) }),
      onChange: (view) => hub?.publish({ type: 'server.auth', ...view }),
      onSecrets: (owner, secrets) => scrubber.setDynamic(owner, secrets),
      log: logger.child({ component: 'oauth' }),
    });
    cleanups.push(() => auth.close());
    const registry = createPoolRegistry({
      settings,
      cache,
      authorizer: (server) => auth.authorizer(server),
      logger,
      inspectPool: inspector !== undefined,
      inspect: (ev, source) => {
        probes.inspect(ev, source);
        inspector?.inspect(ev, source);
      },
    });
    controller = new Controller({
      settings,
      registry,
      config,
      logger,
      ...(records ? { records } : {}),
      hub: (hub = new EventHub()),
      scrubber,
      auth,
      settingsSources: sources,
      loadConfig: () => loadDaemonConfig(configOpts),
      catalogStore,
    });
    cleanups.push(() => controller.stop());
    settings.onChange((c) => {
      if (c.path !== 'log.level') return;
      logger.level = String(c.value);
      records?.setLevel(String(c.value));
    });
    await controller.start();

    // the socket: whatever is there is stale (we hold the lock), unless something answers on it
    if (await socketAnswers(socket)) {
      throw new McpxError(
        'MCPX_SOCKET_CONFLICT',
        `something already answers on ${socket} (daemon.socket); is another daemon using it with a different state folder?`,
        { data: { socket } },
      );
    }
    // Whatever is left at the socket path is stale (we hold the lock and nothing answers); only a socket is removed.
    if (
      await stat(socket).then(
        (s) => !s.isSocket(),
        () => false,
      )
    ) {
      throw new McpxError('MCPX_SOCKET_CONFLICT', `daemon.socket ${socket} exists and is not a socket; move it away or choose another path`, {
        data: { socket },
      });
    }
    await rm(socket, { force: true });
    const info = (): DaemonInfo => ({
      stateDir,
      socket,
      tcp: tcp ? { ...tcp, auth: settings.get('daemon.auth') } : null,
    });
    const shutdown = () => void handle.stop('shutdown requested over the API');
    // One /mcp entry for both listeners: a legacy MCP session is the same whichever way it came in.
    // Made on the first /mcp request: the MCP SDK's server side is not loaded before the daemon listens.
    let mcpEntry: Promise<McpHttpEntry> | undefined;
    const mcp = (): Promise<McpHttpEntry> =>
      (mcpEntry ??= Promise.all([import('../front/http-entry.js'), import('../front/controller-backend.js')]).then(
        ([{ McpHttpEntry }, { ControllerBackend }]) =>
          new McpHttpEntry({
            backend: new ControllerBackend(controller),
            version,
            logger,
            questionTtlSeconds: Math.ceil(settings.get('serve.questionTtl') / 1000),
            maxSessions: settings.get('serve.maxSessions'),
            sessionIdleMs: settings.get('serve.sessionIdleTimeout'),
          }),
      ));
    cleanups.push(async () => (mcpEntry ? (await mcpEntry).close() : undefined));
    // The front of every `mcpx serve`: one stream per serve on the socket, made on the first one.
    let serveEntry: Promise<SocketEntry> | undefined;
    const serve = (): Promise<SocketEntry> =>
      (serveEntry ??= Promise.all([import('../front/socket-entry.js'), import('../front/controller-backend.js')]).then(
        ([{ SocketEntry }, { ControllerBackend }]) =>
          new SocketEntry({
            backend: new ControllerBackend(controller),
            version,
            logger,
            questionTtlSeconds: () => Math.ceil(settings.get('serve.questionTtl') / 1000),
          }),
      ));
    const common = { controller, logger, version, startedAt, info, shutdown, isStopping: () => stopping, mcp, ui };
    buildCommon = () => common;
    const socketApp = await buildApp({ ...common, listener: 'socket', serve });
    apps.push(socketApp);
    cleanups.push(() => socketApp.close());
    // Before the listener closes (it waits for every connection, streams included).
    cleanups.push(async () => (serveEntry ? (await serveEntry).close() : undefined));
    // Bound 0600 from the start: a client refuses a socket others could write, even before the chmod.
    const umask = process.umask(0o177);
    try {
      await socketApp.listen({ path: socket });
    } finally {
      process.umask(umask);
    }
    cleanups.push(() => rm(socket, { force: true }));
    await chmod(socket, 0o600);

    const port = settings.get('daemon.port');
    if (port !== null) {
      const host = settings.get('daemon.host');
      token = randomBytes(32).toString('base64url');
      scrubber.addFixed(token);
      const tcpApp = await buildApp({ ...common, listener: 'tcp', token: () => token });
      apps.push(tcpApp);
      cleanups.push(() => tcpApp.close());
      const maxConnections = boundConnections(tcpApp.server, settings.get('daemon.maxConnections'), log, 'tcp');
      log.debug({ maxConnections }, 'loopback TCP connections bounded');
      await tcpApp.listen({ host, port });
      tcp = { host, port };
    }

    await writeDaemonFile(stateDir, daemonFile());
    cleanups.push(() => rm(`${stateDir}/${DAEMON_JSON}`, { force: true }));
  } catch (err) {
    await undo();
    throw err;
  }

  function daemonFile(): DaemonFile {
    const auth = settings.get('daemon.auth');
    return {
      pid: process.pid,
      version,
      stateDir,
      socket,
      host: tcp?.host ?? null,
      port: tcp?.port ?? null,
      auth,
      ...(tcp && token && auth !== 'none' ? { token } : {}),
      startedAt: new Date(startedAt).toISOString(),
    };
  }
  // daemon.auth applies at once; daemon.json says whether a token is needed
  settings.onChange((c) => {
    if (c.path === 'daemon.auth' && !stopping)
      void writeDaemonFile(stateDir, daemonFile()).catch((err: unknown) => log.error({ err }, 'could not rewrite daemon.json'));
  });

  // ---- watching the config file ----
  const debounceMs = opts.watchDebounceMs ?? 200;
  let watcher: FSWatcher | undefined;
  let watchedDir: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  const rewatch = () => {
    const file = controller.config.file;
    const dir = file === undefined ? undefined : dirname(file);
    if (dir === watchedDir) return;
    watcher?.close();
    watcher = undefined;
    watchedDir = dir;
    if (dir === undefined || file === undefined) return;
    try {
      watcher = watch(dir, { persistent: false }, (_event, name) => {
        const current = controller.config.file;
        if (current === undefined) return;
        if (name !== null && name !== basename(current)) return;
        if (timer) clearTimeout(timer);
        timer = setTimeout(() => {
          timer = undefined;
          if (stopping) return;
          void controller.reload('file changed').then(rewatch, (err: unknown) => log.error({ err }, 'reload failed'));
        }, debounceMs);
      });
      watcher.on('error', (err) => log.warn({ err, dir }, 'config watcher failed; use mcpx reload'));
      log.debug({ dir, file }, 'watching the config file');
    } catch (err) {
      log.warn({ err, dir }, 'cannot watch the config folder; use mcpx reload after editing');
    }
  };
  rewatch();
  controller.hub.subscribe((e) => {
    if (e.type === 'config.reloaded') rewatch();
  });

  // ---- stopping ----
  let resolveStopped!: () => void;
  const stopped = new Promise<void>((r) => (resolveStopped = r));
  let stopPromise: Promise<void> | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    log.info({ signal }, 'stopping');
    void handle.stop(signal);
  };
  const onHup = () => {
    void controller.reload('SIGHUP');
  };

  const handle: DaemonHandle = {
    pid: process.pid,
    version,
    stateDir,
    socket,
    get tcp() {
      return tcp;
    },
    get token() {
      return tcp && settings.get('daemon.auth') !== 'none' ? token : undefined;
    },
    controller,
    logger,
    stopped,
    stop(reason = 'stop') {
      stopPromise ??= (async () => {
        stopping = true;
        const t0 = Date.now();
        if (timer) clearTimeout(timer);
        watcher?.close();
        if (records) process.off('exit', records.flush);
        if (opts.handleSignals) {
          process.off('SIGINT', onSignal);
          process.off('SIGTERM', onSignal);
          process.off('SIGHUP', onHup);
        }
        log.info({ reason }, 'stopping every server');
        // Pools first: calls in flight fail at once, so closing the listeners does not wait on them.
        await controller.stop().catch((err: unknown) => log.error({ err }, 'error while stopping the servers'));
        await cache.whenIdle().catch((err: unknown) => log.error({ err }, 'could not flush the era cache'));
        await catalogStore.whenIdle().catch((err: unknown) => log.error({ err }, 'could not flush the tool catalogue'));
        await undo();
        log.info({ ms: Date.now() - t0 }, 'daemon stopped');
        resolveStopped();
      })();
      return stopPromise;
    },
  };

  // The call records still buffered when the process exits (an uncaught error included) are written then.
  if (records) process.on('exit', records.flush);
  if (opts.handleSignals) {
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    process.on('SIGHUP', onHup);
  }

  log.info(
    {
      version,
      socket,
      ...(tcp ? { tcp: `${tcp.host}:${tcp.port}`, auth: settings.get('daemon.auth') } : {}),
      config: config.file ?? null,
      demo: config.demo === true,
      servers: config.servers.filter((s) => !s.disabled).map((s) => s.name),
    },
    'mcpx daemon ready',
  );
  for (const w of config.warnings) log.warn({ file: config.file }, w.message);
  // The bundled demo exists to show the three eras: start its servers now, so the first `mcpx protocol`
  // already shows them. A user's own servers start on first use (some are heavy: a browser, an index).
  if (config.demo === true) {
    for (const s of config.servers) {
      if (!s.disabled)
        void controller.tools(s.name, {}, { fresh: true }).catch((err: unknown) => log.warn({ server: s.name, err }, 'could not start a demo server'));
    }
  }
  return handle;
}
