/**
 * The `mcpx ui` page in a real browser: Debian's chromium (/usr/bin/chromium, installed by .ci/run)
 * driven by playwright-core, headless, background networking off, a fresh profile. Against a daemon
 * running the bundled demo's three servers plus a silent one (discover unanswered, initialize answered):
 * the page loads with no request leaving 127.0.0.1, shows the servers and their eras, draws every chart
 * label at >= 11 px at 1280 × 900 with no horizontal page scroll, draws each probe's path on the chart in
 * order (legacy: discover → -32601 → initialize; silent: discover → timeout → initialize alongside) with
 * hover linking both ways, highlights a state that changes when a server starts; a wrong or missing
 * login is refused.
 *
 * The README's screenshot, docs/ui.png, is written by ./glance.test.ts.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-info.js';
import { loadDaemonConfig } from '../../src/daemon/config-source.js';
import { EraCache } from '../../src/upstream/era-cache.js';
import { eraCacheKey } from '../../src/upstream/process-key.js';
import { api, cleanEnv, ForegroundDaemon, killAll, mcpx, until } from '../cli/helpers.js';
import { isGone } from '../server/helpers.js';
import { startStatelyInspector } from '../../src/inspect/stately.js';
import { createActor, createMachine } from 'xstate';
import { CHROMIUM, CHROMIUM_ARGS } from '../support/chromium.js';
import { tempDir } from '../support/real.js';

// The callbacks handed to page.waitForFunction / evaluate run in the page; for the type checker, the page's globals they use.
interface PageNode {
  textContent: string | null;
  getAttribute(name: string): string | null;
}
declare const window: { mcpxUi?: Ui; scrollTo(x: number, y: number): void };
declare const document: { querySelector(selector: string): PageNode | null; querySelectorAll(selector: string): { length: number } };

interface Ui {
  loaded: boolean;
  renders: number;
  history: Array<{ server: string; instances: string; active: string; at: number }>;
}

describe.skipIf(!existsSync(CHROMIUM))('mcpx ui in chromium, against the demo', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let daemon: ForegroundDaemon;
  let socket: string;
  let env: NodeJS.ProcessEnv;
  let profile: string;
  let context: BrowserContext;
  let page: Page;
  let origin: string;
  let loginUrl: string;
  const requests: string[] = [];
  const problems: string[] = [];

  beforeAll(async () => {
    dir = await tempDir('mcpx-ui-');
    const state = join(dir.path, 'state');
    socket = join(state, 'daemon.sock');
    // the demo's servers, and raw.mjs silent: nothing answers discover, so initialize goes alongside after probeTimeout
    const servers = join(packageRoot(), 'dist', 'demo', 'servers');
    const config = join(dir.path, 'mcpx.json');
    writeFileSync(
      config,
      JSON.stringify({
        mcpServers: {
          'legacy-only': { command: process.execPath, args: [join(servers, 'legacy-only.mjs')] },
          dual: { command: process.execPath, args: [join(servers, 'dual.mjs')] },
          'modern-only': { command: process.execPath, args: [join(servers, 'modern-only.mjs')] },
          silent: { command: process.execPath, args: [join(packageRoot(), 'test', 'fixtures', 'raw.mjs'), 'silent'], mcpx: { probeTimeout: '300ms' } },
        },
      }),
    );
    env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: config });
    // A wrong era record for modern-only (it says legacy): its probe finds modern, and says server.era.stale.
    mkdirSync(state, { recursive: true, mode: 0o700 });
    const demo = await loadDaemonConfig({ env, cwd: dir.path });
    const modernOnly = demo.servers.find((x) => x.name === 'modern-only')!;
    const cache = await EraCache.open(state);
    await cache.set(eraCacheKey(modernOnly.definition as never), { era: 'legacy', version: '2025-11-25', at: new Date().toISOString(), source: 'probe' });
    await cache.whenIdle();
    daemon = await ForegroundDaemon.start(socket, [], { env, timeoutMs: 60_000 });
    // a config file's servers start on first use
    await Promise.all(['legacy-only', 'dual', 'modern-only', 'silent'].map((name) => api(socket, 'GET', `/v1/tools?server=${name}`)));
    await until(
      async () => (await api(socket, 'GET', '/v1/protocol')).body.servers?.filter((s: { era: string | null }) => s.era !== null).length === 4,
      60_000,
      'the servers probed',
    );
    const r = await mcpx(['ui', '--json'], { env, timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(0);
    loginUrl = JSON.parse(r.stdout).url;
    origin = new URL(loginUrl).origin;
    profile = mkdtempSync(join(tmpdir(), 'mcpx-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1280, height: 900 },
    });
    context.on('request', (req) => requests.push(req.url()));
    page = context.pages()[0] ?? (await context.newPage());
    // a script error, a refused load or a Content-Security-Policy violation shows up here
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    await daemon?.stop();
    await killAll();
    await dir?.remove();
  });

  const ui = () => page.evaluate(() => window.mcpxUi!);

  it('loads from the daemon alone and shows the three servers, their eras, charts and the legacy probe', async () => {
    const res = await page.goto(loginUrl);
    expect(res?.status()).toBe(200);
    expect(page.url()).toBe(`${origin}/ui/`);
    await page.waitForFunction(
      () => {
        const u = window.mcpxUi;
        return (
          u?.loaded === true &&
          document.querySelectorAll('.session-chart svg .mark').length > 0 &&
          document.querySelectorAll('.session-chart svg').length === 4 &&
          document.querySelectorAll('.pool-chart svg').length === 4 &&
          document.querySelectorAll('.reconcile-chart svg').length === 1
        );
      },
      null,
      { timeout: 60_000 },
    );

    // every request the page made went to the daemon on 127.0.0.1
    expect(requests.length).toBeGreaterThan(4);
    const elsewhere = requests.filter((u) => !u.startsWith(`${origin}/`));
    expect(elsewhere).toEqual([]);
    expect(origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(requests).toContain(`${origin}/ui/assets/mermaid.min.js`);
    expect(requests).toContain(`${origin}/v1/events`);

    const servers = await page.$$eval('section.server', (els) =>
      els.map((e) => ({
        server: e.getAttribute('data-server'),
        era: e.querySelector('.badges .era')?.textContent,
        negotiated: e.querySelector('.badges .negotiated')?.textContent,
        source: e.querySelector('.badges .era-source')?.textContent,
      })),
    );
    expect(servers).toEqual([
      { server: 'legacy-only', era: 'era legacy', negotiated: 'negotiated 2025-11-25', source: expect.stringMatching(/^eraSource (probe|cache)$/) },
      { server: 'dual', era: 'era modern', negotiated: 'negotiated 2026-07-28', source: expect.stringMatching(/^eraSource (probe|cache)$/) },
      { server: 'modern-only', era: 'era modern', negotiated: 'negotiated 2026-07-28', source: expect.stringMatching(/^eraSource (probe|cache)$/) },
      { server: 'silent', era: 'era legacy', negotiated: 'negotiated 2025-11-25', source: 'eraSource probe' },
    ]);

    // each live instance's state is highlighted in its chart (Mermaid drew the class)
    const highlighted = await page.$$eval('.session-chart', (els) =>
      els.map((e) => ({ active: e.getAttribute('data-active'), drawn: e.querySelectorAll('svg .active').length })),
    );
    for (const h of highlighted) {
      expect(h.active).toBe('session_ready');
      expect(h.drawn).toBeGreaterThan(0);
    }

    // the legacy probe: server/discover sent, its -32601, then initialize, then the verdict
    const steps = await page.$$eval('#server-legacy-only .probe li', (els) => els.map((e) => `${e.getAttribute('data-kind')}: ${e.textContent}`));
    const kinds = steps.map((s) => s.split(':')[0]);
    expect(kinds.indexOf('discover.sent')).toBeGreaterThan(-1);
    expect(kinds.indexOf('initialize.sent')).toBeGreaterThan(kinds.indexOf('discover.sent'));
    expect(kinds.indexOf('verdict')).toBeGreaterThan(kinds.indexOf('initialize.sent'));
    expect(steps.join('\n')).toContain('-32601');

    // the pool: each lane's instances and who holds them (nobody, between calls)
    expect(await page.$$eval('#server-legacy-only .pool-legend tr[data-instance] td', (els) => els.map((e) => e.textContent))).toEqual([
      'own lane',
      'i1',
      'idle',
      'no caller',
    ]);

    // the wrong cached record of modern-only: server.era.stale on the page and in its probe's timeline
    expect(await page.textContent('#server-modern-only .stale span')).toMatch(
      /^server\.era\.stale at .*: the cached record said legacy 2025-11-25, the server answered modern$/,
    );
    expect(await page.$$eval('#server-modern-only .probe li[data-kind="stale"]', (els) => els.length)).toBe(1);
    expect(await page.$$eval('#server-dual .stale, #server-legacy-only .stale', (els) => els.length)).toBe(0);
    expect(problems).toEqual([]);
  }, 90_000);

  // Measured from the DOM: a label's computed font size times the scale its svg is drawn at on screen.
  const LABEL_SIZES = `(() => {
    const out = {};
    for (const kind of ['session', 'pool', 'reconcile']) {
      const svg = document.querySelector('.' + kind + '-chart svg');
      const k = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
      const sizes = (sel) => {
        const xs = [];
        svg.querySelectorAll(sel).forEach((g) => {
          [...g.querySelectorAll('*')].filter((c) => c.children.length === 0 && c.textContent.trim()).forEach((c) => xs.push(parseFloat(getComputedStyle(c).fontSize) * k));
        });
        return { n: xs.length, min: Math.round(Math.min(...xs) * 100) / 100 };
      };
      out[kind] = { states: sizes('g.node'), edges: sizes('g.edgeLabel') };
    }
    out.page = { scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth };
    return out;
  })()`;

  it('at 1280 × 900 every state name and transition label is drawn at >= 11 px, and the page does not scroll sideways', async () => {
    const m = (await page.evaluate(LABEL_SIZES)) as Record<string, { states: { n: number; min: number }; edges: { n: number; min: number } }> & {
      page: { scrollWidth: number; clientWidth: number };
    };
    console.log('label sizes at 1280 × 900:', JSON.stringify(m));
    for (const kind of ['session', 'pool', 'reconcile']) {
      expect(m[kind]!.states.n, kind).toBeGreaterThan(4);
      expect(m[kind]!.edges.n, kind).toBeGreaterThan(5);
      expect(m[kind]!.states.min, kind).toBeGreaterThanOrEqual(11);
      expect(m[kind]!.edges.min, kind).toBeGreaterThanOrEqual(11);
    }
    expect(m.page.scrollWidth).toBeLessThanOrEqual(m.page.clientWidth);
    // zoom: a button, the keyboard, Ctrl+wheel; the page still never scrolls sideways
    const zoom = () => page.getAttribute('#chart-legacy-only', 'data-zoom').then(Number);
    const z0 = await zoom();
    await page.click('#server-legacy-only .session-box .toolbar button[title^="zoom in"]');
    expect(await zoom()).toBeCloseTo(z0 * 1.25, 5);
    await page.focus('#server-legacy-only .session-box .viewport');
    await page.keyboard.press('-');
    expect(await zoom()).toBeCloseTo(z0, 5);
    const vp = await page.$('#server-legacy-only .session-box .viewport');
    const box = (await vp!.boundingBox())!;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.keyboard.down('Control');
    await page.mouse.wheel(0, -300);
    await page.keyboard.up('Control');
    await page.waitForFunction((z) => Number(document.querySelector('#chart-legacy-only')?.getAttribute('data-zoom')) > z, z0, { timeout: 5_000 });
    await page.keyboard.press('0');
    expect(await zoom()).toBeCloseTo(z0, 5);
    expect(await page.evaluate('document.documentElement.scrollWidth <= document.documentElement.clientWidth')).toBe(true);
  }, 60_000);

  // The path drawn on a server's chart: its numbered transition marks in order, as [state entered, transition label
  // without white space (Mermaid wraps a long label into lines)].
  const drawnPath = (server: string) =>
    page.evaluate(`(() => {
    const svg = document.querySelector('#chart-${server} svg');
    return [...svg.querySelectorAll('.mark.edge-mark')].map((m) => ({ n: Number(m.getAttribute('data-n')), node: m.getAttribute('data-node'), label: svg.querySelector('g.label[data-id="edge' + m.getAttribute('data-edge') + '"]').textContent.replace(/\\s+/g, '') }))
      .sort((a, b) => a.n - b.n).map((x) => [x.node, x.label]);
  })()`) as Promise<Array<[string, string]>>;

  it("draws the legacy probe's path (discover → -32601 → initialize) and the silent server's (discover → timeout → initialize alongside) in order, with the verdict", async () => {
    const legacy = await drawnPath('legacy-only');
    expect(legacy.map((x) => x[0])).toEqual([
      'session_connecting_spawning',
      'session_connecting_routing',
      'session_connecting_discovering',
      'session_connecting_initializing',
      'session_ready',
    ]);
    expect(legacy[2]![1]).toBe('always');
    expect(legacy[3]![1]).toBe('verdict.discover[legacyandmayInitializeAfterDiscover]'); // its -32601
    expect(legacy[4]![1]).toBe('verdict.initialize[legacy]');
    const silent = await drawnPath('silent');
    expect(silent.map((x) => x[0])).toEqual([
      'session_connecting_spawning',
      'session_connecting_routing',
      'session_connecting_discovering',
      'session_connecting_racing',
      'session_ready',
    ]);
    expect(silent[3]![1]).toBe('afterprobeTimeout[mayRace]');
    expect(silent[4]![1]).toBe('verdict.initialize[legacy]');
    for (const server of ['legacy-only', 'silent']) {
      expect(await page.getAttribute(`#chart-${server} .mark.verdict-mark`, 'data-verdict')).toBe('legacy');
      expect(await page.textContent(`#server-${server} .path-box .path-summary`)).toContain('verdict: legacy 2025-11-25');
    }
    // the path alone, left to right, numbered the same
    expect((await page.textContent('#path-silent svg'))!.replace(/\s+/g, '')).toContain('4·afterprobeTimeout[mayRace]');
    // the timeline's steps carry the same numbers
    const numbered = await page.$$eval('#server-silent .probe.selected li[data-n]', (els) =>
      els.map((e) => `${e.getAttribute('data-n')} ${e.getAttribute('data-kind')}`),
    );
    expect(numbered).toEqual(['1 start', '2,3 process.ready', '4 timeout', '5 answer']);
  }, 60_000);

  it("links the timeline and the chart both ways on hover, opens a state's detail on click, and the stale banner links to its step", async () => {
    await page.hover('#server-silent .probe.selected li[data-kind="timeout"]');
    await page.waitForSelector('#chart-silent g.node.hl[data-state="session_connecting_racing"]', { timeout: 5_000 });
    expect(await page.$$eval('#chart-silent path.taken.hl', (els) => els.length)).toBe(1);
    await page.hover('#chart-legacy-only g.node[data-state="session_connecting_initializing"]');
    await page.waitForSelector('#server-legacy-only .probe.selected li.hl[data-kind="answer"]', { timeout: 5_000 });
    expect(await page.$$eval('#server-legacy-only .probe.selected li.hl', (els) => els.map((e) => e.getAttribute('data-kind')))).toEqual(['answer']);

    await page.click('#chart-silent g.node[data-state="session_connecting_racing"]');
    const detail = await page.textContent('#server-silent .session-box .detail');
    expect(detail).toContain('racing');
    expect(detail).toContain('→ ready : verdict.initialize [legacy]');
    expect(detail).toContain('← connecting.discovering : after probeTimeout [mayRace]');

    await page.click('#server-modern-only .stale a.stale-link');
    await page.waitForSelector('#server-modern-only .probe.selected li.hl[data-kind="stale"]', { timeout: 5_000 });
    expect(problems).toEqual([]);
  }, 60_000);

  it('follows a server starting: the new instance is highlighted in its connecting states, then ready', async () => {
    const status = (await api(socket, 'GET', '/v1/status')).body;
    const modern = status.servers.find((s: { server: string }) => s.server === 'modern-only');
    const pid: number = modern.instances[0].pid;
    const before = (await ui()).history.length;
    process.kill(pid, 'SIGKILL'); // its instance goes away; the next call starts a new one
    await until(() => isGone(pid), 20_000, 'the upstream gone');
    await page.waitForFunction(() => document.querySelector('#server-modern-only .instances td')?.textContent?.startsWith('no live instances') === true, null, {
      timeout: 30_000,
    });
    const call = await api(socket, 'POST', '/v1/call', { server: 'modern-only', tool: 'echo', args: { text: 'hi' } });
    expect(call.body.ok).toBe(true);
    // every highlight change is kept in order: the new instance's connecting states, then ready
    await page.waitForFunction(
      (from) => window.mcpxUi!.history.slice(from).some((h) => h.server === 'modern-only' && /^i\d+=ready$/.test(h.instances) && h.active === 'session_ready'),
      before,
      { timeout: 30_000 },
    );
    const seen = (await ui()).history.slice(before).filter((h) => h.server === 'modern-only');
    const connecting = seen.findIndex((h) => /=connecting\./.test(h.instances) && h.active.includes('session_connecting_'));
    const ready = seen.findIndex((h, i) => i > connecting && /^i\d+=ready$/.test(h.instances) && h.active === 'session_ready');
    expect(connecting, JSON.stringify(seen)).toBeGreaterThan(-1);
    expect(ready, JSON.stringify(seen)).toBeGreaterThan(connecting);
    // drawn so, and its probe is in the timeline, newest first
    await page.waitForFunction(
      () =>
        document.querySelector('#server-modern-only .session-chart')?.getAttribute('data-drawn') === 'session_ready' &&
        /^instance i2 .*: modern 2026-07-28/.test(document.querySelector('#server-modern-only .probe h4')?.textContent ?? ''),
      null,
      { timeout: 30_000 },
    );

    expect(problems).toEqual([]);
  }, 90_000);

  it('the old statechart page draws its chart with the bundled Mermaid too', async () => {
    const old = await context.newPage();
    await old.goto(`${origin}/v1/statecharts/legacy-only?format=html`);
    await old.waitForSelector('.mermaid svg', { timeout: 30_000 });
    await old.close();
  }, 60_000);

  it('refuses a wrong or missing login, a used code, a wrong token, and a page cookie outside the page', async () => {
    const get = async (path: string, headers: Record<string, string> = {}) => (await request(`${origin}${path}`, { headers })).statusCode;
    expect(await get('/ui/')).toBe(401);
    expect(await get('/ui/api/state')).toBe(401);
    expect(await get('/ui/login?code=not-a-code')).toBe(401);
    expect(await get(new URL(loginUrl).pathname + new URL(loginUrl).search)).toBe(401); // used once already
    expect(await get('/ui/api/state', { authorization: 'Bearer wrong-token' })).toBe(401);
    expect(await get('/ui/api/state', { cookie: `mcpx_ui_${new URL(origin).port}=forged` })).toBe(401);
    // the browser's own cookie opens the page's reads, never a write
    const cookie = (await context.cookies(origin)).map((c) => `${c.name}=${c.value}`).join('; ');
    expect(await get('/ui/api/state', { cookie })).toBe(200);
    const shutdown = await request(`${origin}/v1/shutdown`, { method: 'POST', headers: { cookie } });
    expect(shutdown.statusCode).toBe(401);
    expect(await get('/ui/api/state', { cookie, origin: 'http://127.0.0.1:1' })).toBe(401);
    // a fresh browser with no login is refused too
    const stranger = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    try {
      const p = await stranger.newPage();
      const r = await p.goto(`${origin}/ui/`);
      expect(r?.status()).toBe(401);
    } finally {
      await stranger.close();
    }
  }, 60_000);

  it("the --inspect relay page connects to its relay and receives the actors (Stately's framed viewer kept off the network here)", async () => {
    const inspector = await startStatelyInspector({ port: 0 });
    const actor = createActor(createMachine({ id: 'toy', initial: 'a', states: { a: { on: { go: 'b' } }, b: {} } }), {
      inspect: (ev) => inspector.inspect(ev, { actor: 'pool', server: 'toy' }),
    });
    const p = await context.newPage();
    try {
      // the viewer is Stately's web page: this test never lets a request leave 127.0.0.1
      const blocked: string[] = [];
      await p.route('**/*', (route) => {
        const url = route.request().url();
        if (url.startsWith('http://127.0.0.1:')) return route.continue();
        blocked.push(url);
        return route.abort();
      });
      actor.start();
      actor.send({ type: 'go' });
      await p.goto(inspector.url);
      expect(await p.getAttribute('#inspector', 'src')).toBe('https://stately.ai/inspect');
      // not connected to a viewer (it never loaded), so the page holds what the relay sent it
      // (the page's top-level bindings, read by name)
      await p.waitForFunction("ws.readyState === 1 && buffer.some((e) => e.sessionId === 'pool:toy' && e.type === '@xstate.snapshot')", null, {
        timeout: 20_000,
      });
      expect(blocked.every((u) => u.startsWith('https://stately.ai/'))).toBe(true);
    } finally {
      await p.close();
      actor.stop();
      await inspector.stop();
    }
  }, 60_000);
});
