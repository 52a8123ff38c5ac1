/**
 * One login: the OAuth authorization-code flow with PKCE (S256) for one HTTP server, run by the daemon.
 *
 * 1. A loopback listener on 127.0.0.1 that exists only for this login (`oauth.callbackPort` fixes its port: a
 *    taken one is an error, never another port; otherwise the port the stored registration was made with,
 *    when free, so its redirect URI still matches).
 * 2. The server's own challenge: an unauthenticated `server/discover` whose 401 names the protected-resource
 *    metadata and the scope.
 * 3. The SDK's `auth()` does the discovery the specification orders (protected-resource metadata path-based
 *    then root, authorization-server metadata with its issuer checked, the 2025-03-26 fallbacks), picks the
 *    client (configured, a client ID metadata document, else a dynamic registration), the RFC 8707 resource
 *    and the scope, and gives the authorization URL, which the caller opens in a browser.
 * 4. The redirect: `state` checked once, then the code exchanged (RFC 9207 `iss` compared exactly) and the
 *    tokens written to the credential store before the login reports success.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpxError } from '../errors.js';
import type { ClientRecord, CredentialStore, GrantClient, TokenRecord } from './credential-store.js';
import { browserAddressProblem } from './browser-address.js';
import { parseChallenge, scopeIncludes, scopeUnion } from './challenge.js';
import { loadOAuthClient, oauthErrorText, oauthFetch } from './oauth-client.js';
import type { OAuthSettings } from '../upstream/oauth-settings.js';

/** How long a login waits for the browser to come back. */
export const LOGIN_TIMEOUT_MS = 10 * 60_000;
const MODERN = '2026-07-28';

export interface LoginOptions {
  /** The server's name in mcpx's config, for messages. */
  name: string;
  /** The MCP endpoint. */
  url: string;
  settings: OAuthSettings;
  store: CredentialStore;
  /** Scopes to ask for besides the discovered ones (a step-up's union). */
  extraScope?: string;
  timeoutMs?: number;
  /** Told the new tokens once they are stored. */
  onTokens?: (record: TokenRecord) => void;
}

export type LoginStatus = 'waiting' | 'authorized' | 'failed';

export interface LoginOutcome {
  status: 'authorized' | 'failed';
  error?: { code: string; message: string };
  scope?: string;
  issuer?: string;
}

type DiscoveryState = Awaited<ReturnType<NonNullable<import('@modelcontextprotocol/client').OAuthClientProvider['discoveryState']>>>;

export class LoginFlow {
  readonly id = randomBytes(12).toString('base64url');
  status: LoginStatus = 'waiting';
  authorizationUrl: string | undefined;
  readonly done: Promise<LoginOutcome>;
  private settle!: (o: LoginOutcome) => void;
  private server: Server | undefined;
  private timer: NodeJS.Timeout | undefined;
  private redirectUri = '';
  private readonly expectedState = randomBytes(24).toString('base64url');
  private stateUsed = false;
  private verifier: string | undefined;
  private discovery: DiscoveryState;
  private resource: string | undefined;
  private scope: string | undefined;
  private resourceMetadataUrl: URL | undefined;
  private outcome: LoginOutcome | undefined;
  /** The stored client this login uses (recorded with the tokens: their refreshes authenticate as it). */
  private client: GrantClient | undefined;

  private constructor(private readonly opts: LoginOptions) {
    this.done = new Promise((resolve) => (this.settle = resolve));
  }

  /** Starts a login; resolves once the authorization URL is known (rejects if the flow cannot start). */
  static async start(opts: LoginOptions): Promise<LoginFlow> {
    const flow = new LoginFlow(opts);
    try {
      await flow.begin();
    } catch (err) {
      await flow.close();
      throw toOAuthError(err, opts.name);
    }
    return flow;
  }

