/**
 * The pool against real fixture processes: the follow row of docs/behaviour.md §2 (each caller served
 * over the lane its revision needs, proven by the fixture's own words: `echo` answers
 * "<text> era=<era>", `whoami` "era=<era> pid=<pid>"), a process crashing after initialize, and many
 * concurrent callers of both eras under exclusive sharing and a small max.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Preference } from '../../src/machines/preference.js';
import { laneCap } from '../../src/pool/pool.machine.js';
import { ServerPool } from '../../src/pool/server-pool.js';
import type { PoolEvent, PoolLimits, PoolServerConfig } from '../../src/pool/types.js';
import { fixtureCommand, type FixtureName, type RawMode } from '../fixtures/index.js';
import { methodsReceived, pids, readWireLog } from '../fixtures/wire-log-read.js';
import { tempDir, textOf } from '../support/real.js';
import { LEGACY_CALLER, MODERN_CALLER, until } from './helpers.js';
import { callTool } from '../support/calls.js';

let dir: { path: string; remove: () => Promise<void> };
beforeAll(async () => {
  dir = await tempDir('mcpx-pool-');
});
afterAll(async () => {
  await dir.remove();
});

interface RealPool {
  pool: ServerPool;
  log: string;
  events: PoolEvent[];
  wirePids(): number[];
}

function realPool(name: string, fixture: FixtureName, preference: Preference, limits: Partial<PoolLimits> = {}, mode?: RawMode): RealPool {
  const log = `${dir.path}/${name}.log`;
  const cmd = fixtureCommand(fixture, { log, ...(mode ? { mode } : {}) });
  const config: PoolServerConfig = {
    name,
    definition: { command: cmd.command, args: cmd.args, env: cmd.env },
    preference,
    limits: { scope: 'global', max: 4, sharing: 'shared', idleTimeoutMs: 60_000, ...limits },
    // Generous: several fixtures start at once on a small machine; probe timing has tests of its own.
    probeTimeoutMs: 10_000,
    startTimeoutMs: 20_000,
  };
  const pool = new ServerPool(config);
  const events: PoolEvent[] = [];
  pool.on('event', (e) => events.push(e));
  return { pool, log, events, wirePids: () => pids(readWireLog(log)) };
}

/** Gone: kill(pid, 0) fails with ESRCH, or the process is a zombie (exited, not yet reaped). */
function isGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

/** stop() resolves only when every process the pool started is gone. */
async function stopAndCheck(r: RealPool): Promise<void> {
  await r.pool.stop();
  const started = r.wirePids();
  expect(started.length).toBeGreaterThan(0);
  for (const pid of started) expect(isGone(pid), `pid ${pid} is gone`).toBe(true);
}

const whoami = (text: string) => {
  const m = /^era=(legacy|modern) pid=(\d+)$/.exec(text);
  if (!m) throw new Error(`not a whoami answer: ${text}`);
  return { era: m[1] as 'legacy' | 'modern', pid: Number(m[2]) };
};

describe.concurrent('§2 follow row, through the pool', () => {
  it('dual-v2: a 2025-11-25 caller is served over a legacy session, a 2026-07-28 caller over a modern one', async () => {
    const r = realPool('follow-dual', 'dual-v2', 'follow');
    try {
      expect(textOf(await callTool(r.pool, 'echo', { text: 'new caller' }, { callerProtocol: MODERN_CALLER }))).toBe('new caller era=modern');
      expect(textOf(await callTool(r.pool, 'echo', { text: 'old caller' }, { callerProtocol: LEGACY_CALLER }))).toBe('old caller era=legacy');
      const modern = whoami(textOf(await callTool(r.pool, 'whoami', {}, { callerProtocol: MODERN_CALLER })));
      const legacy = whoami(textOf(await callTool(r.pool, 'whoami', {}, { callerProtocol: LEGACY_CALLER })));
      expect(modern.era).toBe('modern');
      expect(legacy.era).toBe('legacy');
      expect(modern.pid).not.toBe(legacy.pid);
      const events = readWireLog(r.log);
      expect(methodsReceived(events, legacy.pid).slice(0, 2)).toEqual(['initialize', 'notifications/initialized']); // forced: no probe
      expect(methodsReceived(events, modern.pid)[0]).toBe('server/discover');
      expect(r.pool.protocolReport()).toMatchObject({ era: 'modern', eraSource: 'probe', legacyLane: { state: 'available' } });
      expect(r.pool.instances().map((i) => [i.lane, i.era, i.pid])).toEqual([
        ['own', 'modern', modern.pid],
        ['legacy', 'legacy', legacy.pid],
      ]);
    } finally {
      await stopAndCheck(r);
    }
  });

  it('modern-v2: the legacy lane is refused, legacy callers share the modern session', async () => {
    const r = realPool('follow-modern', 'modern-v2', 'follow');
    try {
      const modern = whoami(textOf(await callTool(r.pool, 'whoami', {}, { callerProtocol: MODERN_CALLER })));
      const legacy = whoami(textOf(await callTool(r.pool, 'whoami', {}, { callerProtocol: LEGACY_CALLER })));
      expect(legacy).toEqual(modern);
      expect(textOf(await callTool(r.pool, 'echo', { text: 'old again' }, { callerProtocol: LEGACY_CALLER }))).toBe('old again era=modern');
      expect(r.pool.protocolReport().legacyLane).toMatchObject({ state: 'refused', reason: expect.stringContaining('refused initialize') });
      const started = r.wirePids();
      expect(started).toHaveLength(2); // the own process, and the one refused legacy attempt (never retried)
      expect(
        methodsReceived(
          readWireLog(r.log),
          started.find((p) => p !== modern.pid),
        ),
      ).toEqual(['initialize']);
    } finally {
      await stopAndCheck(r);
    }
  });

  it('legacy-v1: legacy callers use the own lane, which settled legacy — one process', async () => {
    const r = realPool('follow-legacy', 'legacy-v1', 'follow');
    try {
      const legacy = whoami(textOf(await callTool(r.pool, 'whoami', {}, { callerProtocol: LEGACY_CALLER })));
      const modern = whoami(textOf(await callTool(r.pool, 'whoami', {}, { callerProtocol: MODERN_CALLER })));
      expect(legacy).toEqual({ era: 'legacy', pid: modern.pid });
      expect(r.wirePids()).toEqual([modern.pid]);
      expect(r.pool.instances()).toMatchObject([{ lane: 'own', era: 'legacy' }]);
      expect(r.pool.protocolReport()).toMatchObject({ era: 'legacy', legacyLane: { state: 'unused' } });
    } finally {
      await stopAndCheck(r);
    }
  });

  it('crash-after-init: the instance is forgotten when its process dies, and the next call starts a fresh one', async () => {
    const r = realPool('crash', 'raw', 'prefer-discover', {}, 'crash-after-init');
    try {
      // The process exits ~100 ms after initialize; a call racing that is either served or fails clearly.
      const first = await callTool(r.pool, 'echo', { text: 'one' }).then(textOf, (e: { code: string }) => e.code);
      expect(['one era=legacy', 'MCPX_TRANSPORT_CLOSED']).toContain(first);
      await until(() => r.events.some((e) => e.type === 'server.stop' && e.reason.startsWith('crashed')), 5_000, 'the crash');
      expect(r.pool.instances()).toEqual([]);
      const second = await callTool(r.pool, 'echo', { text: 'two' }).then(textOf, (e: { code: string }) => e.code);
      expect(['two era=legacy', 'MCPX_TRANSPORT_CLOSED']).toContain(second);
      expect(r.wirePids()).toHaveLength(2);
      expect(r.events.filter((e) => e.type === 'server.start')).toHaveLength(2);
    } finally {
      await stopAndCheck(r);
    }
  });
});

