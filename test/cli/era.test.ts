/**
 * End to end through the built binary: the era table of docs/behaviour.md §2 (5 values × the legacy-only,
 * dual and modern-only fixtures) through `mcpx call` and `mcpx protocol --json`; SIGTERM stopping
 * every upstream process and flushing the era cache; a restart that takes the era from the cache.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config-file.js';
import { CANONICAL_PREFERENCES, type Preference } from '../../src/machines/preference.js';
import { eraCacheKey } from '../../src/upstream/process-key.js';
import type { FixtureName } from '../fixtures/index.js';
import { fixturePids, isGone, writeConfig, type FixtureServer } from '../server/helpers.js';
import { tempDir } from '../support/real.js';
import { cleanEnv, ForegroundDaemon, killAll, mcpx, mcpxJson, readJson } from './helpers.js';

type Kind = 'legacy' | 'dual' | 'modern';
const FIXTURE: Record<Kind, FixtureName> = { legacy: 'legacy-v1', dual: 'dual-v2', modern: 'modern-v2' };
const FAIL = null;

/** docs/behaviour.md §2: the era each value reaches with each kind of server (null: fails to connect). */
const TABLE: Record<Preference, Record<Kind, 'legacy' | 'modern' | null>> = {
  'prefer-discover': { legacy: 'legacy', dual: 'modern', modern: 'modern' },
  'prefer-initialize': { legacy: 'legacy', dual: 'legacy', modern: 'modern' },
  'force-discover': { legacy: FAIL, dual: 'modern', modern: 'modern' },
  'force-initialize': { legacy: 'legacy', dual: 'legacy', modern: FAIL },
  follow: { legacy: 'legacy', dual: 'modern', modern: 'modern' },
};
/** Under follow, a caller on 2025-11-25 (the second lane). */
const FOLLOW_LEGACY_CALLER: Record<Kind, 'legacy' | 'modern'> = { legacy: 'legacy', dual: 'legacy', modern: 'modern' };

const name = (kind: Kind, p: Preference) => `${kind}-${p}`;

async function limit<T>(n: number, jobs: Array<() => Promise<T>>): Promise<T[]> {
  const out: T[] = new Array(jobs.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < jobs.length) {
        const i = next++;
        out[i] = await jobs[i]!();
      }
    }),
  );
  return out;
}