  private async begin(): Promise<void> {
    const { settings } = this.opts;
    await this.listen();
    const challenge = await this.challenge();
    this.resourceMetadataUrl = challenge.resourceMetadata ? safeUrl(challenge.resourceMetadata) : undefined;
    // A step-up adds what was challenged to the configured scopes too: asking for them alone would be refused again.
    this.scope = scopeUnion(settings.scopes ?? challenge.scope, this.opts.extraScope);
    if (settings.authServerMetadataUrl) this.discovery = await this.configuredMetadata(settings.authServerMetadataUrl);
    const sdk = await loadOAuthClient();
    const result = await sdk.auth(this.provider(), {
      serverUrl: this.opts.url,
      ...(this.scope ? { scope: this.scope } : {}),
      ...(this.resourceMetadataUrl ? { resourceMetadataUrl: this.resourceMetadataUrl } : {}),
      fetchFn: oauthFetch,
    });
    if (result !== 'REDIRECT' || this.authorizationUrl === undefined) {
      throw new McpxError('MCPX_OAUTH_FAILED', `${this.opts.name}: the authorization server gave no authorization URL`);
    }
    // The metadata chose this address, and an opener runs whatever its scheme is bound to: refused before
    // anyone is handed it.
    const problem = browserAddressProblem(this.authorizationUrl);
    if (problem !== undefined) {
      throw new McpxError('MCPX_OAUTH_FAILED', `${this.opts.name}: the authorization server's authorization address is refused: ${problem}`, {
        data: { server: this.opts.name, ...addressParts(this.authorizationUrl) },
      });
    }
    this.timer = setTimeout(
      () =>
        this.finish({
          status: 'failed',
          error: {
            code: 'MCPX_OAUTH_TIMEOUT',
            message: `${this.opts.name}: the login was not completed within ${Math.round((this.opts.timeoutMs ?? LOGIN_TIMEOUT_MS) / 1000)} s`,
          },
        }),
      this.opts.timeoutMs ?? LOGIN_TIMEOUT_MS,
    );
    this.timer.unref();
  }

  /** Ends the login (a caller gave up, the daemon stops). */
  cancel(reason = 'the login was cancelled'): void {
    this.finish({ status: 'failed', error: { code: 'MCPX_OAUTH_FAILED', message: `${this.opts.name}: ${reason}` } });
  }

  private finish(outcome: LoginOutcome): void {
    if (this.outcome) return;
    this.outcome = outcome;
    this.status = outcome.status;
    clearTimeout(this.timer);
    void this.close();
    this.settle(outcome);
  }

