/**
 * What `mcpx serve` needs from a session, against real fixture processes and HTTP servers: every
 * relayed client request in the session's era (forward), listings followed across pages (listAll),
 * prompts/resources never asked of a server that did not declare them, upstream progress routed to the
 * call that asked for it (its own progressToken, both eras, stdio and Streamable HTTP), and
 * `list_changed` re-emitted. The fixtures' own logs prove what went over the wire.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionPreference } from '../../src/machines/preference.js';
import type { ProgressUpdate } from '../../src/call/call.js';
import { UpstreamSession } from '../../src/upstream/session.js';
import { startHttpFixture, type HttpFixture } from '../fixtures/http/index.js';
import { httpRequests } from '../fixtures/http/log.js';
import { fixtureCommand, type FixtureName } from '../fixtures/index.js';
import { pids, readWireLog, received, type WireRecvEvent } from '../fixtures/wire-log-read.js';
import { tempDir, textOf } from '../support/real.js';
import { onSession, request } from '../support/calls.js';

const ENVELOPE = ['io.modelcontextprotocol/protocolVersion', 'io.modelcontextprotocol/clientCapabilities', 'io.modelcontextprotocol/clientInfo'];

let dir: { path: string; remove: () => Promise<void> };
const httpFixtures: HttpFixture[] = [];
beforeAll(async () => {
  dir = await tempDir('mcpx-relay-');
});
afterAll(async () => {
  await Promise.all(httpFixtures.map((f) => f.stop()));
  await dir.remove();
});

interface Rig {
  session: UpstreamSession;
  /** What the (single) process received after the handshake, in order. */
  wire(): WireRecvEvent[];
}

let logs = 0;
function rig(fixture: FixtureName, preference: SessionPreference, mode?: 'paged' | 'loop'): Rig {
  const log = `${dir.path}/${fixture}-${++logs}.log`;
  const cmd = fixtureCommand(fixture, { log, ...(mode === undefined ? {} : { mode }) });
  const session = new UpstreamSession({
    name: fixture,
    definition: { command: cmd.command, args: cmd.args, env: cmd.env },
    preference,
    probeTimeoutMs: 10_000,
    startTimeoutMs: 20_000,
    stopGraceMs: 500,
  });
  return {
    session,
    wire: () => {
      const events = readWireLog(log);
      const ps = pids(events);
      expect(ps).toHaveLength(1);
      // the handshake, and the session's own subscriptions/listen stream, are not what a test relays
      return received(events, ps[0]).filter(
        (e) => !['server/discover', 'initialize', 'notifications/initialized', 'subscriptions/listen'].includes(e.method ?? ''),
      );
    },
  };
}

async function using<T>(r: Rig, fn: (r: Rig) => Promise<T>): Promise<T> {
  try {
    return await fn(r);
  } finally {
    await r.session.stop();
  }
}

const promptText = (r: Record<string, unknown>) => (r.messages as Array<{ content: { text: string } }>)[0]!.content.text;
const resourceText = (r: Record<string, unknown>) => (r.contents as Array<{ text: string }>)[0]!.text;
const names = (items: Array<Record<string, unknown>>, key = 'name') => items.map((i) => i[key]);

