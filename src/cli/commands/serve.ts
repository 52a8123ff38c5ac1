/**
 * `mcpx serve`: an MCP server on stdio for one MCP client, through the daemon.
 *
 * The command lines clients are given (`mcpx serve`, `mcpx serve --config FILE`, the options below) are
 * also read without commander (`quickServe`, from ./main.ts): serve is a process per client that stays
 * up as long as the client, so what it loads it holds; anything else (help, a mistake) goes through
 * commander as usual.
 */
import type { Command } from 'commander';
import { target, UsageError, withTarget, type CliContext, type CommonOpts } from '../common.js';

interface ServeFlags extends CommonOpts {
  passthrough?: string;
  servers?: string;
}

/** The options, as commander declares them and as `quickServe` reads them. */
const OPTIONS: ReadonlyArray<{ flag: string; key: keyof ServeFlags }> = [
  { flag: '--passthrough', key: 'passthrough' },
  { flag: '--servers', key: 'servers' },
  { flag: '--config', key: 'config' },
  { flag: '--state-dir', key: 'stateDir' },
];

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
    if (!option || value === undefined || value.startsWith('-') || o[option.key] !== undefined) return undefined;
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
  const t = await target(o);
  const { runServe } = await import('../../serve/stdio-entry.js');
  await runServe({
    target: t,
    entry: cli.entry,
    ...(o.passthrough === undefined ? {} : { passthrough: o.passthrough }),
    ...(servers === undefined ? {} : { servers }),
  });
}
