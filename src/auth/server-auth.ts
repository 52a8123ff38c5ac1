/**
 * One HTTP server's credential, kept alive by the daemon alone: the bearer token on every request, a
 * refresh before it expires (a margin that scales with its lifetime, checked on a tick so a machine that
 * slept refreshes when it wakes), one refresh on a 401, and every refresh of the credential single-flight.
 * A rotated refresh token is written to the store before anything can use it; a refused refresh
 * (`invalid_grant`) forgets only the generation it used, never a newer one. A refresh that fails (the network,
 * a 5xx, no answer within `oauth.requestTimeout`) backs off, as does a server that refuses fresh tokens at
 * once; a logout aborts the refresh in flight and nothing it brings back is kept; a renewed credential the
 * store could not save is reported and saved again on every tick.
 */
import type { AuthChallenge, RequestAuthorizer } from '../transports/request-authorizer.js';
import type { CredentialStore, TokenRecord } from './credential-store.js';
import { parseChallenge, scopeSet, scopeUnion } from './challenge.js';
import { loadOAuthClient, oauthErrorText, oauthFetchWith } from './oauth-client.js';
import type { OAuthSettings } from '../upstream/oauth-settings.js';

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

/** `oauth.refreshBackoffMax`'s default. */
export const DEFAULT_REFRESH_BACKOFF_MAX_MS = 5 * 60_000;