/** Every relayed method, and what each answer must say in `era`. */
async function everyMethod(session: UpstreamSession, era: 'modern' | 'legacy'): Promise<void> {
  expect(names((await request(onSession(session), 'prompts/list', {})).prompts as Array<Record<string, unknown>>)).toEqual(['greet']);
  expect(promptText(await request(onSession(session), 'prompts/get', { name: 'greet', arguments: { name: 'ada' } }))).toBe(`hello ada era=${era}`);
  expect(names((await request(onSession(session), 'resources/list', undefined)).resources as Array<Record<string, unknown>>, 'uri')).toEqual(['note://hello']);
  expect(names((await request(onSession(session), 'resources/templates/list', {})).resourceTemplates as Array<Record<string, unknown>>, 'uriTemplate')).toEqual(
    ['note://{topic}'],
  );
  expect(resourceText(await request(onSession(session), 'resources/read', { uri: 'note://beta' }))).toBe(`note about beta era=${era}`);
  expect(
    await request(onSession(session), 'completion/complete', { ref: { type: 'ref/prompt', name: 'greet' }, argument: { name: 'name', value: 'a' } }),
  ).toMatchObject({
    completion: { values: ['ada', 'alan'] },
  });
  expect(
    await request(onSession(session), 'completion/complete', { ref: { type: 'ref/resource', uri: 'note://{topic}' }, argument: { name: 'topic', value: 'b' } }),
  ).toMatchObject({
    completion: { values: ['beta'] },
  });
  expect(names((await request(onSession(session), 'tools/list', {})).tools as Array<Record<string, unknown>>)).toEqual(
    expect.arrayContaining(['echo', 'progress', 'add_tool']),
  );
  expect(textOf(await request(onSession(session), 'tools/call', { name: 'echo', arguments: { text: 'hi' } }))).toBe(`hi era=${era}`);
}

const RELAYED = [
  'prompts/list',
  'prompts/get',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'completion/complete',
  'completion/complete',
  'tools/list',
  'tools/call',
];

describe.concurrent("forward(): every relayed request, in the session's era", () => {
  it.each([
    ['rich-v2', 'force-discover', 'modern'],
    ['rich-v2', 'force-initialize', 'legacy'],
    ['rich-v1', 'prefer-discover', 'legacy'],
  ] as const)('%s under %s: %s', async (fixture, preference, era) => {
    await using(rig(fixture, preference), async ({ session, wire }) => {
      expect((await session.start()).era).toBe(era);
      await everyMethod(session, era);
      const sent = wire();
      expect(sent.map((e) => e.method)).toEqual(RELAYED);
      for (const e of sent) {
        // Modern requests carry the whole envelope; legacy ones carry none (and no _meta at all here).
        if (era === 'modern') expect(e).toMatchObject({ version: '2026-07-28', metaKeys: expect.arrayContaining(ENVELOPE) });
        else expect(e.hasMeta).toBe(false);
      }
    });
  });

  it('refuses a tools/call without a name or with arguments that are not an object, before sending anything', async () => {
    await using(rig('rich-v2', 'force-discover'), async ({ session, wire }) => {
      await session.start();
      await expect(request(onSession(session), 'tools/call', { arguments: {} })).rejects.toMatchObject({ code: 'MCPX_BAD_REQUEST', data: { field: 'name' } });
      await expect(request(onSession(session), 'tools/call', { name: 'echo', arguments: 'hi' })).rejects.toMatchObject({
        code: 'MCPX_BAD_REQUEST',
        data: { field: 'arguments' },
      });
      expect(wire()).toEqual([]);
    });
  });
});

