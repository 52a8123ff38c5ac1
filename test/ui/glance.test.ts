/**
 * The top of the `mcpx ui` page is for a person: in Debian's chromium at 1280 × 900, against the built
 * daemon with 10 servers (copies of the demo's stdio servers, one whose process exits at once, one OAuth
 * server nobody logged in to), the summary of every server (state, era, tool count, last error, auth with
 * the command that logs in) is within the first viewport; a call made with `mcpx call` shows up live in
 * the recent calls with its duration and outcome and its secret argument redacted; a server's timeline and
 * charts are one click away; the path diagram's last state is inside its box; the lanes table says each
 * lane's state; a used login address and a page opened without a login are pages that say to run
 * `mcpx ui` again.
 *
 * UPDATE_SCREENSHOT=1 writes the README's screenshot, docs/ui.png.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-info.js';
import { api, cleanEnv, ForegroundDaemon, killAll, mcpx, until } from '../cli/helpers.js';
import { startOAuthFixtures, type OAuthFixtures } from '../fixtures/oauth/index.js';
import { CHROMIUM, CHROMIUM_ARGS } from '../support/chromium.js';
import { tempDir } from '../support/real.js';

// Configured as a server's env value, so the daemon knows it for a secret; then given as a call's argument.
const SECRET = 'glance-sentinel-7f3a9c1e5b2d';

interface Row {
  server: string;
  state: string;
  era: string;
  tools: string;
  error: string;
  auth: string;
  box: { top: number; bottom: number };
}

declare const window: { mcpxUi?: { loaded: boolean }; scrollTo(x: number, y: number): void };
declare const document: { querySelectorAll(selector: string): { length: number } };

describe.skipIf(!existsSync(CHROMIUM))('mcpx ui at a glance, 10 servers in chromium', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let oauth: OAuthFixtures;
  let daemon: ForegroundDaemon;
  let env: NodeJS.ProcessEnv;
  let profile: string;
  let context: BrowserContext;
  let page: Page;
  let loginUrl: string;
  let origin: string;
  const problems: string[] = [];
  const servers = join(packageRoot(), 'dist', 'demo', 'servers');
  // each copy its own process (the same command, args and env would share one); an env value is a secret
  // to the daemon, so this one is nothing that shows on the page
  const stdio = (file: string, copy: string, env: Record<string, string> = {}) => ({
    command: process.execPath,
    args: [join(servers, file)],
    env: { COPY: `copy-${copy}-of-the-fixture`, ...env },
  });
  const names = ['modern-1', 'modern-2', 'modern-3', 'legacy-1', 'legacy-2', 'legacy-3', 'dual-1', 'dual-2', 'broken', 'oauth'];

  beforeAll(async () => {
    dir = await tempDir('mcpx-glance-');
    oauth = await startOAuthFixtures();
    const state = join(dir.path, 'state');
    const socket = join(state, 'daemon.sock');
    const config = join(dir.path, 'mcpx.json');
    writeFileSync(
      config,
      JSON.stringify({
        mcpServers: {
          'modern-1': stdio('modern-only.mjs', '1', { API_TOKEN: SECRET }),
          'modern-2': stdio('modern-only.mjs', 'modern-2'),
          'modern-3': stdio('modern-only.mjs', 'modern-3'),
          'legacy-1': stdio('legacy-only.mjs', 'legacy-1'),
          'legacy-2': stdio('legacy-only.mjs', 'legacy-2'),
          'legacy-3': stdio('legacy-only.mjs', 'legacy-3'),
          'dual-1': stdio('dual.mjs', 'dual-1'),
          'dual-2': stdio('dual.mjs', 'dual-2'),
          // exits at once: its start fails, and that is its last error
          broken: { command: process.execPath, args: ['-e', 'process.stderr.write("no database here\\n"); process.exit(3)'] },
          oauth: { url: oauth.mcp.url, oauth: {} },
        },
      }),
    );
    env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: config });
    daemon = await ForegroundDaemon.start(socket, [], { env, timeoutMs: 60_000 });
    // a config file's servers start on first use: list them all (broken and oauth answer with errors)
    await api(socket, 'GET', '/v1/tools');
    let seen = '';
    await until(
      async () => {
        const p = await api(socket, 'GET', '/v1/protocol');
        seen = p.text;
        return p.body.servers?.filter((s: { era: string | null }) => s.era !== null).length >= 8;
      },
      60_000,
      'the stdio servers probed',
    ).catch((err: Error) => {
      throw new Error(`${err.message}: ${seen}`);
    });
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
    page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));
    // counts Mermaid's layouts from outside the page's own script: the bundle ends by setting globalThis.mermaid
    await page.addInitScript(() => {
      const w = globalThis as unknown as { mermaidLayouts: number; mermaid?: { render: (...a: unknown[]) => unknown } };
      w.mermaidLayouts = 0;
      let m: typeof w.mermaid;
      Object.defineProperty(globalThis, 'mermaid', {
        configurable: true,
        get: () => m,
        set: (v: NonNullable<typeof w.mermaid>) => {
          const render = v.render.bind(v);
          v.render = (...a: unknown[]) => {
            w.mermaidLayouts++;
            return render(...a);
          };
          m = v;
        },
      });
    });
    const res = await page.goto(loginUrl);
    expect(res?.status()).toBe(200);
    await page.waitForFunction(() => window.mcpxUi?.loaded === true, null, { timeout: 60_000 });
  }, 180_000);

  afterAll(async () => {
    await context?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    await daemon?.stop();
    await oauth?.stop();
    await killAll();
    await dir?.remove();
  });

  const rows = (): Promise<Row[]> =>
    page.$$eval('#summary-table tbody tr[data-server]', (els) =>
      els.map((e) => {
        const cell = (c: string) => (e.querySelector(`td.${c}`)?.textContent ?? '').trim();
        const r = e.getBoundingClientRect();
        return {
          server: e.getAttribute('data-server') ?? '',
          state: cell('state'),
          era: cell('era'),
          tools: cell('tools'),
          error: cell('err'),
          auth: cell('auth'),
          box: { top: r.top, bottom: r.bottom },
        };
      }),
    );

  it('shows every server with its state, era, tools, last error and auth within the first 1280 × 900 viewport', async () => {
    // the broken server's failed start and the oauth server's refusal have reached the page
    await until(
      async () => {
        const r = await rows();
        const by = new Map(r.map((x) => [x.server, x]));
        return r.length === 10 && by.get('broken')?.error !== '—' && /mcpx login oauth/.test(by.get('oauth')?.auth ?? '');
      },
      60_000,
      'the summary complete',
    );
    const got = await rows();
    expect(got.map((r) => r.server)).toEqual(names);
    const table = (await page.locator('#summary-table').boundingBox())!;
    expect(table.y).toBeGreaterThanOrEqual(0);
    expect(table.y + table.height).toBeLessThanOrEqual(900);
    for (const r of got) {
      expect(r.box.top, r.server).toBeGreaterThanOrEqual(0);
      expect(r.box.bottom, r.server).toBeLessThanOrEqual(900);
      expect(r.state, r.server).not.toBe('');
    }
    const by = new Map(got.map((r) => [r.server, r]));
    for (const name of ['modern-1', 'modern-2', 'modern-3', 'dual-1', 'dual-2']) {
      expect(by.get(name)).toMatchObject({ state: 'ready', era: 'modern', error: '—', auth: '—' });
      expect(Number(by.get(name)!.tools), name).toBeGreaterThan(0);
    }
    for (const name of ['legacy-1', 'legacy-2', 'legacy-3']) {
      expect(by.get(name)).toMatchObject({ state: 'ready', era: 'legacy', error: '—', auth: '—' });
      expect(Number(by.get(name)!.tools), name).toBeGreaterThan(0);
    }
    expect(by.get('broken')).toMatchObject({ state: 'failed', era: '—', tools: '—' });
    expect(by.get('broken')!.error).toMatch(/start failed|exit|closed/i);
    expect(by.get('oauth')!.state).toBe('needs login');
    expect(by.get('oauth')!.auth).toBe('not logged in: run mcpx login oauth');
    // the recent calls and errors start in the first viewport too
    for (const sel of ['#recent-calls', '#recent-errors']) {
      const b = (await page.locator(sel).boundingBox())!;
      expect(b.y, sel).toBeLessThan(900);
    }
    expect(await page.locator('#recent-errors li', { hasText: 'broken' }).count()).toBeGreaterThan(0);
    expect(problems).toEqual([]);
  }, 120_000);

  it('lays out each distinct chart once: the 10 servers share their Mermaid layouts, each copy under its own id', async () => {
    // every chart drawn with what it is to show (nothing pending), so the counts below are settled
    await page.waitForFunction(
      () => {
        const cs = Array.from(document.querySelectorAll('.chart'));
        return cs.length >= 30 && cs.every((c) => c.querySelector('svg') && c.getAttribute('data-drawn') === c.getAttribute('data-active'));
      },
      null,
      { timeout: 60_000 },
    );
    const got = await page.evaluate(() => {
      const w = globalThis as unknown as { mermaidLayouts: number; mcpxUi: { renders: number } };
      const charts = Array.from(document.querySelectorAll('.chart'));
      const svgs = charts.map((c) => c.querySelector('svg')!);
      // what a chart shows: its kind and highlights (the path charts differ by their states too)
      const shown = new Set(
        charts.map((c) => `${c.className}|${c.getAttribute('data-drawn')}|${c.classList.contains('path-chart') ? c.querySelector('svg')!.textContent : ''}`),
      );
      return {
        charts: charts.length,
        draws: w.mcpxUi.renders,
        layouts: w.mermaidLayouts,
        distinct: shown.size,
        ids: svgs.map((s) => s.id),
        unscoped: svgs.filter((s) => !(s.querySelector('style')?.textContent ?? '').includes(`#${s.id}`)).map((s) => s.id),
        foreignNodes: svgs.flatMap((s) =>
          Array.from(s.querySelectorAll('g.node'))
            .filter((g) => !g.id.startsWith(`${s.id}-`))
            .map((g) => g.id),
        ),
      };
    });
    // one layout per distinct chart (and at most one per redraw since), not one per chart: 31 of them
    // took the page away for half a minute on a busy machine
    expect(got.distinct).toBeLessThan(got.charts);
    expect(got.layouts, JSON.stringify(got)).toBeLessThanOrEqual(got.distinct + (got.draws - got.charts));
    // and each copy is its own: its own id, its styles and states scoped to it
    expect(new Set(got.ids).size).toBe(got.charts);
    expect(got.unscoped).toEqual([]);
    expect(got.foreignNodes).toEqual([]);
    expect(problems).toEqual([]);
  }, 90_000);

  it('shows a call made with mcpx call live in the recent calls, its duration and outcome, its secret redacted', async () => {
    const r = await mcpx(['call', 'modern-1', 'echo', JSON.stringify({ text: SECRET })], { env, timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(0);
    const row = page.locator('#recent-calls tr.call', { hasText: 'modern-1/echo' });
    await row.first().waitFor({ timeout: 30_000 });
    const cells = await row.first().locator('td').allTextContents();
    expect(cells[1]).toBe('mcpx call / API');
    expect(cells[2]).toBe('modern-1/echo');
    expect(cells[3]).toBe('{"text":"<redacted>"}');
    expect(cells[4]).toMatch(/^\d+ ms$|^\d+(\.\d+)? s$/);
    expect(cells[5]).toBe('ok');
    expect(await page.content()).not.toContain(SECRET);
    const state = await page.evaluate(() => fetch('/ui/api/state').then((x) => x.text()));
    expect(state).not.toContain(SECRET);
  }, 60_000);

  it("opens a server's timeline and charts with one click; its path's last state is inside its box; its lanes say their state", async () => {
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.locator('#summary-table tr[data-server="legacy-1"] button.server-link').click();
    const sec = page.locator('#server-legacy-1');
    await page.waitForFunction(() => document.querySelectorAll('#server-legacy-1 .path-chart svg g.node').length > 0, null, { timeout: 60_000 });
    const timeline = (await sec.locator('.timeline').boundingBox())!;
    expect(timeline.y).toBeGreaterThanOrEqual(0);
    expect(timeline.y).toBeLessThan(900);
    expect(await sec.locator('.probe li[data-kind="verdict"]').count()).toBeGreaterThan(0);
    // the path: the last state it entered (highlighted), and the whole drawing, inside the box that shows them
    const vp = (await sec.locator('.path-box .viewport').boundingBox())!;
    const inside = async (sel: string) => {
      const b = (await sec.locator(sel).last().boundingBox())!;
      expect(b, sel).not.toBeNull();
      expect(b.x, sel).toBeGreaterThanOrEqual(vp.x - 1);
      expect(b.x + b.width, sel).toBeLessThanOrEqual(vp.x + vp.width + 1);
      expect(b.y, sel).toBeGreaterThanOrEqual(vp.y - 1);
      expect(b.y + b.height, sel).toBeLessThanOrEqual(vp.y + vp.height + 1);
    };
    await inside('.path-chart svg g.node.active');
    await inside('.path-chart svg'); // all of it: the verdict's note sits right of the last state
    // every lane row of every server says what the lane is doing
    const laneStates = await page.$$eval('table.lanes tr', (trs) => trs.slice(0).map((tr) => tr.querySelectorAll('td')[3]?.textContent ?? null));
    const filled = laneStates.filter((x) => x !== null);
    expect(filled.length).toBeGreaterThanOrEqual(10);
    expect(filled.filter((x) => x === '')).toEqual([]);
    expect(await sec.locator('table.lanes td').nth(3).textContent()).toBe('ready');

    if (process.env['UPDATE_SCREENSHOT'] === '1') {
      await page.evaluate(() => window.scrollTo(0, 0));
      await page.screenshot({ path: join(packageRoot(), 'docs', 'ui.png'), clip: { x: 0, y: 0, width: 1280, height: 900 } });
    }
  }, 90_000);

  it('answers a used login address and a page opened without a login with a page saying to run mcpx ui again', async () => {
    const stranger = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    try {
      const p = await stranger.newPage();
      for (const url of [loginUrl, `${origin}/ui/`, `${origin}/ui`]) {
        const res = await p.goto(url);
        expect(res?.status(), url).toBe(401);
        expect(res?.headers()['content-type'], url).toMatch(/^text\/html/);
        const text = await p.locator('body').innerText();
        expect(text, url).toMatch(/Run mcpx ui again/);
        expect(text, url).not.toMatch(/MCPX_UNAUTHORIZED|"ok"/);
      }
    } finally {
      await stranger.close();
    }
  }, 60_000);
});
