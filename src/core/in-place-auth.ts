/**
 * Authorization asked for in the middle of a call: an MCP client that takes URL-mode elicitation is sent
 * the server's authorization URL instead of the refusal, and the call is tried once more.
 */
import type { AuthManager, LoginView } from '../auth/auth-manager.js';
import type { AuthView } from '../auth/server-auth.js';
import type { Logger } from '../log.js';
import type { Call } from '../call/call.js';

/** How long an in-place authorization waits for the browser (a login's own limit is longer). */
const LOGIN_WAIT_MS = 5 * 60_000;

export class InPlaceAuthorizer {
  constructor(
    private readonly auth: AuthManager | null,
    private readonly log: Logger,
  ) {}

  /**
   * An MCP client met a server that needs authorization: when the client takes URL-mode elicitation, it is
   * asked to open the authorization URL; the login finishes on mcpx's own callback and the call is tried
   * once more. False (the refusal stands) when the client cannot or will not, the login fails, or a 403 asks
   * for scopes already held.
   */
  async authorizeInPlace(call: Call): Promise<boolean> {
    const { server } = call;
    const auth = this.auth?.authorizer(server);
    const relay = call.relay;
    const elicitation = relay?.capabilities['elicitation'] as { url?: unknown } | undefined;
    if (!this.auth || !auth || !relay || elicitation?.url === undefined) return false;
    const view = auth.view();
    const stepUp = (view.needsScopes?.length ?? 0) > 0;
    if (!stepUp && view.state === 'authorized') return false;
    let login;
    try {
      login = await this.auth.login(server, { stepUp });
    } catch (err) {
      this.log.warn({ server, err: (err as Error).message }, 'could not start the authorization asked for in place');
      return false;
    }
    if (!login.url) return false;
    // Held while the client is asked and then waited for: nobody else polls this login.
    const release = this.auth.holdLogin(login.id);
    try {
      return await this.askAndWait(server, login, view, stepUp, relay, call);
    } finally {
      release(call.signal?.aborted === true);
    }
  }

  private async askAndWait(server: string, login: LoginView, view: AuthView, stepUp: boolean, relay: NonNullable<Call['relay']>, call: Call): Promise<boolean> {
    const auth = this.auth!;
    const message = stepUp
      ? `${server} needs more permission (${view.needsScopes!.join(' ')}). Open this address to authorize mcpx, then the call goes on.`
      : `${server} needs you to sign in. Open this address to authorize mcpx, then the call goes on.`;
    let answer: unknown;
    try {
      answer = await relay.ask(
        {
          jsonrpc: '2.0',
          id: `mcpx-auth-${login.id}`,
          method: 'elicitation/create',
          params: { mode: 'url', message, url: login.url, elicitationId: login.id },
        },
        call,
      );
    } catch {
      answer = undefined;
    }
    if ((answer as { action?: unknown } | undefined)?.action !== 'accept') {
      await auth.cancelLogin(login.id);
      return false;
    }
    const ended = await auth.waitLogin(login.id, LOGIN_WAIT_MS, call.signal);
    return ended.status === 'authorized';
  }
}
