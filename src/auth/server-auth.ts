/**
 * One HTTP server's credential, kept alive by the daemon alone: the bearer token on every request, a
 * refresh before it expires (a margin that scales with its lifetime, checked on a tick so a machine that
 * slept refreshes when it wakes), one refresh on a 401, and every refresh of the credential single-flight.
 * A rotated refresh token is written to the store before anything can use it; a refused refresh
 * (`invalid_grant`) forgets only the generation it used, never a newer one.
 */
import { McpxError } from '../errors.js';
import type { AuthChallenge, RequestAuthorizer } from '../transports/request-authorizer.js';
import type { CredentialStore, TokenRecord } from './credential-store.js';
import { parseChallenge, scopeSet, scopeUnion } from './challenge.js';
import { loadOAuthClient, oauthFetch } from './oauth-client.js';
import type { OAuthSettings } from './settings.js';

/** The clock a credential keeps time by; tests give a fake one. */
export interface AuthClock {
  now(): number;
  setInterval(fn: () => void, ms: number): { unref?(): void };
  clearInterval(handle: unknown): void;
}

export const systemClock: AuthClock = {
  now: () => Date.now(),
  setInterval: (fn, ms) => setInterval(fn, ms),
  clearInterval: (h) => clearInterval(h as NodeJS.Timeout),
};

/** Refresh this long before expiry: a fifth of the token's lifetime, at most a minute. */
export function refreshMargin(lifetimeMs: number): number {
  return Math.min(60_000, Math.max(0, lifetimeMs) / 5);
}

/** How often a held credential checks the wall clock (a timer alone sleeps with the machine). */
export const TICK_MS = 5_000;

export type AuthState = 'none' | 'needed' | 'authorized' | 'failed';

export interface AuthView {
  server: string;
  state: AuthState;
  issuer?: string;
  scopes?: string[];
  expiresAt?: string;
  refreshable?: boolean;
  error?: string;
  /** Scopes a 403 asked for that the credential does not hold. */
  needsScopes?: string[];
}

export interface ServerAuthOptions {
  name: string;
  url: string;
  settings: OAuthSettings;
  store: CredentialStore;
  clock?: AuthClock;
  /** Told whenever the credential's public view changes (for events and the page). */
  onChange?: (view: AuthView) => void;
  /** Told the secret values the credential holds now (for the daemon's scrubber). */
  onSecrets?: (secrets: string[]) => void;
  /** Whether the server has a static Authorization header configured (then a 401 is about that). */
  staticAuthorization?: boolean;
  log?: { info(o: object, m?: string): void; warn(o: object, m?: string): void };
}

export class ServerAuth implements RequestAuthorizer {
  readonly name: string;
  readonly url: string;
  private readonly clock: AuthClock;
  private refreshing: Promise<TokenRecord | undefined> | undefined;
  private tick: unknown;
  private needed = false;
  private lastError: string | undefined;
  private challengedScope: string | undefined;
  /** Refreshes done (for the status view and the tests' counts). */
  refreshes = 0;

  constructor(private readonly opts: ServerAuthOptions) {
    this.name = opts.name;
    this.url = opts.url;
    this.clock = opts.clock ?? systemClock;
    this.held(); // start the tick if there is a credential
    this.publishSecrets();
  }

  /** The stored tokens. */
  private record(): TokenRecord | undefined {
    return this.opts.store.tokens(this.url);
  }

  view(): AuthView {
    const r = this.record();
    if (r) {
      return {
        server: this.name,
        state: this.lastError && !this.refreshing ? 'failed' : 'authorized',
        issuer: r.issuer,
        ...(r.scope ? { scopes: [...scopeSet(r.scope)] } : {}),
        ...(r.expiresAt !== undefined ? { expiresAt: new Date(r.expiresAt).toISOString() } : {}),
        refreshable: r.refreshToken !== undefined,
        ...(this.lastError ? { error: this.lastError } : {}),
        ...(this.missingScopes().length > 0 ? { needsScopes: this.missingScopes() } : {}),
      };
    }
    if (this.lastError) return { server: this.name, state: 'failed', error: this.lastError };
    return { server: this.name, state: this.needed ? 'needed' : 'none' };
  }

  /** Scopes the last 403 asked for that the credential does not hold. */
  missingScopes(): string[] {
    const held = scopeSet(this.record()?.scope);
    return [...scopeSet(this.challengedScope)].filter((s) => !held.has(s));
  }

