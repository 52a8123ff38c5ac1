/**
 * docs/behaviour.md §2, every cell, against real fixture processes: the official SDK v1 (legacy-only),
 * SDK v2 serveStdio (dual), SDK v2 serveStdio with legacy rejected (modern-only). Each cell checks the
 * era the session settles on, what went over the wire (from the fixture's own log), how many
 * processes it took, and that a tools/call is served by the era the fixture reports.
 *
 * `follow` is two lanes (§6): the server's own session (prefer-discover) and a legacy-only session
 * (force-initialize). The pool routes callers between them (issue 4); here each lane's session is
 * started as the pool starts it, and the cell's outcome is checked lane by lane.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { laneSessionPreference, type Preference } from '../../src/machines/preference.js';
import type { FixtureName } from '../fixtures/index.js';
import { realSession, tempDir, textOf } from '../support/real.js';

type Cell = { era: 'legacy' | 'modern'; wire: string[]; processes?: number } | { error: string; wire: string[] };

const afterInit = ['notifications/initialized'];
// What each fixture receives, per §2 cell. `tools/call` is the test's own call after connecting.
const TABLE: Record<Exclude<Preference, 'follow'>, Record<FixtureName & ('legacy-v1' | 'dual-v2' | 'modern-v2'), Cell>> = {
  'prefer-discover': {
    'legacy-v1': { era: 'legacy', wire: ['server/discover', 'initialize', ...afterInit, 'tools/call'] },
    'dual-v2': { era: 'modern', wire: ['server/discover', 'tools/call'] },
    'modern-v2': { era: 'modern', wire: ['server/discover', 'tools/call'] },
  },
  'prefer-initialize': {
    'legacy-v1': { era: 'legacy', wire: ['initialize', ...afterInit, 'tools/call'] },
    'dual-v2': { era: 'legacy', wire: ['initialize', ...afterInit, 'tools/call'] },
    'modern-v2': { era: 'modern', wire: ['initialize', 'server/discover', 'tools/call'] },
  },
  'force-discover': {
    'legacy-v1': { error: 'MCPX_ERA_MISMATCH', wire: ['server/discover'] },
    'dual-v2': { era: 'modern', wire: ['server/discover', 'tools/call'] },
    'modern-v2': { era: 'modern', wire: ['server/discover', 'tools/call'] },
  },
  'force-initialize': {
    'legacy-v1': { era: 'legacy', wire: ['initialize', ...afterInit, 'tools/call'] },
    'dual-v2': { era: 'legacy', wire: ['initialize', ...afterInit, 'tools/call'] },
    'modern-v2': { error: 'MCPX_ERA_MISMATCH', wire: ['initialize'] },
  },
};

let dir: { path: string; remove: () => Promise<void> };
beforeAll(async () => {
  dir = await tempDir();
});
afterAll(async () => {
  await dir.remove();
});

const FIXTURES = ['legacy-v1', 'dual-v2', 'modern-v2'] as const;
const cells = (Object.keys(TABLE) as Array<keyof typeof TABLE>).flatMap((pref) => FIXTURES.map((f) => [pref, f, TABLE[pref][f]] as const));

describe.concurrent('§2 table over stdio', () => {
  it.each(cells)('%s × %s', async (pref, fixture, cell) => {
    const { session, wire } = realSession(`${dir.path}/${pref}-${fixture}.log`, { fixture }, pref);
    try {
      if ('error' in cell) {
        const err = await session.start().catch((e: unknown) => e);
        expect(err).toMatchObject({ code: cell.error });
        // The error names both facts: the preference and what the server answered.
        expect((err as Error).message).toContain(pref);
      } else {
        const info = await session.start();
        expect(info.era).toBe(cell.era);
        expect(info.eraSource).toBe(pref.startsWith('force-') ? 'forced' : 'probe');
        const result = await session.callTool('echo', { text: 'hi' });
        // legacy-v1 can only serve legacy; the SDK v2 fixtures say which era served the call.
        expect(textOf(result)).toBe(`hi era=${cell.era}`);
      }
      const w = wire();
      expect(w.pids).toHaveLength(1);
      expect(w.methods[0]).toEqual(cell.wire);
      // Modern requests carry the _meta envelope with the negotiated version; legacy ones carry none.
      for (const r of w.requests[0]!) {
        if (r.method === 'server/discover' || ('era' in cell && cell.era === 'modern' && r.method === 'tools/call')) expect(r.version).toBe('2026-07-28');
        if ('era' in cell && cell.era === 'legacy' && r.method === 'tools/call')
          expect(r.metaKeys ?? []).not.toContain('io.modelcontextprotocol/protocolVersion');
      }
    } finally {
      await session.stop();
    }
  });
});

describe.concurrent('§2 follow row: the own lane and the legacy lane', () => {
  it('legacy-only server: one legacy session serves every caller (the own lane settles legacy)', async () => {
    const own = realSession(`${dir.path}/follow-legacy.log`, { fixture: 'legacy-v1' }, laneSessionPreference('follow', 'own'));
    try {
      expect((await own.session.start()).era).toBe('legacy');
      expect((await own.wireAfter('notifications/initialized')).methods[0]).toEqual(['server/discover', 'initialize', ...afterInit]);
    } finally {
      await own.session.stop();
    }
  });

  it('dual server: a modern session for 2026-07-28 callers and a second, legacy session for older callers', async () => {
    const own = realSession(`${dir.path}/follow-dual-own.log`, { fixture: 'dual-v2' }, laneSessionPreference('follow', 'own'));
    const legacy = realSession(`${dir.path}/follow-dual-legacy.log`, { fixture: 'dual-v2' }, laneSessionPreference('follow', 'legacy'));
    try {
      expect((await own.session.start()).era).toBe('modern');
      const legacyInfo = await legacy.session.start();
      expect(legacyInfo).toMatchObject({ era: 'legacy', eraSource: 'forced' });
      expect(textOf(await own.session.callTool('echo', { text: 'new caller' }))).toBe('new caller era=modern');
      expect(textOf(await legacy.session.callTool('echo', { text: 'old caller' }))).toBe('old caller era=legacy');
      // The legacy lane is forced: initialize only, no probe.
      expect(legacy.wire().methods[0]).toEqual(['initialize', ...afterInit, 'tools/call']);
      expect(own.wire().pids[0]).not.toBe(legacy.wire().pids[0]);
    } finally {
      await Promise.all([own.session.stop(), legacy.session.stop()]);
    }
  });

  it('modern-only server: the legacy lane is refused, so older callers share the modern session', async () => {
    const own = realSession(`${dir.path}/follow-modern-own.log`, { fixture: 'modern-v2' }, laneSessionPreference('follow', 'own'));
    const legacy = realSession(`${dir.path}/follow-modern-legacy.log`, { fixture: 'modern-v2' }, laneSessionPreference('follow', 'legacy'));
    try {
      expect((await own.session.start()).era).toBe('modern');
      await expect(legacy.session.start()).rejects.toMatchObject({ code: 'MCPX_ERA_MISMATCH' });
      expect(legacy.wire().methods[0]).toEqual(['initialize']);
    } finally {
      await Promise.all([own.session.stop(), legacy.session.stop()]);
    }
  });
});
