/**
 * The daemon's OAuth state: the credential store, one ServerAuth per HTTP server that may use
 * authorization (every one whose `oauth` is not `false`), and the logins in progress (one per server at a
 * time). The CLI and `mcpx serve` never hold a token: they ask the daemon to log in, and the daemon's
 * HTTP channels ask it for headers.
 */
import type { ResolvedServer } from '../config/config-file.js';
import { McpxError } from '../errors.js';
import { isStdioDefinition, type HttpDefinition } from '../upstream/definition.js';
import type { CredentialStore } from './credential-store.js';
import { LoginFlow, type LoginOutcome } from './login.js';
import { ServerAuth, type AuthClock, type AuthView } from './server-auth.js';
import type { OAuthSettings } from '../upstream/oauth-settings.js';

export interface AuthManagerOptions {
  store: CredentialStore;
  clock?: AuthClock;
  onChange?: (view: AuthView) => void;
  onSecrets?: (owner: string, secrets: string[]) => void;
  log?: { info(o: object, m?: string): void; warn(o: object, m?: string): void };
  loginTimeoutMs?: number;
  /** `oauth.refreshBackoffMax`, read at each failed refresh. */
  backoffMaxMs?: () => number;
  /** `oauth.loginUnwatchedTimeout`; default LOGIN_UNWATCHED_MS. */
  loginUnwatchedMs?: number;
}

export interface LoginView {
  id: string;
  server: string;
  status: 'waiting' | 'authorized' | 'failed';
  /** Present while waiting: the address to open in a browser. */
  url?: string;
  error?: { code: string; message: string };
  scopes?: string[];
}

/**
 * A login is held by whoever waits for it (`mcpx login`'s long poll, an in-place authorization): once the last
 * waiter's connection is cut off the login is cancelled at once, and one nobody waits for (a command killed
 * between two polls, or before its first) after this long. A login is never left running for the next
 * `mcpx login` to join with an old authorization URL. The default of `oauth.loginUnwatchedTimeout`.
 */
export const LOGIN_UNWATCHED_MS = 15_000;

interface Entry {
  auth: ServerAuth;
  fingerprint: string;
  definition: HttpDefinition;
}

export class AuthManager {
  private readonly servers = new Map<string, Entry>();
  private readonly logins = new Map<string, { flow: LoginFlow; server: string; waiters: number; unwatched?: NodeJS.Timeout }>();
  private readonly outcomes = new Map<string, LoginView>();

  constructor(private readonly opts: AuthManagerOptions) {}

  get store(): CredentialStore {
    return this.opts.store;
  }

  /** After a config load or reload: a ServerAuth per HTTP server that may use authorization. */
  setServers(servers: readonly ResolvedServer[]): void {
    const seen = new Set<string>();
    for (const s of servers) {
      const def = s.definition;
      if (isStdioDefinition(def) || def.oauth === false) continue;
      seen.add(s.name);
      const settings: OAuthSettings = def.oauth ?? {};
      const fingerprint = JSON.stringify([def.url, settings, Object.keys(def.headers ?? {}).includes('authorization')]);
      const had = this.servers.get(s.name);
      if (had?.fingerprint === fingerprint) continue;
      had?.auth.stop();
      const staticAuthorization = Object.keys(def.headers ?? {}).some((k) => k.toLowerCase() === 'authorization');
      const auth = new ServerAuth({
        name: s.name,
        url: def.url,
        settings,
        store: this.opts.store,
        staticAuthorization,
        ...(this.opts.clock ? { clock: this.opts.clock } : {}),
        ...(this.opts.onChange ? { onChange: this.opts.onChange } : {}),
        onSecrets: (secrets) => this.opts.onSecrets?.(`oauth:${s.name}`, secrets),
        ...(this.opts.log ? { log: this.opts.log } : {}),
        ...(this.opts.backoffMaxMs ? { backoffMaxMs: this.opts.backoffMaxMs } : {}),
      });
      this.servers.set(s.name, { auth, fingerprint, definition: def });
    }
    for (const [name, e] of this.servers) {
      if (seen.has(name)) continue;
      e.auth.stop();
      this.opts.onSecrets?.(`oauth:${name}`, []);
      this.servers.delete(name);
    }
  }

  /** The per-request authorizer of a server's HTTP channels (none for stdio or `oauth: false`). */
  authorizer(name: string): ServerAuth | undefined {
    return this.servers.get(name)?.auth;
  }

  private entry(name: string): Entry {
    const e = this.servers.get(name);
    if (!e) {
      throw new McpxError('MCPX_BAD_REQUEST', `${name} is not an HTTP server that can use authorization (a stdio server, or \`oauth: false\`)`, {
        data: { server: name },
      });
    }
    return e;
  }

  views(name?: string): AuthView[] {
    if (name !== undefined) return [this.entry(name).auth.view()];
    return [...this.servers.values()].map((e) => e.auth.view());
  }