  /** The scope a re-authorization should ask for: what is held plus what was challenged. */
  stepUpScope(): string | undefined {
    return scopeUnion(this.record()?.scope, this.challengedScope);
  }

  // ---- RequestAuthorizer ----

  async headers(): Promise<Record<string, string>> {
    let r = this.record();
    if (!r) return {};
    if (this.due(r) && r.refreshToken) r = (await this.refresh(r.generation).catch(() => undefined)) ?? this.record();
    if (!r) return {};
    return { authorization: `${/^bearer$/i.test(r.tokenType) ? 'Bearer' : r.tokenType} ${r.accessToken}` };
  }

  async challenged(c: AuthChallenge): Promise<boolean> {
    const ch = parseChallenge(c.wwwAuthenticate);
    if (c.status === 403) {
      if (ch.error === 'insufficient_scope' && ch.scope) {
        this.challengedScope = ch.scope;
        this.changed();
      }
      return false;
    }
    const r = this.record();
    const sent = c.sent['authorization'];
    if (!r || sent === undefined) {
      if (!this.needed) {
        this.needed = true;
        this.changed();
      }
      return false;
    }
    // Another request renewed the credential while this one was out: send it again with the new one.
    if (!sent.endsWith(` ${r.accessToken}`)) return true;
    if (!r.refreshToken) {
      this.fail(`the access token was refused (HTTP 401) and there is no refresh token: run \`mcpx login ${this.name}\``);
      return false;
    }
    const renewed = await this.refresh(r.generation).catch(() => undefined);
    return renewed !== undefined;
  }

  hint(status: number): string | undefined {
    if (this.opts.staticAuthorization && !this.record()) return undefined;
    if (status === 403 && this.missingScopes().length > 0) {
      return `${this.name} needs more scope (${this.missingScopes().join(' ')}): run \`mcpx login ${this.name}\` to authorize it`;
    }
    if (this.lastError) return `${this.name}: ${this.lastError}`;
    return `${this.name} needs authorization: run \`mcpx login ${this.name}\``;
  }

  secrets(): readonly string[] {
    const r = this.record();
    if (!r) return [];
    const clientSecret = (r.client ?? this.opts.store.client(r.issuer))?.clientSecret;
    return [r.accessToken, ...(r.refreshToken ? [r.refreshToken] : []), ...(clientSecret ? [clientSecret] : [])];
  }

  // ---- keeping it alive ----

  /** Whether the access token is within its refresh margin (or past expiry). */
  private due(r: TokenRecord): boolean {
    if (r.expiresAt === undefined) return false;
    return this.clock.now() >= r.expiresAt - refreshMargin(r.expiresAt - r.issuedAt);
  }

