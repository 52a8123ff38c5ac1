/**
 * OAuth end to end through the BUILT BINARY (issue #23): `mcpx login/logout/auth`, calls from every caller,
 * refresh under load, revocation and step-up (a call never opens a browser: it fails naming `mcpx login`), a restart, a pre-registered client and a taken callback port, against
 * a real authorization server (oidc-provider) and MCP servers that accept only its JWTs (test/fixtures/oauth), with
 * headless Chromium as the BROWSER signing in and consenting. One authorization server, its MCP servers and one
 * daemon are shared by the tests, which run in order (each leaves the state the next starts from); the last one
 * sweeps every output kept for the secrets the authorization server saw or issued.
 *
 * Servers of the config:
 * - `protected`: everything discovered, a dynamic registration (a confidential client: oidc-provider's default).
 * - `preregistered`: `oauth.clientId` / `oauth.clientSecret` from `${VAR}`s, a fixed callback port.
 * - `fixedport`: `oauth.callbackPort` on a port another listener holds.
 */
import { createServer, type Server } from 'node:http';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { httpCaller, stdioCaller, type McpCaller, freePort, textOf } from '../serve/clients.js';
import { chromiumMissing, type AuthorizationServerStats } from '../fixtures/oauth/index.js';
import { OAuthRig } from './rig.js';

/** Access tokens live 10 s: the refresh margin is 2 s (a fifth), the next one due 8 s after a refresh. */
const ACCESS_TTL = 10;
const PRE_SECRET_VAR = 'OAUTH_E2E_CLIENT_SECRET';
const PRE_ID_VAR = 'OAUTH_E2E_CLIENT_ID';
/** A login on a loaded two-core machine can take 15 s; the binary's run gives up first, so its output shows. */
const LOGIN_TIMEOUT = 120_000;
const LOGIN_RUN_TIMEOUT = 100_000;

interface AuthView {
  server: string;
  state: string;
  issuer?: string;
  scopes?: string[];
  expiresAt?: string;
  refreshable?: boolean;
  error?: string;
  needsScopes?: string[];
}

const mcpxRegistrations = (s: AuthorizationServerStats) => s.registrations.filter((r) => r.client_name === 'mcpx');

