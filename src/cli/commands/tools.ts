/** `mcpx tools [SERVER]`: list tools, starting servers as needed. */
import type { Command } from 'commander';
import { describeLeftOut } from '../../catalog/left-out.js';
import { McpxError } from '../../errors.js';
import type { ToolsView } from '../../server/views.js';
import { api, callHeaders, out, printJson, withClient, withJson, withProgress, withTarget, type CliContext, type CommonOpts } from '../common.js';
import { clip, table } from '../format.js';
import { terminalSafe } from '../terminal-text.js';

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
        const { withReauthorization } = await import('../reauthorize.js');
        const { body } = await withReauthorization(
          client,
          () => withProgress(client, server, () => api<ToolsView>(client, 'GET', path, undefined, callHeaders(o))),
          (r) => r.body.errors.find((e) => e.code === 'MCPX_UPSTREAM_UNAUTHORIZED')?.server,
        );
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
          for (const e of body.errors.slice(1)) process.stderr.write(`mcpx: ${e.server}: ${terminalSafe(e.message)}\n`);
          const first = body.errors[0]!;
          throw new McpxError((first.code as McpxError['code']) ?? 'MCPX_INTERNAL', `${first.server}: ${first.message}`);
        }
      }),
    );
}
