/**
 * Re-authorization in place, for `mcpx call` and `mcpx tools`: when a server that was authorized refuses
 * mcpx (a 403 asking for more scope, a token it no longer takes and cannot be refreshed, an authorization
 * server that moved), and a browser can be opened (`$BROWSER` is set, or this is a terminal), the login runs
 * here and the command is tried again. At most two re-authorizations per command; none when the challenged
 * scopes are already held (the server would only refuse again), and none for a server never logged in to
 * (that is `mcpx login NAME`, which the error names).
 */
import type { AuthView } from '../auth/server-auth.js';
import type { DaemonClient } from './client.js';
import { api } from './common.js';

export const MAX_REAUTHORIZATIONS = 2;

const canOpenBrowser = (): boolean => Boolean(process.env['BROWSER']) || (process.stdin.isTTY === true && process.stderr.isTTY === true);

/** Runs `attempt`; while `refusedBy` names a server that needs a new authorization, authorizes it and runs it again. */
export async function withReauthorization<T>(client: DaemonClient, attempt: () => Promise<T>, refusedBy: (result: T) => string | undefined): Promise<T> {
  let result = await attempt();
  for (let n = 0; n < MAX_REAUTHORIZATIONS; n++) {
    const server = refusedBy(result);
    if (server === undefined || !canOpenBrowser()) return result;
    const view = await api<{ servers: AuthView[] }>(client, 'GET', `/v1/auth/${encodeURIComponent(server)}`).then(
      (r) => r.body.servers[0],
      () => undefined,
    );
    if (!view) return result;
    const stepUp = (view.needsScopes?.length ?? 0) > 0;
    if (!stepUp && view.state !== 'failed') return result;
    process.stderr.write(
      stepUp
        ? `mcpx: ${server} needs more scope (${view.needsScopes!.join(' ')}): authorizing it in the browser\n`
        : `mcpx: ${server} needs a new authorization: authorizing it in the browser\n`,
    );
    const { runLogin } = await import('./commands/login.js');
    await runLogin(client, server, { browser: true, stepUp });
    result = await attempt();
  }
  return result;
}
