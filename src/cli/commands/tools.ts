/** `mcpx tools [SERVER]`: list tools, starting servers as needed. */
import type { Command } from 'commander';
import { describeLeftOut } from '../../catalog/left-out.js';
import { McpxError } from '../../errors.js';
import type { ToolSearchView, ToolsView } from '../../core/views.js';
import type { ChangedTool } from '../../catalog/catalog.js';
import { api, callHeaders, out, printJson, UsageError, withClient, withJson, withProgress, withTarget, type CliContext, type CommonOpts } from '../common.js';
import { clip, table } from '../format.js';
import { terminalSafe } from '../terminal-text.js';

/** `mcpx tools --search QUERY`: `GET /v1/tools/search`. */
async function search(
  client: Parameters<typeof api>[0],
  server: string | undefined,
  o: CommonOpts & { session?: string; search?: string; limit?: string },
): Promise<void> {
  if (server !== undefined) throw new UsageError('--search looks over every server: give no SERVER');
  if (o.search!.trim() === '') throw new UsageError('--search needs a query');
  if (o.limit !== undefined && !/^\d{1,2}$/.test(o.limit)) throw new UsageError('--limit must be a whole number from 1 to 50');
  const q = new URLSearchParams({ q: o.search! });
  if (o.limit !== undefined) q.set('limit', o.limit);
  if (o.session) q.set('session', o.session);
  const { body } = await api<ToolSearchView>(client, 'GET', `/v1/tools/search?${q}`, undefined, callHeaders(o));
  if (o.json) return printJson(body);
  out(
    table(
      ['MCP NAME', 'SERVER', 'SCORE', 'DESCRIPTION'],
      body.tools.map((t) => [t.exposed, t.server, t.score.toFixed(3), clip(t.description, 60)]),
    ),
  );
}

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
    .option('--changed', 'list the tools whose definition changed since it was first seen (what changed, since when, whether held)')
    .option('--accept <name...>', "approve a changed tool's definition as listed now: its exposed name, or SERVER TOOL")
    .option(
      '--search <query>',
      'the tools that best match QUERY (plain words or a name), ranked as search_tools ranks them, from the catalogue: nothing is started',
    )
    .option('--limit <n>', 'with --search: how many tools (default 5, at most 50)')
    .action(
      async (
        server: string | undefined,
        o: CommonOpts & { callerProtocol?: string; session?: string; changed?: boolean; accept?: string[]; search?: string; limit?: string },
      ) =>
        withClient(o, cli, async (client) => {
          if (o.limit !== undefined && o.search === undefined) throw new UsageError('--limit goes with --search');
          if (o.search !== undefined) return search(client, server, o);
          if (o.accept !== undefined) return accept(client, o.accept, server, o);
          if (o.changed) return changed(client, server, o);
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
          // A tool whose definition changed since it was first seen: said here too, since a held one is missing above.
          if (!o.json) await changedNotes(client, server);
          if (body.errors.length > 0) {
            for (const e of body.errors.slice(1)) process.stderr.write(`mcpx: ${terminalSafe(named(e.server, e.message))}\n`);
            const first = body.errors[0]!;
            throw new McpxError((first.code as McpxError['code']) ?? 'MCPX_INTERNAL', named(first.server, first.message));
          }
        }),
    );
}

type Client = Parameters<typeof api>[0];

/** `mcpx tools --changed [SERVER]`: tools whose definition differs from the one first seen (nothing is started). */
async function changed(client: Client, server: string | undefined, o: CommonOpts): Promise<void> {
  const { body } = await api<{ tools: ChangedTool[] }>(client, 'GET', '/v1/tools/changed');
  const tools = server === undefined ? body.tools : body.tools.filter((t) => t.server === server);
  if (o.json) return printJson({ tools });
  if (tools.length === 0) return out('no tool changed since it was first seen');
  out(
    table(
      ['SERVER', 'TOOL', 'MCP NAME', 'CHANGED', 'SINCE', 'HELD'],
      tools.map((t) => [t.server, t.tool, t.exposed, t.changed.join(', ') || 'definition', t.since, t.held ? 'held' : 'no']),
    ),
  );
  if (tools.some((t) => t.held)) out('a held tool is served again once accepted: mcpx tools --accept SERVER TOOL');
}

/** One stderr line per changed tool (of `server`, when given): held ones say how to serve them again. */
async function changedNotes(client: Client, server: string | undefined): Promise<void> {
  const { body } = await api<{ tools: ChangedTool[] }>(client, 'GET', '/v1/tools/changed');
  for (const t of body.tools) {
    if (server !== undefined && t.server !== server) continue;
    const what = `tool "${t.tool}" changed its ${t.changed.join(', ') || 'definition'} since it was first seen (${t.since})`;
    process.stderr.write(
      `mcpx: ${terminalSafe(`${t.server}: ${what}${t.held ? `: held, not served; review it and accept it with mcpx tools --accept ${t.server} ${t.tool}` : ' (mcpx tools --changed)'}`)}\n`,
    );
  }
}

/** `mcpx tools --accept NAME` or `--accept SERVER TOOL` (or `mcpx tools SERVER --accept TOOL`). */
async function accept(client: Client, names: string[], server: string | undefined, o: CommonOpts): Promise<void> {
  const [a, b, ...rest] = names;
  if (rest.length > 0 || (b !== undefined && server !== undefined)) throw new UsageError("--accept takes a tool's exposed name (SERVER__TOOL), or SERVER TOOL");
  const target = b !== undefined ? { server: a!, name: b } : server !== undefined ? { server, name: a! } : { name: a! };
  const { body } = await api<{ ok: true; server: string; tool: string; lanes: string[] }>(client, 'POST', '/v1/tools/accept', target);
  if (o.json) printJson(body);
  else out(`accepted the changed definition of ${body.server}/${body.tool}: it is served as listed now`);
}