describe.concurrent('listAll(): pages and capabilities', () => {
  it.each(['force-discover', 'force-initialize'] as const)('follows nextCursor to the end of every listing (%s)', async (preference) => {
    await using(rig('paged', preference), async ({ session, wire }) => {
      const era = (await session.start()).era;
      const tools = await session.listAll('tools');
      expect(names(tools)).toEqual(['tool-1', 'tool-2', 'tool-3', 'tool-4', 'tool-5']);
      expect(tools[4]!.description).toBe(`tool-5 era=${era}`);
      expect(names(await session.listAll('prompts'))).toEqual(['prompt-1', 'prompt-2', 'prompt-3', 'prompt-4', 'prompt-5']);
      expect(names(await session.listAll('resources'), 'uri')).toEqual([1, 2, 3, 4, 5].map((n) => `paged://resource-${n}`));
      expect(names(await session.listAll('resourceTemplates'), 'uriTemplate')).toEqual([1, 2, 3, 4, 5].map((n) => `paged://t${n}/{x}`));
      expect(names(await session.listTools())).toHaveLength(5);
      // Three pages each (2 + 2 + 1).
      const sent = wire().map((e) => e.method);
      for (const m of ['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list']) {
        expect(sent.filter((s) => s === m)).toHaveLength(m === 'tools/list' ? 6 : 3);
      }
    });
  });

  it('a cursor that comes back is refused instead of listing forever', async () => {
    await using(rig('paged', 'force-discover', 'loop'), async ({ session, wire }) => {
      await session.start();
      await expect(session.listAll('prompts')).rejects.toMatchObject({ code: 'MCPX_BAD_RESULT', data: { cursor: 'again' } });
      expect(wire().map((e) => e.method)).toEqual(['prompts/list', 'prompts/list']);
    });
  });

  it.each([
    ['legacy-v1', 'prefer-discover', 'legacy'],
    ['dual-v2', 'force-discover', 'modern'],
    ['dual-v2', 'force-initialize', 'legacy'],
  ] as const)('%s (%s): no prompts or resources declared — empty lists, nothing sent', async (fixture, preference, era) => {
    await using(rig(fixture, preference), async ({ session, wire }) => {
      const info = await session.start();
      expect(info.era).toBe(era);
      expect(info.capabilities).toMatchObject({ tools: expect.anything() });
      expect(info.capabilities).not.toHaveProperty('prompts');
      expect(info.capabilities).not.toHaveProperty('resources');
      expect(await session.listAll('prompts')).toEqual([]);
      expect(await session.listAll('resources')).toEqual([]);
      expect(await session.listAll('resourceTemplates')).toEqual([]);
      expect(await request(onSession(session), 'prompts/list', {})).toEqual({ prompts: [] });
      expect(await request(onSession(session), 'resources/list', {})).toEqual({ resources: [] });
      expect(await request(onSession(session), 'resources/templates/list', {})).toEqual({ resourceTemplates: [] });
      expect(names(await session.listAll('tools'))).toContain('echo');
      expect(wire().map((e) => e.method)).toEqual(['tools/list']);
      // What the gate spares the caller: the server itself refuses the listing.
      await expect(session.request('prompts/list', {})).rejects.toMatchObject({ code: 'MCPX_UPSTREAM_ERROR', data: { rpcCode: -32601 } });
    });
  });
});

/** The three updates the `progress` tool sends for steps=3. */
const THREE_STEPS: ProgressUpdate[] = [1, 2, 3].map((i) => ({ progress: i, total: 3, message: `step ${i}/3` }));

describe.concurrent('progress over stdio', () => {
  it.each([
    ['rich-v2', 'force-discover', 'modern'],
    ['rich-v2', 'force-initialize', 'legacy'],
    ['rich-v1', 'prefer-discover', 'legacy'],
  ] as const)("%s under %s (%s): the upstream's progress reaches the call, on a token of its own", async (fixture, preference, era) => {
    await using(rig(fixture, preference), async ({ session, wire }) => {
      await session.start();
      const seen: ProgressUpdate[] = [];
      const result = await session.callTool('progress', { steps: 3 }, { onProgress: (p) => seen.push(p) });
      expect(textOf(result)).toBe(`progress done steps=3 token=yes era=${era}`);
      expect(seen).toEqual(THREE_STEPS);
      // Without a listener no token is sent (and a legacy request keeps having no _meta at all).
      expect(textOf(await session.callTool('progress', { steps: 2 }))).toBe(`progress done steps=2 token=no era=${era}`);
      const [asked, plain] = wire();
      expect(asked!.metaKeys).toContain('progressToken');
      if (era === 'modern') {
        expect(asked).toMatchObject({ version: '2026-07-28', metaKeys: expect.arrayContaining(ENVELOPE) });
        expect(plain!.metaKeys).not.toContain('progressToken');
      } else {
        expect(asked!.metaKeys).toEqual(['progressToken']);
        expect(plain!.hasMeta).toBe(false);
      }
    });
  });

  it('concurrent calls each get only their own progress', async () => {
    await using(rig('rich-v2', 'force-discover'), async ({ session }) => {
      await session.start();
      const a: ProgressUpdate[] = [];
      const b: ProgressUpdate[] = [];
      await Promise.all([
        session.callTool('progress', { steps: 3 }, { onProgress: (p) => a.push(p) }),
        session.callTool('progress', { steps: 5 }, { onProgress: (p) => b.push(p) }),
      ]);
      expect(a).toEqual(THREE_STEPS);
      expect(b.map((p) => [p.progress, p.total])).toEqual([1, 2, 3, 4, 5].map((i) => [i, 5]));
    });
  });

  it.each(['force-discover', 'force-initialize'] as const)('a token is forgotten when its request settles (%s)', async (preference) => {
    await using(rig('paged', preference), async ({ session }) => {
      await session.start();
      const seen: number[] = [];
      const result = await request(onSession(session), 'tools/call', { name: 'late_progress', arguments: {} }, { onProgress: (p) => seen.push(p.progress) });
      expect(textOf(result)).toMatch(/^late_progress token=yes/);
      // The fixture sends {progress 2} 50 ms after its answer; flush_late is answered after it on the same
      // stream, so once its answer is here the late notification has been read (and must have been dropped).
      expect(textOf(await request(onSession(session), 'tools/call', { name: 'flush_late', arguments: {} }))).toBe('flushed');
      expect(seen).toEqual([1]);
    });
  });
});

