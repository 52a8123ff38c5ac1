/** `mcpx settings [get|set|unset PATH [VALUE]]`: list, read, set or unset settings. */
import type { Command } from 'commander';
import type { SettingEntry } from '../../config/settings.js';
import type { SettingChangeView } from '../../core/views.js';
import { api, out, printJson, UsageError, withClient, withJson, withTarget, type CliContext, type CommonOpts } from '../common.js';
import { table } from '../format.js';

export function register(program: Command, cli: CliContext): void {
  withJson(
    withTarget(
      program
        .command('settings')
        .argument('[action]', 'get, set or unset (none: list every setting)')
        .argument('[path]', 'a setting path, e.g. upstream.protocol')
        .argument('[value]', 'the new value (set)')
        .description('list, read, set or unset settings (a runtime value applies to sessions started from now on)'),
    ),
  ).action(async (action: string | undefined, path: string | undefined, value: string | undefined, o: CommonOpts) => {
    if (action !== undefined && !['get', 'set', 'unset'].includes(action))
      throw new UsageError(`unknown settings action ${JSON.stringify(action)}; use get, set or unset`);
    if (action !== undefined && path === undefined) throw new UsageError(`mcpx settings ${action} needs a setting path`);
    if (action === 'set' && value === undefined) throw new UsageError('mcpx settings set needs a value');
    if (action !== 'set' && value !== undefined) throw new UsageError(`mcpx settings ${action ?? ''} takes no value`.replace('  ', ' '));
    await withClient(o, cli, async (client) => {
      const at = `/v1/settings/${encodeURIComponent(path ?? '')}`;
      if (action === undefined) {
        const { body } = await api<{ settings: SettingEntry[] }>(client, 'GET', '/v1/settings');
        if (o.json) return printJson(body);
        return out(
          table(
            ['SETTING', 'VALUE', 'SOURCE', 'DEFAULT'],
            body.settings.map((s) => [
              s.path,
              s.display,
              s.source === 'default' ? 'default' : `${s.source}${s.from && s.from !== s.source ? ` (${s.from})` : ''}`,
              s.defaultDisplay,
            ]),
          ),
        );
      }
      if (action === 'get') {
        const { body } = await api<SettingEntry>(client, 'GET', at);
        if (o.json) return printJson(body);
        return out(
          `${body.path} = ${body.display}  (${body.source}${body.from && body.from !== body.source ? ` ${body.from}` : ''}; default ${body.defaultDisplay})`,
        );
      }
      const { body } = action === 'set' ? await api<SettingChangeView>(client, 'PUT', at, { value }) : await api<SettingChangeView>(client, 'DELETE', at);
      if (o.json) return printJson(body);
      const deferred = body.servers?.deferred.length ? `; ${body.servers.deferred.join(', ')} pick it up when their running instances stop` : '';
      out(`${body.setting.path} = ${body.setting.display}  (${body.setting.source}; applies to ${body.appliesTo}${deferred})`);
      if (body.outlivesRestart === false) out(lostAtRestart(body.setting));
    });
  });
}

/** What a runtime value does not do: live past the daemon. Where to put it so that it does. */
function lostAtRestart(s: Pick<SettingEntry, 'key' | 'value' | 'env' | 'flag' | 'restart'>): string {
  const nested = s.key.split('.').reduceRight<unknown>((inner, k) => ({ [k]: inner }), s.value);
  const keep = `to keep it, put ${JSON.stringify(nested)} in the config file, or set ${s.env}`;
  return s.restart
    ? `note: this value is lost when the daemon stops, so it never reaches the next start it waits for; ${keep} (or run mcpx daemon ${s.flag} …)`
    : `note: kept until the daemon stops, not across a restart; ${keep}`;
}
