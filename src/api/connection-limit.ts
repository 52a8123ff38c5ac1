/**
 * How many connections a loopback TCP listener holds at once. Anyone on the machine can connect to
 * loopback, token or not, and every connection is a file descriptor: without a bound, enough of them
 * leave the daemon none for its Unix socket, its upstreams and its files. Each TCP listener is therefore
 * held to `daemon.maxConnections` and to half the process's descriptor limit (the other half stays for
 * the Unix socket, upstream pipes and files), whichever is less;
 * node closes a connection past the bound as soon as it is accepted. The Unix socket is not bounded:
 * only its owner reaches it (mode 0600). On every listener, a connection that sends no request in time
 * is closed (`closeSilentConnections`).
 */
import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import type { Server, Socket } from 'node:net';
import type { Logger } from '../log.js';

/** The soft limit on open descriptors (Linux: /proc/self/limits), or undefined where it cannot be read. */
export function descriptorLimit(): number | undefined {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
    return soft === undefined || !/^\d+$/.test(soft) ? undefined : Number(soft);
  } catch {
    return undefined;
  }
}

/**
 * The bound for one TCP listener: `configured`, at most half the descriptor limit (at least 4). Only one
 * TCP listener exists at a time (the page uses daemon.port's when it is on).
 */
export function connectionBound(configured: number, limit = descriptorLimit()): number {
  return limit === undefined ? configured : Math.max(4, Math.min(configured, Math.floor(limit / 2)));
}

/** Bounds `server`'s connections; a refused connection is logged at most every 10 s. */
export function boundConnections(server: Server, configured: number, log?: Logger, listener = 'tcp'): number {
  const max = connectionBound(configured);
  server.maxConnections = max;
  let dropped = 0;
  let lastLog = 0;
  server.on('drop', () => {
    dropped++;
    const now = Date.now();
    if (now - lastLog < 10_000) return;
    lastLog = now;
    log?.warn({ listener, maxConnections: max, dropped }, "closed connections past the listener's bound (daemon.maxConnections)");
  });
  return max;
}

/**
 * How long a new connection (either listener) has to send its first request's headers. Node's own
 * `headersTimeout` starts only with a request's first byte, so a connection that never sends one would
 * hold its descriptor (and a place under the TCP bound) for ever. The default of `daemon.firstRequestTimeout`.
 */
export const FIRST_REQUEST_TIMEOUT_MS = 10_000;

/** How long a request may take to arrive whole, headers and body (node's `requestTimeout`, answered 408); `daemon.requestReceiveTimeout`'s default. */
export const REQUEST_RECEIVE_TIMEOUT_MS = 30_000;

/**
 * Closes every connection of `server` that has not sent a whole request head (a request or an upgrade)
 * within `ms` of being accepted. Once a request has come, the connection is node's: its `requestTimeout`
 * bounds the rest of that request, `keepAliveTimeout` the wait for the next; a long answer or an event
 * stream is never cut.
 */
export function closeSilentConnections(server: Server, ms = FIRST_REQUEST_TIMEOUT_MS, log?: Logger, listener = 'tcp'): void {
  const waiting = new Map<Socket, NodeJS.Timeout>();
  let closed = 0;
  let lastLog = 0;
  const settle = (socket: Socket) => {
    const timer = waiting.get(socket);
    if (timer === undefined) return;
    clearTimeout(timer);
    waiting.delete(socket);
  };
  server.on('connection', (socket: Socket) => {
    const timer = setTimeout(() => {
      waiting.delete(socket);
      closed++;
      socket.destroy();
      const now = Date.now();
      if (now - lastLog < 10_000) return;
      lastLog = now;
      log?.warn({ listener, closed, afterMs: ms }, 'closed connections that sent no request in time');
    }, ms);
    timer.unref();
    waiting.set(socket, timer);
    socket.once('close', () => settle(socket));
  });
  const came = (req: IncomingMessage) => settle(req.socket);
  server.on('request', came);
  server.on('upgrade', came);
}
