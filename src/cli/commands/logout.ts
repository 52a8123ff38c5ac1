/** `mcpx logout NAME`: forget a server's tokens (and, with --forget-client, its client registration). */
import type { Command } from 'commander';
import { api, out, printJson, withClient, withJson, withTarget, type CliContext, type CommonOpts } from '../common.js';

export function register(program: Command, cli: CliContext): void {
  withJson(withTarget(program.command('logout').argument('<server>', 'a configured HTTP server').description("forget a server's OAuth tokens")))
    .option('--forget-client', "also forget mcpx's client registration at the server's authorization server")
    .action(async (server: string, o: CommonOpts & { forgetClient?: boolean }) =>
      withClient(o, cli, async (client) => {
        const { body } = await api<{ server: string; forgotTokens: boolean; forgotClient: boolean }>(
          client,
          'POST',
          `/v1/auth/${encodeURIComponent(server)}/logout`,
          o.forgetClient ? { forgetClient: true } : {},
        );
        if (o.json) return printJson(body);
        out(body.forgotTokens ? `forgot the tokens of ${server}` : `${server} held no tokens`);
        if (o.forgetClient) out(body.forgotClient ? 'forgot the client registration' : 'no client registration was stored');
      }),
    );
}
