/**
 * OAuth against hostile endpoints, through the BUILT BINARY (issue 37, items 4, 5, 10, 11, 12; docs/reliability.md):
 * a token endpoint that never answers, answers 500, answers slowly while a logout runs, or answers 80 MB;
 * metadata and registration endpoints that never answer or answer 300 MB; a resource server that refuses every
 * token; a state folder that is full when a refresh rotates the tokens. The endpoints are in-process loopback
 * servers that count every request (test/fixtures/oauth/hostile.ts); the credential is seeded as a login leaves
 * it, already due, so the daemon refreshes at once. Deadlines are made small through the settings, never raced
 * with a sleep: every wait is an `until` with a generous bound, and what is asserted is counted or measured.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { api, cleanEnv, ForegroundDaemon, killAll, mcpx, until } from '../cli/helpers.js';
import { tempDir } from '../support/real.js';
import { seedCredentials, startHostileAs, startProtectedLegacyMcp, type HostileAs, type ProtectedLegacyMcp } from '../fixtures/oauth/hostile.js';

interface Setup {
  dir: string;
  state: string;
  socket: string;
  env: NodeJS.ProcessEnv;
  as: HostileAs;
  mcp: ProtectedLegacyMcp;
  daemon: ForegroundDaemon;
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  await killAll();
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** An authorization server, a protected server `p1` using it, a seeded due credential, and a daemon. */
async function setup(
  o: { settings?: Record<string, string>; beforeDaemon?: (s: Omit<Setup, 'daemon'>) => void | Promise<void>; due?: boolean } = {},
): Promise<Setup> {
  const dir = await tempDir('mcpx-oauth-hostile-');
  cleanups.push(dir.remove);
  const as = await startHostileAs();
  cleanups.push(as.close);
  const mcp = await startProtectedLegacyMcp(as);
  cleanups.push(mcp.close);
  const state = join(dir.path, 'state');
  const config = join(dir.path, 'mcpx.json');
  writeFileSync(config, JSON.stringify({ mcpServers: { p1: { type: 'http', url: mcp.url } } }));
  const env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: config, MCPX_LOG_LEVEL: 'info', BROWSER: undefined, ...o.settings });
  const base = { dir: dir.path, state, socket: join(state, 'daemon.sock'), env, as, mcp };
  await o.beforeDaemon?.(base);
  // Expired a second ago: due now, so the daemon refreshes at its start (and a call waits for that refresh).
  seedCredentials(state, as, mcp.url, o.due === false ? Date.now() + 3_600_000 : Date.now() - 1_000);
  const daemon = await ForegroundDaemon.start(base.socket, [], { env });
  return { ...base, daemon };
}

/** POST /v1/call p1 echo over the socket; the answer and how long it took. */
async function call(s: Setup, text = 'hi'): Promise<{ ok: boolean; code?: string; message?: string; text?: string; ms: number }> {
  const started = Date.now();
  const r = await api(s.socket, 'POST', '/v1/call', { server: 'p1', tool: 'echo', args: { text } });
  const ms = Date.now() - started;
  const b = r.body as { ok: boolean; result?: { content: Array<{ text: string }> }; error?: { code: string; message: string } };
  return b.ok ? { ok: true, text: b.result!.content[0]!.text, ms } : { ok: false, code: b.error!.code, message: b.error!.message, ms };
}

async function authView(s: Setup): Promise<{ state: string; error?: string; unsaved?: string; expiresAt?: string }> {
  const r = await api(s.socket, 'GET', '/v1/auth/p1');
  return (r.body as { servers: Array<{ state: string; error?: string; unsaved?: string }> }).servers[0]!;
}

/** The daemon's peak and current resident memory, MB (/proc). */
function memory(pid: number): { peak: number; rss: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { peak: Math.round(kb('VmHWM') / 1024), rss: Math.round(kb('VmRSS') / 1024) };
}

const storedTokens = (s: Setup): { generation?: number; refreshToken?: string } | undefined => {
  const file = join(s.state, 'credentials.json');
  if (!existsSync(file)) return undefined;
  const servers = (JSON.parse(readFileSync(file, 'utf8')) as { servers: Record<string, { kind: string; generation?: number; refreshToken?: string }> }).servers;
  return Object.values(servers).find((r) => r.kind === 'tokens');
};

