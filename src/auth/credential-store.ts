/**
 * `<stateDir>/credentials.json`: OAuth client registrations (one per authorization server) and tokens (per
 * server URL and authorization server). Written like the era cache — locked, merged with other writers,
 * atomic 0600 renames — and read by the daemon alone: nothing else ever shows what it holds.
 *
 *   {"version":1,"servers":{"client <issuer>":{...},"tokens <server url> <issuer>":{...},"as <issuer>":{...}}}
 */
import { LockedJsonFile, type StateFileFormat, type StateFileOptions } from '../state/locked-json-file.js';
import { isObject } from '../is-object.js';

export const CREDENTIALS_FILE = 'credentials.json';

/** A client registered with (or known to) one authorization server. */
export interface ClientRecord {
  kind: 'client';
  issuer: string;
  clientId: string;
  clientSecret?: string;
  /** What the registration answered (`client_secret_basic`, `client_secret_post`, `none`). */
  tokenEndpointAuthMethod?: string;
  /** The redirect URI it was registered with: a later login reuses its port when it can. */
  redirectUri?: string;
  /** How the client came to be: a dynamic registration or a client ID metadata document. */
  source: 'registration' | 'metadata-document';
  /**
   * The scope the registration was made for, as the authorization server answered. Some servers (oidc-provider)
   * let a client ask for no more: a login that needs more registers again.
   */
  scope?: string;
  /** The servers (URLs) that logged in with it: `mcpx logout NAME --forget-client` finds it after the tokens are gone. */
  servers?: string[];
  at: string;
}

/** The client a grant was issued to: its refresh must authenticate as that client, whichever registers later. */
export interface GrantClient {
  clientId: string;
  clientSecret?: string;
  tokenEndpointAuthMethod?: string;
}

/** One server's tokens from one authorization server, with what a refresh needs without discovery. */
export interface TokenRecord {
  kind: 'tokens';
  server: string;
  issuer: string;
  accessToken: string;
  tokenType: string;
  refreshToken?: string;
  /** When the access token expires (ms since the epoch); absent: the server did not say. */
  expiresAt?: number;
  /** When it was issued (ms since the epoch): the refresh margin scales with the lifetime. */
  issuedAt: number;
  scope?: string;
  /** The RFC 8707 resource the tokens were asked for (the protected-resource metadata's, exactly). */
  resource?: string;
  /** The authorization server's metadata as discovered (public), for refreshes. */
  metadata: Record<string, unknown>;
  authorizationServerUrl: string;
  /** Counts this credential's renewals: a failed refresh forgets only the generation it used. */
  generation: number;
  /** The stored client the tokens were issued to (absent for a configured client: that one is the config's). */
  client?: GrantClient;
}

/** What mcpx learned about an authorization server's ways, kept across logins, logouts and restarts. */
export interface AuthorizationServerRecord {
  kind: 'authorization-server';
  issuer: string;
  /**
   * `omit`: it answered `invalid_scope` to a refresh that named the granted scope (some servers refuse `scope`
   * on a refresh), so refreshes leave it out. Absent: refreshes send it (some servers need it).
   */
  refreshScope?: 'omit';
  at: string;
}

export type CredentialRecord = ClientRecord | TokenRecord | AuthorizationServerRecord;

const str = (v: unknown): v is string => typeof v === 'string' && v.length > 0;
const optStr = (v: unknown): boolean => v === undefined || typeof v === 'string';

function checkRecord(value: unknown): CredentialRecord | undefined {
  if (!isObject(value)) return undefined;
  const v = value as Record<string, unknown>;
  if (v['kind'] === 'client') {
    if (!str(v['issuer']) || !str(v['clientId']) || !str(v['at'])) return undefined;
    if (!optStr(v['clientSecret']) || !optStr(v['tokenEndpointAuthMethod']) || !optStr(v['redirectUri']) || !optStr(v['scope'])) return undefined;
    if (v['source'] !== 'registration' && v['source'] !== 'metadata-document') return undefined;
    if (v['servers'] !== undefined && (!Array.isArray(v['servers']) || !v['servers'].every(str))) return undefined;
    return {
      kind: 'client',
      issuer: v['issuer'],
      clientId: v['clientId'],
      ...(str(v['clientSecret']) ? { clientSecret: v['clientSecret'] } : {}),
      ...(str(v['tokenEndpointAuthMethod']) ? { tokenEndpointAuthMethod: v['tokenEndpointAuthMethod'] } : {}),
      ...(str(v['redirectUri']) ? { redirectUri: v['redirectUri'] } : {}),
      source: v['source'],
      ...(str(v['scope']) ? { scope: v['scope'] } : {}),
      ...(Array.isArray(v['servers']) ? { servers: v['servers'] as string[] } : {}),
      at: v['at'],
    };
  }
  if (v['kind'] === 'authorization-server') {
    if (!str(v['issuer']) || !str(v['at'])) return undefined;
    if (v['refreshScope'] !== undefined && v['refreshScope'] !== 'omit') return undefined;
    return { kind: 'authorization-server', issuer: v['issuer'], ...(v['refreshScope'] === 'omit' ? { refreshScope: 'omit' as const } : {}), at: v['at'] };
  }
  if (v['kind'] === 'tokens') {
    if (!str(v['server']) || !str(v['issuer']) || !str(v['accessToken']) || !str(v['tokenType']) || !str(v['authorizationServerUrl'])) return undefined;
    if (!optStr(v['refreshToken']) || !optStr(v['scope']) || !optStr(v['resource'])) return undefined;
    if (v['expiresAt'] !== undefined && typeof v['expiresAt'] !== 'number') return undefined;
    if (typeof v['issuedAt'] !== 'number' || typeof v['generation'] !== 'number' || !isObject(v['metadata'])) return undefined;
    const client = v['client'] === undefined ? undefined : checkGrantClient(v['client']);
    if (v['client'] !== undefined && !client) return undefined;
    return {
      kind: 'tokens',
      server: v['server'],
      issuer: v['issuer'],
      accessToken: v['accessToken'],
      tokenType: v['tokenType'],
      ...(str(v['refreshToken']) ? { refreshToken: v['refreshToken'] } : {}),
      ...(typeof v['expiresAt'] === 'number' ? { expiresAt: v['expiresAt'] } : {}),
      issuedAt: v['issuedAt'],
      ...(str(v['scope']) ? { scope: v['scope'] } : {}),
      ...(str(v['resource']) ? { resource: v['resource'] } : {}),
      metadata: v['metadata'] as Record<string, unknown>,
      authorizationServerUrl: v['authorizationServerUrl'],
      generation: v['generation'],
      ...(client ? { client } : {}),
    };
  }
  return undefined;
}

