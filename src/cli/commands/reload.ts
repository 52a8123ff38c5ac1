/** `mcpx reload`: re-read the config. */
import type { Command } from 'commander';
import { McpxError } from '../../errors.js';
import type { ReloadOutcome } from '../../core/views.js';
import { api, out, printJson, withClient, withJson, withTarget, type CliContext, type CommonOpts } from '../common.js';

export function register(program: Command, cli: CliContext): void {
  withJson(
    withTarget(
      program.command('reload').description("re-read this command's config (added servers start on first use, removed ones stop, unchanged ones keep running)"),
    ),
  )
    .option('--all', 'reload every config the daemon holds, not only this one')
    .action(async (o: CommonOpts & { all?: boolean }) =>
      withClient(o, cli, async (client) => {
        if (o.all) {
          const { body } = await api<{ configs: ReloadOutcome[] }>(client, 'POST', '/v1/reload?all=true');
          if (o.json) return printJson(body);
          for (const r of body.configs) print(r);
          const bad = body.configs.filter((r) => !r.ok);
          if (bad.length > 0) throw new McpxError('MCPX_BAD_CONFIG', `${bad.length} config(s) not reloaded (their last good versions stay)`);
          return;
        }
        const { body } = await api<ReloadOutcome>(client, 'POST', '/v1/reload');
        if (o.json) printJson(body);
        if (!body.ok) throw new McpxError('MCPX_BAD_CONFIG', `config not reloaded (the last good config stays): ${body.error.message}`);
        if (o.json) return;
        print(body);
      }),
    );
}

function print(body: ReloadOutcome): void {
  if (!body.ok) {
    out(`not reloaded ${body.file ?? 'the config'} (its last good version stays): ${body.error.message}`);
    return;
  }
  {
    const parts = [
      `added: ${body.added.join(', ') || '-'}`,
      `removed: ${body.removed.join(', ') || '-'}`,
      `changed: ${body.replaced.join(', ') || '-'}`,
      `unchanged: ${body.kept.length}`,
    ];
    out(`reloaded ${body.file ?? 'the config'}${body.demo ? ' (the bundled demo)' : ''}: ${parts.join('; ')}`);
    for (const f of body.failed) out(`  ${f.server}: ${f.message}`);
    if (body.restartNeeded.length > 0) out(`restart the daemon for: ${body.restartNeeded.join(', ')}`);
  }
}
