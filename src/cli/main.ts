#!/usr/bin/env node
/**
 * The `mcpx` command line (the README). The commands are listed once, in ./commands/index.ts (`mcpx --help`
 * prints them from there).
 *
 * Client commands find the daemon through the state folder and start one in the background when
 * none answers (`stop`, `logs` and a `status` without `--start` excepted). Errors: one line on stderr,
 * `mcpx: <message>` (a config's problems: one line each; under --json also `{ok:false, error}` on stdout);
 * exit 2 for a usage error, 1 for anything else.
 *
 * Each command is its own module (./commands/), loaded only when the command line can run it, and
 * loads what it runs only when it runs: a command is a separate process each time, so what it imports
 * is paid on every use (`mcpx call` and `mcpx --version` never load zod, fastify, xstate or the MCP SDK).
 */
import { terminalSafe } from './terminal-text.js';
import { fileURLToPath } from 'node:url';
import type { Command, CommanderError } from 'commander';
import { packageVersion } from '../package-info.js';
import { commandsFor } from './commands/index.js';
import { UsageError, type CliContext } from './common.js';
import { printJsonError } from './json-errors.js';
import { exitWhenWritten } from './exit.js';

const ENTRY = fileURLToPath(import.meta.url);

/** commander's error class, once commander is loaded (`mcpx daemon` alone never loads it). */
let commanderError: typeof CommanderError | undefined;

async function buildProgram(argv: readonly string[]): Promise<Command> {
  const { Command, CommanderError } = await import('commander');
  commanderError = CommanderError;
  const program = new Command();
  program
    .name('mcpx')
    .description('A local daemon that fronts MCP servers of both eras (legacy initialize and 2026-07-28 discover).')
    .version(packageVersion(), '-V, --version')
    .showSuggestionAfterError(true)
    .configureOutput({
      outputError: (str, write) =>
        write(
          `mcpx: ${
            str
              .replace(/^error:\s*/i, '')
              .trim()
              .split('\n')[0]
          }\n`,
        ),
    })
    .exitOverride();
  const cli: CliContext = { entry: ENTRY, argv };
  for (const command of await commandsFor(argv)) await command.register(program, cli);
  return program;
}

function oneLine(message: string): string {
  // An error message can quote an upstream: its control sequences are shown, not obeyed.
  return terminalSafe(message)
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0)
    .join('; ');
}

/** An error's code and data, for --json (an McpxError's own; anything else is MCPX_INTERNAL). */
function jsonErrorOf(err: unknown, message: string): { code: string; message: string; data?: Record<string, unknown> } {
  const e = err as { code?: unknown; data?: unknown } | null;
  const code = typeof e?.code === 'string' && e.code.startsWith('MCPX_') ? e.code : 'MCPX_INTERNAL';
  const data = e?.data !== null && typeof e?.data === 'object' ? (e.data as Record<string, unknown>) : undefined;
  return { code, message, ...(data === undefined ? {} : { data }) };
}

async function main(argv: string[]): Promise<number> {
  try {
    // `mcpx daemon` and nothing else (how a client starts one in the background) has no command line to
    // parse: neither commander nor the settings' flag table loads, 15–20 ms of the daemon's start.
    if (argv.length === 3 && argv[2] === 'daemon') await (await import('./run-daemon.js')).runDaemon({ flags: {} });
    // Likewise `mcpx serve` with the options a client's config gives it: a serve holds what it loads while its client runs.
    if (argv[2] === 'serve') {
      const quick = (await import('./serve-main.js')).quickServe(argv.slice(3), { entry: ENTRY, argv });
      if (quick) {
        await quick();
        return 0;
      }
    }
    const program = await buildProgram(argv);
    await program.parseAsync(argv);
    return 0;
  } catch (err) {
    if (commanderError && err instanceof commanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return 0;
      if (err.exitCode !== 0) printJsonError(argv, { code: 'MCPX_USAGE', message: oneLine(err.message.replace(/^error:\s*/i, '')) });
      return err.exitCode === 0 ? 0 : 2; // a usage error (or no command at all): commander already printed it
    }
    // By name as well: the quick serve path is a bundle of its own, with its own copy of the class.
    if (err instanceof UsageError || (err instanceof Error && err.name === 'UsageError')) {
      printJsonError(argv, { code: 'MCPX_USAGE', message: oneLine(err.message) });
      process.stderr.write(`mcpx: ${oneLine(err.message)}\n`);
      return 2;
    }
    const message = err instanceof Error ? err.message : String(err);
    printJsonError(argv, jsonErrorOf(err, oneLine(message)));
    // A config's problems: one a line, each whole (its file, key and line), as an editor lists them.
    const data = err instanceof Error ? (err as { data?: { problems?: unknown } }).data : undefined;
    if (err instanceof Error && ((err as { code?: unknown }).code === 'MCPX_BAD_CONFIG' || Array.isArray(data?.problems))) {
      for (const line of message.split('\n')) if (line.trim() !== '') process.stderr.write(`mcpx: ${oneLine(line)}\n`);
      return 1;
    }
    process.stderr.write(`mcpx: ${oneLine(message)}\n`);
    return 1;
  }
}

// Into a pipe, stdout and stderr are asynchronous: the exit waits until what was written has left.
exitWhenWritten(await main(process.argv));
