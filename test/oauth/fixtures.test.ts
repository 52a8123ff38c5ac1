/**
 * The OAuth fixtures (test/fixtures/oauth) against the official SDK v2 client only, no mcpx code: an
 * OAuthClientProvider kept in memory, a loopback callback listener, and headless Chromium (chromium-browser.mjs)
 * signing in on oidc-provider's pages. Proves what the product tests rely on: the 401 challenge and PRM lead the
 * SDK to the authorization server, DCR + PKCE + resource give a JWT the MCP server accepts (both eras), `write`
 * answers 403 insufficient_scope until mcp:write is granted, an expired (or resource-refused) token is replaced by a
 * rotated refresh, and /_test/revoke makes the next refresh invalid_grant. follow-redirects.mjs is checked against
 * a loopback redirect chain.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  Client,
  InsufficientScopeError,
  OAuthError,
  StreamableHTTPClientTransport,
  UnauthorizedError,
  auth,
  discoverAuthorizationServerMetadata,
  extractWWWAuthenticateParams,
  refreshAuthorization,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type StoredOAuthClientInformation,
  type StoredOAuthTokens,
} from '@modelcontextprotocol/client';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM_BROWSER, FOLLOW_REDIRECTS, browserArgv, chromiumMissing, startOAuthFixtures, type OAuthFixtures } from '../fixtures/oauth/index.js';

const INFO = { name: 'oauth-fixture-test', version: '1.0.0' };
const MODERN = { versionNegotiation: { mode: { pin: '2026-07-28' } } } as never;
const ACCESS_TTL = 3;

interface Run {
  code: number | null;
  stderr: string;
}

function runScript(argv: string[], env: NodeJS.ProcessEnv = process.env): { done: Promise<Run>; kill(): void } {
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env });
  let stderr = '';
  let stdout = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  const done = new Promise<Run>((resolve) => child.once('close', (code) => resolve({ code, stderr: stderr + stdout })));
  return { done, kill: () => child.exitCode === null && child.kill('SIGKILL') };
}

async function poll(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The client's redirect target: one loopback listener, each authorization's callback query handed to a waiter. */
class CallbackListener {
  private server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    res.writeHead(url.pathname === '/callback' ? 200 : 404, { 'content-type': 'text/plain' });
    res.end(url.pathname === '/callback' ? 'authorized; this window can close' : 'not found');
    if (url.pathname === '/callback') this.waiters.shift()?.(url.searchParams);
  });
  private waiters: Array<(p: URLSearchParams) => void> = [];
  url = '';

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/callback`;
  }
  next(): Promise<URLSearchParams> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }
  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** An OAuthClientProvider that keeps everything in memory and opens each authorization URL in chromium-browser.mjs. */
class MemoryProvider implements OAuthClientProvider {
  client?: StoredOAuthClientInformation;
  current?: StoredOAuthTokens;
  saved: StoredOAuthTokens[] = [];
  lastState?: string;
  browsers: Array<ReturnType<typeof runScript>> = [];
  /** The BROWSER script for the next authorizations, and extra environment for it (OAUTH_TEST_USER, OAUTH_TEST_DENY). */
  browser = CHROMIUM_BROWSER;
  browserEnv: Record<string, string> = {};
  private verifier?: string;
  private discovery?: OAuthDiscoveryState;

  constructor(private readonly callbackUrl: string) {}

  get redirectUrl(): string {
    return this.callbackUrl;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'sdk fixture test',
      redirect_uris: [this.callbackUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state(): string {
    this.lastState = randomBytes(16).toString('base64url');
    return this.lastState;
  }
  clientInformation(): StoredOAuthClientInformation | undefined {
    return this.client;
  }
  saveClientInformation(info: StoredOAuthClientInformation): void {
    this.client = info;
  }
  tokens(): StoredOAuthTokens | undefined {
    return this.current;
  }
  saveTokens(tokens: StoredOAuthTokens): void {
    this.current = tokens;
    this.saved.push(tokens);
    // discovery is kept only across one authorization round trip (an authorization server may move)
    this.discovery = undefined;
  }
  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.discovery = state;
  }
  discoveryState(): OAuthDiscoveryState | undefined {
    return this.discovery;
  }
  redirectToAuthorization(url: URL): void {
    this.browsers.push(runScript(browserArgv(this.browser, url.href), { ...process.env, ...this.browserEnv }));
  }
  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }
  codeVerifier(): string {
    if (this.verifier === undefined) throw new Error('no code verifier saved');
    return this.verifier;
  }
  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): void {
    if (scope === 'all' || scope === 'tokens') this.current = undefined;
    if (scope === 'all' || scope === 'client') this.client = undefined;
    if (scope === 'all' || scope === 'verifier') this.verifier = undefined;
    if (scope === 'all' || scope === 'discovery') this.discovery = undefined;
  }
  /** The browser started for the latest authorization. */
  lastBrowser(): Promise<Run> {
    const b = this.browsers[this.browsers.length - 1];
    if (!b) throw new Error('no browser was opened');
    return b.done;
  }
}

function textOf(result: Record<string, any>): string {
  return (result.content as Array<{ type: string; text?: string }>).map((c) => c.text ?? '').join('');
}

describe.skipIf(chromiumMissing !== undefined)(`OAuth fixtures with the SDK v2 client${chromiumMissing ? ` (skipped: ${chromiumMissing})` : ''}`, () => {
  let fx: OAuthFixtures;
  let callback: CallbackListener;
  let provider: MemoryProvider;
  let client: Client | undefined;
  /** Every response the SDK transport got from the MCP server: status and WWW-Authenticate. */
  const seen: Array<{ status: number; challenge: string | null }> = [];
  const observingFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const r = await fetch(input, init);
    if (String(input instanceof Request ? input.url : input).startsWith(fx.mcp.url))
      seen.push({ status: r.status, challenge: r.headers.get('www-authenticate') });
    return r;
  };

  const connect = async (opts: { era?: 'legacy' | 'modern'; onInsufficientScope?: 'throw' | 'reauthorize' } = {}): Promise<Client> => {
    await client?.close();
    const transport = new StreamableHTTPClientTransport(new URL(fx.mcp.url), {
      authProvider: provider,
      fetch: observingFetch,
      ...(opts.onInsufficientScope ? { onInsufficientScope: opts.onInsufficientScope } : {}),
    });
    client = new Client(INFO, opts.era === 'legacy' ? {} : MODERN);
    await client.connect(transport);
    return client;
  };

  const whoami = async (c: Client): Promise<{ sub: string; scopes: string[]; client_id: string; era: string }> =>
    JSON.parse(textOf(await c.callTool({ name: 'whoami', arguments: {} })));

  /** Complete the authorization the last REDIRECT started: browser exit, callback, state, code exchange. */
  const finishInBrowser = async (pending: Promise<URLSearchParams>): Promise<void> => {
    const run = await provider.lastBrowser();
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).not.toMatch(/code=/);
    const params = await pending;
    expect(params.get('error'), params.get('error_description') ?? '').toBeNull();
    expect(params.get('state')).toBe(provider.lastState);
    expect(params.get('iss')).toBe(fx.as.issuer);
    expect(await auth(provider, { serverUrl: fx.mcp.url, authorizationCode: params.get('code')!, iss: params.get('iss')!, fetchFn: fetch })).toBe('AUTHORIZED');
  };

  beforeAll(async () => {
    fx = await startOAuthFixtures({ accessTtl: ACCESS_TTL });
    callback = new CallbackListener();
    await callback.start();
    provider = new MemoryProvider(callback.url);
  });

  afterAll(async () => {
    await client?.close();
    for (const b of provider?.browsers ?? []) b.kill();
    await callback?.close();
    await fx?.stop();
  });

  it('answers 401 with the challenge, and serves the protected-resource metadata', async () => {
    const r = await fetch(fx.mcp.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(r.status).toBe(401);
    const challenge = r.headers.get('www-authenticate')!;
    expect(challenge).toMatch(/^Bearer /);
    expect(extractWWWAuthenticateParams(r)).toMatchObject({
      error: 'invalid_token',
      scope: 'mcp:tools',
      resourceMetadataUrl: new URL(fx.mcp.resourceMetadata),
    });
    expect(fx.mcp.resourceMetadata).toBe(`${fx.mcp.origin}/.well-known/oauth-protected-resource/mcp`);

    const bad = await fetch(fx.mcp.url, { method: 'POST', headers: { authorization: 'Bearer not.a.jwt', 'content-type': 'application/json' }, body: '{}' });
    expect(bad.status).toBe(401);
    expect(extractWWWAuthenticateParams(bad).error).toBe('invalid_token');

    const prm = await (await fetch(fx.mcp.resourceMetadata)).json();
    expect(prm).toMatchObject({ resource: fx.mcp.url, authorization_servers: [fx.as.issuer], scopes_supported: ['mcp:tools', 'mcp:write'] });
    expect((await fx.mcp.stats())[401]).toBe(2);
  });

  it('takes an unauthorized SDK client through DCR, the browser login and the code exchange; then tools/list and whoami work', async () => {
    const pending = callback.next();
    await expect(connect().then((c) => c.listTools())).rejects.toBeInstanceOf(UnauthorizedError);
    await finishInBrowser(pending);

    const as = await fx.as.stats();
    expect(as.registrations).toHaveLength(1);
    expect(as.registrations[0]).toMatchObject({
      application_type: 'native',
      grant_types: ['authorization_code', 'refresh_token'],
      redirect_uris: [callback.url],
    });
    expect(as.authorizations).toHaveLength(1);
    const params = as.authorizations[0]!.params;
    expect(params).toMatchObject({
      resource: fx.mcp.url,
      code_challenge_method: 'S256',
      code_challenge: '[redacted]',
      state: '[redacted]',
      redirect_uri: callback.url,
    });
    expect(params.scope!.split(' ').sort()).toEqual(['mcp:tools', 'offline_access']);
    expect(as.tokenRequests).toEqual({ authorization_code: 1 });
    expect(as.tokens[0]).toMatchObject({ status: 200, scope: expect.stringContaining('mcp:tools'), refresh_token: true });

    const token = provider.current!;
    expect(token.refresh_token).toBeTruthy();
    expect(decodeProtectedHeader(token.access_token)).toMatchObject({ typ: 'at+jwt', alg: 'RS256' });
    const claims = decodeJwt(token.access_token);
    expect(claims).toMatchObject({ iss: fx.as.issuer, aud: fx.mcp.url, sub: 'alice', scope: 'mcp:tools' });
    expect(claims.exp! - claims.iat!).toBe(ACCESS_TTL);

    const c = await connect();
    expect((await c.listTools()).tools.map((t) => t.name).sort()).toEqual(['echo', 'whoami', 'write']);
    expect(await whoami(c)).toMatchObject({ sub: 'alice', scopes: ['mcp:tools'], client_id: provider.client!.client_id, era: 'modern' });
    expect(textOf(await c.callTool({ name: 'echo', arguments: { text: 'hi' } }))).toBe('hi');
    // the same token on the legacy era (the SDK's stateless fallback)
    expect(await whoami(await connect({ era: 'legacy' }))).toMatchObject({ sub: 'alice', era: 'legacy' });
  });

  it('answers write with 403 insufficient_scope until mcp:write is granted by a second authorization', async () => {
    const c = await connect({ onInsufficientScope: 'throw' });
    seen.length = 0;
    const refused = await c.callTool({ name: 'write', arguments: { text: 'x' } }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(InsufficientScopeError);
    expect((refused as InsufficientScopeError).requiredScope).toBe('mcp:write');
    const forbidden = seen.find((s) => s.status === 403);
    expect(forbidden?.challenge).toMatch(/^Bearer error="insufficient_scope"/);
    expect(forbidden?.challenge).toContain('scope="mcp:write"');
    expect(forbidden?.challenge).toContain(`resource_metadata="${fx.mcp.resourceMetadata}"`);
    // the legacy era too
    const legacy = await connect({ era: 'legacy', onInsufficientScope: 'throw' });
    await expect(legacy.callTool({ name: 'write', arguments: { text: 'x' } })).rejects.toBeInstanceOf(InsufficientScopeError);
    expect((await fx.mcp.stats())[403]).toBe(2);

    // Step-up. oidc-provider limits a client to the scope it registered with, and the SDK registered this one
    // with the scope it first asked for: the wider authorization is refused at once, with no page shown (so
    // follow-redirects.mjs reaches the callback too).
    const STEP_UP = 'mcp:tools mcp:write offline_access';
    expect((await fx.as.stats()).registrations[0]!.scope).toBe('mcp:tools offline_access');
    provider.browser = FOLLOW_REDIRECTS;
    let pending = callback.next();
    expect(await auth(provider, { serverUrl: fx.mcp.url, scope: STEP_UP, forceReauthorization: true, fetchFn: fetch })).toBe('REDIRECT');
    expect(await provider.lastBrowser()).toEqual({ code: 0, stderr: '' });
    const refusedScope = await pending;
    expect([refusedScope.get('error'), refusedScope.get('error_description')]).toEqual(['invalid_scope', 'requested scope is not allowed']);
    expect((await fx.as.stats()).authorizations.at(-1)).toMatchObject({ error: 'invalid_scope', params: { scope: STEP_UP } });

    // a client registered for the wider scope gets it (signing in as someone else this time)
    provider.invalidateCredentials('client');
    provider.browser = CHROMIUM_BROWSER;
    provider.browserEnv = { OAUTH_TEST_USER: 'bob' };
    pending = callback.next();
    expect(await auth(provider, { serverUrl: fx.mcp.url, scope: STEP_UP, forceReauthorization: true, fetchFn: fetch })).toBe('REDIRECT');
    await finishInBrowser(pending);
    expect((await fx.as.stats()).registrations.map((r) => r.scope)).toEqual(['mcp:tools offline_access', STEP_UP]);
    expect(decodeJwt(provider.current!.access_token).scope).toBe('mcp:tools mcp:write');
    const wider = await connect({ onInsufficientScope: 'throw' });
    expect(textOf(await wider.callTool({ name: 'write', arguments: { text: 'x' } }))).toBe('wrote x');
    expect(await whoami(wider)).toMatchObject({ sub: 'bob', scopes: ['mcp:tools', 'mcp:write'] });
  });

  it('refreshes an expired token with a rotated refresh token, and again when the resource refuses a token early', async () => {
    const c = await connect();
    const before = provider.current!;
    const beforeRefreshes = (await fx.as.stats()).tokenRequests.refresh_token ?? 0;
    // the resource refuses the token once its exp has passed: poll it (no fixed sleep)
    await poll(
      async () => (await fetch(fx.mcp.url, { method: 'POST', headers: { authorization: `Bearer ${before.access_token}` }, body: '{}' })).status === 401,
      (ACCESS_TTL + 5) * 1000,
      'the access token to expire',
    );

    expect((await whoami(c)).sub).toBe('bob');
    const after = provider.current!;
    expect(after.access_token).not.toBe(before.access_token);
    expect(after.refresh_token).toBeTruthy();
    expect(after.refresh_token).not.toBe(before.refresh_token);
    let as = await fx.as.stats();
    expect(as.tokenRequests.refresh_token).toBe(beforeRefreshes + 1);
    expect(as.tokens.at(-1)).toMatchObject({ grant_type: 'refresh_token', status: 200, refresh_token: true });

    // a token the resource stops accepting before its exp: 401, then the SDK refreshes again
    expect(await fx.mcp.rejectTokensSeen()).toBeGreaterThan(0);
    expect((await whoami(c)).sub).toBe('bob');
    expect(provider.current!.refresh_token).not.toBe(after.refresh_token);
    as = await fx.as.stats();
    expect(as.tokenRequests.refresh_token).toBe(beforeRefreshes + 2);
    expect(as.tokenErrors).toEqual({});
  });

  it('refuses the refresh with invalid_grant once /_test/revoke revoked every grant', async () => {
    expect(await fx.as.revokeAll()).toBeGreaterThan(0);
    expect((await fx.as.stats()).activeGrants).toBe(0);
    const metadata = await discoverAuthorizationServerMetadata(fx.as.issuer, { fetchFn: fetch });
    const refused = await refreshAuthorization(fx.as.issuer, {
      metadata,
      clientInformation: provider.client!,
      refreshToken: provider.current!.refresh_token!,
      resource: new URL(fx.mcp.url),
      fetchFn: fetch,
    }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OAuthError);
    expect((refused as OAuthError).code).toBe('invalid_grant');
    expect((await fx.as.stats()).tokenErrors).toEqual({ refresh_token: { invalid_grant: 1 } });
  });

  it('with OAUTH_TEST_DENY=1 the browser cancels and the callback gets access_denied; nothing leaves loopback', async () => {
    provider.browserEnv = { OAUTH_TEST_DENY: '1', OAUTH_TEST_VERBOSE: '1' };
    const pending = callback.next();
    expect(await auth(provider, { serverUrl: fx.mcp.url, scope: 'mcp:tools offline_access', forceReauthorization: true, fetchFn: fetch })).toBe('REDIRECT');
    const run = await provider.lastBrowser();
    expect(run.code, run.stderr).toBe(0);
    expect((await pending).get('error')).toBe('access_denied');
    // the login page's web font is the one request that would leave the machine
    expect(run.stderr.trim().split('\n')).toEqual(['chromium-browser.mjs: blocked https://fonts.googleapis.com/css']);
  });

  it('chromium-browser.mjs exits 1 on an error page, naming the error and not the query', async () => {
    const url = `${fx.as.issuer}/auth?client_id=unknown-client&response_type=code&scope=openid&redirect_uri=${encodeURIComponent(callback.url)}&state=secret-state`;
    const run = await runScript(browserArgv(CHROMIUM_BROWSER, url)).done;
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('showed an error page');
    expect(run.stderr).toContain('invalid_client');
    expect(run.stderr).not.toContain('secret-state');
  });
});

describe('follow-redirects.mjs', () => {
  let server: Server;
  let origin: string;
  const hits: string[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      hits.push(url.pathname);
      const hop = /^\/loop\/(\d+)$/.exec(url.pathname);
      if (url.pathname === '/authorize') res.writeHead(302, { location: `/step?code=secret-code&state=s` });
      else if (url.pathname === '/step') res.writeHead(303, { location: `${origin}/callback${url.search}` });
      else if (hop) res.writeHead(302, { location: `/loop/${Number(hop[1]) + 1}` });
      else if (url.pathname === '/away') res.writeHead(302, { location: 'http://example.com/callback?code=secret-code' });
      else res.writeHead(url.pathname === '/callback' ? 200 : 404);
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('follows relative and absolute Locations to the callback and exits 0', async () => {
    hits.length = 0;
    const run = await runScript(browserArgv(FOLLOW_REDIRECTS, `${origin}/authorize?client_id=x`)).done;
    expect(run).toEqual({ code: 0, stderr: '' });
    expect(hits).toEqual(['/authorize', '/step', '/callback']);
  });

  it('stops after 10 redirects, and never fetches a non-loopback host, without printing the code', async () => {
    hits.length = 0;
    const loop = await runScript(browserArgv(FOLLOW_REDIRECTS, `${origin}/loop/0`)).done;
    expect(loop.code).toBe(1);
    expect(loop.stderr).toContain('more than 10 redirects');
    expect(hits).toHaveLength(11);

    const away = await runScript(browserArgv(FOLLOW_REDIRECTS, `${origin}/away`)).done;
    expect(away.code).toBe(1);
    expect(away.stderr).toContain('refusing to fetch http://example.com/callback');
    expect(away.stderr).not.toContain('secret-code');
  });
});
