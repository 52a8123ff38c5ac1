/**
 * `mcpx serve`: the front on stdio, for one MCP client connection (Claude Desktop, Claude Code,
 * Cursor, VS Code …), relaying to the daemon over its socket.
 *
 * The SDK's `serveStdio` owns the caller's era: an `initialize` pins the connection to a legacy
 * front, a `server/discover` or a `_meta`-carrying request to a 2026-07-28 one. stdout carries only
 * protocol messages; logs go to stderr (level from MCPX_LOG_LEVEL, default warn). When the client
 * closes stdin, serve stops; the daemon and its upstreams stay for the next client.
 */
import { randomUUID } from 'node:crypto';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { pino } from 'pino';
import { McpxError } from '../errors.js';
import { DaemonClient, type Target } from '../cli/client.js';
import type { Logger } from '../log.js';
import { packageVersion } from '../package-info.js';
import { frontFactory } from './front.js';
import { SocketBackend } from './socket-backend.js';

export interface ServeOptions {
  target: Target;
  /** The CLI entry that runs `daemon`. */
  entry: string;
  passthrough?: string;
  servers?: string[];
}

export async function runServe(opts: ServeOptions): Promise<void> {
  const logger = pino({ level: process.env['MCPX_LOG_LEVEL'] ?? 'warn', base: { serve: process.pid } }, pino.destination({ dest: 2, sync: true })) as unknown as Logger;
  const backend = new SocketBackend({ target: opts.target, entry: opts.entry, logger });

  // Reach (or start) the daemon first, so a wrong server name fails here, clearly, and the client's
  // first tools/list does not wait for a daemon start. (No listing here: with no catalogue yet that
  // would start every server before the client's initialize is answered.)
  await backend.connect();
  const client = new DaemonClient(opts.target.socket);
  try {
    const res = await client.request<{ servers: Array<{ server: string; disabled: boolean }> }>('GET', '/v1/servers');
    const known = new Set(res.body.servers.filter((s) => !s.disabled).map((s) => s.server));
    const wanted = [...(opts.passthrough === undefined ? [] : [opts.passthrough]), ...(opts.servers ?? [])];
    const missing = wanted.filter((n) => !known.has(n));
    if (missing.length > 0) {
      throw new McpxError('MCPX_UNKNOWN_SERVER', `no server ${missing.map((n) => JSON.stringify(n)).join(', ')} is configured (configured: ${[...known].join(', ') || 'none'})`);
    }
  } finally {
    await client.close();
  }

  const factory = frontFactory({
    backend,
    version: packageVersion(),
    logger,
    session: `serve-${process.pid}-${randomUUID().slice(0, 8)}`,
    ...(opts.target.questionTtlMs === undefined ? {} : { questionTtlSeconds: Math.ceil(opts.target.questionTtlMs / 1000) }),
    ...(opts.passthrough === undefined ? {} : { passthrough: opts.passthrough }),
    ...(opts.servers === undefined ? {} : { servers: opts.servers }),
  });
  const handle = serveStdio(factory, { legacy: 'serve', onerror: (err) => logger.debug({ err }, 'stdio entry') });
  await new Promise<void>((resolve) => {
    process.stdin.once('end', resolve);
    process.stdin.once('close', resolve);
  });
  factory.close();
  await handle.close().catch(() => undefined);
  await backend.close();
}
