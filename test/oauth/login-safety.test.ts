/**
 * Issue 37 (items 2, 3 and 18), through the BUILT BINARY against the real authorization server (oidc-provider,
 * test/fixtures/oauth) and headless Chromium:
 *
 * - The opener's command line (`/proc/PID/cmdline`, readable by every local user) holds a `file://` page, never
 *   the authorization URL; the page is 0600 in the 0700 state folder and forwards to the authorization URL.
 * - "Another local user logs you in as them": an attacker process reads what the command line shows and, when it
 *   finds the authorization URL there, (a) answers the callback with `error=access_denied` first, or (b) signs in
 *   with its own account (mallory) against the victim's URL first. Without it, it can only deliver blind
 *   (no state, a wrong state): each is refused and the login keeps waiting; the victim (alice) signs in.
 * - A login whose `mcpx login` is killed (SIGTERM, SIGKILL) is cancelled at once; the next `mcpx login` starts a
 *   new one (a new state), never the old one's address. One nobody waits for at all is cancelled after 15 s.
 *
 * BROWSER is a recording script (written to the temp folder) that appends its argv, as /proc shows it, to a
 * file, waits for the test's go, then runs the Chromium script on what it was given.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MCPX, until } from '../cli/helpers.js';
import { CHROMIUM_BROWSER, chromiumMissing } from '../fixtures/oauth/index.js';
import { OAuthRig } from './rig.js';

const LOGIN_TIMEOUT = 150_000;
/** The daemon's oauth.loginUnwatchedTimeout here: above the 5 s a killed command's login may take to end, so the two cannot be mistaken. */
const UNWATCHED_MS = 6_000;

/** The recording BROWSER: argv to RECORD_FILE (one JSON line per run), then, once GO_FILE exists, Chromium. */
const RECORDER = `
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
const argv = readFileSync('/proc/self/cmdline', 'utf8').split('\\0').filter(Boolean);
appendFileSync(process.env.RECORD_FILE, JSON.stringify({ pid: process.pid, argv }) + '\\n');
if (process.env.RECORD_ONLY === '1') process.exit(0);
const end = Date.now() + 90_000;
while (!existsSync(process.env.GO_FILE)) {
  if (Date.now() > end) process.exit(3);
  await new Promise((r) => setTimeout(r, 50));
}
const r = spawnSync(process.execPath, [process.env.CHROMIUM_SCRIPT, argv.at(-1)], { stdio: 'inherit' });
process.exit(r.status ?? 1);
`;

interface Recorded {
  pid: number;
  argv: string[];
}

