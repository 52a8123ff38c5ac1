/**
 * The scope on a refresh (issue 32 item 4), through the BUILT BINARY against oidc-provider (test/fixtures/oauth)
 * signed in with headless Chromium:
 * - an authorization server that needs `scope` on a refresh (`--refresh-scope require`, standing for Microsoft
 *   Entra, which otherwise answers a token for another scope): every refresh names the granted scope, so the
 *   credential lives on past its first access token;
 * - one that refuses it (`--refresh-scope refuse`, `invalid_scope`): the first refresh is sent again without it,
 *   and that is remembered for the authorization server in credentials.json, so no later refresh (after a restart
 *   too) asks with it again.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { until } from '../cli/helpers.js';
import { chromiumMissing } from '../fixtures/oauth/index.js';
import { OAuthRig } from './rig.js';

/**
 * Access tokens live 5 s: each is due 4 s after it was issued (a fifth before expiry), so the daemon's 5 s tick
 * refreshes at every tick (a 10 s token took two ticks each).
 */
const ACCESS_TTL = 5;
const LOGIN_RUN_TIMEOUT = 100_000;

const refreshesOk = (s: { tokens: Array<{ grant_type: string; status: number }> }) =>
  s.tokens.filter((t) => t.grant_type === 'refresh_token' && t.status === 200).length;

// Each test is a rig of its own (authorization server, MCP server, daemon, state folder): they run at the same time.
describe.skipIf(chromiumMissing !== undefined).concurrent(`the scope on a refresh${chromiumMissing ? ` (skipped: ${chromiumMissing})` : ''}`, () => {
  const rigs: OAuthRig[] = [];
  afterAll(async () => {
    for (const r of rigs) await r.stop();
  });

  const loggedIn = async (refreshScope: 'require' | 'refuse'): Promise<OAuthRig> => {
    const rig = await OAuthRig.start({ accessTtl: ACCESS_TTL, servers: ['protected'], refreshScope });
    rigs.push(rig);
    await rig.startDaemon();
    const r = await rig.mcpx(['login', 'protected'], { timeoutMs: LOGIN_RUN_TIMEOUT });
    expect(r.code, r.stderr).toBe(0);
    return rig;
  };
  const whoami = async (rig: OAuthRig) => {
    const r = await rig.mcpx(['call', 'protected', 'whoami'], { browser: false });
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as { scopes: string[] };
  };

  it('a server that needs the scope on a refresh: every refresh sends the granted one, and calls go on past the first token', async () => {
    const rig = await loggedIn('require');
    await until(async () => refreshesOk(await rig.as.stats()) >= 2, 90_000, 'two refreshes');
    const stats = await rig.as.stats();
    console.log(`require: refresh scopes sent ${JSON.stringify(stats.refreshScopes)}; errors ${JSON.stringify(stats.tokenErrors)}`);
    expect(stats.tokenErrors['refresh_token']).toBeUndefined();
    expect(stats.refreshScopes.length).toBeGreaterThanOrEqual(2);
    // The granted scope, with offline_access (offered by the server, asked for by the login; never in a token answer).
    for (const s of stats.refreshScopes) expect(s).toBe('mcp:tools offline_access');
    // The login's token has expired by now: this call runs on a refreshed one.
    expect((await whoami(rig)).scopes).toContain('mcp:tools');
    const view = JSON.parse((await rig.mcpx(['auth', 'protected', '--json'])).stdout).servers[0];
    expect(view.state).toBe('authorized');
  }, 240_000);

  it('a server that refuses the scope on a refresh: one invalid_scope, then refreshes without it, remembered across a restart', async () => {
    const rig = await loggedIn('refuse');
    await until(async () => refreshesOk(await rig.as.stats()) >= 2, 90_000, 'two refreshes');
    let stats = await rig.as.stats();
    console.log(`refuse: refresh scopes sent ${JSON.stringify(stats.refreshScopes)}; errors ${JSON.stringify(stats.tokenErrors)}`);
    expect(stats.tokenErrors['refresh_token']).toEqual({ invalid_scope: 1 });
    expect(stats.refreshScopes[0]).toBe('mcp:tools offline_access');
    expect(stats.refreshScopes.slice(1).every((s) => s === null)).toBe(true);
    const remembered = rig.credentials().find((r) => (r.kind as string) === 'authorization-server' && r.issuer === rig.as.issuer);
    expect(remembered?.['refreshScope']).toBe('omit');
    // A new daemon reads it back: its refreshes never send the scope again.
    await rig.stopDaemon();
    const before = refreshesOk(await rig.as.stats());
    await rig.startDaemon();
    await until(async () => refreshesOk(await rig.as.stats()) > before, 90_000, 'a refresh by the new daemon');
    stats = await rig.as.stats();
    console.log(`refuse, after a restart: refresh scopes sent ${JSON.stringify(stats.refreshScopes)}; errors ${JSON.stringify(stats.tokenErrors)}`);
    expect(stats.tokenErrors['refresh_token']).toEqual({ invalid_scope: 1 });
    expect(stats.refreshScopes.slice(1).every((s) => s === null)).toBe(true);
    expect((await whoami(rig)).scopes).toContain('mcp:tools');
  }, 300_000);
});