describe('a token endpoint that never answers (issue 37 item 4)', () => {
  it('each refresh ends at oauth.requestTimeout, its waiters are released, and the first call after the server answers again works', async () => {
    const s = await setup({
      settings: { MCPX_OAUTH_REQUEST_TIMEOUT: '1s', MCPX_OAUTH_REFRESH_BACKOFF_MAX: '2s' },
      beforeDaemon: ({ as }) => {
        as.token = { kind: 'hang' };
      },
    });
    // Five calls at once: all wait on the one refresh, which gives up after 1 s; none waits for undici's 300 s.
    const five = await Promise.all([1, 2, 3, 4, 5].map(() => call(s)));
    for (const r of five) {
      expect(r.ok).toBe(false);
      expect(r.code).toBe('MCPX_UPSTREAM_UNAUTHORIZED');
      expect(r.message).toMatch(/did not answer within 1 s/);
    }
    const slowest = Math.max(...five.map((r) => r.ms));
    console.log(`five calls during a hung refresh: slowest ${slowest} ms; token requests so far ${s.as.counts.token}`);
    expect(slowest).toBeLessThan(20_000);
    // The authorization server answers again: the next call after the backoff (at most 2 s) refreshes and works.
    s.as.token = { kind: 'ok' };
    const back = Date.now();
    let last: Awaited<ReturnType<typeof call>> | undefined;
    await until(async () => (last = await call(s)).ok, 30_000, 'a call that works after the token endpoint recovers');
    const recoveredMs = Date.now() - back;
    console.log(`recovered ${recoveredMs} ms after the token endpoint answered again; token requests ${s.as.counts.token}`);
    expect(last!.text).toBe('hi');
    expect(recoveredMs).toBeLessThan(15_000);
    expect(s.as.tokenAnswered).toBe(1);
    expect((await authView(s)).state).toBe('authorized');
  }, 120_000);
});

describe('an answer the SDK cannot read', () => {
  it('is never quoted: a token endpoint whose unreadable answer holds a secret fails the refresh without showing it', async () => {
    const secret = 'leaked-refresh-secret-5f1c9e';
    const s = await setup({
      beforeDaemon: ({ as }) => {
        as.token = { kind: 'text', status: 400, body: `<html>upstream proxy error; refresh_token=${secret}</html>` };
      },
    });
    const r = await call(s);
    expect(r.ok).toBe(false);
    expect(r.code).toBe('MCPX_UPSTREAM_UNAUTHORIZED');
    await until(async () => (await authView(s)).state === 'failed', 10_000, 'the refresh reported failed');
    const view = await authView(s);
    expect(view.error).toMatch(/the answer is not shown/);
    const auth = await mcpx(['auth', 'p1'], { env: s.env });
    const status = await mcpx(['status', '--json'], { env: s.env });
    for (const seen of [JSON.stringify(view), r.message ?? '', auth.stdout, auth.stderr, status.stdout, s.daemon.stdout, s.daemon.stderr])
      expect(seen).not.toContain(secret);
  }, 60_000);
});

