/**
 * How many connections a loopback TCP listener holds at once. Anyone on the machine can connect to
 * loopback, token or not, and every connection is a file descriptor: without a bound, enough of them
 * leave the daemon none for its Unix socket, its upstreams and its files. Each TCP listener is therefore
 * held to `daemon.maxConnections` and to half the process's descriptor limit (the other half stays for
 * the Unix socket, upstream pipes and files), whichever is less;
 * node closes a connection past the bound as soon as it is accepted. The Unix socket is not bounded:
 * only its owner reaches it (mode 0600).
 */
import { readFileSync } from 'node:fs';
import type { Server } from 'node:net';
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
