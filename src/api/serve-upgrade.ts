/**
 * `GET /v1/mcp-stream` on the daemon's Unix socket, upgraded: where each `mcpx serve` brings its client.
 * Past the checks (the daemon is not stopping, every server named is configured) the answer is `101`, and
 * the socket is handed to the front for serve streams (src/front/socket-entry.ts, loaded on the first
 * stream): from then on it carries the MCP client's newline-delimited JSON-RPC, both ways, with no HTTP
 * framing. A refusal is an ordinary HTTP answer with the /v1 error body, and the connection closes.
 *
 * Only the Unix socket serves it (its file mode is the access rule); on TCP an upgrade is an ordinary
 * request, and no route has this path.
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { McpxError } from '../errors.js';
import type { Logger } from '../log.js';
import type { EntryMode } from '../front/entry-mode.js';
import { entryToolsOf } from '../front/tool-strategy.js';
import type { SocketEntry } from '../front/socket-entry.js';
import type { Controller } from '../core/controller.js';
import { MCP_STREAM_PATH, MCP_STREAM_UPGRADE } from '../front/headers.js';

export interface ServeUpgradeDeps {
  controller: Controller;
  /** The front for serve streams, made on first use. */
  entry: () => Promise<SocketEntry>;
  isStopping?: () => boolean;
  logger?: Logger;
}

const SESSION = /^[A-Za-z0-9._:-]{1,128}$/;
const REASON: Record<number, string> = { 400: 'Bad Request', 404: 'Not Found', 500: 'Internal Server Error', 503: 'Service Unavailable' };

function refuse(socket: Socket, status: number, code: string, message: string): void {
  const body = JSON.stringify({ ok: false, error: { code, message } });
  socket.end(
    `HTTP/1.1 ${status} ${REASON[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** The `upgrade` listener of the socket listener's HTTP server. */
export function serveUpgrade(deps: ServeUpgradeDeps): (req: IncomingMessage, socket: Socket, head: Buffer) => void {
  let seq = 0;
  return (req, socket, head) => {
    socket.on('error', (err) => deps.logger?.debug({ err }, 'serve stream refused'));
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== MCP_STREAM_PATH || req.method !== 'GET' || (req.headers.upgrade ?? '').toLowerCase() !== MCP_STREAM_UPGRADE) {
      refuse(socket, 404, 'MCPX_NOT_FOUND', `no upgrade to ${JSON.stringify(req.headers.upgrade ?? '')} at ${req.method} ${url.pathname}`);
      return;
    }
    if (deps.isStopping?.()) {
      refuse(socket, 503, 'MCPX_SHUTTING_DOWN', 'the daemon is shutting down');
      return;
    }
    const passthrough = url.searchParams.get('passthrough') ?? undefined;
    const servers = url.searchParams
      .get('servers')
      ?.split(',')
      .map((x) => x.trim())
      .filter((x) => x.length > 0);
    const given = url.searchParams.get('session');
    if (given !== null && !SESSION.test(given)) {
      refuse(socket, 400, 'MCPX_BAD_REQUEST', 'session must be 1 to 128 characters of A-Z a-z 0-9 . _ : -');
      return;
    }
    const tools = entryToolsOf(url.searchParams);
    if (typeof tools === 'string') {
      refuse(socket, 400, 'MCPX_BAD_REQUEST', tools);
      return;
    }
    const session = given ?? `serve-${process.pid}-${++seq}`;
    // `config`: the config `mcpx serve` resolved (its --config, MCPX_CONFIG, the walk up, the user config); loaded on first use.
    const named = url.searchParams.get('config');
    const config = named === null || named === '' ? Promise.resolve(undefined) : deps.controller.useConfig(named);
    void config.then(
      (id) => {
        const entry = deps.controller.configs.get(id);
        const known = entry.cfg.servers.filter((s) => !s.disabled).map((s) => s.name);
        const missing = [...(passthrough === undefined ? [] : [passthrough]), ...(servers ?? [])].filter((n) => !known.includes(n));
        if (missing.length > 0) {
          refuse(
            socket,
            404,
            'MCPX_UNKNOWN_SERVER',
            `no server ${missing.map((n) => JSON.stringify(n)).join(', ')} is configured${entry.cfg.file ? ` in ${entry.cfg.file}` : ''} (configured: ${known.join(', ') || 'none'})`,
          );
          return;
        }
        const mode: EntryMode = {
          ...(passthrough === undefined ? {} : { passthrough }),
          ...(servers === undefined ? {} : { servers }),
          ...(id === undefined ? {} : { config: id }),
          ...tools,
        };
        open(mode);
      },
      (err: unknown) => {
        const e = err instanceof McpxError ? err : new McpxError('MCPX_INTERNAL', String(err));
        refuse(socket, e.code === 'MCPX_BAD_CONFIG' ? 400 : 500, e.code, e.message);
      },
    );
    const open = (mode: EntryMode) =>
      deps.entry().then(
        (entry) => {
          if (socket.destroyed) return;
          socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: ${MCP_STREAM_UPGRADE}\r\nConnection: Upgrade\r\n\r\n`);
          entry.accept(socket, head, mode, session);
        },
        (err: unknown) => {
          deps.logger?.error({ err }, 'could not open a serve stream');
          refuse(socket, 500, 'MCPX_INTERNAL', `the daemon could not serve the stream: ${err instanceof Error ? err.message : String(err)}`);
        },
      );
  };
}
