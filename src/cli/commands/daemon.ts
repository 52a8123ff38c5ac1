/** `mcpx daemon`: the daemon in the foreground; every setting has a flag. */
import { Option, type Command } from 'commander';
import type { CliContext } from '../common.js';

export async function register(program: Command, cli: CliContext): Promise<void> {
  const daemon = program.command('daemon').description('run the daemon in the foreground (logs on stdout: pretty on a TTY, JSON otherwise)');
  daemon.option('--config <file>', 'the config file (else MCPX_CONFIG, .mcpx.json / .mcp.json walking up, ~/.config/mcpx/config.json; none: the bundled demo)');
  daemon.option(
    '--inspect [port]',
    "stream every session and pool actor to the Stately inspector through a relay on 127.0.0.1:PORT (default 8099); the viewer is Stately's web page",
  );
  const flagOf = new Map<string, string>();
  // The setting flags come from the settings table, loaded only when this command (or its help) can be
  // what runs: other commands never read them, and the table's validation is not free to load.
  if (cli.argv.slice(2).includes('daemon')) {
    const { SETTINGS } = await import('../../config/settings.js');
    for (const d of SETTINGS) {
      const def = d.defaultText ?? (typeof d.default === 'function' ? '' : (d.codec.display as (v: unknown) => string)(d.default));
      const allowed = d.codec.allowed ? ` (${d.codec.allowed.join(', ')})` : '';
      for (const flag of [d.flag, ...d.flagAliases]) {
        const alias = flag !== d.flag;
        const opt = new Option(`${flag} <value>`, alias ? `same as ${d.flag}` : `${d.description}${allowed} [env ${d.env}${def ? `; default ${def}` : ''}]`);
        daemon.addOption(opt);
        flagOf.set(opt.attributeName(), flag);
      }
    }
  }
  daemon.action(async (o: Record<string, string | undefined>) => {
    const flags: Record<string, string> = {};
    for (const [attr, flag] of flagOf) {
      const v = o[attr];
      if (v !== undefined) flags[flag] = v;
    }
    const inspect = o['inspect'] === undefined ? undefined : (await import('../ui.js')).inspectOption(o['inspect']);
    const { runDaemon } = await import('../run-daemon.js');
    await runDaemon({ ...(o['config'] === undefined ? {} : { configFlag: o['config'] }), flags, ...(inspect ? { inspect } : {}) });
  });
}