describe('the §2 era table through mcpx call and mcpx protocol', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let env: NodeJS.ProcessEnv;
  let config: string;
  let state: string;
  let socket: string;
  let daemon: ForegroundDaemon;

  beforeAll(async () => {
    dir = await tempDir('mcpx-e2e-era-');
    state = join(dir.path, 'state');
    socket = join(state, 'daemon.sock');
    const servers: Record<string, FixtureServer> = {};
    for (const p of CANONICAL_PREFERENCES) for (const kind of Object.keys(FIXTURE) as Kind[]) servers[name(kind, p)] = { fixture: FIXTURE[kind], protocol: p };
    config = writeConfig(dir.path, servers);
    env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: config });
    daemon = await ForegroundDaemon.start(socket, [], { env });
  });
  afterAll(async () => {
    await killAll();
    await dir?.remove();
  });

  it('every value × every era, and follow serving a 2025-11-25 caller over the legacy lane', async () => {
    const jobs: Array<() => Promise<void>> = [];
    for (const p of CANONICAL_PREFERENCES) {
      for (const kind of Object.keys(FIXTURE) as Kind[]) {
        jobs.push(async () => {
          const want = TABLE[p][kind];
          const r = await mcpx(['call', name(kind, p), 'echo', JSON.stringify({ text: 'hi' })], { env });
          if (want === FAIL) {
            expect(r.code, `${name(kind, p)}: ${r.stdout}`).toBe(1);
            expect(r.stderr).toMatch(/^mcpx: \S.*\n$/);
            expect(r.stdout).toBe('');
          } else {
            expect(r.stderr, name(kind, p)).toBe('');
            expect(r.code).toBe(0);
            expect(r.stdout).toBe(`hi era=${want}\n`);
          }
        });
      }
    }
    await limit(4, jobs);
    // follow: the caller's revision picks the lane (mcpx serve will send this header; the CLI takes a flag)
    await limit(
      3,
      (Object.keys(FIXTURE) as Kind[]).map((kind) => async () => {
        const r = await mcpx(['call', name(kind, 'follow'), 'echo', '{"text":"old"}', '--caller-protocol', '2025-11-25'], { env });
        expect(r.stderr).toBe('');
        expect(r.stdout).toBe(`old era=${FOLLOW_LEGACY_CALLER[kind]}\n`);
      }),
    );

    const report = await mcpxJson<{ servers: any[] }>(['protocol'], { env });
    const rows = Object.fromEntries(report.servers.map((s) => [s.server, s]));
    expect(Object.keys(rows)).toHaveLength(15);
    for (const p of CANONICAL_PREFERENCES) {
      for (const kind of Object.keys(FIXTURE) as Kind[]) {
        const row = rows[name(kind, p)];
        const want = TABLE[p][kind];
        expect(row.preference).toBe(p);
        expect(row.era, name(kind, p)).toBe(want);
        if (want !== FAIL) {
          expect(row.negotiated).toBe(want === 'modern' ? '2026-07-28' : '2025-11-25');
          expect(row.eraSource, name(kind, p)).toBe(p.startsWith('force-') ? 'forced' : 'probe');
        }
        expect(row.legacyLane === null).toBe(p !== 'follow');
      }
    }
    expect(rows['dual-follow'].legacyLane).toMatchObject({ state: 'available' });
    expect(rows['modern-follow'].legacyLane).toMatchObject({ state: 'refused' });
    expect(rows['dual-prefer-discover'].cached).toMatchObject({ era: 'modern', version: '2026-07-28' });
    expect(rows['legacy-prefer-discover'].cached).toMatchObject({ era: 'legacy', version: '2025-11-25' });
    expect(rows['dual-force-discover'].cached).toBeNull(); // force-* never touch the cache
  });

  it('SIGTERM stops every upstream process, flushes the era cache, removes the socket; a restart takes eras from the cache', async () => {
    const started = Object.fromEntries(
      (await mcpxJson<{ servers: any[] }>(['status'], { env })).servers.map((s) => [s.server, s.instances.map((i: any) => i.pid)]),
    );
    const fixturePidList = CANONICAL_PREFERENCES.flatMap((p) => (Object.keys(FIXTURE) as Kind[]).flatMap((k) => fixturePids(dir.path, name(k, p))));
    expect(fixturePidList.length).toBeGreaterThanOrEqual(13);
    expect(started['dual-follow']).toHaveLength(2);

    const exit = await daemon.stop('SIGTERM');
    expect(exit).toEqual({ code: 0, signal: null });
    for (const pid of fixturePidList) expect(isGone(pid), `fixture pid ${pid}`).toBe(true);
    expect(existsSync(socket)).toBe(false);
    expect(existsSync(join(state, 'daemon.json'))).toBe(false);
    expect(existsSync(join(state, 'daemon.lock'))).toBe(false);

    const loaded = await loadConfig({ configFlag: config, env });
    const keyOf = (server: string) => eraCacheKey(loaded.servers.find((s) => s.name === server)!.definition as never);
    const file = readJson(join(state, 'upstream-eras.json'));
    expect(file.version).toBe(1);
    expect(file.servers[keyOf('legacy-prefer-discover')]).toMatchObject({ era: 'legacy', version: '2025-11-25', source: 'probe' });
    expect(file.servers[keyOf('dual-prefer-discover')]).toMatchObject({ era: 'modern', version: '2026-07-28' });
    expect(file.servers[keyOf('modern-follow')]).toMatchObject({ era: 'modern' });
    expect(file.servers[keyOf('dual-force-initialize')]).toBeUndefined();

    daemon = await ForegroundDaemon.start(socket, [], { env });
    for (const server of ['legacy-prefer-discover', 'dual-prefer-discover']) {
      const r = await mcpx(['call', server, 'echo', '{"text":"again"}'], { env });
      expect(r.stdout).toBe(`again era=${server.startsWith('legacy') ? 'legacy' : 'modern'}\n`);
    }
    const rows = Object.fromEntries((await mcpxJson<{ servers: any[] }>(['protocol'], { env })).servers.map((s) => [s.server, s]));
    expect(rows['legacy-prefer-discover']).toMatchObject({ era: 'legacy', eraSource: 'cache' });
    expect(rows['dual-prefer-discover']).toMatchObject({ era: 'modern', eraSource: 'cache' });

    const stop = await mcpx(['stop'], { env });
    expect(stop.code).toBe(0);
    expect(stop.stdout).toMatch(/^stopped the mcpx daemon \(pid \d+\)\n$/);
    expect(await daemon.exited).toEqual({ code: 0, signal: null });
  });
});
