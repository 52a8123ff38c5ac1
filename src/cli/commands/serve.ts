/**
 * `mcpx serve`: an MCP server on stdio for one MCP client, through the daemon.
 *
 * The command lines clients are given (`mcpx serve`, `mcpx serve --config FILE`, the options below) are
 * also read without commander (`quickServe`, from ./main.ts): serve is a process per client that stays
 * up as long as the client, so what it loads it holds; anything else (help, a mistake) goes through
 * commander as usual.
 */
import type { Command } from 'commander';
import { isToolStrategy, TOOL_STRATEGIES, type ToolStrategy } from '../../serve/tool-options.js';
import { target, UsageError, withTarget, type CliContext, type CommonOpts } from '../common.js';

interface ServeFlags extends CommonOpts {
  passthrough?: string;
  servers?: string;
  tools?: string;
  allowTools?: string[];
  denyTools?: string[];
}

/** The options, as commander declares them and as `quickServe` reads them (`repeat`: may be given more than once). */
const OPTIONS: ReadonlyArray<{ flag: string; key: keyof ServeFlags; repeat?: true }> = [
  { flag: '--passthrough', key: 'passthrough' },
  { flag: '--servers', key: 'servers' },
  { flag: '--tools', key: 'tools' },
  { flag: '--allow-tools', key: 'allowTools', repeat: true },
  { flag: '--deny-tools', key: 'denyTools', repeat: true },
  { flag: '--config', key: 'config' },
  { flag: '--state-dir', key: 'stateDir' },
];

const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

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
    .option(
      '--tools <strategy>',
      `how tools are offered: all (every tool), search (search_tools, describe_tools, call_tool and pinned tools), auto (all while the client handles that many, else search; the default)`,
    )
    .option('--allow-tools <globs>', 'show only tools whose MCP name matches one of these globs (* and ?; comma-separated or repeated)', collect)
    .option('--deny-tools <globs>', 'hide and refuse tools whose MCP name matches one of these globs (comma-separated or repeated)', collect)
    .addHelpText(
      'after',
      `
Which servers it serves: those of the config it names (--config FILE, else MCPX_CONFIG, else the nearest
.mcpx.json / .mcp.json walking up from its working folder, else ~/.config/mcpx/config.json, else the
bundled demo) — whatever config the running daemon was started with. One daemon holds every config its
callers name: each client entry sees exactly its own config's servers, and a server two configs define
alike runs once for both. An edit of that file is picked up by itself; a broken edit keeps the last good
version and is said to this client (a log message) and in mcpx status.`,
    )
    .action((o: ServeFlags) => serve(o, cli));
}

/**
 * `mcpx serve …` when every argument is one of its options with a value (`--x v` or `--x=v`), run without
 * commander; undefined for any other command line.
 */
export function quickServe(args: readonly string[], cli: CliContext): (() => Promise<void>) | undefined {
  const o: ServeFlags = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const eq = arg.indexOf('=');
    const flag = eq === -1 ? arg : arg.slice(0, eq);
    const option = OPTIONS.find((x) => x.flag === flag);
    const value = eq === -1 ? args[++i] : arg.slice(eq + 1);
    if (!option || value === undefined || value.startsWith('-')) return undefined;
    if (option.repeat) {
      const list = o[option.key] as string[] | undefined;
      (o as Record<string, string[]>)[option.key] = [...(list ?? []), value];
      continue;
    }
    if (o[option.key] !== undefined) return undefined;
    (o as Record<string, string>)[option.key] = value;
  }
  return () => serve(o, cli);
}

async function serve(o: ServeFlags, cli: CliContext): Promise<void> {
  if (o.passthrough !== undefined && o.servers !== undefined)
    throw new UsageError('--passthrough and --servers do not go together: passthrough serves one server');
  const servers = o.servers
    ?.split(',')
    .map((x) => x.trim())
    .filter((x) => x.length > 0);
  if (servers !== undefined && servers.length === 0) throw new UsageError('--servers needs at least one server name');
  if (o.tools !== undefined && !isToolStrategy(o.tools))
    throw new UsageError(`--tools must be one of ${TOOL_STRATEGIES.join(', ')} (got ${JSON.stringify(o.tools)})`);
  const globs = (v: string[] | undefined) =>
    (v ?? [])
      .flatMap((x) => x.split(','))
      .map((x) => x.trim())
      .filter((x) => x.length > 0);
  const allowTools = globs(o.allowTools);
  const denyTools = globs(o.denyTools);
  const t = await target(o);
  const { runServe } = await import('../../serve/stdio-entry.js');
  await runServe({
    target: t,
    entry: cli.entry,
    ...(o.passthrough === undefined ? {} : { passthrough: o.passthrough }),
    ...(servers === undefined ? {} : { servers }),
    ...(o.tools === undefined ? {} : { tools: o.tools as ToolStrategy }),
    ...(allowTools.length > 0 ? { allowTools } : {}),
    ...(denyTools.length > 0 ? { denyTools } : {}),
  });
}
