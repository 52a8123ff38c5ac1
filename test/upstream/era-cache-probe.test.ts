/**
 * The era cache in use (docs/behaviour.md §5), against real fixture processes and a real state folder:
 * what a first start and a cached start cost, stale records, force-* leaving the cache alone,
 * and damaged cache files never stopping a session.
 */
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionPreference } from '../../src/machines/preference.js';
import { EraCache } from '../../src/upstream/era-cache.js';
import { readWireLog, received } from '../fixtures/wire-log-read.js';
import { realSession, tempDir, type FixtureSpec } from '../support/real.js';

/** A record date within upstream.eraCacheMaxAge (older records are probed again). */
const RECENT = new Date(Date.now() - 60_000).toISOString();

let dir: { path: string; remove: () => Promise<void> };
beforeAll(async () => {
  dir = await tempDir();
});
afterAll(async () => {
  await dir.remove();
});

let n = 0;
async function freshState(): Promise<string> {
  return join(dir.path, `state-${++n}`);
}

/** Start a session, make one call so every request is on the wire, stop it; report what it cost. */
async function run(state: string, log: string, spec: FixtureSpec, pref: SessionPreference, extra: Record<string, unknown> = {}) {
  const cache = await EraCache.open(state);
  const before = readWireLog(log);
  const { session } = realSession(log, spec, pref, { cache, ...extra });
  const stale: unknown[] = [];
  session.on('era.stale', (e) => stale.push(e));
  try {
    const t0 = performance.now();
    const info = await session.start();
    const readyMs = performance.now() - t0;
    await session.listTools();
    await cache.whenIdle();
    const events = readWireLog(log).slice(before.length);
    const requests = received(events).filter((r) => r.kind === 'request');
    return {
      info,
      readyMs,
      stale,
      record: cache.get(session.cacheKey),
      processes: events.filter((e) => e.event === 'start').length,
      probeRequests: requests.filter((r) => r.method === 'server/discover' || r.method === 'initialize').map((r) => r.method),
    };
  } finally {
    await session.stop();
  }
}

const costs: string[] = [];

describe('first start vs cached start', () => {
  it.each([
    ['legacy-v1 (SDK v1)', { fixture: 'legacy-v1' }, 'legacy', ['server/discover', 'initialize'], ['initialize']],
    ['dual-v2 (SDK v2)', { fixture: 'dual-v2' }, 'modern', ['server/discover'], ['server/discover']],
    ['modern-v2 (SDK v2)', { fixture: 'modern-v2' }, 'modern', ['server/discover'], ['server/discover']],
    ['raw exit-pre-init', { fixture: 'raw', mode: 'exit-pre-init' }, 'legacy', ['server/discover', 'initialize'], ['initialize']],
    ['raw silent', { fixture: 'raw', mode: 'silent' }, 'legacy', ['server/discover', 'initialize'], ['initialize']],
    ['raw invalid-params', { fixture: 'raw', mode: 'invalid-params' }, 'legacy', ['server/discover', 'initialize'], ['initialize']],
    ['raw catch-all', { fixture: 'raw', mode: 'catch-all' }, 'legacy', ['server/discover', 'initialize'], ['initialize']],
  ] as const)('%s: the cached start follows the cached era', async (name, spec, era, firstProbe, cachedProbe) => {
    const state = await freshState();
    const log = join(dir.path, `${name.replace(/\W+/g, '-')}.log`);
    // Only the silent server waits the probe out; the others answer it, so their limit is roomy (a loaded
    // machine may take longer than a short one just to start node, which would make them look silent).
    const probe = { probeTimeoutMs: 'mode' in spec && spec.mode === 'silent' ? 300 : 10_000 };
    const first = await run(state, log, spec as FixtureSpec, 'prefer-discover', probe);
    expect(first.info).toMatchObject({ era, eraSource: 'probe' });
    expect(first.probeRequests).toEqual(firstProbe);
    expect(first.record).toMatchObject({ era, source: 'probe' });

    const second = await run(state, log, spec as FixtureSpec, 'prefer-discover', probe);
    expect(second.info).toMatchObject({ era, eraSource: 'cache' });
    expect(second.probeRequests).toEqual(cachedProbe);
    expect(second.processes).toBe(1);
    expect(second.stale).toEqual([]);
    if (era === 'legacy') expect(second.probeRequests).not.toContain('server/discover');
    costs.push(
      `| ${name} | ${era} | ${first.probeRequests.length} (${first.probeRequests.join(', ')}) | ${first.processes} | ${Math.round(first.readyMs)} | ${second.probeRequests.length} (${second.probeRequests.join(', ')}) | ${second.processes} | ${Math.round(second.readyMs)} |`,
    );
  });

  it('modern-only under prefer-initialize: the first start pays a refused initialize, the cached one goes straight to discover', async () => {
    const state = await freshState();
    const log = join(dir.path, 'modern-pi.log');
    const first = await run(state, log, { fixture: 'modern-v2' }, 'prefer-initialize');
    expect(first.probeRequests).toEqual(['initialize', 'server/discover']);
    expect(first.record).toMatchObject({ era: 'modern', initialize: 'refused' });
    const second = await run(state, log, { fixture: 'modern-v2' }, 'prefer-initialize');
    expect(second.probeRequests).toEqual(['server/discover']);
    expect(second.info.eraSource).toBe('cache');
  });

  it('a dual server cached modern still gets its legacy session under prefer-initialize (§2: the cache does not change the outcome)', async () => {
    const state = await freshState();
    const log = join(dir.path, 'dual-pd-then-pi.log');
    const first = await run(state, log, { fixture: 'dual-v2' }, 'prefer-discover');
    expect(first.record).toMatchObject({ era: 'modern' });
    expect(first.record?.initialize).toBeUndefined();
    const later = await run(state, log, { fixture: 'dual-v2' }, 'prefer-initialize');
    expect(later.info.era).toBe('legacy');
    expect(later.probeRequests).toEqual(['initialize']);
    expect(later.stale).toEqual([]);
    // …and the record still says what the server supports.
    expect(later.record).toMatchObject({ era: 'modern' });
  });

  it('a dual server reached initialize-first is not cached as legacy (the cache must describe the server)', async () => {
    const state = await freshState();
    const log = join(dir.path, 'dual-pi.log');
    const first = await run(state, log, { fixture: 'dual-v2' }, 'prefer-initialize');
    expect(first.info.era).toBe('legacy');
    expect(first.record).toBeUndefined();
    const later = await run(state, log, { fixture: 'dual-v2' }, 'prefer-discover');
    expect(later.info.era).toBe('modern');
  });
});