  private async close(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  // ---- the loopback listener ----

  private async listen(): Promise<void> {
    const fixed = this.opts.settings.callbackPort;
    const server = createServer((req, res) => void this.onRequest(req, res));
    const bind = (port: number) =>
      new Promise<number>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => {
          server.off('error', reject);
          resolve((server.address() as AddressInfo).port);
        });
      });
    let port: number;
    if (fixed !== undefined) {
      try {
        port = await bind(fixed);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        throw new McpxError(
          'MCPX_OAUTH_PORT_TAKEN',
          code === 'EADDRINUSE'
            ? `${this.opts.name}: the callback port ${fixed} (oauth.callbackPort) is in use by another program; free it, or change oauth.callbackPort (the authorization server must know the new redirect URI)`
            : `${this.opts.name}: cannot listen on 127.0.0.1:${fixed} for the login's callback: ${(err as Error).message}`,
          { data: { port: fixed } },
        );
      }
    } else {
      const previous = this.previousPort();
      port = previous !== undefined ? await bind(previous).catch(() => bind(0)) : await bind(0);
    }
    this.server = server;
    this.redirectUri = `http://127.0.0.1:${port}/callback`;
  }

  /** The port of the redirect URI the stored registration was made with (so it still matches). */
  private previousPort(): number | undefined {
    const tokens = this.opts.store.tokens(this.opts.url);
    for (const [, r] of this.opts.store.entries()) {
      if (r.kind !== 'client' || !r.redirectUri) continue;
      if (tokens && tokens.issuer !== r.issuer) continue;
      const u = safeUrl(r.redirectUri);
      if (u && u.hostname === '127.0.0.1' && u.port) return Number(u.port);
    }
    return undefined;
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method !== 'GET' || url.pathname !== '/callback') return page(res, 404, 'Not found', 'This address is only for the mcpx login callback.');
    const state = url.searchParams.get('state');
    if (this.outcome || this.stateUsed || state !== this.expectedState) {
      return page(
        res,
        400,
        'mcpx: this sign-in link is not valid',
        'It does not belong to a login in progress (it was used already, or it is from an older login). Run mcpx login again.',
      );
    }
    this.stateUsed = true;
    const error = url.searchParams.get('error');
    if (error) {
      // The server's own description is not repeated: it is the authorization server's text, not ours.
      const message = `${this.opts.name}: the authorization server refused the authorization (${error.slice(0, 64)})`;
      page(res, 400, 'mcpx: sign-in refused', 'The authorization server refused. You can close this tab.');
      return this.finish({ status: 'failed', error: { code: 'MCPX_OAUTH_FAILED', message } });
    }
    const code = url.searchParams.get('code');
    if (!code) {
      page(res, 400, 'mcpx: sign-in incomplete', 'The redirect carried no code. You can close this tab.');
      return this.finish({ status: 'failed', error: { code: 'MCPX_OAUTH_FAILED', message: `${this.opts.name}: the redirect carried no authorization code` } });
    }
    const iss = url.searchParams.get('iss') ?? undefined;
    try {
      const sdk = await loadOAuthClient();
      await sdk.auth(this.provider(), {
        serverUrl: this.opts.url,
        authorizationCode: code,
        ...(iss !== undefined ? { iss } : {}),
        ...(this.scope ? { scope: this.scope } : {}),
        ...(this.resourceMetadataUrl ? { resourceMetadataUrl: this.resourceMetadataUrl } : {}),
        fetchFn: oauthFetch,
      });
      const t = this.opts.store.tokens(this.opts.url);
      page(res, 200, 'mcpx: signed in', `mcpx is now authorized for ${escapeHtml(this.opts.name)}. You can close this tab.`);
      this.finish({ status: 'authorized', ...(t?.scope ? { scope: t.scope } : {}), ...(t ? { issuer: t.issuer } : {}) });
    } catch (err) {
      const e = toOAuthError(err, this.opts.name);
      page(res, 400, 'mcpx: sign-in failed', 'mcpx could not finish the sign-in; the terminal says why. You can close this tab.');
      this.finish({ status: 'failed', error: { code: e.code, message: e.message } });
    }
  }

  // ---- what the server says before any authorization ----

  /** An unauthenticated MCP request: its 401 challenge names the metadata and the scope. */
  private async challenge(): Promise<ReturnType<typeof parseChallenge>> {
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 'mcpx-login',
      method: 'server/discover',
      params: {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': MODERN,
          'io.modelcontextprotocol/clientInfo': { name: 'mcpx', version: '0' },
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    });
    try {
      const res = await oauthFetch(this.opts.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': MODERN,
          'mcp-method': 'server/discover',
        },
        body,
        signal: AbortSignal.timeout(15_000),
      });
      await res.body?.cancel().catch(() => undefined);
      return res.status === 401 || res.status === 403 ? parseChallenge(res.headers.get('www-authenticate') ?? undefined) : {};
    } catch (err) {
      throw new McpxError('MCPX_OAUTH_FAILED', `${this.opts.name}: could not reach ${redactedUrl(this.opts.url)}: ${(err as Error).message}`);
    }
  }

  /** `oauth.authServerMetadataUrl`: the metadata given, its issuer recorded as the discovered one. */
  private async configuredMetadata(url: string): Promise<DiscoveryState> {
    const res = await oauthFetch(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(15_000) });
    if (!res.ok) throw new McpxError('MCPX_OAUTH_FAILED', `${this.opts.name}: oauth.authServerMetadataUrl answered HTTP ${res.status}`);
    const metadata = (await res.json()) as Record<string, unknown>;
    if (typeof metadata['issuer'] !== 'string' || typeof metadata['authorization_endpoint'] !== 'string' || typeof metadata['token_endpoint'] !== 'string') {
      throw new McpxError(
        'MCPX_OAUTH_FAILED',
        `${this.opts.name}: oauth.authServerMetadataUrl is not authorization-server metadata (issuer, authorization_endpoint, token_endpoint)`,
      );
    }
    return { authorizationServerUrl: metadata['issuer'], authorizationServerMetadata: metadata as never };
  }

  // ---- the SDK's view of this login ----

  private provider(): import('@modelcontextprotocol/client').OAuthClientProvider {
    const { settings, store } = this.opts;
    // The SDK calls these as methods of the provider object; they read this login's state.
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const flow = this;
    return {
      get redirectUrl() {
        return flow.redirectUri;
      },
      ...(settings.clientMetadataUrl ? { clientMetadataUrl: settings.clientMetadataUrl } : {}),
      get clientMetadata() {
        return {
          client_name: 'mcpx',
          redirect_uris: [flow.redirectUri],
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          application_type: 'native',
        };
      },
      state: () => flow.expectedState,
      clientInformation: (ctx) => {
        if (settings.clientId)
          return {
            client_id: settings.clientId,
            ...(settings.clientSecret ? { client_secret: settings.clientSecret } : {}),
            ...(ctx?.issuer ? { issuer: ctx.issuer } : {}),
          };
        const c = ctx?.issuer ? store.client(ctx.issuer) : undefined;
        // A registration made for another redirect URI may not match this one, and one made for fewer scopes may
        // not ask for more (oidc-provider refuses a step-up with invalid_scope): register again, for this scope.
        if (!c || (c.source === 'registration' && (c.redirectUri !== flow.redirectUri || (c.scope !== undefined && !scopeIncludes(c.scope, flow.scope)))))
          return undefined;
        flow.client = grantClient(c);
        return {
          client_id: c.clientId,
          ...(c.clientSecret ? { client_secret: c.clientSecret } : {}),
          ...(c.tokenEndpointAuthMethod ? { token_endpoint_auth_method: c.tokenEndpointAuthMethod } : {}),
          issuer: c.issuer,
        };
      },
      saveClientInformation: async (info, ctx) => {
        const issuer = ctx?.issuer ?? info.issuer;
        if (settings.clientId || !issuer) return; // a configured client lives in the config
        const record: ClientRecord = {
          kind: 'client',
          issuer,
          clientId: info.client_id,
          ...(info.client_secret ? { clientSecret: info.client_secret } : {}),
          ...(typeof authMethod(info) === 'string' ? { tokenEndpointAuthMethod: authMethod(info)! } : {}),
          redirectUri: flow.redirectUri,
          source: settings.clientMetadataUrl && info.client_id === settings.clientMetadataUrl ? 'metadata-document' : 'registration',
          ...(typeof registeredScope(info) === 'string' ? { scope: registeredScope(info)! } : {}),
          at: new Date().toISOString(),
        };
        await store.saveClient(record);
        flow.client = grantClient(record);
      },
      // A login always asks afresh: held tokens are not refreshed in its place.
      tokens: () => undefined,
      saveTokens: async (tokens, ctx) => {
        const issuer = ctx?.issuer ?? tokens.issuer ?? '';
        const metadata = (flow.discovery?.authorizationServerMetadata ?? {}) as Record<string, unknown>;
        const previous = store.tokens(flow.opts.url);
        const now = Date.now();
        const record: TokenRecord = {
          kind: 'tokens',
          server: flow.opts.url,
          issuer,
          accessToken: tokens.access_token,
          tokenType: tokens.token_type || 'Bearer',
          ...(tokens.refresh_token ? { refreshToken: tokens.refresh_token } : {}),
          ...(typeof tokens.expires_in === 'number' ? { expiresAt: now + tokens.expires_in * 1000 } : {}),
          issuedAt: now,
          ...((tokens.scope ?? flow.scope) ? { scope: tokens.scope ?? flow.scope } : {}),
          ...(flow.resource ? { resource: flow.resource } : {}),
          metadata,
          authorizationServerUrl: String(flow.discovery?.authorizationServerUrl ?? issuer),
          generation: (previous?.generation ?? 0) + 1,
          ...(flow.client && !settings.clientId ? { client: flow.client } : {}),
        };
        await store.saveTokens(record);
        if (record.client) await store.usedClient(issuer, flow.opts.url);
        flow.opts.onTokens?.(record);
      },
      redirectToAuthorization: (url) => {
        flow.authorizationUrl = url.href;
      },
      saveCodeVerifier: (v) => {
        flow.verifier = v;
      },
      codeVerifier: () => {
        if (flow.verifier === undefined) throw new McpxError('MCPX_OAUTH_FAILED', `${flow.opts.name}: no PKCE verifier for this login`);
        return flow.verifier;
      },
      saveDiscoveryState: (s) => {
        flow.discovery = s;
      },
      discoveryState: () => flow.discovery,
      saveResourceUrl: (r) => {
        flow.resource = r;
      },
      resourceUrl: () => flow.resource,
      invalidateCredentials: async (scope) => {
        if (scope === 'discovery' || scope === 'all') flow.discovery = undefined;
        if (scope === 'verifier' || scope === 'all') flow.verifier = undefined;
        if ((scope === 'client' || scope === 'all') && !settings.clientId) {
          const issuer = flow.discovery?.authorizationServerMetadata?.issuer;
          if (issuer) await store.forgetClient(issuer);
        }
      },
    };
  }
}