describe.skipIf(chromiumMissing !== undefined)(`a login's address and callback (issue 37)${chromiumMissing ? ` (skipped: ${chromiumMissing})` : ''}`, () => {
  let rig: OAuthRig;
  let recordFile: string;
  let goFile: string;
  let env: NodeJS.ProcessEnv;
  const children = new Set<ChildProcess>();

  const recorded = (): Recorded[] =>
    existsSync(recordFile)
      ? readFileSync(recordFile, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as Recorded)
      : [];

  /** `mcpx login NAME` left running: its exit, stdout and stderr when it ends. */
  const startLogin = (server: string, extraEnv: NodeJS.ProcessEnv = {}) => {
    const child = spawn(process.execPath, [MCPX, 'login', server], { env: { ...env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) =>
      child.on('close', (code, signal) => {
        children.delete(child);
        resolve({ code, signal, stdout, stderr });
      }),
    );
    return { child, exited };
  };

  /** The login running for `server`: joining it through the API gives its id and authorization URL. */
  const runningLogin = async (server: string): Promise<{ id: string; url: string; status: string }> => {
    const r = await rig.api('POST', `/v1/auth/${server}/login`, {});
    expect(r.status, r.text).toBe(202);
    return r.body;
  };
  const loginStatus = async (id: string): Promise<{ status: string; error?: { code: string; message: string } }> =>
    (await rig.api('GET', `/v1/auth/logins/${id}`)).body;

  beforeAll(async () => {
    rig = await OAuthRig.start({ accessTtl: 60, servers: ['protected'] });
    // The daemon's oauth.loginUnwatchedTimeout, shorter than its 15 s default (held to the docs by test/config/settings.test.ts).
    rig.env['MCPX_OAUTH_LOGIN_UNWATCHED_TIMEOUT'] = `${UNWATCHED_MS}ms`;
    recordFile = join(rig.dir, 'opener-argv.jsonl');
    goFile = join(rig.dir, 'go');
    const recorder = join(rig.dir, 'recording-browser.mjs');
    writeFileSync(recorder, RECORDER);
    rig.env['BROWSER'] = `${process.execPath} ${recorder}`;
    rig.env['RECORD_FILE'] = recordFile;
    rig.env['GO_FILE'] = goFile;
    rig.env['CHROMIUM_SCRIPT'] = CHROMIUM_BROWSER;
    env = rig.env;
    await rig.startDaemon();
  }, 60_000);

  afterAll(async () => {
    for (const c of children) c.kill('SIGKILL');
    await rig?.stop();
  });

  /**
   * The attacker: what another local user can read is the opener's command line. With the authorization URL
   * there it wins; without it, it only knows the callback port (here handed to it, as a port scan would find
   * it) and delivers blind. Returns what it did.
   */
  const attack = async (mode: 'deny' | 'own-account', argv: string[], port: number): Promise<string> => {
    const handed = argv.at(-1)!;
    const u = URL.parse(handed);
    if (u && (u.protocol === 'https:' || u.protocol === 'http:') && u.searchParams.get('state')) {
      const redirect = new URL(u.searchParams.get('redirect_uri')!);
      if (mode === 'deny') {
        redirect.searchParams.set('error', 'access_denied');
        redirect.searchParams.set('state', u.searchParams.get('state')!);
        await fetch(redirect).then((r) => r.text());
        return 'answered the callback with the real state';
      }
      // Signs in as mallory against the victim's authorization request; the browser lands on the victim's callback.
      const run = spawn(process.execPath, [CHROMIUM_BROWSER, handed], { env: { ...env, OAUTH_TEST_USER: 'mallory' }, stdio: 'ignore' });
      children.add(run);
      await new Promise((resolve) => run.on('close', resolve));
      children.delete(run);
      return 'signed in as mallory with the real URL';
    }
    // Blind deliveries: no state, wrong states, a forged code. Each must be refused, the login left waiting.
    const callback = `http://127.0.0.1:${port}/callback`;
    const blind = [
      '?error=access_denied',
      '?error=access_denied&state=guessed',
      '?code=forged&state=guessed',
      '?code=forged',
      `?code=forged&state=&iss=${encodeURIComponent(rig.as.issuer)}`,
    ];
    for (const q of blind) {
      const r = await fetch(callback + q);
      await r.text();
      expect(r.status, q).toBe(400);
    }
    return 'delivered blind';
  };

  for (const mode of ['deny', 'own-account'] as const) {
    it(
      `the opener gets a 0600 page, not the URL; an attacker reading argv (${mode === 'deny' ? 'error=access_denied first' : 'signing in as itself first'}) does not win`,
      async () => {
        rmSync(goFile, { force: true });
        rmSync(recordFile, { force: true });
        const run = startLogin('protected');
        await until(() => recorded().length > 0, 60_000, 'the opener');
        const { argv } = recorded()[0]!;
        const login = await runningLogin('protected');
        const authUrl = new URL(login.url);
        const port = Number(new URL(authUrl.searchParams.get('redirect_uri')!).port);

        const did = await attack(mode, argv, port);
        console.log(`attacker (${mode}): ${did}`);
        expect((await loginStatus(login.id)).status).toBe('waiting');

        // What every local user sees: a file:// page, no state, challenge, client id or port.
        const shown = argv.join(' ');
        expect(argv.at(-1)!.startsWith('file://'), shown).toBe(true);
        for (const secret of [authUrl.searchParams.get('state')!, authUrl.searchParams.get('code_challenge')!, `:${port}`]) expect(shown).not.toContain(secret);
        const page = fileURLToPath(argv.at(-1)!);
        expect(dirname(page)).toBe(rig.state);
        expect(statSync(page).mode & 0o777).toBe(0o600);
        expect(statSync(rig.state).mode & 0o777).toBe(0o700);
        const target = /<meta http-equiv="refresh" content="0;url=([^"]+)">/.exec(readFileSync(page, 'utf8'))?.[1]?.replace(/&amp;/g, '&');
        expect(target).toBe(login.url);

        // The victim's browser now gets its go and signs in as alice.
        writeFileSync(goFile, '');
        const ended = await run.exited;
        expect(ended.code, ended.stderr).toBe(0);
        expect(ended.stdout).toBe('authorized mcpx for protected (scopes: mcp:tools)\n');
        const who = await rig.mcpx(['call', 'protected', 'whoami'], { browser: false });
        expect(who.code, who.stderr).toBe(0);
        expect(JSON.parse(who.stdout)).toMatchObject({ sub: 'alice' });
        // The spent page is gone.
        expect(existsSync(page)).toBe(false);
      },
      LOGIN_TIMEOUT,
    );
  }

  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    it(`mcpx login killed by ${signal}: its login is cancelled at once; the next mcpx login starts a new one`, async () => {
      rmSync(recordFile, { force: true });
      const first = startLogin('protected', { RECORD_ONLY: '1' });
      await until(() => recorded().length > 0, 60_000, 'the opener');
      const old = await runningLogin('protected');
      const oldState = new URL(old.url).searchParams.get('state');
      const killedAt = Date.now();
      first.child.kill(signal);
      await first.exited;
      await until(async () => (await loginStatus(old.id)).status !== 'waiting', 30_000, 'the login to end');
      const ms = Date.now() - killedAt;
      console.log(`a login whose mcpx login got ${signal} ended ${ms} ms later`);
      expect(ms).toBeLessThan(5_000);
      // SIGTERM: the command cancels it on its way out; SIGKILL: the daemon sees its wait cut off.
      expect((await loginStatus(old.id)).error?.message).toMatch(signal === 'SIGTERM' ? /cancelled/ : /the command waiting for the login is gone/);

      // The next mcpx login: a new login, a new state, a new page forwarding to it.
      const second = startLogin('protected', { RECORD_ONLY: '1' });
      await until(() => recorded().length > 1, 60_000, 'the second opener');
      const now = await runningLogin('protected');
      expect(now.id).not.toBe(old.id);
      const page = fileURLToPath(recorded()[1]!.argv.at(-1)!);
      const target = /content="0;url=([^"]+)"/.exec(readFileSync(page, 'utf8'))![1]!.replace(/&amp;/g, '&');
      expect(new URL(target).searchParams.get('state')).not.toBe(oldState);
      second.child.kill('SIGINT');
      const ended = await second.exited;
      expect(ended.code).toBe(130);
      expect((await loginStatus(now.id)).status).toBe('failed');
    }, 90_000);
  }

  it(`a login nobody waits for (started through the API, never polled) is cancelled after oauth.loginUnwatchedTimeout (${UNWATCHED_MS / 1000} s here)`, async () => {
    const ends = () => rig.daemon!.stdout.split('\n').filter((l) => l.includes('login ended')).length;
    const before = ends();
    const started = Date.now();
    const login = await runningLogin('protected');
    expect(login.status).toBe('waiting');
    // Watched through the daemon's log: a look at the login would count as someone waiting for it.
    await until(() => ends() > before, 40_000, 'the unwatched login to end');
    const ms = Date.now() - started;
    console.log(`an unwatched login ended after ${ms} ms`);
    expect(ms).toBeGreaterThanOrEqual(UNWATCHED_MS - 1_000);
    expect(ms).toBeLessThan(UNWATCHED_MS + 8_000);
    expect((await loginStatus(login.id)).error?.message).toContain('nobody waited for the login');
  }, 60_000);
});
