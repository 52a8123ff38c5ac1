/**
 * `mcpx serve`: one MCP client connection (Claude Desktop, Claude Code, Cursor, VS Code …) on stdio,
 * served by the daemon's front (src/front/socket-entry.ts) over one stream on its socket, through the
 * pipe of ./pipe.ts. serve itself loads no MCP SDK, no schemas, no HTTP framework and no pino: every
 * client a person runs starts its own serve, and each holds what it loaded for as long as the client runs.
 *
 * The daemon is reached (or started) first, so a wrong server name fails here, clearly, before the
 * client's first message. stdout carries only protocol messages; serve's few log lines go to stderr
 * (level from MCPX_LOG_LEVEL, default warn). When the client closes stdin, serve stops; the daemon and
 * its upstreams stay for the next client.
 */
import type { Target } from '../daemon-client/target.js';
import type { EntryTools } from '../front/tool-strategy.js';
import { lineLogger } from '../log.js';
import { openDaemonStream } from './daemon-stream.js';
import { Pipe } from './pipe.js';

export interface ServeOptions extends EntryTools {
  target: Target;
  /** The CLI entry that runs `daemon`. */
  entry: string;
  passthrough?: string;
  servers?: string[];
}

export async function runServe(opts: ServeOptions): Promise<void> {
  const logger = lineLogger(process.env['MCPX_LOG_LEVEL'] ?? 'warn', (line) => process.stderr.write(line), { serve: process.pid });
  // A scope key, not a secret: unique enough among the serves of one daemon (no node:crypto to load for it).
  const session = `serve-${process.pid}-${Date.now().toString(36)}`;
  const open = () =>
    openDaemonStream({
      target: opts.target,
      entry: opts.entry,
      session,
      ...(opts.passthrough === undefined ? {} : { passthrough: opts.passthrough }),
      ...(opts.servers === undefined ? {} : { servers: opts.servers }),
      tools: {
        ...(opts.tools ? { tools: opts.tools } : {}),
        ...(opts.allowTools ? { allowTools: opts.allowTools } : {}),
        ...(opts.denyTools ? { denyTools: opts.denyTools } : {}),
      },
    });
  const pipe = new Pipe(
    { input: process.stdin, output: process.stdout, open, logger, ...(opts.passthrough === undefined ? {} : { passthrough: opts.passthrough }) },
    await open(),
  );
  await pipe.finished;
}