/** Any failure of the flow as MCPX_OAUTH_FAILED with a message that names the server (never a secret). */
export function toOAuthError(err: unknown, name: string): McpxError {
  if (err instanceof McpxError) return err;
  const e = err as { name?: string; message?: string; code?: string; error?: string };
  const what = oauthErrorText(err);
  const kind = e.name && e.name !== 'Error' ? `${e.name}: ` : '';
  return new McpxError('MCPX_OAUTH_FAILED', `${name}: the authorization failed: ${kind}${what}`.slice(0, 600), { cause: err });
}

const grantClient = (c: ClientRecord): GrantClient => ({
  clientId: c.clientId,
  ...(c.clientSecret ? { clientSecret: c.clientSecret } : {}),
  ...(c.tokenEndpointAuthMethod ? { tokenEndpointAuthMethod: c.tokenEndpointAuthMethod } : {}),
});

/** The scope a registration answer says the client may ask for (absent: the server did not say). */
const registeredScope = (info: object): string | undefined => {
  const s = (info as { scope?: unknown }).scope;
  return typeof s === 'string' && s.trim() !== '' ? s : undefined;
};

/** A full registration answer says how the client authenticates; a bare client id does not. */
const authMethod = (info: object): string | undefined => {
  const m = (info as { token_endpoint_auth_method?: unknown }).token_endpoint_auth_method;
  return typeof m === 'string' ? m : undefined;
};

function safeUrl(raw: string): URL | undefined {
  try {
    return new URL(raw);
  } catch {
    return undefined;
  }
}

/** The scheme and host of an address, for an error's data (never its query: it carries the state). */
function addressParts(raw: string): { scheme?: string; host?: string } {
  const u = safeUrl(raw);
  return u ? { scheme: u.protocol, host: u.host } : {};
}

function redactedUrl(raw: string): string {
  const u = safeUrl(raw);
  if (!u) return 'the server';
  u.username = '';
  u.password = '';
  u.search = '';
  return u.href;
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(res: ServerResponse, status: number, title: string, text: string): void {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' });
  res.end(
    `<!doctype html><meta charset="utf-8"><title>${title}</title><body style="font:16px system-ui;margin:3em"><h1 style="font-size:1.3em">${title}</h1><p>${text}</p>`,
  );
}
