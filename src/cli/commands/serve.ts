/** `mcpx serve`: an MCP server on stdio for one MCP client, through the daemon. */
import type { Command } from 'commander';
import { target, UsageError, withTarget, type CliContext, type CommonOpts } from '../common.js';

export function register(program: Command, cli: CliContext): void {
  withTarget(
    program
      .command('serve')
      .description(
        "an MCP server on stdio for one MCP client (Claude Desktop, Claude Code, Cursor, VS Code): every configured server, in the caller's own era, through the daemon (started when none runs)",
      ),
  )
    .option('--passthrough <name>', 'serve one server under its own names (tools, prompts, resources, templates, completions)')
    .option('--servers <a,b>', 'show only these servers (aggregate mode)')
    .action(async (o: CommonOpts & { passthrough?: string; servers?: string }) => {
      if (o.passthrough !== undefined && o.servers !== undefined)
        throw new UsageError('--passthrough and --servers do not go together: passthrough serves one server');
      const servers = o.servers
        ?.split(',')
        .map((x) => x.trim())
        .filter((x) => x.length > 0);
      if (servers !== undefined && servers.length === 0) throw new UsageError('--servers needs at least one server name');
      const t = await target(o);
      const { runServe } = await import('../../serve/stdio-entry.js');
      await runServe({
        target: t,
        entry: cli.entry,
        ...(o.passthrough === undefined ? {} : { passthrough: o.passthrough }),
        ...(servers === undefined ? {} : { servers }),
      });
    });
}