function checkGrantClient(value: unknown): GrantClient | undefined {
  if (!isObject(value)) return undefined;
  const c = value as Record<string, unknown>;
  if (!str(c['clientId']) || !optStr(c['clientSecret']) || !optStr(c['tokenEndpointAuthMethod'])) return undefined;
  return {
    clientId: c['clientId'],
    ...(str(c['clientSecret']) ? { clientSecret: c['clientSecret'] } : {}),
    ...(str(c['tokenEndpointAuthMethod']) ? { tokenEndpointAuthMethod: c['tokenEndpointAuthMethod'] } : {}),
  };
}

const FORMAT: StateFileFormat<CredentialRecord> = {
  fileName: CREDENTIALS_FILE,
  version: 1,
  check: checkRecord,
  label: 'credential store',
  recordLabel: 'credential record',
};

const clientKey = (issuer: string) => `client ${issuer}`;
const tokenKey = (server: string, issuer: string) => `tokens ${server} ${issuer}`;
const serverKey = (issuer: string) => `as ${issuer}`;

export class CredentialStore extends LockedJsonFile<CredentialRecord> {
  private constructor(stateDir: string, opts: StateFileOptions) {
    super(stateDir, FORMAT, opts);
  }

  static async open(stateDir: string, opts: StateFileOptions = {}): Promise<CredentialStore> {
    const store = new CredentialStore(stateDir, opts);
    await store.load();
    return store;
  }

  client(issuer: string): ClientRecord | undefined {
    const r = this.get(clientKey(issuer));
    return r?.kind === 'client' ? r : undefined;
  }

  async saveClient(record: ClientRecord): Promise<void> {
    await this.set(clientKey(record.issuer), record);
  }

  async forgetClient(issuer: string): Promise<void> {
    await this.delete(clientKey(issuer));
  }

  /** What is known about an authorization server's ways (see AuthorizationServerRecord). */
  authorizationServer(issuer: string): AuthorizationServerRecord | undefined {
    const r = this.get(serverKey(issuer));
    return r?.kind === 'authorization-server' ? r : undefined;
  }

  async saveAuthorizationServer(record: AuthorizationServerRecord): Promise<void> {
    await this.set(serverKey(record.issuer), record);
  }

  /** The stored client a server last logged in with (its tokens' issuer's, else one that lists the server). */
  clientOf(server: string): ClientRecord | undefined {
    const held = this.tokens(server);
    if (held) return this.client(held.issuer);
    for (const [, r] of this.entries()) if (r.kind === 'client' && r.servers?.includes(server)) return r;
    return undefined;
  }

  /** Notes that `server` logged in with the issuer's stored client. */
  async usedClient(issuer: string, server: string): Promise<void> {
    const c = this.client(issuer);
    if (c && !c.servers?.includes(server)) await this.saveClient({ ...c, servers: [...(c.servers ?? []), server] });
  }

  /** The server's newest tokens (from whichever authorization server issued them last). */
  tokens(server: string): TokenRecord | undefined {
    let best: TokenRecord | undefined;
    for (const [, r] of this.entries()) {
      if (r.kind === 'tokens' && r.server === server && (!best || r.issuedAt > best.issuedAt)) best = r;
    }
    return best;
  }

  /** Saves a server's tokens; those from another authorization server are dropped (it moved). */
  async saveTokens(record: TokenRecord): Promise<void> {
    for (const [key, r] of this.entries()) {
      if (r.kind === 'tokens' && r.server === record.server && r.issuer !== record.issuer) await this.delete(key);
    }
    await this.set(tokenKey(record.server, record.issuer), record);
  }

  /** Forgets the server's tokens; with `generation`, only if the stored ones are still that generation. */
  async forgetTokens(server: string, generation?: number): Promise<boolean> {
    let forgot = false;
    for (const [key, r] of this.entries()) {
      if (r.kind !== 'tokens' || r.server !== server) continue;
      if (generation !== undefined && r.generation !== generation) continue;
      await this.delete(key);
      forgot = true;
    }
    return forgot;
  }
}
