/**
 * Every `mcpx` command, in the order `mcpx --help` lists them. A command lives in its own file here and
 * exports `register(program, cli)`; it imports what it needs to run inside its action (dynamic
 * imports), so loading a command for registration costs next to nothing and `mcpx --version` or
 * `mcpx call` never load the daemon. A new command: its file, and one line below.
 *
 * The modules themselves load on demand too (`commandsFor`): every ES module costs a file read, a
 * compile and a link at each start of the CLI, so a command line naming a command loads that command
 * only, and `mcpx --version` none.
 */
import type { CliCommand } from '../common.js';

interface CommandEntry {
  name: string;
  load: () => Promise<CliCommand>;
}

const COMMANDS: readonly CommandEntry[] = [
  { name: 'daemon', load: () => import('./daemon.js') },
  { name: 'serve', load: () => import('./serve.js') },
  { name: 'ui', load: () => import('./ui.js') },
  { name: 'status', load: () => import('./status.js') },
  { name: 'stop', load: () => import('./stop.js') },
  { name: 'logs', load: () => import('./logs.js') },
  { name: 'reload', load: () => import('./reload.js') },
  { name: 'servers', load: () => import('./servers.js') },
  { name: 'tools', load: () => import('./tools.js') },
  { name: 'call', load: () => import('./call.js') },
  { name: 'protocol', load: () => import('./protocol.js') },
  { name: 'settings', load: () => import('./settings.js') },
  { name: 'config', load: () => import('./config.js') },
  { name: 'login', load: () => import('./login.js') },
  { name: 'logout', load: () => import('./logout.js') },
  { name: 'auth', load: () => import('./auth.js') },
  { name: 'install', load: () => import('./install.js') },
  { name: 'uninstall', load: () => import('./uninstall.js') },
  { name: 'doctor', load: () => import('./doctor.js') },
];

/**
 * The commands that can run for this command line (`process.argv`), in help order: the one it names;
 * none for a bare `-V`/`--version`; else (help, no command, a mistyped one: commander lists or
 * suggests them) every command.
 */
export async function commandsFor(argv: readonly string[]): Promise<CliCommand[]> {
  const first = argv[2];
  const named = COMMANDS.find((c) => c.name === first);
  if (named) return [await named.load()];
  if ((first === '-V' || first === '--version') && argv.length === 3) return [];
  return Promise.all(COMMANDS.map((c) => c.load()));
}