describe('a wrong cached era', () => {
  it('cached legacy for a modern-only server: initialize refused, then discover; rewritten, and reported stale', async () => {
    const state = await freshState();
    const log = join(dir.path, 'stale-modern.log');
    const { session } = realSession(log, { fixture: 'modern-v2' }, 'prefer-discover');
    const cache = await EraCache.open(state);
    await cache.set(session.cacheKey, { era: 'legacy', version: '2025-11-25', at: RECENT, source: 'probe' });
    const r = await run(state, log, { fixture: 'modern-v2' }, 'prefer-discover');
    expect(r.info).toMatchObject({ era: 'modern', eraSource: 'probe' });
    expect(r.probeRequests).toEqual(['initialize', 'server/discover']);
    expect(r.stale).toEqual([expect.objectContaining({ found: 'modern', cached: expect.objectContaining({ era: 'legacy' }) })]);
    expect(r.record).toMatchObject({ era: 'modern', version: '2026-07-28' });
  });

  it('cached modern for a legacy server: discover refused, initialize; rewritten, and reported stale', async () => {
    const state = await freshState();
    const log = join(dir.path, 'stale-legacy.log');
    const { session } = realSession(log, { fixture: 'legacy-v1' }, 'prefer-discover');
    const cache = await EraCache.open(state);
    await cache.set(session.cacheKey, { era: 'modern', version: '2026-07-28', at: RECENT, source: 'probe' });
    const r = await run(state, log, { fixture: 'legacy-v1' }, 'prefer-discover');
    expect(r.info).toMatchObject({ era: 'legacy', eraSource: 'probe' });
    expect(r.stale).toHaveLength(1);
    expect(r.record).toMatchObject({ era: 'legacy' });
  });
});

