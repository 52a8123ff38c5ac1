/**
 * The daemon's HTTP listeners: the socket (`daemon.socket`, 0600, no token), loopback TCP when daemon.port
 * is set (bearer token), and, when it is not, one on 127.0.0.1 opened for the `mcpx ui` page on its first
 * use, with the same rules as TCP. Each is one fastify instance over the same Controller (../api/app.ts).
 */
import { randomBytes } from 'node:crypto';
import { chmod, rm, stat } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import type { Settings } from '../config/settings.js';
import { McpxError } from '../errors.js';
import type { SocketEntry } from '../front/socket-entry.js';
import type { Logger } from '../log.js';
import type { UiAddress } from '../ui/hub.js';
import { buildApp, type AppDeps } from '../api/app.js';
import { boundConnections } from '../api/connection-limit.js';
import type { Scrubber } from '../core/secrets.js';
import { socketAnswers } from './state-dir.js';

/** What every listener's app shares (the listener, its token and `serve` are each listener's own). */
export type CommonAppDeps = Omit<AppDeps, 'listener' | 'token' | 'serve'>;

export interface ListenersDeps {
  settings: Settings;
  scrubber: Scrubber;
  log: Logger;
  /** Runs `close` when the daemon stops, before whatever was registered earlier. */
  onStop(close: () => Promise<void>): void;
  isStopping(): boolean;
}

export class Listeners {
  private tcpAddress: { host: string; port: number } | null = null;
  private tcpToken: string | undefined;
  private uiListener: Promise<UiAddress> | undefined;
  private common: CommonAppDeps | undefined;

  constructor(private readonly deps: ListenersDeps) {}

  /** The TCP listener's address; null while daemon.port is off. */
  get tcp(): { host: string; port: number } | null {
    return this.tcpAddress;
  }

  /** The bearer token of the TCP listener (or of the page's own), whether or not daemon.auth asks for it. */
  get token(): string | undefined {
    return this.tcpToken;
  }

  /** The page's address: the TCP listener, or (daemon.port off) one opened on 127.0.0.1 for it with the same rules. */
  uiAddress(): Promise<UiAddress> {
    const tcp = this.tcpAddress;
    if (tcp) return Promise.resolve(tcp);
    this.uiListener ??= (async () => {
      const { settings, scrubber, log } = this.deps;
      const stopping = this.deps.isStopping();
      if (stopping || !this.common) throw new McpxError('MCPX_SHUTTING_DOWN', stopping ? 'the daemon is stopping' : 'the daemon is not ready for the page yet');
      this.tcpToken ??= randomBytes(32).toString('base64url');
      scrubber.addFixed(this.tcpToken);
      const uiApp = await buildApp({ ...this.common, listener: 'tcp', token: () => this.tcpToken });
      this.deps.onStop(() => uiApp.close());
      boundConnections(uiApp.server, settings.get('daemon.maxConnections'), log, 'ui');
      await uiApp.listen({ host: '127.0.0.1', port: 0 });
      return { host: '127.0.0.1', port: (uiApp.server.address() as AddressInfo).port };
    })();
    this.uiListener.catch(() => (this.uiListener = undefined));
    return this.uiListener;
  }

  /**
   * Listens on the socket path (whatever was left there by a daemon that did not clean up is removed), with
   * `mcpx serve`'s streams; from then on the page's own listener can be opened with the same `common`.
   * @throws McpxError MCPX_SOCKET_CONFLICT (something answers there, or it is not a socket).
   */
  async listenSocket(socket: string, common: CommonAppDeps, serve: { entry: () => Promise<SocketEntry>; close: () => Promise<void> }): Promise<void> {
    await clearStaleSocket(socket);
    this.common = common;
    const socketApp = await buildApp({ ...common, listener: 'socket', serve: serve.entry });
    this.deps.onStop(() => socketApp.close());
    // Before the listener closes (it waits for every connection, streams included).
    this.deps.onStop(serve.close);
    // Bound 0600 from the start: a client refuses a socket others could write, even before the chmod.
    const umask = process.umask(0o177);
    try {
      await socketApp.listen({ path: socket });
    } finally {
      process.umask(umask);
    }
    this.deps.onStop(() => rm(socket, { force: true }));
    await chmod(socket, 0o600);
  }

  /** Listens on daemon.host:daemon.port with a fresh bearer token; nothing when daemon.port is off. */
  async listenTcp(common: CommonAppDeps): Promise<void> {
    const { settings, scrubber, log } = this.deps;
    const port = settings.get('daemon.port');
    if (port === null) return;
    const host = settings.get('daemon.host');
    this.tcpToken = randomBytes(32).toString('base64url');
    scrubber.addFixed(this.tcpToken);
    const tcpApp = await buildApp({ ...common, listener: 'tcp', token: () => this.tcpToken });
    this.deps.onStop(() => tcpApp.close());
    const maxConnections = boundConnections(tcpApp.server, settings.get('daemon.maxConnections'), log, 'tcp');
    log.debug({ maxConnections }, 'loopback TCP connections bounded');
    await tcpApp.listen({ host, port });
    this.tcpAddress = { host, port };
  }
}

/** Whatever is at the socket path is stale (the caller holds the lock), unless something answers on it; only a socket is removed. */
async function clearStaleSocket(socket: string): Promise<void> {
  if (await socketAnswers(socket)) {
    throw new McpxError(
      'MCPX_SOCKET_CONFLICT',
      `something already answers on ${socket} (daemon.socket); is another daemon using it with a different state folder?`,
      { data: { socket } },
    );
  }
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
}
