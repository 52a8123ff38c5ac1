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
import { McpxError } from '../errors.js';
import { DaemonClient, type Target } from '../cli/client.js';
import { LateLogger, type Logger } from '../log.js';
import { packageVersion } from '../package-info.js';
import { RPC } from '../protocol/constants.js';
import { deepParamsRefusal } from '../server/json-depth.js';
import { SocketBackend } from './socket-backend.js';
import { MAX_LINE_BYTES, StdinGate } from './stdin-gate.js';
import { TurnBatchedOutput } from './turn-batched-output.js';

export interface ServeOptions {
  target: Target;
  /** The CLI entry that runs `daemon`. */
  entry: string;
  passthrough?: string;
  servers?: string[];
}

/** Fails, naming them, when some of the servers serve was asked for are not configured (or disabled). */
async function checkServers(socket: string, wanted: string[]): Promise<void> {
  const client = new DaemonClient(socket);
  try {
    const res = await client.request<{ servers: Array<{ server: string; disabled: boolean }> }>('GET', '/v1/servers');
    const known = new Set(res.body.servers.filter((s) => !s.disabled).map((s) => s.server));
    const missing = wanted.filter((n) => !known.has(n));
    if (missing.length > 0) {
      throw new McpxError(
        'MCPX_UNKNOWN_SERVER',
        `no server ${missing.map((n) => JSON.stringify(n)).join(', ')} is configured (configured: ${[...known].join(', ') || 'none'})`,
      );
    }
  } finally {
    await client.close();
  }
}

export async function runServe(opts: ServeOptions): Promise<void> {
  // What answers the client (the MCP SDK, the front) and pino load while the daemon is reached, not before:
  // start-up is mostly loading and compiling modules, and reaching the daemon is mostly waiting.
  const sdk = import('@modelcontextprotocol/server/stdio');
  const front = import('./front.js');
  const level = process.env['MCPX_LOG_LEVEL'] ?? 'warn';
  const logger = new LateLogger();
  // Logging off: pino is never loaded. On: lines logged before it is here are kept and written then.
  const logging =
    level === 'silent'
      ? (logger.drop(), Promise.resolve())
      : import('pino').then(({ default: pino }) =>
          logger.set(pino({ level, base: { serve: process.pid } }, pino.destination({ dest: 2, sync: true })) as unknown as Logger),
        );
  // Awaited below; a failed load is reported there, not as an unhandled rejection meanwhile.
  for (const p of [sdk, front, logging]) p.catch(() => undefined);
  const backend = new SocketBackend({ target: opts.target, entry: opts.entry, logger });

  // Reach (or start) the daemon first, so a wrong server name fails here, clearly, and the client's
  // first tools/list does not wait for a daemon start. (No listing here: with no catalogue yet that
  // would start every server before the client's initialize is answered.)
  try {
    await backend.connect();
    const wanted = [...(opts.passthrough === undefined ? [] : [opts.passthrough]), ...(opts.servers ?? [])];
    if (wanted.length > 0) await checkServers(opts.target.socket, wanted); // serving every server: nothing to check
  } catch (err) {
    await logging.catch(() => undefined); // what was logged on the way is written before the error
    throw err;
  }
  await logging;
  const [{ serveStdio, StdioServerTransport }, { frontFactory }] = await Promise.all([sdk, front]);
  const factory = frontFactory({
    backend,
    version: packageVersion(),
    logger,
    session: `serve-${process.pid}-${randomUUID().slice(0, 8)}`,
    ...(opts.target.questionTtlMs === undefined ? {} : { questionTtlSeconds: Math.ceil(opts.target.questionTtlMs / 1000) }),
    ...(opts.passthrough === undefined ? {} : { passthrough: opts.passthrough }),
    ...(opts.servers === undefined ? {} : { servers: opts.servers }),
  });
  // The SDK's own stdio transport, over a stdout whose writes of one turn leave together, reading stdin
  // through the gate (./stdin-gate.ts): lines past the size limit, batches, non-JSON and legacy lifecycle
  // breaches are answered there; the rest reaches the SDK a line at a time, each within the limit (so the
  // SDK's own buffer bound is not needed, and would only count lines queued before it started reading).
  const output = new TurnBatchedOutput(process.stdout);
  const gate = new StdinGate(process.stdin, { write: (line) => void output.write(line), maxLineBytes: MAX_LINE_BYTES, logger });
  const transport = new StdioServerTransport(gate.output, output.asWritable(), { maxBufferSize: Number.POSITIVE_INFINITY });
  // Answers written in serve's last turn are not left behind when the process ends.
  process.once('exit', output.flush);
  const handle = serveStdio(factory, { legacy: 'serve', transport, onerror: (err) => logger.debug({ err }, 'stdio entry') });
  // Deeper than what mcpx relays: answered here, before the SDK and the relay recurse through it (the /v1 rule).
  const deliver = transport.onmessage;
  transport.onmessage = (message) => {
    const deep = deepParamsRefusal(message);
    if (!deep) return deliver?.(message);
    if (deep.id === null) return undefined; // a notification: nothing to answer
    void transport
      .send({ jsonrpc: '2.0', id: deep.id, error: { code: RPC.invalidParams, message: deep.message } })
      .catch((err: unknown) => logger.debug({ err }, 'stdio entry'));
    return undefined;
  };
  // The gate reads stdin to its end whatever the SDK does, so this always comes.
  await gate.finished;
  output.flush();
  factory.close();
  await handle.close().catch(() => undefined);
  await backend.close();
}