describe('upstream.eraCacheMaxAge', () => {
  it('a cached legacy record older than the max age gets the normal probe again and is rewritten: a server upgraded to dual is noticed', async () => {
    const state = await freshState();
    const log = join(dir.path, 'aged.log');
    const { session } = realSession(log, { fixture: 'dual-v2' }, 'prefer-discover');
    const cache = await EraCache.open(state);
    const old = new Date(Date.now() - 8 * 24 * 60 * 60 * 1000).toISOString();
    await cache.set(session.cacheKey, { era: 'legacy', version: '2025-11-25', at: old, source: 'probe' });
    expect(cache.usable(session.cacheKey)).toBeUndefined(); // 8 days > the default 7
    const r = await run(state, log, { fixture: 'dual-v2' }, 'prefer-discover');
    expect(r.probeRequests).toEqual(['server/discover']); // not initialize first, as a usable legacy record would make it
    expect(r.info).toMatchObject({ era: 'modern', eraSource: 'probe' });
    expect(r.record).toMatchObject({ era: 'modern' });
    expect(Date.parse(r.record!.at)).toBeGreaterThan(Date.parse(old));
  });

  it('a record within the max age is used (initialize first, no discover)', async () => {
    const state = await freshState();
    const log = join(dir.path, 'young.log');
    const { session } = realSession(log, { fixture: 'legacy-v1' }, 'prefer-discover');
    const cache = await EraCache.open(state);
    await cache.set(session.cacheKey, {
      era: 'legacy',
      version: '2025-11-25',
      at: new Date(Date.now() - 6 * 24 * 60 * 60 * 1000).toISOString(),
      source: 'probe',
    });
    const r = await run(state, log, { fixture: 'legacy-v1' }, 'prefer-discover');
    expect(r.probeRequests).toEqual(['initialize']);
    expect(r.info).toMatchObject({ era: 'legacy', eraSource: 'cache' });
  });
});

describe('force-* never read or write the cache', () => {
  it.each([
    ['force-discover', 'dual-v2', 'modern'],
    ['force-initialize', 'legacy-v1', 'legacy'],
  ] as const)('%s on %s', async (pref, fixture, era) => {
    const state = await freshState();
    const log = join(dir.path, `${pref}.log`);
    const { session } = realSession(log, { fixture }, pref);
    // A deliberately wrong record: a forced session must neither follow nor fix it.
    const wrong = { era: era === 'modern' ? 'legacy' : 'modern', version: 'x', at: RECENT, source: 'probe' } as const;
    const cache = await EraCache.open(state);
    await cache.set(session.cacheKey, wrong);
    const file = join(state, 'upstream-eras.json');
    const before = await readFile(file, 'utf8');
    const mtime = (await stat(file)).mtimeMs;
    const r = await run(state, log, { fixture }, pref);
    expect(r.info).toMatchObject({ era, eraSource: 'forced' });
    expect(r.stale).toEqual([]);
    expect(await readFile(file, 'utf8')).toBe(before);
    expect((await stat(file)).mtimeMs).toBe(mtime);
  });
});

describe('a damaged cache never stops a session from starting', () => {
  it.each([
    ['empty', ''],
    ['truncated', '{"version":1,"servers":{"ab'],
    ['not JSON', 'hello\u0000world'],
    ['null', 'null'],
    ['an array', '[1,2]'],
    ['another version', '{"version":99,"servers":{}}'],
    ['a bad record', '{"version":1,"servers":{"k":{"era":"medieval"}}}'],
    ['servers not an object', '{"version":1,"servers":7}'],
  ])('%s file: probes normally and rewrites the file', async (_, content) => {
    const state = await freshState();
    const { mkdir } = await import('node:fs/promises');
    await mkdir(state, { recursive: true, mode: 0o700 });
    const file = join(state, 'upstream-eras.json');
    await writeFile(file, content);
    const r = await run(state, join(dir.path, `damaged-${n}.log`), { fixture: 'legacy-v1' }, 'prefer-discover');
    expect(r.info.era).toBe('legacy');
    const rewritten = JSON.parse(await readFile(file, 'utf8'));
    expect(rewritten.version).toBe(1);
    expect(Object.values(rewritten.servers)).toContainEqual(expect.objectContaining({ era: 'legacy' }));
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });

  it('a cache folder that cannot be written costs a probe, not the session', async () => {
    const state = await freshState();
    const { rm } = await import('node:fs/promises');
    const cache = await EraCache.open(state);
    // Replace the state folder with a plain file: every write now fails (ENOTDIR), even as root.
    await rm(state, { recursive: true, force: true });
    await writeFile(state, 'not a folder');
    const { session } = realSession(join(dir.path, 'ro.log'), { fixture: 'legacy-v1' }, 'prefer-discover', { cache });
    try {
      expect((await session.start()).era).toBe('legacy');
      await cache.whenIdle();
      expect(session.isReady).toBe(true);
    } finally {
      await session.stop();
    }
  });
});

afterAll(() => {
  if (costs.length) {
    console.log(
      [
        '',
        '| fixture | era | first start: probe requests | processes | ready ms | cached start: probe requests | processes | ready ms |',
        '|---|---|---|---|---|---|---|---|',
        ...costs,
      ].join('\n'),
    );
  }
});
