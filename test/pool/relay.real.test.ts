/**
 * The pool side of `mcpx serve`, against real fixture processes: relayed requests on the lane the
 * caller's era selects (request), whole listings (listAll), progress through the Call, an
 * upstream's list_changed as a `server.list_changed` PoolEvent, and each lane's self-description
 * (upstreamInfo) for catalogues.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Preference } from '../../src/machines/preference.js';
import { ServerPool } from '../../src/pool/server-pool.js';
import type { PoolEvent, PoolLimits, PoolServerConfig } from '../../src/pool/types.js';
import type { ProgressUpdate } from '../../src/call/call.js';
import { fixtureCommand, type FixtureName } from '../fixtures/index.js';
import { methodsReceived, pids, readWireLog } from '../fixtures/wire-log-read.js';
import { tempDir, textOf } from '../support/real.js';
import { LEGACY_CALLER, MODERN_CALLER, until } from './helpers.js';
import { callTool, listAll, request } from '../support/calls.js';

let dir: { path: string; remove: () => Promise<void> };
beforeAll(async () => {
  dir = await tempDir('mcpx-pool-relay-');
});
afterAll(async () => {
  await dir.remove();
});

interface Rig {
  pool: ServerPool;
  log: string;
  events: PoolEvent[];
}

function rig(name: string, fixture: FixtureName, preference: Preference, limits: Partial<PoolLimits> = {}): Rig {
  const log = `${dir.path}/${name}.log`;
  const cmd = fixtureCommand(fixture, { log });
  const config: PoolServerConfig = {
    name,
    definition: { command: cmd.command, args: cmd.args, env: cmd.env },
    preference,
    limits: { scope: 'global', max: 4, sharing: 'shared', idleTimeoutMs: 60_000, ...limits },
    probeTimeoutMs: 10_000,
    startTimeoutMs: 20_000,
  };
  const pool = new ServerPool(config);
  const events: PoolEvent[] = [];
  pool.on('event', (e) => events.push(e));
  return { pool, log, events };
}

const promptText = (r: Record<string, unknown>) => (r.messages as Array<{ content: { text: string } }>)[0]!.content.text;
const names = (items: Array<Record<string, unknown>>, key = 'name') => items.map((i) => i[key]);

describe.concurrent('ServerPool.request and listAll', () => {
  it("follow on a dual server: each caller's request runs on its era's lane; upstreamInfo describes each lane", async () => {
    const r = rig('follow-rich', 'rich-v2', 'follow');
    try {
      expect(r.pool.upstreamInfo()).toBeNull();
      const greet = { name: 'greet', arguments: { name: 'grace' } };
      expect(promptText(await request(r.pool, 'prompts/get', greet, { callerProtocol: MODERN_CALLER }))).toBe('hello grace era=modern');
      expect(promptText(await request(r.pool, 'prompts/get', greet, { callerProtocol: LEGACY_CALLER }))).toBe('hello grace era=legacy');
      const read = { uri: 'note://alpha' };
      expect(await request(r.pool, 'resources/read', read, { callerProtocol: LEGACY_CALLER })).toMatchObject({
        contents: [{ text: 'note about alpha era=legacy' }],
      });
      expect(
        await request(r.pool, 'completion/complete', { ref: { type: 'ref/prompt', name: 'greet' }, argument: { name: 'name', value: 'g' } }),
      ).toMatchObject({
        completion: { values: ['grace'] },
      });
      expect(textOf(await request(r.pool, 'tools/call', { name: 'echo', arguments: { text: 'hi' } }, { callerProtocol: LEGACY_CALLER }))).toBe('hi era=legacy');
      expect(r.pool.instances().map((i) => [i.lane, i.era])).toEqual([
        ['own', 'modern'],
        ['legacy', 'legacy'],
      ]);

      const own = r.pool.upstreamInfo('own');
      expect(own).toMatchObject({
        lane: 'own',
        era: 'modern',
        negotiated: '2026-07-28',
        instructions: 'rich fixture, era=modern',
        serverInfo: { name: 'fixture-rich-v2' },
        capabilities: { prompts: expect.anything(), resources: expect.anything(), tools: expect.anything() },
      });
      expect(r.pool.upstreamInfo('legacy')).toMatchObject({
        lane: 'legacy',
        era: 'legacy',
        negotiated: '2025-11-25',
        instructions: 'rich fixture, era=legacy',
      });
      await r.pool.stop();
      // Last known: still there once the instances are gone.
      expect(r.pool.upstreamInfo('own')).toEqual(own);
    } finally {
      await r.pool.stop();
    }
  });

  it("honours the caller's signal and the scope key, like callTool", async () => {
    const r = rig('scoped', 'rich-v2', 'prefer-discover', { scope: 'session' });
    try {
      await expect(request(r.pool, 'prompts/list', {})).rejects.toMatchObject({ code: 'MCPX_BAD_REQUEST', data: { scope: 'session' } });
      await expect(request(r.pool, 'prompts/list', {}, { session: 's1', signal: AbortSignal.abort('caller left') })).rejects.toMatchObject({
        code: 'MCPX_REQUEST_CANCELLED',
      });
      expect(names((await request(r.pool, 'prompts/list', {}, { session: 's1' })).prompts as Array<Record<string, unknown>>)).toEqual(['greet']);
      expect(r.pool.instances().map((i) => i.scopeKey)).toEqual(['s1']);
    } finally {
      await r.pool.stop();
    }
  });

  it.each([
    ['paged', 'prefer-discover'],
    ['paged', 'prefer-initialize'],
  ] as const)('listAll on %s (%s): every page of every listing, on one instance', async (fixture, preference) => {
    const r = rig(`list-${preference}`, fixture, preference);
    try {
      expect(names(await listAll(r.pool, 'tools'))).toEqual([1, 2, 3, 4, 5].map((n) => `tool-${n}`));
      expect(names(await listAll(r.pool, 'prompts'))).toEqual([1, 2, 3, 4, 5].map((n) => `prompt-${n}`));
      expect(await listAll(r.pool, 'resources')).toHaveLength(5);
      expect(await listAll(r.pool, 'resourceTemplates')).toHaveLength(5);
      const events = readWireLog(r.log);
      const [pid] = pids(events);
      expect(pids(events)).toHaveLength(1);
      expect(methodsReceived(events, pid).filter((m) => m.endsWith('/list'))).toHaveLength(12);
    } finally {
      await r.pool.stop();
    }
  });

  it('listAll on a legacy SDK v1 server with prompts and resources', async () => {
    const r = rig('list-v1', 'rich-v1', 'prefer-discover');
    try {
      expect(names(await listAll(r.pool, 'prompts'))).toEqual(['greet']);
      expect(names(await listAll(r.pool, 'resources'), 'uri')).toEqual(['note://hello']);
      expect(names(await listAll(r.pool, 'resourceTemplates'), 'uriTemplate')).toEqual(['note://{topic}']);
      expect(r.pool.upstreamInfo()).toMatchObject({ era: 'legacy', serverInfo: { name: 'fixture-rich-v1' }, instructions: 'rich v1 fixture' });
    } finally {
      await r.pool.stop();
    }
  });
});

describe.concurrent('progress through the pool', () => {
  it.each([
    [MODERN_CALLER, 'modern'],
    [LEGACY_CALLER, 'legacy'],
  ] as const)("caller %s (%s lane under follow): ctx.onProgress gets the upstream's numbers", async (callerProtocol, era) => {
    const r = rig(`progress-${era}`, 'rich-v2', 'follow');
    try {
      const viaCall: ProgressUpdate[] = [];
      const viaRequest: ProgressUpdate[] = [];
      const a = await callTool(r.pool, 'progress', { steps: 2 }, { callerProtocol, onProgress: (p) => viaCall.push(p) });
      const b = await request(r.pool, 'tools/call', { name: 'progress', arguments: { steps: 4 } }, { callerProtocol, onProgress: (p) => viaRequest.push(p) });
      expect(textOf(a)).toBe(`progress done steps=2 token=yes era=${era}`);
      expect(textOf(b)).toBe(`progress done steps=4 token=yes era=${era}`);
      expect(viaCall).toEqual([1, 2].map((i) => ({ progress: i, total: 2, message: `step ${i}/2` })));
      expect(viaRequest).toEqual([1, 2, 3, 4].map((i) => ({ progress: i, total: 4, message: `step ${i}/4` })));
    } finally {
      await r.pool.stop();
    }
  });
});

describe.concurrent('list_changed as a pool event', () => {
  it("a legacy lane's notifications/tools/list_changed is published as server.list_changed", async () => {
    const r = rig('changed', 'rich-v2', 'follow');
    try {
      const result = await request(r.pool, 'tools/call', { name: 'add_tool', arguments: { name: 'late_tool' } }, { callerProtocol: LEGACY_CALLER });
      expect(textOf(result)).toBe('registered late_tool era=legacy');
      const changed = () => r.events.filter((e) => e.type === 'server.list_changed');
      await until(() => changed().length > 0, 5_000, 'a server.list_changed event');
      const legacy = r.pool.instances().find((i) => i.lane === 'legacy');
      expect(changed()).toEqual([{ type: 'server.list_changed', server: 'changed', instance: legacy!.id, lane: 'legacy', list: 'tools' }]);
      expect(names(await listAll(r.pool, 'tools', { callerProtocol: LEGACY_CALLER }))).toContain('late_tool');
    } finally {
      await r.pool.stop();
    }
  });

  it('an SDK v1 server (own lane) too', async () => {
    const r = rig('changed-v1', 'rich-v1', 'prefer-discover');
    try {
      await callTool(r.pool, 'add_tool', { name: 'another' });
      await until(() => r.events.some((e) => e.type === 'server.list_changed'), 5_000, 'a server.list_changed event');
      expect(r.events.filter((e) => e.type === 'server.list_changed')).toEqual([
        { type: 'server.list_changed', server: 'changed-v1', instance: r.pool.instances()[0]!.id, lane: 'own', list: 'tools' },
      ]);
    } finally {
      await r.pool.stop();
    }
  });
});
