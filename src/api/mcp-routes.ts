/**
 * `/mcp` and `/mcp/:server`, as a fastify plugin: the MCP front over Streamable HTTP (both caller eras),
 * under the daemon's access rules. The entry (the MCP SDK's server side) loads on the first /mcp request,
 * not before the daemon listens. A response (an SSE stream above all) whose caller stops reading is cut
 * off alone (../front/unread-guard.ts).
 */
import type { ServerResponse } from 'node:http';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger as PinoLogger } from 'pino';
import type { McpHttpEntry } from '../front/http-entry.js';
import type { EntryMode } from '../front/entry-mode.js';
import { entryToolsOf } from '../front/tool-strategy.js';
import { send, statusFor, toApiError } from './api-errors.js';
import { deepParamsRefusal } from '../front/json-depth.js';
import type { Controller } from '../core/controller.js';
import { UnreadGuard, unreadLimits, type UnreadLimits } from '../front/unread-guard.js';

export interface McpRoutesOptions {
  controller: Controller;
  version: string;
  logger?: PinoLogger;
  /** The entry shared by the daemon's listeners, or a function that makes it on first use; default: one of its own. */
  mcp?: McpHttpEntry | (() => Promise<McpHttpEntry>);
}

export const mcpRoutes: FastifyPluginAsync<McpRoutesOptions> = async (app, opts) => {
  const { controller, version } = opts;
  const log = opts.logger?.child({ component: 'mcp' });
  let own: Promise<McpHttpEntry> | undefined;
  const given = opts.mcp;
  const mcpEntry = (): Promise<McpHttpEntry> => {
    if (typeof given === 'function') return given();
    if (given) return Promise.resolve(given);
    own ??= import('../front/http-entry.js').then(
      ({ McpHttpEntry }) => new McpHttpEntry({ controller, version, ...(opts.logger ? { logger: opts.logger } : {}) }),
    );
    return own;
  };
  if (!given) app.addHook('onClose', async () => (own ? (await own).close() : undefined));
  let nodeHandler: Promise<typeof import('@modelcontextprotocol/node').toNodeHandler> | undefined;
  const serveMcp = async (req: FastifyRequest, reply: FastifyReply, given: EntryMode) => {
    // How tools are offered and which are shown: the same query on /mcp and /mcp/<server>.
    const tools = entryToolsOf(new URL(req.url, 'http://localhost').searchParams);
    if (typeof tools === 'string') return send(reply, 400, { code: 'MCPX_BAD_REQUEST', message: tools });
    // `?config=/abs/path`: that config's servers (loaded on first use); none: the daemon's own.
    const named = (req.query as { config?: unknown }).config;
    let mode: EntryMode = { ...given, ...tools };
    if (typeof named === 'string' && named !== '') {
      try {
        const config = await controller.useConfig(named);
        if (config !== undefined) mode = { ...mode, config };
      } catch (err) {
        const e = toApiError(err);
        return send(reply, e.error.code === 'MCPX_BAD_CONFIG' ? 400 : statusFor(e.error.code), e.error);
      }
    }
    const entry = controller.configs.get(mode.config);
    const known = (name: string) => entry.cfg.servers.some((s) => s.name === name && !s.disabled);
    const missing = [mode.passthrough, ...(mode.servers ?? [])].find((n) => n !== undefined && !known(n));
    if (missing !== undefined) return send(reply, 404, { code: 'MCPX_UNKNOWN_SERVER', message: `no server ${JSON.stringify(missing)} is configured` });
    // Deeper than what mcpx relays (the /v1 rule), anywhere in the body: refused here, before the node
    // adapter re-serialises it (JSON.stringify recurses, and overflowed into a 500).
    const deep = (Array.isArray(req.body) ? req.body : [req.body]).map((m) => deepParamsRefusal(m)).find((r) => r !== undefined);
    if (deep)
      return reply
        .code(400)
        .type('application/json')
        .send({ jsonrpc: '2.0', id: deep.id, error: { code: deep.code, message: deep.message } });
    const [mcp, toNodeHandler] = await Promise.all([mcpEntry(), (nodeHandler ??= import('@modelcontextprotocol/node').then((m) => m.toNodeHandler))]);
    reply.hijack();
    guardUnread(reply.raw, () => unreadLimits(controller.settings), log);
    const body = req.body;
    await toNodeHandler({ fetch: (request) => mcp.fetch(request, body, mode) }, { onerror: (err) => log?.error({ err }, '/mcp failed') })(
      req.raw as never,
      reply.raw as never,
      body,
    );
    return undefined;
  };
  const mcpMethods: Array<'GET' | 'POST' | 'DELETE'> = ['GET', 'POST', 'DELETE'];
  app.route({
    method: mcpMethods,
    url: '/mcp',
    handler: async (req, reply) => {
      const servers = (req.query as { servers?: unknown }).servers;
      const list =
        typeof servers === 'string'
          ? servers
              .split(',')
              .map((x) => x.trim())
              .filter((x) => x.length > 0)
          : undefined;
      return serveMcp(req, reply, list ? { servers: list } : {});
    },
  });
  app.route({
    method: mcpMethods,
    url: '/mcp/:server',
    handler: async (req, reply) => serveMcp(req, reply, { passthrough: (req.params as { server: string }).server }),
  });
};

/**
 * Watches what waits in `res` for its caller: each write the socket does not take at once is checked
 * (the node adapter then waits for drain, while the SDK's stream keeps what comes meanwhile).
 */
function guardUnread(res: ServerResponse, limits: () => UnreadLimits, log: PinoLogger | undefined): void {
  let guard: UnreadGuard | undefined;
  const write = res.write;
  res.write = function (this: ServerResponse, ...args: Parameters<ServerResponse['write']>): boolean {
    const ok = (write as (...a: unknown[]) => boolean).apply(this, args);
    if (!ok) {
      guard ??= new UnreadGuard(res, limits(), (o) => {
        log?.warn({ reason: o.reason, queuedBytes: o.queued }, `closed a /mcp response: ${o.message}`);
        res.destroy();
      });
      guard.check();
    }
    return ok;
  } as ServerResponse['write'];
  res.once('close', () => guard?.stop());
}
