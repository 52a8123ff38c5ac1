/** `mcpx reload`: re-read the config. */
import type { Command } from 'commander';
import { McpxError } from '../../errors.js';
import type { ReloadOutcome } from '../../core/views.js';
import { api, out, printJson, withClient, withJson, withTarget, type CliContext, type CommonOpts } from '../common.js';

export function register(program: Command, cli: CliContext): void {
  withJson(
    withTarget(program.command('reload').description('re-read the config (added servers start on first use, removed ones stop, unchanged ones keep running)')),
  ).action(async (o: CommonOpts) =>
    withClient(o, cli, async (client) => {
      const { body } = await api<ReloadOutcome>(client, 'POST', '/v1/reload');
      if (o.json) printJson(body);
      if (!body.ok) throw new McpxError('MCPX_BAD_CONFIG', `config not reloaded (the last good config stays): ${body.error.message}`);
      if (o.json) return;
      const parts = [
        `added: ${body.added.join(', ') || '-'}`,
        `removed: ${body.removed.join(', ') || '-'}`,
        `changed: ${body.replaced.join(', ') || '-'}`,
        `unchanged: ${body.kept.length}`,
      ];
      out(`reloaded ${body.file ?? 'the config'}${body.demo ? ' (the bundled demo)' : ''}: ${parts.join('; ')}`);
      for (const f of body.failed) out(`  ${f.server}: ${f.message}`);
      if (body.restartNeeded.length > 0) out(`restart the daemon for: ${body.restartNeeded.join(', ')}`);
    }),
  );
}