  /**
   * Starts a login for `name` (or joins the one running). It asks for the held scopes plus the ones a 403
   * challenged when asked to (`stepUp`) or when the server is missing some: the refusal said to run
   * `mcpx login NAME`, and a login for fewer scopes would be refused again.
   */
  async login(name: string, options: { stepUp?: boolean } = {}): Promise<LoginView> {
    const e = this.entry(name);
    for (const [id, l] of this.logins) if (l.server === name && l.flow.status === 'waiting') return this.loginView(id);
    const extraScope = options.stepUp || e.auth.missingScopes().length > 0 ? e.auth.stepUpScope() : undefined;
    const flow = await LoginFlow.start({
      name,
      url: e.definition.url,
      settings: e.definition.oauth || {},
      store: this.opts.store,
      ...(extraScope ? { extraScope } : {}),
      ...(this.opts.loginTimeoutMs === undefined ? {} : { timeoutMs: this.opts.loginTimeoutMs }),
    });
    this.logins.set(flow.id, { flow, server: name, waiters: 0 });
    this.watchFor(flow.id);
    void flow.done.then((outcome) => this.ended(flow.id, name, outcome));
    return this.loginView(flow.id);
  }

  /**
   * Someone waits for the login: it stays until they call the release, with `gone` when they went away
   * (their connection was cut off), which cancels it if nobody else waits.
   */
  holdLogin(id: string): (gone?: boolean) => void {
    const l = this.logins.get(id);
    if (!l) return () => undefined;
    l.waiters++;
    clearTimeout(l.unwatched);
    let released = false;
    return (gone = false) => {
      if (released) return;
      released = true;
      l.waiters--;
      if (l.waiters > 0 || !this.logins.has(id)) return;
      // The waiter's connection was cut off (its command was killed): nobody will open this login's address.
      if (gone) l.flow.cancel('the command waiting for the login is gone');
      else this.watchFor(id);
    };
  }

  /** Cancels the login unless someone waits for it within LOGIN_UNWATCHED_MS. */
  private watchFor(id: string): void {
    const l = this.logins.get(id);
    if (!l || l.waiters > 0) return;
    clearTimeout(l.unwatched);
    const ms = this.opts.loginUnwatchedMs ?? LOGIN_UNWATCHED_MS;
    l.unwatched = setTimeout(() => {
      if (l.waiters === 0) l.flow.cancel(`nobody waited for the login for ${Math.round(ms / 1000)} s (the command that started it is gone)`);
    }, ms);
    l.unwatched.unref();
  }

  private ended(id: string, server: string, outcome: LoginOutcome): void {
    clearTimeout(this.logins.get(id)?.unwatched);
    this.logins.delete(id);
    if (outcome.status === 'authorized') this.servers.get(server)?.auth.authorized();
    this.outcomes.set(id, {
      id,
      server,
      status: outcome.status,
      ...(outcome.error ? { error: outcome.error } : {}),
      ...(outcome.scope ? { scopes: outcome.scope.split(' ') } : {}),
    });
    // Kept a while for a late poller, then forgotten.
    setTimeout(() => this.outcomes.delete(id), 10 * 60_000).unref();
    this.opts.log?.info({ server, status: outcome.status }, 'login ended');
  }

  loginView(id: string): LoginView {
    const l = this.logins.get(id);
    if (l) return { id, server: l.server, status: 'waiting', ...(l.flow.authorizationUrl ? { url: l.flow.authorizationUrl } : {}) };
    const done = this.outcomes.get(id);
    if (done) return done;
    throw new McpxError('MCPX_NOT_FOUND', `no login ${id}`, { data: { id } });
  }

  /** The login's view once it ends, or after `waitMs` (whichever is first). */
  async waitLogin(id: string, waitMs: number, signal?: AbortSignal): Promise<LoginView> {
    const l = this.logins.get(id);
    if (!l) return this.loginView(id);
    // A look without a wait is a sign of life too: the unwatched clock starts again.
    if (waitMs <= 0 || signal?.aborted) {
      this.watchFor(id);
      return this.loginView(id);
    }
    const release = this.holdLogin(id);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      l.flow.done,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, waitMs);
        signal?.addEventListener('abort', () => resolve(), { once: true });
      }),
    ]);
    clearTimeout(timer);
    release(signal?.aborted === true);
    // Let `ended` record the outcome first.
    await Promise.resolve();
    return this.loginView(id);
  }

  /** Cancels a login; its view once the outcome is recorded. */
  async cancelLogin(id: string): Promise<LoginView> {
    const l = this.logins.get(id);
    if (l) {
      l.flow.cancel();
      await l.flow.done;
      await Promise.resolve(); // `ended` records the outcome first
    }
    return this.loginView(id);
  }

  /** Forgets a server's tokens (and, with `forgetClient`, its registration). */
  async logout(name: string, options: { forgetClient?: boolean } = {}): Promise<{ server: string; forgotTokens: boolean; forgotClient: boolean }> {
    const e = this.entry(name);
    // Found before the tokens go: they name the issuer (and once gone, the client lists the server). A configured
    // client is the config's: there is no registration of this server's to forget.
    const configured = Boolean(e.definition.oauth && e.definition.oauth.clientId);
    const client = options.forgetClient && !configured ? this.opts.store.clientOf(e.definition.url) : undefined;
    // A refresh in flight is aborted and waited for first: its answer would otherwise store the tokens again.
    await e.auth.forgetting();
    const forgotTokens = await this.opts.store.forgetTokens(e.definition.url);
    let forgotClient = false;
    if (client) {
      await this.opts.store.forgetClient(client.issuer);
      forgotClient = true;
    }
    e.auth.forgotten();
    return { server: name, forgotTokens, forgotClient };
  }

  async close(): Promise<void> {
    for (const l of this.logins.values()) l.flow.cancel('the daemon stopped');
    for (const e of this.servers.values()) e.auth.stop();
    await this.opts.store.whenIdle();
  }
}