describe('a token endpoint answering 500 (issue 37 item 11)', () => {
  it('50 concurrent and 20 sequential calls make a handful of refreshes, not one per call: the credential backs off', async () => {
    const s = await setup({
      beforeDaemon: ({ as }) => {
        as.token = { kind: 'status', status: 500 };
      },
    });
    const started = Date.now();
    const concurrent = await Promise.all(Array.from({ length: 50 }, () => call(s)));
    expect(concurrent.every((r) => !r.ok && r.code === 'MCPX_UPSTREAM_UNAUTHORIZED')).toBe(true);
    const afterConcurrent = s.as.counts.token;
    for (let i = 0; i < 20; i++) {
      const r = await call(s);
      expect(r.ok).toBe(false);
      expect(r.message).toMatch(/refresh failed/);
    }
    const elapsed = (Date.now() - started) / 1000;
    // Backoff 1 s, 2 s, 4 s, …: at most one refresh at the start (and the daemon's own) plus one per doubling.
    const bound = 2 + Math.ceil(Math.log2(elapsed + 1));
    console.log(
      `500s: ${afterConcurrent} token requests for 50 concurrent calls, ${s.as.counts.token} after 20 more sequential ones, in ${elapsed.toFixed(1)} s (bound ${bound})`,
    );
    expect(s.as.counts.token).toBeLessThanOrEqual(bound);
    const view = await authView(s);
    expect(view.state).toBe('failed');
    expect(view.error).toMatch(/the last refresh failed/);
  }, 180_000);

  it('a resource server that refuses every token: the fresh token refused at once stops the rotation, and mcpx auth says so', async () => {
    const s = await setup({
      beforeDaemon: ({ mcp }) => {
        mcp.refuseAll = true;
      },
      due: false,
    });
    const started = Date.now();
    for (let i = 0; i < 10; i++) {
      const r = await call(s);
      expect(r.ok).toBe(false);
      expect(r.code).toBe('MCPX_UPSTREAM_UNAUTHORIZED');
    }
    const elapsed = (Date.now() - started) / 1000;
    const bound = 1 + Math.ceil(Math.log2(elapsed + 1));
    console.log(`a resource refusing every token: ${s.as.counts.token} rotations for 10 calls in ${elapsed.toFixed(1)} s (bound ${bound})`);
    expect(s.as.counts.token).toBeGreaterThanOrEqual(1);
    expect(s.as.counts.token).toBeLessThanOrEqual(bound);
    const view = await authView(s);
    expect(view.error).toMatch(/refused a token fresh from the authorization server/);
    const r = await mcpx(['auth', 'p1'], { env: s.env });
    expect(r.stdout).toMatch(/refused a token fresh from the authorization server/);
  }, 120_000);
});

describe('logout during a refresh (issue 37 item 5)', () => {
  it('the refresh in flight is aborted and its answer never brings the tokens back', async () => {
    const s = await setup({
      beforeDaemon: ({ as }) => {
        as.token = { kind: 'gate' };
      },
    });
    // The daemon's start-up refresh is at the token endpoint, held there.
    await until(() => s.as.held() === 1, 20_000, 'the refresh at the token endpoint');
    const pending = call(s);
    const out = await mcpx(['logout', 'p1'], { env: s.env, timeoutMs: 30_000 });
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/p1/);
    // Whatever the endpoint answers now comes too late (a refresh the waiting call may start on its way out is
    // answered at once: it must not be kept either).
    s.as.token = { kind: 'ok' };
    s.as.release();
    const r = await pending;
    expect(r.ok).toBe(false);
    // Every token request has ended (answered or aborted), and the daemon has written what it would.
    await until(() => s.as.tokenAborted + s.as.tokenAnswered >= s.as.counts.token, 10_000, 'the token requests to end');
    console.log(`logout during a refresh: ${s.as.counts.token} token request(s), ${s.as.tokenAborted} aborted, ${s.as.tokenAnswered} answered`);
    const after = await call(s);
    expect(after.ok).toBe(false);
    expect(after.code).toBe('MCPX_UPSTREAM_UNAUTHORIZED');
    expect(storedTokens(s)).toBeUndefined();
    const view = await authView(s);
    expect(['none', 'needed']).toContain(view.state);
    const auth = await mcpx(['auth', 'p1', '--json'], { env: s.env });
    expect(JSON.parse(auth.stdout).servers[0].state).not.toBe('authorized');
  }, 120_000);
});