describe.concurrent("progress over Streamable HTTP (on the POST's SSE stream)", () => {
  it.each([
    ['prefer-discover', 'modern'],
    ['force-initialize', 'legacy'],
  ] as const)('%s: %s', async (preference, era) => {
    const f = await startHttpFixture('rich-v2');
    httpFixtures.push(f);
    const session = new UpstreamSession({ name: 'remote', definition: { url: f.url }, preference });
    try {
      expect((await session.start()).era).toBe(era);
      const seen: ProgressUpdate[] = [];
      const result = await session.callTool('progress', { steps: 3 }, { onProgress: (p) => seen.push(p) });
      expect(textOf(result)).toBe(`progress done steps=3 token=yes era=${era}`);
      expect(seen).toEqual(THREE_STEPS);
      const call = httpRequests(f.log).filter((r) => r.rpcMethod === 'tools/call');
      expect(call).toHaveLength(1);
    } finally {
      await session.stop();
    }
  });
});

describe.concurrent('list_changed', () => {
  it.each([
    ['rich-v2', 'force-initialize'],
    ['rich-v1', 'prefer-discover'],
  ] as const)('%s (%s): notifications/tools/list_changed becomes a list_changed event', async (fixture, preference) => {
    await using(rig(fixture, preference), async ({ session }) => {
      await session.start();
      const changes: Array<{ server: string; list: string }> = [];
      session.on('list_changed', (c: { server: string; list: string }) => changes.push(c));
      expect(names(await session.listTools())).not.toContain('newbie');
      expect(textOf(await session.callTool('add_tool', { name: 'newbie' }))).toBe('registered newbie era=legacy');
      for (const end = Date.now() + 5_000; changes.length === 0 && Date.now() < end;) await new Promise((r) => setTimeout(r, 10));
      expect(changes).toEqual([{ server: fixture, list: 'tools' }]);
      expect(names(await session.listTools())).toContain('newbie');
    });
  });

  it("over Streamable HTTP (legacy), each list's notification on a POST's stream names its list", async () => {
    const f = await startHttpFixture('rich-v2');
    httpFixtures.push(f);
    const session = new UpstreamSession({ name: 'remote', definition: { url: f.url }, preference: 'force-initialize' });
    try {
      await session.start();
      const changes: string[] = [];
      session.on('list_changed', (c: { list: string }) => changes.push(c.list));
      for (const list of ['tools', 'prompts', 'resources']) {
        expect(textOf(await session.callTool('announce', { list }))).toBe(`announced ${list} era=legacy`);
      }
      for (const end = Date.now() + 5_000; changes.length < 3 && Date.now() < end;) await new Promise((r) => setTimeout(r, 10));
      expect(changes).toEqual(['tools', 'prompts', 'resources']);
    } finally {
      await session.stop();
    }
  });
});
