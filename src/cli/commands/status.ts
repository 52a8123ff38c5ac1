/** `mcpx status`: the daemon, its servers, their lanes and live instances. */
import type { Command } from 'commander';
import type { z } from 'zod';
import type { statusSchema } from '../../server/schemas.js';
import { api, out, printJson, withClient, withJson, withTarget, type CliContext, type CommonOpts } from '../common.js';
import { ago, rejectedEditLines, table } from '../format.js';

export function register(program: Command, cli: CliContext): void {
  withJson(withTarget(program.command('status').description('the daemon, its servers, their lanes and live instances'))).action(async (o: CommonOpts) =>
    withClient(o, cli, async (client) => {
      const { body } = await api<z.output<typeof statusSchema>>(client, 'GET', '/v1/status');
      if (o.json) return printJson(body);
      out(
        `mcpx ${body.version}, daemon pid ${body.pid}, up ${ago(body.uptimeMs)}; socket ${body.daemon.socket ?? '-'}${body.daemon.tcp ? `; tcp ${body.daemon.tcp.host}:${body.daemon.tcp.port}` : ''}`,
      );
      out(`config: ${body.config.file ?? '-'}${body.config.demo ? ' (the bundled demo)' : ''}`);
      for (const l of rejectedEditLines(body.config.rejected)) out(l);
      out('');
      out(
        table(
          ['SERVER', 'PREFERENCE', 'LANES'],
          body.servers.map((s) => [
            s.server,
            s.preference,
            s.lanes.map((l) => `${l.lane} ${l.instances}/${l.max}${l.state ? ` (${l.state})` : ''}`).join(', '),
          ]),
        ),
      );
      const rows = body.servers.flatMap((s) =>
        s.instances.map((i) => [s.server, i.id, i.lane, i.pid, i.scopeKey, i.holders, i.era, i.sessionState ?? i.state, ago(i.uptimeMs)]),
      );
      if (rows.length > 0) {
        out('');
        out(table(['SERVER', 'INSTANCE', 'LANE', 'PID', 'SCOPE KEY', 'HOLDERS', 'ERA', 'STATE', 'UPTIME'], rows));
      }
      const authNotes = body.servers.flatMap((s) => [
        ...(s.auth?.state === 'failed' && s.auth.error ? [`${s.server}: authorization: ${s.auth.error}`] : []),
        ...(s.auth?.unsaved ? [`${s.server}: ${s.auth.unsaved}`] : []),
      ]);
      if (authNotes.length > 0) {
        out('');
        for (const n of authNotes) out(n);
      }
    }),
  );
}
