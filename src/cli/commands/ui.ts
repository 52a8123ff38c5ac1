/** `mcpx ui [--open]`: the address of the daemon's live page (the command's work is in ../ui.ts). */
import type { Command } from 'commander';
import { out, withClient, withJson, withTarget, type CliContext, type CommonOpts } from '../common.js';

export function register(program: Command, cli: CliContext): void {
  withJson(
    withTarget(
      program.command('ui').description("the address of the daemon's live page: eras, statecharts and probe timelines (loopback only, one-time login)"),
    ),
  )
    .option('--open', 'open it in the browser')
    .action(async (o: CommonOpts & { open?: boolean }) =>
      withClient(o, cli, async (client, target) => {
        const { runUi } = await import('../ui.js');
        await runUi(client, o, out, target.stateDir);
      }),
    );
}
