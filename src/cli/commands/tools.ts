/** `mcpx tools [SERVER]`: list tools, starting servers as needed. */
import type { Command } from 'commander';
import { describeLeftOut } from '../../catalog/left-out.js';
import { McpxError } from '../../errors.js';
import type { ToolsView } from '../../core/views.js';
import { api, callHeaders, out, printJson, withClient, withJson, withProgress, withTarget, type CliContext, type CommonOpts } from '../common.js';
import { clip, table } from '../format.js';
import { terminalSafe } from '../terminal-text.js';

/** The message prefixed with its server, once (the daemon's start errors already begin with it). */
function named(server: string, message: string): string {
  return message.startsWith(`${server}: `) ? message : `${server}: ${message}`;
}

export function register(program: Command, cli: CliContext): void {
  withJson(
    withTarget(program.command('tools').argument('[server]', 'one server (default: every server)').description('list tools, starting servers as needed')),
  )
    .option('--caller-protocol <revision>', 'answer for a caller on this MCP revision (X-Mcpx-Caller-Protocol), e.g. 2025-11-25')
    .option('--session <id>', 'the caller session (for servers pooled per session)')
    .action(async (server: string | undefined, o: CommonOpts & { callerProtocol?: string; session?: string }) =>
      withClient(o, cli, async (client) => {
        const q = new URLSearchParams();
        if (server !== undefined) q.set('server', server);
        if (o.session) q.set('session', o.session);
        const path = `/v1/tools${q.size > 0 ? `?${q}` : ''}`;
        // A server that needs authorization is an error naming `mcpx login NAME`: listing never opens a browser.
        const { body } = await withProgress(client, server, () => api<ToolsView>(client, 'GET', path, undefined, callHeaders(o)), 'listing tools');
        if (o.json) printJson(body);
        else
          out(
            table(
              ['SERVER', 'TOOL', 'MCP NAME', 'DESCRIPTION'],
              body.tools.map((t) => [t.server, t.name, t.exposed, clip(typeof t.description === 'string' ? t.description : '', 60)]),
            ),
          );
        // What a server listed that clients could not take: named, the rest served (docs/serving.md).
        for (const l of body.leftOut ?? []) process.stderr.write(`mcpx: ${l.server}: ${terminalSafe(describeLeftOut(l))}\n`);
        if (body.errors.length > 0) {
          for (const e of body.errors.slice(1)) process.stderr.write(`mcpx: ${terminalSafe(named(e.server, e.message))}\n`);
          const first = body.errors[0]!;
          throw new McpxError((first.code as McpxError['code']) ?? 'MCPX_INTERNAL', named(first.server, first.message));
        }
      }),
    );
}