describe('concurrent callers of both eras', () => {
  it('each call is served by an instance of the right lane, none lost or answered twice, limits hold, nothing outlives the pool', async () => {
    const limits = { scope: 'session', max: 2, sharing: 'exclusive' } as const;
    const r = realPool('crowd', 'dual-v2', 'follow', limits);
    const cap = laneCap({ scope: limits.scope, max: limits.max });
    let worst = { own: 0, legacy: 0 };
    let worstHolders = 0;
    const sub = r.pool.actor.subscribe((s) => {
      const slots = s.context.instances.list();
      const own = slots.filter((x) => x.lane === 'own').length;
      const legacy = slots.filter((x) => x.lane === 'legacy').length;
      worst = { own: Math.max(worst.own, own), legacy: Math.max(worst.legacy, legacy) };
      worstHolders = Math.max(worstHolders, ...slots.map((x) => x.holders.length), 0);
    });
    // Live processes per lane, from the pool's own events (server.stop comes once the process is gone).
    const live = { own: new Set<string>(), legacy: new Set<string>() };
    let worstLive = 0;
    r.pool.on('event', (e) => {
      if (e.type === 'server.start') live[e.lane].add(e.instance);
      if (e.type === 'server.stop') live[e.lane].delete(e.instance);
      worstLive = Math.max(worstLive, live.own.size, live.legacy.size);
    });
    const seen = new Map<number, 'legacy' | 'modern'>();
    try {
      const calls = Array.from({ length: 40 }, (_, i) => {
        const era = i % 2 === 0 ? 'legacy' : 'modern';
        const session = `s${i % 3}`;
        return callTool(r.pool, 'whoami', {}, { session, callerProtocol: era === 'legacy' ? LEGACY_CALLER : MODERN_CALLER }).then((res) => ({
          i,
          want: era,
          got: whoami(textOf(res)),
        }));
      });
      const results = await Promise.all(calls);
      expect(results).toHaveLength(40);
      for (const { want, got } of results) {
        expect(got.era).toBe(want);
        // A process serves one era only: the lanes never mix.
        expect(seen.get(got.pid) ?? got.era).toBe(got.era);
        seen.set(got.pid, got.era);
      }
      // Every call reached an upstream exactly once.
      const calls40 = readWireLog(r.log).filter((e) => e.event === 'recv' && e.method === 'tools/call');
      expect(calls40).toHaveLength(40);
      expect(worst.own).toBeLessThanOrEqual(cap);
      expect(worst.legacy).toBeLessThanOrEqual(cap);
      expect(worstLive).toBeLessThanOrEqual(cap);
      expect(worstHolders).toBe(1);
      console.log(`[crowd] processes: ${r.wirePids().length}; pool stats: ${JSON.stringify(r.pool.actor.getSnapshot().context.stats)}`);
    } finally {
      await r.pool.stop();
      sub.unsubscribe();
    }
    const all = new Set([...seen.keys(), ...r.wirePids()]);
    expect(all.size).toBeGreaterThanOrEqual(2);
    for (const pid of all) expect(isGone(pid), `pid ${pid} is gone`).toBe(true);
  });
});