  /**
   * One refresh of the credential, shared by every caller that asks while it runs. `generation` is the
   * one the caller saw: when the store already holds a newer one, that is the answer.
   */
  refresh(generation?: number): Promise<TokenRecord | undefined> {
    const current = this.record();
    if (generation !== undefined && current && current.generation > generation) return Promise.resolve(current);
    this.refreshing ??= this.doRefresh().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  private async doRefresh(): Promise<TokenRecord | undefined> {
    const r = this.record();
    if (!r?.refreshToken) return undefined;
    const sdk = await loadOAuthClient();
    const client = this.clientInformation(r);
    if (!client) {
      this.fail(`no client registration is stored for ${r.issuer}: run \`mcpx login ${this.name}\``);
      return undefined;
    }
    let tokens: Awaited<ReturnType<typeof sdk.refreshAuthorization>>;
    try {
      tokens = await sdk.refreshAuthorization(r.authorizationServerUrl, {
        metadata: r.metadata as never,
        clientInformation: client,
        refreshToken: r.refreshToken,
        ...(r.resource ? { resource: r.resource } : {}),
        fetchFn: oauthFetch,
      });
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      const refused = code === 'invalid_grant' || code === 'invalid_client' || code === 'unauthorized_client';
      if (refused) {
        // Only the generation this refresh used: a newer login's tokens are never forgotten here.
        await this.opts.store.forgetTokens(this.url, r.generation).catch(() => undefined);
        this.fail(`the authorization server refused to renew the authorization (${String(code)}): run \`mcpx login ${this.name}\``);
        this.opts.log?.warn({ server: this.name, error: String(code) }, 'the refresh was refused; the server needs a new login');
      } else {
        // The network or the server failed: the credential stays, the next request tries again.
        this.lastError = `the last refresh failed: ${(err as Error).message}`.slice(0, 300);
        this.changed();
        this.opts.log?.warn({ server: this.name, error: (err as Error).message }, 'a token refresh failed; will try again');
      }
      return undefined;
    }
    const now = this.clock.now();
    const next: TokenRecord = {
      ...r,
      accessToken: tokens.access_token,
      tokenType: tokens.token_type || r.tokenType,
      // A server that does not rotate keeps the refresh token it gave.
      ...(tokens.refresh_token ? { refreshToken: tokens.refresh_token } : {}),
      issuedAt: now,
      ...(typeof tokens.expires_in === 'number' ? { expiresAt: now + tokens.expires_in * 1000 } : {}),
      ...(tokens.scope ? { scope: tokens.scope } : {}),
      generation: r.generation + 1,
    };
    if (typeof tokens.expires_in !== 'number') delete next.expiresAt;
    // Written before anything can use it: a rotated refresh token lost here would end the grant.
    await this.opts.store.saveTokens(next);
    this.refreshes++;
    this.lastError = undefined;
    this.needed = false;
    this.publishSecrets();
    this.changed();
    this.opts.log?.info({ server: this.name, generation: next.generation }, 'token refreshed');
    return next;
  }

  /** The client a refresh authenticates as: the configured one, else the one the tokens were issued to. */
  private clientInformation(r: TokenRecord): { client_id: string; client_secret?: string; token_endpoint_auth_method?: string } | undefined {
    const s = this.opts.settings;
    if (s.clientId) return { client_id: s.clientId, ...(s.clientSecret ? { client_secret: s.clientSecret } : {}) };
    // A later registration (another server's login, a step-up) replaces the issuer's record, not this grant's client.
    const c = r.client ?? this.opts.store.client(r.issuer);
    if (!c) return undefined;
    return {
      client_id: c.clientId,
      ...(c.clientSecret ? { client_secret: c.clientSecret } : {}),
      ...(c.tokenEndpointAuthMethod ? { token_endpoint_auth_method: c.tokenEndpointAuthMethod } : {}),
    };
  }

  /** New tokens from a login. */
  authorized(): void {
    this.needed = false;
    this.lastError = undefined;
    const r = this.record();
    if (r && r.scope) {
      const held = scopeSet(r.scope);
      if ([...scopeSet(this.challengedScope)].every((x) => held.has(x))) this.challengedScope = undefined;
    }
    this.publishSecrets();
    this.held();
    this.changed();
  }

  /** Tokens forgotten (logout). */
  forgotten(): void {
    this.needed = false;
    this.lastError = undefined;
    this.challengedScope = undefined;
    this.publishSecrets();
    this.changed();
  }

  /** Starts the wall-clock tick while a refreshable credential is held (refreshes due ones, at start-up too). */
  private held(): void {
    const r = this.record();
    if (!r?.refreshToken || this.tick !== undefined) return;
    const h = this.clock.setInterval(() => this.onTick(), TICK_MS);
    h.unref?.();
    this.tick = h;
    this.onTick();
  }

  private onTick(): void {
    const r = this.record();
    if (!r?.refreshToken) {
      this.stop();
      return;
    }
    if (this.due(r) && !this.refreshing) void this.refresh(r.generation).catch(() => undefined);
  }

  stop(): void {
    if (this.tick !== undefined) this.clock.clearInterval(this.tick);
    this.tick = undefined;
  }

  private fail(message: string): void {
    this.lastError = message;
    this.publishSecrets();
    this.changed();
  }

  private changed(): void {
    this.opts.onChange?.(this.view());
  }

  private publishSecrets(): void {
    const s = this.opts.settings.clientSecret;
    this.opts.onSecrets?.([...this.secrets(), ...(s ? [s] : [])]);
  }
}

/** The error a caller gets for a server that needs authorization before anything was sent. */
export function unauthorizedError(name: string, message: string): McpxError {
  return new McpxError('MCPX_UPSTREAM_UNAUTHORIZED', message, { data: { server: name, login: `mcpx login ${name}` } });
}
