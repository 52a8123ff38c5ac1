/**
 * The daemon's MCP fronts, each made on its first use: the MCP SDK's server side is not loaded before
 * the daemon listens. One `/mcp` entry for both listeners (a legacy MCP session is the same whichever way
 * it came in); one socket entry for every `mcpx serve` stream.
 */
import type { Settings } from '../config/settings.js';
import type { McpHttpEntry } from '../front/http-entry.js';
import type { SocketEntry } from '../front/socket-entry.js';
import type { Logger } from '../log.js';
import type { Controller } from '../core/controller.js';
import { unreadLimits } from '../front/unread-guard.js';

export interface FrontsDeps {
  controller: Controller;
  settings: Settings;
  version: string;
  logger: Logger;
}

export class LazyFronts {
  private mcpEntry: Promise<McpHttpEntry> | undefined;
  private serveEntry: Promise<SocketEntry> | undefined;

  constructor(private readonly deps: FrontsDeps) {}

  /** The `/mcp` entry. */
  readonly mcp = (): Promise<McpHttpEntry> =>
    (this.mcpEntry ??= import('../front/http-entry.js').then(
      ({ McpHttpEntry }) =>
        new McpHttpEntry({
          controller: this.deps.controller,
          version: this.deps.version,
          logger: this.deps.logger,
          questionTtlSeconds: Math.ceil(this.deps.settings.get('serve.questionTtl') / 1000),
          maxSessions: this.deps.settings.get('serve.maxSessions'),
          sessionIdleMs: this.deps.settings.get('serve.sessionIdleTimeout'),
        }),
    ));

  /** The front of every `mcpx serve`: one stream per serve on the socket. */
  readonly serve = (): Promise<SocketEntry> =>
    (this.serveEntry ??= import('../front/socket-entry.js').then(
      ({ SocketEntry }) =>
        new SocketEntry({
          controller: this.deps.controller,
          version: this.deps.version,
          logger: this.deps.logger,
          questionTtlSeconds: () => Math.ceil(this.deps.settings.get('serve.questionTtl') / 1000),
          maxInFlight: () => this.deps.settings.get('serve.maxInFlight'),
          unreadLimits: () => unreadLimits(this.deps.settings),
        }),
    ));

  /** Closes the `/mcp` entry, if one was made. */
  readonly closeMcp = async (): Promise<void> => (this.mcpEntry ? (await this.mcpEntry).close() : undefined);

  /** Closes the serve entry, if one was made. */
  readonly closeServe = async (): Promise<void> => (this.serveEntry ? (await this.serveEntry).close() : undefined);
}
