/** `mcpx auth [NAME]`: per HTTP server, whether it needs authorization, is authorized, or why it failed. */
import type { Command } from 'commander';
import type { AuthView } from '../../auth/server-auth.js';
import { api, out, printJson, withClient, withJson, withTarget, type CliContext, type CommonOpts } from '../common.js';
import { table } from '../format.js';

export function register(program: Command, cli: CliContext): void {
  withJson(
    withTarget(
      program
        .command('auth')
        .argument('[server]', 'one server')
        .description('OAuth state of the HTTP servers: needs authorization, authorized (scopes, expiry, refreshable), or why it failed'),
    ),
  ).action(async (server: string | undefined, o: CommonOpts) =>
    withClient(o, cli, async (client) => {
      const path = server === undefined ? '/v1/auth' : `/v1/auth/${encodeURIComponent(server)}`;
      const { body } = await api<{ servers: AuthView[] }>(client, 'GET', path);
      if (o.json) return printJson(body);
      if (body.servers.length === 0) return out('no HTTP servers that can use authorization are configured');
      out(
        table(
          ['SERVER', 'STATE', 'SCOPES', 'EXPIRES', 'REFRESHABLE'],
          body.servers.map((s) => [
            s.server,
            s.state === 'needed' ? 'needs login' : s.state,
            s.scopes?.join(' ') ?? '-',
            s.expiresAt ?? '-',
            s.refreshable === undefined ? '-' : s.refreshable ? 'yes' : 'no',
          ]),
        ),
      );
      for (const s of body.servers) {
        if (s.error) out(`${s.server}: ${s.error}`);
        else if (s.state === 'needed') out(`${s.server}: run \`mcpx login ${s.server}\``);
        if (s.unsaved) out(`${s.server}: ${s.unsaved}`);
        if (s.needsScopes?.length) out(`${s.server}: needs more scope (${s.needsScopes.join(' ')}): run \`mcpx login ${s.server}\``);
      }
    }),
  );
}