describe.skipIf(chromiumMissing !== undefined)(`mcpx and OAuth, end to end${chromiumMissing ? ` (skipped: ${chromiumMissing})` : ''}`, () => {
  let rig: OAuthRig;
  let blocker: Server;
  let takenPort: number;
  let preCallbackPort: number;
  let pre: { client_id: string; client_secret: string };

  const authView = async (server: string): Promise<AuthView> => {
    const r = await rig.mcpx(['auth', server, '--json']);
    expect(r.code, r.stderr).toBe(0);
    return (JSON.parse(r.stdout) as { servers: AuthView[] }).servers[0]!;
  };
  const whoami = async (server: string, o: { browser?: boolean } = {}) => {
    const r = await rig.mcpx(['call', server, 'whoami'], o);
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as { sub: string; scopes: string[]; client_id: string; era: string };
  };

  beforeAll(async () => {
    blocker = createServer((_req, res) => res.writeHead(404).end());
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    takenPort = (blocker.address() as { port: number }).port;
    preCallbackPort = await freePort();
    rig = await OAuthRig.start({
      accessTtl: ACCESS_TTL,
      servers: ['protected', 'preregistered'],
      entries: async (mcp, as) => {
        // A client registered the way an operator would (a confidential one, oidc-provider's default), outside mcpx.
        const reg = await fetch(`${as.issuer}/reg`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            client_name: 'pre-registered',
            application_type: 'native',
            redirect_uris: [`http://127.0.0.1:${preCallbackPort}/callback`],
            grant_types: ['authorization_code', 'refresh_token'],
            response_types: ['code'],
          }),
        });
        expect(reg.status).toBe(201);
        pre = (await reg.json()) as typeof pre;
        return {
          preregistered: {
            oauth: { clientId: `\${${PRE_ID_VAR}}`, clientSecret: `\${${PRE_SECRET_VAR}}`, callbackPort: preCallbackPort, scopes: 'mcp:tools' },
          },
          fixedport: { url: `${mcp['protected']!.origin}/elsewhere`, oauth: { callbackPort: takenPort } },
        };
      },
    });
    // The config's ${VAR}s, for the daemon and every CLI run.
    rig.env[PRE_ID_VAR] = pre.client_id;
    rig.env[PRE_SECRET_VAR] = pre.client_secret;
    await rig.startDaemon();
    await rig.watchEvents();
  }, 60_000);

  afterEach(() => {
    // Logout and a refused refresh forget tokens: every secret the store held is remembered before that.
    rig?.harvest();
  });

  afterAll(async () => {
    await rig?.stop();
    blocker?.closeAllConnections();
    await new Promise((resolve) => blocker?.close(resolve));
  });

  it(
    'mcpx login NAME signs in with the browser; mcpx auth NAME --json shows the authorization, never a token',
    async () => {
      expect((await authView('protected')).state).toMatch(/^(none|needed)$/);
      const started = Date.now();
      const r = await rig.mcpx(['login', 'protected'], { timeoutMs: LOGIN_RUN_TIMEOUT });
      const loginMs = Date.now() - started;
      console.log(`mcpx login took ${loginMs} ms`);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe('authorized mcpx for protected (scopes: mcp:tools)\n');
      expect(r.stderr).toContain('Opened the browser to authorize mcpx for protected');

      const as = await rig.as.stats();
      expect(mcpxRegistrations(as)).toHaveLength(1);
      expect(mcpxRegistrations(as)[0]).toMatchObject({ application_type: 'native', grant_types: ['authorization_code', 'refresh_token'] });
      expect(as.authorizations).toHaveLength(1);
      expect(as.authorizations[0]!.params).toMatchObject({ resource: rig.mcp['protected']!.url, code_challenge_method: 'S256' });
      expect(as.authorizations[0]!.params['scope']!.split(' ').sort()).toEqual(['mcp:tools', 'offline_access']);
      expect(as.tokenRequests).toEqual({ authorization_code: 1 });

      const view = await authView('protected');
      expect(view).toEqual({
        server: 'protected',
        state: 'authorized',
        issuer: rig.as.issuer,
        scopes: ['mcp:tools'],
        expiresAt: expect.any(String),
        refreshable: true,
      });
      const expires = Date.parse(view.expiresAt!);
      expect(expires).toBeGreaterThan(started);
      expect(expires).toBeLessThanOrEqual(Date.now() + ACCESS_TTL * 1000);

      const stored = rig.tokens('protected')!;
      expect(stored.accessToken).toBeTruthy();
      expect(stored.refreshToken).toBeTruthy();
      expect(statSync(join(rig.state, 'credentials.json')).mode & 0o777).toBe(0o600);
      for (const out of [r.stdout, r.stderr, JSON.stringify(view)]) {
        for (const s of [stored.accessToken!, stored.refreshToken!, rig.client()!.clientSecret!]) expect(out).not.toContain(s);
      }
      // The plain table too
      const table = await rig.mcpx(['auth']);
      expect(table.code, table.stderr).toBe(0);
      expect(table.stdout).toMatch(/protected\s+authorized\s+mcp:tools\s+\S+\s+yes/);
      expect(table.stdout).toMatch(/preregistered\s+(none|needs login)/);
    },
    LOGIN_TIMEOUT,
  );

  it('after the login every caller reaches the server: mcpx call, POST /v1/call, mcpx serve (SDK v2, SDK v1), /mcp (SDK v1, v2)', async () => {
    expect(await whoami('protected')).toMatchObject({ sub: 'alice', scopes: ['mcp:tools'] });

    const call = await rig.api('POST', '/v1/call', { server: 'protected', tool: 'whoami', args: {} });
    expect(call.status, call.text).toBe(200);
    expect(JSON.parse(textOf(call.body.result))).toMatchObject({ sub: 'alice' });

    const callers: McpCaller[] = [];
    const stderr = (line: string) => rig.seen.push(line);
    try {
      callers.push(await stdioCaller('modern', { env: rig.env, stderr }));
      callers.push(await stdioCaller('legacy', { env: rig.env, stderr }));
      callers.push(await httpCaller('legacy', { url: rig.mcpUrl, token: rig.daemonToken }));
      callers.push(await httpCaller('modern', { url: rig.mcpUrl, token: rig.daemonToken }));
      for (const c of callers) {
        const r = await c.callTool('protected__whoami', {});
        expect(r['isError'] ?? false, `${c.way} ${c.era}: ${textOf(r)}`).toBe(false);
        expect(JSON.parse(textOf(r)), `${c.way} ${c.era}`).toMatchObject({ sub: 'alice', scopes: ['mcp:tools'] });
      }
    } finally {
      await Promise.all(callers.map((c) => c.close()));
    }
    // Six calls, each sent with the bearer token and accepted; none refused on the way.
    const calls = (await rig.mcp['protected']!.stats()).requests.filter((q) => q.tool === 'whoami');
    expect(calls).toHaveLength(6);
    for (const q of calls) expect(q).toMatchObject({ bearer: true, status: 200, sub: 'alice' });
  }, 60_000);

  it(
    'step-up: mcpx call NAME write (403 insufficient_scope) fails at once naming mcpx login NAME, even with $BROWSER set; mcpx login NAME asks for the union of scopes; once granted, no further authorization',
    async () => {
      const before = await rig.as.stats();
      // BROWSER is set (the rig's Chromium): a call still never opens it.
      const started = Date.now();
      const r = await rig.mcpx(['call', 'protected', 'write', '{"text":"up"}', '--json'], { timeoutMs: LOGIN_RUN_TIMEOUT });
      const refusedMs = Date.now() - started;
      console.log(`mcpx call refused for a missing scope after ${refusedMs} ms`);
      expect(r.code, r.stderr).toBe(1);
      expect(JSON.parse(r.stdout).error).toMatchObject({ code: 'MCPX_UPSTREAM_UNAUTHORIZED', message: expect.stringContaining('`mcpx login protected`') });
      expect(r.stderr).toContain('protected needs more scope (mcp:write): run `mcpx login protected` to authorize it');
      expect(r.stderr).not.toContain('browser');
      expect(refusedMs).toBeLessThan(15_000);
      expect((await rig.as.stats()).authorizations).toHaveLength(before.authorizations.length);

      // What the refusal says to run: a login for the scopes held plus the challenged one.
      const login = await rig.mcpx(['login', 'protected'], { timeoutMs: LOGIN_RUN_TIMEOUT });
      expect(login.code, login.stderr).toBe(0);
      expect(login.stdout).toMatch(/^authorized mcpx for protected \(scopes: (mcp:tools mcp:write|mcp:write mcp:tools)\)\n$/);
      const wrote = await rig.mcpx(['call', 'protected', 'write', '{"text":"up"}']);
      expect(wrote.code, wrote.stderr).toBe(0);
      expect(wrote.stdout).toBe('wrote up\n');

      const after = await rig.as.stats();
      const asked = after.authorizations.slice(before.authorizations.length);
      expect(asked).toHaveLength(1);
      expect(asked[0]!.error).toBeUndefined();
      expect(asked[0]!.params['scope']!.split(' ').sort()).toEqual(['mcp:tools', 'mcp:write', 'offline_access']);
      // The registration's scope did not cover mcp:write (oidc-provider would refuse it): mcpx registered anew for the union.
      const regs = mcpxRegistrations(after);
      expect(regs).toHaveLength(2);
      expect(regs[1]!.scope!.split(' ').sort()).toEqual(['mcp:tools', 'mcp:write', 'offline_access']);
      expect(asked[0]!.params['client_id']).toBe(regs[1]!.client_id);
      expect(decodeJwt(rig.tokens('protected')!.accessToken!).scope).toBe('mcp:tools mcp:write');

      const view = await authView('protected');
      expect(view.scopes?.sort()).toEqual(['mcp:tools', 'mcp:write']);
      expect(view.needsScopes).toBeUndefined();

      // Held now: no authorization, no registration.
      const again = await rig.mcpx(['call', 'protected', 'write', '{"text":"again"}']);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toBe('wrote again\n');
      expect(again.stderr).toBe('');
      expect(await whoami('protected')).toMatchObject({ sub: 'alice', scopes: ['mcp:tools', 'mcp:write'] });
      const last = await rig.as.stats();
      expect(last.authorizations).toHaveLength(after.authorizations.length);
      expect(last.registrations).toHaveLength(after.registrations.length);
    },
    LOGIN_TIMEOUT,
  );

  it('refresh under load: 50 calls in flight as the token enters its refresh margin make exactly one refresh, and none fails', async () => {
    const started = Date.now();
    // Wait for the moment the stored token is due (a fifth of its lifetime before expiry), unless the daemon's own
    // 5 s tick renewed it first: then for the next one.
    let held = rig.tokens('protected')!;
    for (let attempt = 0; ; attempt++) {
      const due = held.expiresAt! - (held.expiresAt! - held.issuedAt!) / 5;
      await new Promise((r) => setTimeout(r, Math.max(0, due + 50 - Date.now())));
      const now = rig.tokens('protected')!;
      if (now.generation === held.generation) break;
      expect(attempt, 'the tick renewed the token before the calls twice in a row').toBe(0);
      held = now;
    }
    const asBefore = await rig.as.stats();
    const mcpBefore = await rig.mcp['protected']!.stats();
    const calls = await Promise.all(
      Array.from({ length: 50 }, (_, i) => rig.api('POST', '/v1/call', { server: 'protected', tool: 'echo', args: { text: `n${i}` } })),
    );
    const burstMs = Date.now() - started;
    for (const [i, c] of calls.entries()) {
      expect(c.status, c.text).toBe(200);
      expect(textOf(c.body.result)).toBe(`n${i}`);
    }
    const asAfter = await rig.as.stats();
    const refreshes = (asAfter.tokenRequests['refresh_token'] ?? 0) - (asBefore.tokenRequests['refresh_token'] ?? 0);
    console.log(`refreshes during 50 calls in flight: ${refreshes}; the test took ${burstMs} ms`);
    expect(refreshes).toBe(1);
    expect(asAfter.tokenErrors).toEqual({});
    // No call was refused on the way (each waited for the one refresh instead).
    const mcpAfter = await rig.mcp['protected']!.stats();
    expect(mcpAfter[401] - mcpBefore[401]).toBe(0);
    // The rotated refresh token replaced the old one, which is nowhere in the store any more.
    const renewed = rig.tokens('protected')!;
    expect(renewed.generation).toBe(held.generation! + 1);
    expect(renewed.refreshToken).toBeTruthy();
    expect(renewed.refreshToken).not.toBe(held.refreshToken);
    expect(renewed.accessToken).not.toBe(held.accessToken);
    expect(JSON.stringify(rig.credentials())).not.toContain(held.refreshToken!);
  }, 60_000);

  it('a second daemon start reuses the stored tokens: no login, calls work', async () => {
    const before = await rig.as.stats();
    await rig.stopDaemon();
    await rig.startDaemon();
    await rig.watchEvents();
    expect(await authView('protected')).toMatchObject({ state: 'authorized', scopes: ['mcp:tools', 'mcp:write'], refreshable: true });
    expect(await whoami('protected', { browser: false })).toMatchObject({ sub: 'alice' });
    const after = await rig.as.stats();
    expect(after.authorizations).toHaveLength(before.authorizations.length);
    expect(after.registrations).toHaveLength(before.registrations.length);
  }, 60_000);

  it(
    'a pre-registered client (oauth.clientId + clientSecret from ${VAR}s): no registration, its secret never shown by mcpx config',
    async () => {
      const before = await rig.as.stats();
      const r = await rig.mcpx(['login', 'preregistered'], { timeoutMs: LOGIN_RUN_TIMEOUT });
      expect(r.code, r.stderr).toBe(0);
      const after = await rig.as.stats();
      expect(after.registrations).toHaveLength(before.registrations.length);
      const asked = after.authorizations.slice(before.authorizations.length);
      expect(asked.map((a) => a.params['client_id'])).toEqual([pre.client_id]);
      expect(asked[0]!.params['redirect_uri']).toBe(`http://127.0.0.1:${preCallbackPort}/callback`);
      expect(asked[0]!.params['scope']!.split(' ').sort()).toEqual(['mcp:tools', 'offline_access']);
      expect(await whoami('preregistered')).toMatchObject({ sub: 'alice', client_id: pre.client_id });

      // Without a browser a 403 says which scope is missing and what to run; a step-up asks for the configured
      // scopes plus the challenged one (the login is only started here, then cancelled).
      const refused = await rig.mcpx(['call', 'preregistered', 'write', '{"text":"x"}', '--json'], { browser: false });
      expect(refused.code).toBe(1);
      expect(JSON.parse(refused.stdout).error).toMatchObject({ code: 'MCPX_UPSTREAM_UNAUTHORIZED' });
      expect(refused.stderr).toContain('preregistered needs more scope (mcp:write): run `mcpx login preregistered` to authorize it');
      expect((await authView('preregistered')).needsScopes).toEqual(['mcp:write']);
      const stepUp = await rig.api('POST', '/v1/auth/preregistered/login', { stepUp: true });
      expect(stepUp.status, stepUp.text).toBe(202);
      expect(new URL(stepUp.body.url).searchParams.get('scope')!.split(' ').sort()).toEqual(['mcp:tools', 'mcp:write', 'offline_access']);
      expect((await rig.api('POST', `/v1/auth/logins/${stepUp.body.id}/cancel`)).body).toMatchObject({ status: 'failed' });
      // The configured client is the config's: the store keeps no copy of it.
      expect(JSON.stringify(rig.credentials())).not.toContain(pre.client_secret);

      for (const args of [['config'], ['config', '--json']]) {
        const shown = await rig.mcpx(args);
        expect(shown.code, shown.stderr).toBe(0);
        expect(shown.stdout).toContain('preregistered');
        expect(shown.stdout + shown.stderr).not.toContain(pre.client_secret);
      }
      const config = await rig.api('GET', '/v1/config');
      expect(config.status).toBe(200);
      expect(config.text).toContain('preregistered');
      expect(config.text).not.toContain(pre.client_secret);
    },
    LOGIN_TIMEOUT,
  );

  it('oauth.callbackPort taken by another listener: mcpx login fails at once with MCPX_OAUTH_PORT_TAKEN naming the port', async () => {
    const started = Date.now();
    const r = await rig.mcpx(['login', 'fixedport', '--json']);
    const ms = Date.now() - started;
    console.log(`mcpx login with its callback port taken failed after ${ms} ms`);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`the callback port ${takenPort} (oauth.callbackPort) is in use by another program`);
    expect(JSON.parse(r.stdout)).toMatchObject({ server: 'fixedport', status: 'failed', error: { code: 'MCPX_OAUTH_PORT_TAKEN' } });
    expect(ms).toBeLessThan(5_000);
    const login = await rig.api('POST', '/v1/auth/fixedport/login', {});
    expect(login.body.error).toMatchObject({ code: 'MCPX_OAUTH_PORT_TAKEN', data: { port: takenPort } });
    // Nothing reached the authorization server for it.
    expect((await rig.as.stats()).authorizations.filter((a) => a.params['redirect_uri']?.includes(`:${takenPort}/`))).toEqual([]);
  });

  it('mcpx logout NAME forgets the tokens (the next call is MCPX_UPSTREAM_UNAUTHORIZED); --forget-client forgets the registration', async () => {
    expect(rig.tokens('protected')).toBeDefined();
    const out = await rig.mcpx(['logout', 'protected']);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toBe('forgot the tokens of protected\n');
    expect(rig.tokens('protected')).toBeUndefined();
    expect(rig.client()).toBeDefined();

    // Never authorized (since the logout): refused naming mcpx login, with or without a browser to open.
    for (const browser of [false, true]) {
      const before = (await rig.as.stats()).authorizations.length;
      const call = await rig.mcpx(['call', 'protected', 'whoami', '--json'], { browser });
      expect(call.code).toBe(1);
      const outcome = JSON.parse(call.stdout) as { ok: boolean; error: { code: string; message: string } };
      expect(outcome.error.code).toBe('MCPX_UPSTREAM_UNAUTHORIZED');
      expect(outcome.error.message).toContain('`mcpx login protected`');
      expect(call.stderr).toContain('`mcpx login protected`');
      expect((await rig.as.stats()).authorizations).toHaveLength(before);
    }
    expect((await authView('protected')).state).toBe('needed');

    const forget = await rig.mcpx(['logout', 'protected', '--forget-client']);
    expect(forget.code, forget.stderr).toBe(0);
    expect(forget.stdout).toBe('protected held no tokens\nforgot the client registration\n');
    expect(rig.client()).toBeUndefined();
  });

  it(
    'revocation: once the current access token expires, the next call fails with MCPX_UPSTREAM_UNAUTHORIZED naming mcpx login NAME',
    async () => {
      const held = rig.tokens('preregistered')!;
      expect(await rig.as.revokeAll()).toBeGreaterThan(0);
      // The JWT stays good at the MCP server until it expires; by then the refresh has been refused.
      await new Promise((r) => setTimeout(r, Math.max(0, held.expiresAt! + 1000 - Date.now())));
      const call = await rig.mcpx(['call', 'preregistered', 'whoami', '--json'], { browser: false });
      expect(call.code).toBe(1);
      const outcome = JSON.parse(call.stdout) as { ok: boolean; error: { code: string; message: string } };
      expect(outcome.error.code).toBe('MCPX_UPSTREAM_UNAUTHORIZED');
      expect(outcome.error.message).toContain('`mcpx login preregistered`');
      expect((await rig.as.stats()).tokenErrors['refresh_token']?.['invalid_grant']).toBeGreaterThanOrEqual(1);

      const view = await authView('preregistered');
      expect(view.state).toBe('failed');
      expect(view.error).toContain('invalid_grant');
      expect(view.error).toContain('`mcpx login preregistered`');
      const table = await rig.mcpx(['auth', 'preregistered']);
      expect(table.stdout).toMatch(/preregistered\s+failed/);
      expect(table.stdout).toContain('refused to renew the authorization (invalid_grant)');
      // The refused generation is forgotten.
      expect(rig.tokens('preregistered')).toBeUndefined();

      // With a browser ($BROWSER set) the call fails just the same, at once: a call never opens one.
      const before = (await rig.as.stats()).authorizations.length;
      const started = Date.now();
      const again = await rig.mcpx(['call', 'preregistered', 'whoami', '--json'], { timeoutMs: LOGIN_RUN_TIMEOUT });
      const refusedMs = Date.now() - started;
      console.log(`mcpx call refused after a revocation, BROWSER set, after ${refusedMs} ms`);
      expect(again.code, again.stderr).toBe(1);
      expect(JSON.parse(again.stdout).error).toMatchObject({
        code: 'MCPX_UPSTREAM_UNAUTHORIZED',
        message: expect.stringContaining('`mcpx login preregistered`'),
      });
      expect(again.stderr).not.toContain('authorizing it in the browser');
      expect(refusedMs).toBeLessThan(15_000);
      expect((await rig.as.stats()).authorizations).toHaveLength(before);

      // mcpx login authorizes again; then the call goes through.
      const login = await rig.mcpx(['login', 'preregistered'], { timeoutMs: LOGIN_RUN_TIMEOUT });
      expect(login.code, login.stderr).toBe(0);
      expect(await whoami('preregistered')).toMatchObject({ sub: 'alice', client_id: pre.client_id });
      expect((await rig.as.stats()).authorizations).toHaveLength(before + 1);
      expect((await authView('preregistered')).state).toBe('authorized');
    },
    LOGIN_TIMEOUT,
  );

  it('no secret (token, refresh token, client secret, code, verifier) shows in any output, log, state file, /v1 answer or event', async () => {
    for (const path of ['/v1/servers', '/v1/config', '/v1/status', '/v1/auth', '/v1/tools', '/v1/protocol']) await rig.api('GET', path);
    const secrets = rig.harvest();
    secrets.set(pre.client_secret, 'configured client secret');
    const kinds = new Set(secrets.values());
    for (const value of secrets.keys()) expect(value.length).toBeGreaterThanOrEqual(16);
    for (const k of ['access_token', 'refresh_token', 'client_secret', 'code', 'code_verifier', 'registration_access_token']) expect(kinds, k).toContain(k);

    const texts: Array<[string, string]> = [
      ...rig.runs.map((r): [string, string] => [`mcpx ${r.args.join(' ')}`, r.stdout + r.stderr]),
      ...rig.daemons.map((d, i): [string, string] => [`daemon ${i + 1}'s log`, d.stdout + d.stderr]),
      ...rig.stateFiles().map((f): [string, string] => [f.file, f.text]),
      ['/v1 answers, events, serve stderr', rig.seen.join('\n')],
    ];
    // Every source was really read: both daemons logged the OAuth work, the events stream carried server.auth.
    expect(rig.daemons).toHaveLength(2);
    expect(rig.daemons.map((d) => d.stdout).join('')).toContain('token refreshed');
    expect(rig.daemons.map((d) => d.stdout).join('')).toContain('login ended');
    expect(rig.events.some((e) => e.type === 'server.auth')).toBe(true);
    expect(rig.stateFiles().map((f) => f.file.slice(rig.state.length + 1))).toContain('daemon.json');
    for (const [secret, kind] of secrets) {
      // A JWT's signature alone is as good as a leak of the token.
      const needles = /^eyJ[\w-]+\.[\w-]+\.[\w-]{16,}$/.test(secret) ? [secret, secret.split('.')[2]!] : [secret];
      for (const [where, text] of texts) for (const n of needles) expect(text.includes(n), `a ${kind} in ${where}`).toBe(false);
    }
  });
});
