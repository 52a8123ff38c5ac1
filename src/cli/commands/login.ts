/** `mcpx login NAME`: authorize mcpx for one HTTP server (OAuth, in a browser); the daemon keeps the tokens. */
import type { Command } from 'commander';
import { McpxError } from '../../errors.js';
import type { LoginView } from '../../auth/auth-manager.js';
import { api, out, printJson, withClient, withJson, withTarget, type CliContext, type CommonOpts } from '../common.js';
import type { DaemonClient } from '../../daemon-client/client.js';

export function register(program: Command, cli: CliContext): void {
  withJson(
    withTarget(
      program
        .command('login')
        .argument('<server>', 'a configured HTTP server')
        .description("authorize mcpx for an HTTP server behind OAuth: opens the authorization page ($BROWSER, else the system's browser)"),
    ),
  )
    .option('--no-browser', 'print the address to open instead of opening a browser (for a machine without a desktop)')
    .action(async (server: string, o: CommonOpts & { browser?: boolean }) =>
      withClient(o, cli, async (client, target) => {
        const view = await runLogin(client, server, { browser: o.browser !== false, json: o.json === true, stateDir: target.stateDir });
        if (o.json) return printJson(view);
        out(`authorized mcpx for ${server}${view.scopes?.length ? ` (scopes: ${view.scopes.join(' ')})` : ''}`);
      }),
    );
}

/**
 * Starts a login at the daemon, opens (or prints) its address and waits for it to end. The browser gets a 0600
 * page that forwards to the authorization URL (../browser.ts), never the URL in its command line. The daemon
 * holds the login only while this command waits for it: Ctrl-C, SIGTERM or SIGHUP cancel it here, and a
 * command killed outright is noticed there when its wait is cut off.
 */
export async function runLogin(client: DaemonClient, server: string, o: { browser: boolean; json?: boolean; stateDir: string }): Promise<LoginView> {
  const path = `/v1/auth/${encodeURIComponent(server)}`;
  const { body: started } = await api<LoginView>(client, 'POST', `${path}/login`, {}).catch((err: unknown) => {
    // A login that cannot start (its callback port taken) reports like one that failed later.
    if (o.json && err instanceof McpxError) printJson({ server, status: 'failed', error: { code: err.code, message: err.message } });
    throw err;
  });
  let forgetPage: (() => void) | undefined;
  const cancel = (signal: NodeJS.Signals) => {
    forgetPage?.();
    void api(client, 'POST', `/v1/auth/logins/${started.id}/cancel`).finally(() => process.exit(signal === 'SIGINT' ? 130 : signal === 'SIGHUP' ? 129 : 143));
  };
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  for (const s of signals) process.once(s, cancel);
  try {
    if (started.status === 'waiting' && started.url) {
      const say = (text: string) => process.stderr.write(`${text}\n`);
      if (!o.browser) {
        say(`Open this address in a browser to authorize mcpx for ${server}:\n\n  ${started.url}\n\nWaiting for the authorization…`);
      } else {
        const { openInBrowser } = await import('../browser.js');
        try {
          const opened = await openInBrowser(o.stateDir, 'oauth-login', started.url);
          forgetPage = opened.forget;
          say(`Opened the browser to authorize mcpx for ${server}. If nothing opened, open:\n  ${started.url}`);
        } catch (err) {
          say(`${(err as Error).message}. Open this address in a browser to authorize mcpx for ${server}:\n\n  ${started.url}`);
        }
      }
    }
    let view = started;
    while (view.status === 'waiting') {
      view = (await api<LoginView>(client, 'GET', `/v1/auth/logins/${started.id}?waitMs=55000`)).body;
    }
    if (view.status === 'failed') {
      if (o.json) printJson(view);
      throw new McpxError((view.error?.code as McpxError['code'] | undefined) ?? 'MCPX_OAUTH_FAILED', view.error?.message ?? `${server}: the login failed`);
    }
    return view;
  } finally {
    for (const s of signals) process.off(s, cancel);
    // The page holds the authorization URL: spent once the login ended.
    forgetPage?.();
  }
}
