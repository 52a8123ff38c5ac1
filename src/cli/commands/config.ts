/** `mcpx config`: the resolved config as the daemon would run it, secrets redacted (no daemon needed). */
import type { Command } from 'commander';
import { ConfigError } from '../../errors.js';
import type { ConfigView } from '../../core/views.js';
import { out, printJson, serversTable, withJson, withTarget, type CommonOpts } from '../common.js';

export function register(program: Command): void {
  withJson(
    withTarget(program.command('config').description('the resolved config (as the daemon would run it), secrets redacted; exits 1 when it has errors')),
  ).action(async (o: CommonOpts) => {
    const env = process.env;
    const cwd = process.cwd();
    const [{ loadDaemonConfig }, { Settings }] = await Promise.all([import('../../daemon/config-source.js'), import('../../config/settings.js')]);
    const loaded = await loadDaemonConfig({ ...(o.config === undefined ? {} : { configFlag: o.config }), env, cwd });
    if (loaded.errors.length > 0) throw new ConfigError(loaded.errors, loaded.file);
    const settings = new Settings({
      file: loaded.settingsFile,
      ...(loaded.file ? { filePath: loaded.file } : {}),
      env,
      cwd,
      flags: o.stateDir === undefined ? {} : { '--state-dir': o.stateDir },
    });
    const { describeConfig } = await import('../../core/config-view.js');
    const view: ConfigView = describeConfig(loaded, settings);
    if (o.json) return printJson(view);
    out(`config: ${view.file ?? '-'}${view.demo ? ' (no config file found: the bundled demo)' : view.via ? ` (found via ${view.via})` : ''}`);
    out('');
    out(serversTable(view.servers, true));
    for (const w of view.warnings) process.stderr.write(`mcpx: warning: ${w}\n`);
  });
}