describe('unbounded OAuth answers (issue 37 item 10)', () => {
  it('an 80 MB token answer is dropped at oauth.maxResponseBytes: the call fails fast and the daemon stays small', async () => {
    const s = await setup({
      beforeDaemon: ({ as }) => {
        as.token = { kind: 'huge', bytes: 80 * 1024 * 1024 };
      },
    });
    const r = await call(s);
    expect(r.ok).toBe(false);
    expect(r.message).toMatch(/answered more than 1 MiB/);
    const m = memory(s.daemon.pid);
    console.log(`80 MB token answer: call failed in ${r.ms} ms; daemon peak RSS ${m.peak} MB, now ${m.rss} MB`);
    expect(m.peak).toBeLessThan(200);
  }, 120_000);

  it('metadata and registration that answer 300 MB or never: mcpx login fails within the deadline, the daemon stays small', async () => {
    const s = await setup({ settings: { MCPX_OAUTH_REQUEST_TIMEOUT: '2s' } });
    // No credential for this one: the login starts from the server's 401.
    await api(s.socket, 'POST', '/v1/auth/p1/logout', {});
    const login = async (): Promise<{ code: number | null; out: string; ms: number }> => {
      const started = Date.now();
      const r = await mcpx(['login', 'p1', '--no-browser'], { env: s.env, timeoutMs: 90_000 });
      return { code: r.code, out: r.stdout + r.stderr, ms: Date.now() - started };
    };
    const cases: Array<[string, () => void, RegExp]> = [
      ['metadata 300 MB', () => (s.as.metadata = { kind: 'huge', bytes: 300 * 1024 * 1024 }), /answered more than 1 MiB/],
      ['metadata never', () => (s.as.metadata = { kind: 'hang' }), /did not answer within 2 s/],
      [
        'registration 300 MB',
        () => {
          s.as.metadata = { kind: 'ok' };
          s.as.registration = { kind: 'huge', bytes: 300 * 1024 * 1024 };
        },
        /answered more than 1 MiB/,
      ],
      ['registration never', () => (s.as.registration = { kind: 'hang' }), /did not answer within 2 s/],
    ];
    for (const [what, arrange, expected] of cases) {
      arrange();
      const r = await login();
      const m = memory(s.daemon.pid);
      console.log(`${what}: mcpx login exited ${r.code} in ${r.ms} ms; daemon peak RSS ${m.peak} MB, now ${m.rss} MB`);
      expect(r.code, r.out).not.toBe(0);
      expect(r.out).toMatch(expected);
      expect(r.ms).toBeLessThan(60_000);
      expect(m.peak).toBeLessThan(200);
    }
  }, 400_000);
});

const isRoot = process.getuid?.() === 0;
describe.runIf(isRoot && process.platform === 'linux')('a renewed credential the full disk could not take (issue 37 item 12)', () => {
  it('is reported in mcpx auth, mcpx status, the log and the page, calls go on, and it is saved once there is room', async () => {
    let mnt = '';
    let mounted = true;
    const s = await setup({
      beforeDaemon: ({ state, as }) => {
        mnt = state;
        mkdirSync(state, { recursive: true, mode: 0o700 });
        try {
          execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=512k,mode=0700', 'tmpfs', state]);
        } catch {
          mounted = false;
        }
        cleanups.push(() => void spawnSync('umount', ['-l', state]));
        as.token = { kind: 'gate' };
      },
    });
    if (!mounted) {
      console.warn('skipped: cannot mount a tmpfs here');
      return;
    }
    // The start-up refresh waits at the token endpoint while the state folder fills up.
    await until(() => s.as.held() === 1, 20_000, 'the refresh at the token endpoint');
    spawnSync('dd', ['if=/dev/zero', `of=${join(mnt, 'filler')}`, 'bs=4k'], { stdio: 'ignore' });
    s.as.token = { kind: 'ok' };
    s.as.release();
    await until(async () => (await authView(s)).unsaved !== undefined, 20_000, 'the unsaved credential reported');
    expect(storedTokens(s)?.generation).toBe(1); // the disk still has the old generation
    // Calls go on with the renewed token.
    const r = await call(s);
    expect(r.ok, r.message).toBe(true);
    const auth = await mcpx(['auth', 'p1'], { env: s.env });
    expect(auth.stdout).toMatch(/could not be saved to credentials\.json \(.*ENOSPC/);
    const status = await mcpx(['status'], { env: s.env });
    expect(status.stdout).toMatch(/p1: the renewed credential could not be saved/);
    const ui = await api(s.socket, 'GET', '/ui/api/state'); // what the page shows
    expect(ui.status).toBe(200);
    expect(ui.text).toMatch(/could not be saved/);
    expect(s.daemon.stdout + s.daemon.stderr).toMatch(/the renewed credential could not be saved; retrying/);
    // Room again: the next tick saves it.
    rmSync(join(mnt, 'filler'));
    await until(() => storedTokens(s)?.generation === 2, 30_000, 'the renewed credential on disk');
    await until(async () => (await authView(s)).unsaved === undefined, 10_000, 'the report cleared');
    expect(storedTokens(s)?.refreshToken).toBe('refresh-1');
  }, 120_000);
});
