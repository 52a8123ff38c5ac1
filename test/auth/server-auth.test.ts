/**
 * One credential kept alive by the daemon (src/auth/server-auth.ts), against a real token endpoint on
 * loopback and a fake clock: the refresh margin scales with the lifetime, a wake after sleep refreshes,
 * refreshes are single-flight, a rotated refresh token is stored before it is used, and a refused refresh
 * forgets only the generation it used.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseChallenge, scopeIncludes, scopeUnion } from '../../src/auth/challenge.js';
import { CredentialStore, type TokenRecord } from '../../src/auth/credential-store.js';
import { refreshBackoff, refreshMargin, ServerAuth, type AuthClock } from '../../src/auth/server-auth.js';

class FakeClock implements AuthClock {
  t = 1_000_000_000_000;
  private ticks: Array<() => void> = [];
  now = () => this.t;
  setInterval = (fn: () => void) => {
    this.ticks.push(fn);
    return { unref() {} };
  };
  clearInterval = () => {
    this.ticks = [];
  };
  /** Jumps the wall clock (a sleep) and runs the tick once, as the next interval would. */
  advance(ms: number): void {
    this.t += ms;
    for (const f of this.ticks) f();
  }
}

interface TokenServer {
  url: string;
  server: Server;
  /** refresh_token values presented, in order. */
  presented: string[];
  /** The client each refresh authenticated as (client_id in the body, else HTTP Basic's user), in order. */
  clients: string[];
  /** What the next answers are: a token lifetime, or an OAuth error. */
  mode: { expiresIn: number } | { error: string };
  /** Answer after this many ms (to hold a refresh open). */
  delayMs: number;
}

async function tokenServer(): Promise<TokenServer> {
  const ts: TokenServer = { url: '', server: undefined as unknown as Server, presented: [], clients: [], mode: { expiresIn: 60 }, delayMs: 0 };
  let n = 0;
  ts.server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const p = new URLSearchParams(body);
      ts.presented.push(p.get('refresh_token') ?? '');
      const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
      ts.clients.push(
        p.get('client_id') ??
          decodeURIComponent(
            Buffer.from(basic ?? '', 'base64')
              .toString()
              .split(':')[0]!,
          ),
      );
      setTimeout(() => {
        if ('error' in ts.mode) {
          res.writeHead(400, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: ts.mode.error }));
          return;
        }
        n++;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ access_token: `access-${n}`, token_type: 'Bearer', expires_in: ts.mode.expiresIn, refresh_token: `refresh-${n}` }));
      }, ts.delayMs);
    });
  });
  await new Promise<void>((r) => ts.server.listen(0, '127.0.0.1', () => r()));
  ts.url = `http://127.0.0.1:${(ts.server.address() as AddressInfo).port}`;
  return ts;
}

const SERVER_URL = 'http://127.0.0.1:1/mcp';

