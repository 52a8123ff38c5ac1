/** PoolRegistry: one pool per server name, config reloads, event re-emission, isolation between servers. */
import { afterEach, describe, expect, it } from 'vitest';
import { PoolRegistry, poolFingerprint } from '../../src/pool/pool-registry.js';
import { ServerPool } from '../../src/pool/server-pool.js';
import type { PoolEvent, PoolServerConfig } from '../../src/pool/types.js';
import { AutoUpstream, textOf } from '../support/auto-upstream.js';
import { callTool } from '../support/calls.js';

const up = new AutoUpstream({ kind: 'dual' });
const broken = new AutoUpstream({ kind: 'dual', spawnFails: true });

function cfg(name: string, over: Partial<PoolServerConfig> = {}): PoolServerConfig {
  return {
    name,
    definition: { command: `sim-${name}` },
    preference: 'prefer-discover',
    limits: { scope: 'global', max: 4, sharing: 'shared', idleTimeoutMs: 60_000 },
    probeTimeoutMs: 1_000,
    ...over,
  };
}

const registries: PoolRegistry[] = [];
function registry(): { reg: PoolRegistry; events: PoolEvent[] } {
  const reg = new PoolRegistry({
    // Servers whose command names "broken" fail to spawn; the rest answer.
    sessionFactory: (opts) => ('command' in opts.definition && opts.definition.command.includes('broken') ? broken : up).sessionFactory()(opts),
  });
  registries.push(reg);
  const events: PoolEvent[] = [];
  reg.on('event', (e) => events.push(e));
  return { reg, events };
}

afterEach(async () => {
  await Promise.all(registries.splice(0).map((r) => r.stopAll()));
  expect(up.alive()).toEqual([]);
});

describe('PoolRegistry', () => {
  it('get() returns the server pool; an unknown name is MCPX_UNKNOWN_SERVER naming the configured ones', async () => {
    const { reg } = registry();
    expect(await reg.apply([cfg('a'), cfg('b')])).toMatchObject({ added: ['a', 'b'], removed: [], replaced: [], kept: [] });
    expect(reg.get('a')).toBeInstanceOf(ServerPool);
    expect(reg.names()).toEqual(['a', 'b']);
    expect(() => reg.get('nope')).toThrow(expect.objectContaining({ code: 'MCPX_UNKNOWN_SERVER', message: expect.stringContaining('configured: a, b') }));
  });

  it('apply() keeps unchanged pools (and their instances), replaces changed ones, stops removed ones', async () => {
    const { reg, events } = registry();
    await reg.apply([cfg('keep'), cfg('change'), cfg('drop')]);
    const keep = reg.get('keep');
    const change = reg.get('change');
    const drop = reg.get('drop');
    for (const name of ['keep', 'change', 'drop']) await callTool(reg.get(name), 'echo', { text: name });
    expect(events.filter((e) => e.type === 'server.start').map((e) => e.server)).toEqual(['keep', 'change', 'drop']);

    const result = await reg.apply([
      cfg('keep'),
      cfg('change', { limits: { scope: 'global', max: 4, sharing: 'exclusive', idleTimeoutMs: 60_000 } }),
      cfg('new'),
    ]);
    expect(result).toEqual({ added: ['new'], removed: ['drop'], replaced: ['change'], kept: ['keep'], failed: [] });
    expect(reg.get('keep')).toBe(keep);
    expect(keep.instances()).toHaveLength(1); // still running
    expect(reg.get('change')).not.toBe(change);
    expect(change.actor.getSnapshot().value).toBe('stopped');
    expect(drop.actor.getSnapshot().value).toBe('stopped');
    expect(
      events
        .filter((e) => e.type === 'server.stop')
        .map((e) => [e.server, e.type === 'server.stop' && e.reason])
        .sort(),
    ).toEqual([
      ['change', 'pool-stopped'],
      ['drop', 'pool-stopped'],
    ]);
    // The new pool of a replaced server works and still reports through the registry.
    expect(textOf(await callTool(reg.get('change'), 'echo', { text: 'again' }))).toBe('again era=modern');
    expect(events.filter((e) => e.type === 'server.start').map((e) => e.server)).toEqual(['keep', 'change', 'drop', 'change']);
  });

  it('what counts as a change: the process definition, preference, limits, timeouts — not key order', () => {
    const base = cfg('x', { definition: { command: 'c', env: { A: '1', B: '2' } } });
    expect(poolFingerprint(base)).toBe(poolFingerprint(cfg('x', { definition: { command: 'c', env: { B: '2', A: '1' } } })));
    expect(poolFingerprint(base)).not.toBe(poolFingerprint({ ...base, definition: { command: 'c', env: { A: '1', B: '3' } } }));
    expect(poolFingerprint(base)).not.toBe(poolFingerprint({ ...base, preference: 'follow' }));
    expect(poolFingerprint(base)).not.toBe(poolFingerprint({ ...base, limits: { ...base.limits, max: 5 } }));
    expect(poolFingerprint(base)).not.toBe(poolFingerprint({ ...base, probeTimeoutMs: 3_000 }));
  });

  it("one server's failure never affects another's pool", async () => {
    const { reg } = registry();
    await reg.apply([cfg('good'), cfg('broken')]);
    await expect(callTool(reg.get('broken'), 'echo', { text: 'x' })).rejects.toMatchObject({ code: 'MCPX_SPAWN_FAILED' });
    expect(textOf(await callTool(reg.get('good'), 'echo', { text: 'fine' }))).toBe('fine era=modern');

    // A pool that cannot even be built is reported, and the others are applied.
    const reg2 = new PoolRegistry({
      createPool: (c, deps) => {
        if (c.name === 'unbuildable') throw new Error('no such thing');
        return new ServerPool(c, { ...deps, sessionFactory: up.sessionFactory() });
      },
    });
    registries.push(reg2);
    const result = await reg2.apply([cfg('unbuildable'), cfg('ok')]);
    expect(result.added).toEqual(['ok']);
    expect(result.failed).toEqual([{ name: 'unbuildable', error: expect.objectContaining({ message: 'no such thing' }) }]);
    expect(textOf(await callTool(reg2.get('ok'), 'echo', { text: 'y' }))).toBe('y era=modern');
  });

  it('stopAll() stops every pool and resolves when every instance is gone', async () => {
    const { reg } = registry();
    await reg.apply([cfg('a'), cfg('b')]);
    const [a, b] = [reg.get('a'), reg.get('b')];
    await Promise.all([callTool(a, 'echo', { text: '1' }), callTool(b, 'echo', { text: '2' })]);
    expect(up.alive().length).toBeGreaterThanOrEqual(2);
    await reg.stopAll();
    expect(up.alive()).toEqual([]);
    expect(reg.names()).toEqual([]);
    expect(reg.protocolReports()).toEqual([]);
  });
});
