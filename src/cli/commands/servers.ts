/** `mcpx servers`: configured servers, their transport and effective preference (secrets redacted). */
import type { Command } from 'commander';
import type { RejectedEdit, ServerView } from '../../core/views.js';
import { rejectedEditLines } from '../format.js';
import { api, out, printJson, serversTable, withClient, withJson, withTarget, type CliContext, type CommonOpts } from '../common.js';

export function register(program: Command, cli: CliContext): void {
  withJson(
    withTarget(program.command('servers').description('configured servers, their transport and effective protocol preference (secrets redacted)')),
  ).action(async (o: CommonOpts) =>
    withClient(o, cli, async (client) => {
      const { body } = await api<{ servers: ServerView[]; rejected?: RejectedEdit }>(client, 'GET', '/v1/servers');
      if (o.json) return printJson(body);
      out(serversTable(body.servers));
      const rejected = rejectedEditLines(body.rejected);
      if (rejected.length > 0) out(['', ...rejected].join('\n'));
    }),
  );
}