describe('ServerAuth', () => {
  let dir: string;
  let ts: TokenServer;
  let store: CredentialStore;
  let clock: FakeClock;
  let auth: ServerAuth | undefined;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mcpx-auth-'));
    ts = await tokenServer();
    store = await CredentialStore.open(dir);
    clock = new FakeClock();
    await store.saveClient({
      kind: 'client',
      issuer: ts.url,
      clientId: 'client-1',
      tokenEndpointAuthMethod: 'none',
      source: 'registration',
      at: new Date().toISOString(),
    });
  });
  afterEach(async () => {
    auth?.stop();
    await new Promise((r) => ts.server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  const seed = async (lifetimeS: number, extra: Partial<TokenRecord> = {}) => {
    await store.saveTokens({
      kind: 'tokens',
      server: SERVER_URL,
      issuer: ts.url,
      accessToken: 'access-0',
      tokenType: 'bearer',
      refreshToken: 'refresh-0',
      issuedAt: clock.t,
      expiresAt: clock.t + lifetimeS * 1000,
      metadata: { issuer: ts.url, authorization_endpoint: `${ts.url}/auth`, token_endpoint: `${ts.url}/token`, response_types_supported: ['code'] },
      authorizationServerUrl: ts.url,
      generation: 1,
      ...extra,
    });
  };
  const make = () => (auth = new ServerAuth({ name: 'remote', url: SERVER_URL, settings: {}, store, clock }));

  it('the margin is a fifth of the lifetime, at most a minute', () => {
    expect(refreshMargin(20_000)).toBe(4_000);
    expect(refreshMargin(3_600_000)).toBe(60_000);
    expect(refreshMargin(0)).toBe(0);
  });

  it('sends the stored token as Bearer, and refreshes only inside the margin', async () => {
    await seed(20);
    const a = make();
    expect(await a.headers()).toEqual({ authorization: 'Bearer access-0' });
    clock.t += 15_000; // 5 s left: outside a 4 s margin
    expect(await a.headers()).toEqual({ authorization: 'Bearer access-0' });
    expect(ts.presented).toEqual([]);
    clock.t += 1_500; // 3.5 s left
    expect(await a.headers()).toEqual({ authorization: 'Bearer access-1' });
    expect(ts.presented).toEqual(['refresh-0']);
  });

  it('50 requests inside the margin make one refresh; the rotated refresh token is on disk before it is answered', async () => {
    await seed(20);
    const a = make();
    clock.t += 19_000;
    ts.delayMs = 100;
    const all = await Promise.all(Array.from({ length: 50 }, () => a.headers()));
    expect(ts.presented).toEqual(['refresh-0']);
    expect(new Set(all.map((h) => h['authorization']))).toEqual(new Set(['Bearer access-1']));
    const onDisk = JSON.parse(readFileSync(join(dir, 'credentials.json'), 'utf8'));
    const rec = Object.values(onDisk.servers).find((r: any) => r.kind === 'tokens') as any;
    expect(rec.refreshToken).toBe('refresh-1');
    expect(rec.generation).toBe(2);
    expect(statSync(join(dir, 'credentials.json')).mode & 0o777).toBe(0o600);
  });

  it('a wake after sleep refreshes on the tick, before any request', async () => {
    await seed(60);
    make();
    clock.advance(3 * 3_600_000); // slept through the expiry
    await expect.poll(() => ts.presented).toEqual(['refresh-0']);
    await expect.poll(() => store.tokens(SERVER_URL)?.accessToken).toBe('access-1');
  });

  it('refreshes once on a 401 for the current token; a 401 for an older token just resends', async () => {
    await seed(3600);
    const a = make();
    expect(await a.challenged({ status: 401, wwwAuthenticate: 'Bearer error="invalid_token"', sent: { authorization: 'Bearer access-0' } })).toBe(true);
    expect(ts.presented).toEqual(['refresh-0']);
    expect(await a.challenged({ status: 401, wwwAuthenticate: 'Bearer error="invalid_token"', sent: { authorization: 'Bearer access-0' } })).toBe(true);
    expect(ts.presented).toEqual(['refresh-0']);
  });

  it('invalid_grant forgets the generation it used, never a newer one', async () => {
    await seed(20);
    const a = make();
    ts.mode = { error: 'invalid_grant' };
    clock.t += 19_000;
    // A login lands while the refused refresh is out: its tokens (generation 5) must survive.
    ts.delayMs = 200;
    const refreshing = a.headers();
    await new Promise((r) => setTimeout(r, 50));
    await seed(3600, { accessToken: 'access-login', refreshToken: 'refresh-login', generation: 5 });
    await refreshing;
    expect(store.tokens(SERVER_URL)?.accessToken).toBe('access-login');
    // Without a newer login, the refused generation is forgotten and the view says to log in.
    ts.delayMs = 0;
    await seed(20, { issuedAt: clock.t - 19_000, expiresAt: clock.t + 1_000, generation: 6 });
    await a.headers();
    expect(store.tokens(SERVER_URL)).toBeUndefined();
    expect(a.view()).toMatchObject({ state: 'failed' });
    expect(a.view().error).toContain('mcpx login remote');
  });

  it('a refresh authenticates as the client the tokens were issued to, not a newer registration of the issuer', async () => {
    // Another server's login (or a step-up) registered client-1 after these tokens were issued to client-0.
    await seed(20, { client: { clientId: 'client-0', clientSecret: 'secret-of-client-0', tokenEndpointAuthMethod: 'client_secret_basic' } });
    const a = make();
    expect(a.secrets()).toEqual(['access-0', 'refresh-0', 'secret-of-client-0']);
    clock.t += 19_000;
    expect(await a.headers()).toEqual({ authorization: 'Bearer access-1' });
    expect(ts.clients).toEqual(['client-0']);
    // The renewed record keeps its client; a record without one (older stores) uses the issuer's.
    expect(store.tokens(SERVER_URL)?.client?.clientId).toBe('client-0');
    await seed(20, { generation: 7 });
    clock.t += 19_000;
    await a.headers();
    expect(ts.clients).toEqual(['client-0', 'client-1']);
  });

  it('a 401 with no token held says to log in; a 403 insufficient_scope records the missing scope', async () => {
    const a = make();
    expect(await a.challenged({ status: 401, wwwAuthenticate: 'Bearer resource_metadata="x"', sent: {} })).toBe(false);
    expect(a.view().state).toBe('needed');
    expect(a.hint(401)).toBe('remote needs authorization: run `mcpx login remote`');
    await seed(3600, { scope: 'mcp:basic' });
    expect(
      await a.challenged({ status: 403, wwwAuthenticate: 'Bearer error="insufficient_scope", scope="mcp:write"', sent: { authorization: 'Bearer access-0' } }),
    ).toBe(false);
    expect(a.missingScopes()).toEqual(['mcp:write']);
    expect(a.stepUpScope()).toBe('mcp:basic mcp:write');
    expect(a.hint(403)).toContain('needs more scope (mcp:write)');
  });

  it('a failed refresh backs off per credential: 1 s, 2 s, 4 s, at most oauth.refreshBackoffMax; a success ends it', async () => {
    expect([1, 2, 3, 4, 10].map((n) => refreshBackoff(n, 5_000))).toEqual([1_000, 2_000, 4_000, 5_000, 5_000]);
    await seed(20, { expiresAt: clock.t - 1 });
    ts.mode = { error: 'temporarily_unavailable' };
    const a = (auth = new ServerAuth({ name: 'remote', url: SERVER_URL, settings: {}, store, clock, backoffMaxMs: () => 3_000 }));
    await a.refresh(); // the start-up tick's, or this one
    const after1 = ts.presented.length;
    expect(after1).toBe(1);
    expect(await a.refresh()).toBeUndefined(); // inside the first second: no request
    expect(ts.presented.length).toBe(1);
    expect(a.view().error).toMatch(/the last refresh failed/);
    clock.t += 1_000;
    await a.refresh();
    expect(ts.presented.length).toBe(2);
    clock.t += 1_999; // the second wait is 2 s
    await a.refresh();
    expect(ts.presented.length).toBe(2);
    clock.t += 1;
    await a.refresh();
    expect(ts.presented.length).toBe(3);
    clock.t += 3_000; // capped at 3 s
    ts.mode = { expiresIn: 60 };
    expect((await a.refresh())?.accessToken).toBe('access-1');
    expect(a.view().state).toBe('authorized');
  });

  it('a token fresh from a 401-driven refresh and refused at once is not renewed again; a request it passes ends that', async () => {
    await seed(3600);
    const a = make();
    const refused = (token: string) =>
      a.challenged({ status: 401, wwwAuthenticate: 'Bearer error="invalid_token"', sent: { authorization: `Bearer ${token}` } });
    expect(await refused('access-0')).toBe(true); // one refresh, then the request once more
    expect(ts.presented).toEqual(['refresh-0']);
    expect(await refused('access-1')).toBe(false); // the fresh one refused at once: no rotation
    expect(ts.presented).toHaveLength(1);
    expect(a.view().error).toMatch(/refused a token fresh from the authorization server/);
    expect(await refused('access-1')).toBe(false); // still waiting: no request
    expect(ts.presented).toHaveLength(1);
    clock.t += 1_000;
    expect(await refused('access-1')).toBe(true); // after the wait, one more try
    expect(ts.presented).toHaveLength(2);
    a.accepted({ authorization: 'Bearer access-2' }); // the server took it: it was not refusing every token
    expect(a.view().error).toBeUndefined();
    expect(await refused('access-2')).toBe(true); // a later 401 refreshes at once again
    expect(ts.presented).toHaveLength(3);
  });

  it('a logout aborts the refresh in flight: what it brings back is never stored', async () => {
    await seed(3600);
    ts.delayMs = 60_000;
    const a = make();
    const pending = a.refresh();
    await new Promise<void>((r) => {
      const t = setInterval(() => ts.presented.length > 0 && (clearInterval(t), r()), 5);
    });
    await a.forgetting();
    await store.forgetTokens(SERVER_URL);
    a.forgotten();
    expect(await pending).toBeUndefined();
    expect(store.tokens(SERVER_URL)).toBeUndefined();
    expect(a.view().state).toBe('none');
  });
});

describe('challenges', () => {
  it('reads the Bearer parameters, quoted or not, and stops at the next scheme', () => {
    expect(
      parseChallenge(
        'Bearer error="invalid_token", error_description="Missing \\"Authorization\\" header", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp", scope="a b"',
      ),
    ).toEqual({
      error: 'invalid_token',
      errorDescription: 'Missing "Authorization" header',
      resourceMetadata: 'http://h/.well-known/oauth-protected-resource/mcp',
      scope: 'a b',
    });
    expect(parseChallenge('DPoP error=insufficient_scope, scope=x')).toEqual({ error: 'insufficient_scope', scope: 'x' });
    expect(parseChallenge('Basic realm="x"')).toEqual({});
    expect(parseChallenge(undefined)).toEqual({});
  });
  it('unions scopes in order without repeats', () => {
    expect(scopeUnion('a b', 'b c', undefined)).toBe('a b c');
    expect(scopeUnion(undefined, '')).toBeUndefined();
  });
  it('knows when one scope string includes another', () => {
    expect(scopeIncludes('mcp:tools offline_access', 'offline_access mcp:tools')).toBe(true);
    expect(scopeIncludes('mcp:tools offline_access', 'mcp:tools mcp:write')).toBe(false);
    expect(scopeIncludes(undefined, undefined)).toBe(true);
  });
});

describe('CredentialStore', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'mcpx-store-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("keeps a registration's scope and servers and a grant's client across a reopen; finds a server's client once its tokens are gone", async () => {
    const store = await CredentialStore.open(dir);
    const issuer = 'http://127.0.0.1:1';
    await store.saveClient({ kind: 'client', issuer, clientId: 'c', clientSecret: 's', source: 'registration', scope: 'a b', at: 'now' });
    await store.usedClient(issuer, SERVER_URL);
    await store.usedClient(issuer, SERVER_URL);
    await store.saveTokens({
      kind: 'tokens',
      server: SERVER_URL,
      issuer,
      accessToken: 'x',
      tokenType: 'Bearer',
      issuedAt: 1,
      metadata: {},
      authorizationServerUrl: issuer,
      generation: 1,
      client: { clientId: 'c', clientSecret: 's' },
    });
    await store.whenIdle();
    const again = await CredentialStore.open(dir);
    expect(again.client(issuer)).toMatchObject({ scope: 'a b', servers: [SERVER_URL] });
    expect(again.tokens(SERVER_URL)?.client).toEqual({ clientId: 'c', clientSecret: 's' });
    expect(again.clientOf(SERVER_URL)?.clientId).toBe('c');
    await again.forgetTokens(SERVER_URL);
    expect(again.clientOf(SERVER_URL)?.clientId).toBe('c');
    expect(again.clientOf('http://127.0.0.1:2/mcp')).toBeUndefined();
  });
});