/** The wait after `failures` failed refreshes in a row: 1 s, doubled after each, at most `maxMs`. */
export function refreshBackoff(failures: number, maxMs: number): number {
  return Math.min(maxMs, 1000 * 2 ** Math.min(30, Math.max(0, failures - 1)));
}

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
  /**
   * The renewed credential in use could not be written to credentials.json (why): a restart now would lose it
   * (a rotated refresh token is then refused). mcpx saves it again on every tick.
   */
  unsaved?: string;
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
  log?: { info(o: object, m?: string): void; warn(o: object, m?: string): void; error?(o: object, m?: string): void };
  /** `oauth.refreshBackoffMax`, read at each failure. */
  backoffMaxMs?: () => number;
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
  /** Aborts the refresh in flight (a logout). */
  private refreshAbort: AbortController | undefined;
  /** Failed refreshes in a row, and when the next may start. */
  private failures = 0;
  private retryAt = 0;
  /** The generation a 401 asked for, until a request with it is accepted. */
  private renewedFor401: number | undefined;
  /** Why the credential in use is not on disk (see AuthView.unsaved). */
  private unsaved: string | undefined;
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
        ...(this.unsaved ? { unsaved: this.unsaved } : {}),
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
    if (this.renewedFor401 === r.generation) {
      // A token fresh from the refresh a 401 asked for, refused before any request took it: another refresh
      // would only rotate again. Back off as for a failed refresh (the next 401 after the wait may try once
      // more), and say so.
      this.renewedFor401 = undefined;
      const wait = this.failed(
        `${this.name} refused a token fresh from the authorization server (HTTP 401) at once; not renewing it again for now: check the server's configuration, or run \`mcpx login ${this.name}\``,
      );
      this.opts.log?.warn({ server: this.name, retryInMs: wait }, 'the server refused a fresh token at once; not renewing it again for now');
      return false;
    }
    const renewed = await this.refresh(r.generation, true).catch(() => undefined);
    return renewed !== undefined;
  }

  accepted(sent: Readonly<Record<string, string>>): void {
    const r = this.record();
    if (!r || this.renewedFor401 !== r.generation || !sent['authorization']?.endsWith(` ${r.accessToken}`)) return;
    // The credential a 401 asked for works: the server was not refusing every token.
    this.renewedFor401 = undefined;
    this.failures = 0;
    this.retryAt = 0;
    if (this.lastError !== undefined) {
      this.lastError = undefined;
      this.changed();
    }
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
   * one the caller saw: when the store already holds a newer one, that is the answer. While backing off after a
   * failure no request is made: the answer is undefined at once (the view says why).
   */
  refresh(generation?: number, for401 = false): Promise<TokenRecord | undefined> {
    const current = this.record();
    if (generation !== undefined && current && current.generation > generation) return Promise.resolve(current);
    if (!this.refreshing && this.clock.now() < this.retryAt) return Promise.resolve(undefined);
    if (!this.refreshing) {
      const abort = new AbortController();
      this.refreshAbort = abort;
      this.refreshing = this.doRefresh(abort.signal, for401).finally(() => {
        this.refreshing = undefined;
        if (this.refreshAbort === abort) this.refreshAbort = undefined;
      });
    }
    return this.refreshing;
  }

  private async doRefresh(signal: AbortSignal, for401: boolean): Promise<TokenRecord | undefined> {
    const r = this.record();
    if (!r?.refreshToken) return undefined;
    const sdk = await loadOAuthClient();
    const client = this.clientInformation(r);
    if (!client) {
      this.fail(`no client registration is stored for ${r.issuer}: run \`mcpx login ${this.name}\``);
      return undefined;
    }
    const request = (scope: string | undefined) =>
      sdk.refreshAuthorization(r.authorizationServerUrl, {
        metadata: r.metadata as never,
        clientInformation: client,
        refreshToken: r.refreshToken!,
        ...(scope ? { scope } : {}),
        ...(r.resource ? { resource: r.resource } : {}),
        fetchFn: oauthFetchWith(signal),
      });
    // The granted scope goes with the refresh (Microsoft Entra gives a token for another scope without it),
    // unless this authorization server refused it before (some refuse `scope` on a refresh). `offline_access`,
    // which a token answer never lists, is named as the authorization asked for it (the server offers it): some
    // servers issue no new refresh token to a refresh that leaves it out.
    const offline = Array.isArray(r.metadata['scopes_supported']) && r.metadata['scopes_supported'].includes('offline_access');
    const granted = offline ? scopeUnion(r.scope, 'offline_access') : r.scope;
    const scope = r.scope && this.opts.store.authorizationServer(r.issuer)?.refreshScope !== 'omit' ? granted : undefined;
    let tokens: Awaited<ReturnType<typeof sdk.refreshAuthorization>>;
    try {
      try {
        tokens = await request(scope);
      } catch (err) {
        if (scope === undefined || (err as { code?: unknown }).code !== 'invalid_scope' || signal.aborted) throw err;
        this.opts.log?.info(
          { server: this.name, issuer: r.issuer },
          'the authorization server refused the scope on a refresh; refreshing without it from now on',
        );
        await this.opts.store
          .saveAuthorizationServer({ kind: 'authorization-server', issuer: r.issuer, refreshScope: 'omit', at: new Date().toISOString() })
          .catch(() => undefined);
        tokens = await request(undefined);
      }
    } catch (err) {
      // A logout ended it: nothing to report, nothing to keep.
      if (signal.aborted) return undefined;
      const code = (err as { code?: unknown }).code;
      const refused = code === 'invalid_grant' || code === 'invalid_client' || code === 'unauthorized_client';
      if (refused) {
        // Only the generation this refresh used: a newer login's tokens are never forgotten here.
        await this.opts.store.forgetTokens(this.url, r.generation).catch(() => undefined);
        this.fail(`the authorization server refused to renew the authorization (${String(code)}): run \`mcpx login ${this.name}\``);
        this.opts.log?.warn({ server: this.name, error: String(code) }, 'the refresh was refused; the server needs a new login');
      } else {
        // The network or the server failed: the credential stays; the next refresh waits (1 s, doubling).
        const wait = this.failed(`the last refresh failed: ${oauthErrorText(err)}`.slice(0, 300));
        // Cut: the SDK quotes an unreadable answer's whole body in its message.
        this.opts.log?.warn({ server: this.name, error: oauthErrorText(err).slice(0, 300), retryInMs: wait }, 'a token refresh failed; will try again');
      }
      return undefined;
    }
    // A logout (or a login) came while the answer was on its way: the credential it renewed is gone.
    const now = this.record();
    if (signal.aborted || !now || now.generation !== r.generation || now.refreshToken !== r.refreshToken) {
      this.opts.log?.info({ server: this.name }, 'a refresh ended after its credential was forgotten or replaced; its tokens are dropped');
      return undefined;
    }
    const at = this.clock.now();
    const next: TokenRecord = {
      ...r,
      accessToken: tokens.access_token,
      tokenType: tokens.token_type || r.tokenType,
      // A server that does not rotate keeps the refresh token it gave.
      ...(tokens.refresh_token ? { refreshToken: tokens.refresh_token } : {}),
      issuedAt: at,
      ...(typeof tokens.expires_in === 'number' ? { expiresAt: at + tokens.expires_in * 1000 } : {}),
      ...(tokens.scope ? { scope: tokens.scope } : {}),
      generation: r.generation + 1,
    };
    if (typeof tokens.expires_in !== 'number') delete next.expiresAt;
    // Written before anything can use it: a rotated refresh token lost here would end the grant. The store holds
    // it in memory at once; when the disk refuses it, calls go on with it and the view says so until it is saved.
    const saving = this.opts.store.saveTokens(next);
    this.refreshes++;
    this.lastError = undefined;
    this.needed = false;
    if (for401) this.renewedFor401 = next.generation;
    else this.failures = 0;
    if (!for401) this.retryAt = 0;
    this.publishSecrets();
    await saving.then(
      () => this.saved(),
      (err: unknown) => this.notSaved(err),
    );
    this.changed();
    this.opts.log?.info({ server: this.name, generation: next.generation }, 'token refreshed');
    return next;
  }

  /** A failure that waits before the next refresh; the wait. */
  private failed(message: string): number {
    this.failures++;
    const wait = refreshBackoff(this.failures, this.opts.backoffMaxMs?.() ?? DEFAULT_REFRESH_BACKOFF_MAX_MS);
    this.retryAt = this.clock.now() + wait;
    this.lastError = message;
    this.changed();
    return wait;
  }

  private saved(): void {
    if (this.unsaved === undefined) return;
    this.unsaved = undefined;
    this.opts.log?.info({ server: this.name }, 'the renewed credential is saved now');
    this.changed();
  }

  private notSaved(err: unknown): void {
    const first = this.unsaved === undefined;
    this.unsaved =
      `the renewed credential could not be saved to credentials.json (${(err as Error).message}); a restart now would lose it and need a new login. mcpx tries again every ${TICK_MS / 1000} s`.slice(
        0,
        400,
      );
    if (first)
      (this.opts.log?.error ?? this.opts.log?.warn)?.call(
        this.opts.log,
        { server: this.name, error: (err as Error).message },
        'the renewed credential could not be saved; retrying',
      );
    this.changed();
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
    this.unsaved = undefined;
    this.failures = 0;
    this.retryAt = 0;
    this.renewedFor401 = undefined;
    const r = this.record();
    if (r && r.scope) {
      const held = scopeSet(r.scope);
      if ([...scopeSet(this.challengedScope)].every((x) => held.has(x))) this.challengedScope = undefined;
    }
    this.publishSecrets();
    this.held();
    this.changed();
  }

  /**
   * Before a logout forgets the tokens: the refresh in flight is aborted, and waited for, so nothing it brings
   * back is stored after the logout answers.
   */
  async forgetting(): Promise<void> {
    this.refreshAbort?.abort();
    await this.refreshing?.catch(() => undefined);
  }

  /** Tokens forgotten (logout). */
  forgotten(): void {
    this.unsaved = undefined;
    this.failures = 0;
    this.retryAt = 0;
    this.renewedFor401 = undefined;
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
    // The credential in use is not on disk yet: write it again (the store retries everything pending).
    if (this.unsaved !== undefined) {
      this.opts.store.saveTokens(r).then(
        () => this.saved(),
        (err: unknown) => this.notSaved(err),
      );
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
