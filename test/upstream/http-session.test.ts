/**
 * HTTP upstreams end to end through UpstreamSession (docs/behaviour.md §4), against real HTTP fixture
 * servers on 127.0.0.1: the §2 table over Streamable HTTP, the HTTP+SSE fallback, statuses that are
 * errors rather than era evidence, attribution of questions to the call that provoked them.
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { laneSessionPreference, type SessionPreference } from '../../src/machines/preference.js';
import { EraCache } from '../../src/upstream/era-cache.js';
import { UpstreamSession, type UpstreamSessionOptions } from '../../src/upstream/session.js';
import { startHttpFixture, type HttpFixture } from '../fixtures/http/index.js';
import { httpRequests, readHttpLog, waitForHttpLog } from '../fixtures/http/log.js';
import { tempDir, textOf } from '../support/real.js';
import { recordingLogger } from '../support/recording-logger.js';
import { answering } from '../support/relay.js';

let dir: { path: string; remove: () => Promise<void> };
const fixtures: HttpFixture[] = [];
beforeAll(async () => {
  dir = await tempDir();
});
afterAll(async () => {
  await Promise.all(fixtures.map((f) => f.stop()));
  await dir.remove();
});

async function fixture(name: string, args: string[] = [], env: Record<string, string> = {}): Promise<HttpFixture> {
  const f = await startHttpFixture(name, args, env);
  fixtures.push(f);
  return f;
}

function httpSession(f: HttpFixture, preference: SessionPreference, extra: Partial<UpstreamSessionOptions> = {}): UpstreamSession {
  return new UpstreamSession({ name: 'remote', definition: { url: f.url }, preference, ...extra });
}

/** The JSON-RPC methods POSTed to the fixture, in order (GETs and DELETEs listed as such). */
/** The requests, in order; the legacy Streamable HTTP standalone GET stream (it carries MCP-Protocol-Version; opened in the background) is left out. */
const wire = (f: HttpFixture) =>
  httpRequests(f.log)
    // the background streams a session keeps (the legacy GET stream, a modern subscriptions/listen) are not a test's requests
    .filter((r) => !(r.httpMethod === 'GET' && r.headers['mcp-protocol-version'] !== undefined) && r.rpcMethod !== 'subscriptions/listen')
    .map((r) => (r.httpMethod === 'POST' ? (r.rpcMethod ?? '(response)') : `${r.httpMethod} ${r.path.split('?')[0]}`));

type Cell = { era: 'legacy' | 'modern'; wire: string[] } | { error: string; wire: string[] };
const init = ['initialize', 'notifications/initialized'];
/** A modern Streamable HTTP session lists the tools before its first call: SEP-2243 headers come from their inputSchema. */
const modernCall = ['tools/list', 'tools/call'];
const TABLE: Record<SessionPreference, Record<'v1-legacy-sessions' | 'v2-dual' | 'v2-modern', Cell>> = {
  'prefer-discover': {
    'v1-legacy-sessions': { era: 'legacy', wire: ['server/discover', ...init, 'tools/call'] },
    'v2-dual': { era: 'modern', wire: ['server/discover', ...modernCall] },
    'v2-modern': { era: 'modern', wire: ['server/discover', ...modernCall] },
  },
  'prefer-initialize': {
    'v1-legacy-sessions': { era: 'legacy', wire: [...init, 'tools/call'] },
    'v2-dual': { era: 'legacy', wire: [...init, 'tools/call'] },
    'v2-modern': { era: 'modern', wire: ['initialize', 'server/discover', ...modernCall] },
  },
  'force-discover': {
    'v1-legacy-sessions': { error: 'MCPX_ERA_MISMATCH', wire: ['server/discover'] },
    'v2-dual': { era: 'modern', wire: ['server/discover', ...modernCall] },
    'v2-modern': { era: 'modern', wire: ['server/discover', ...modernCall] },
  },
  'force-initialize': {
    'v1-legacy-sessions': { era: 'legacy', wire: [...init, 'tools/call'] },
    'v2-dual': { era: 'legacy', wire: [...init, 'tools/call'] },
    'v2-modern': { error: 'MCPX_ERA_MISMATCH', wire: ['initialize'] },
  },
};
const cells = (Object.keys(TABLE) as SessionPreference[]).flatMap((p) =>
  (['v1-legacy-sessions', 'v2-dual', 'v2-modern'] as const).map((f) => [p, f, TABLE[p][f]] as const),
);

describe.concurrent('§2 table over Streamable HTTP', () => {
  it.each(cells)('%s × %s', async (pref, name, cell) => {
    const f = await fixture(name);
    const session = httpSession(f, pref);
    try {
      if ('error' in cell) {
        const err = await session.start().catch((e: unknown) => e);
        expect(err).toMatchObject({ code: cell.error });
      } else {
        expect(await session.start()).toMatchObject({ era: cell.era });
        expect(textOf(await session.callTool('echo', { text: 'hi' }))).toBe(`hi era=${cell.era}`);
      }
      expect(wire(f)).toEqual(cell.wire);
      // Headers: modern requests name their version and method, never a session; legacy ones carry the negotiated version.
      for (const r of httpRequests(f.log)) {
        if (r.rpcMethod === 'server/discover' || ('era' in cell && cell.era === 'modern' && r.rpcMethod === 'tools/call')) {
          expect(r.headers).toMatchObject({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': r.rpcMethod });
          expect(r.headers['mcp-session-id']).toBeUndefined();
        }
        if ('era' in cell && cell.era === 'modern' && r.rpcMethod === 'tools/call') expect(r.headers['mcp-name']).toBe('echo');
        if ('era' in cell && cell.era === 'legacy' && r.rpcMethod === 'tools/call') {
          expect(r.headers['mcp-protocol-version']).toBe('2025-11-25');
          if (name === 'v1-legacy-sessions') expect(r.headers['mcp-session-id']).toMatch(/^[0-9a-f-]{36}$/);
        }
      }
    } finally {
      await session.stop();
    }
  });

  it('follow on a dual HTTP server: a modern session and a legacy lane side by side', async () => {
    const f = await fixture('v2-dual');
    const own = httpSession(f, laneSessionPreference('follow', 'own'));
    const legacy = httpSession(f, laneSessionPreference('follow', 'legacy'));
    try {
      expect((await own.start()).era).toBe('modern');
      expect((await legacy.start()).era).toBe('legacy');
      expect(textOf(await own.callTool('echo', { text: 'new' }))).toBe('new era=modern');
      expect(textOf(await legacy.callTool('echo', { text: 'old' }))).toBe('old era=legacy');
    } finally {
      await Promise.all([own.stop(), legacy.stop()]);
    }
  });

  it('follow on a legacy-only HTTP server: the own lane settles legacy and serves every caller', async () => {
    const f = await fixture('v1-legacy-sessions');
    const own = httpSession(f, laneSessionPreference('follow', 'own'));
    try {
      expect((await own.start()).era).toBe('legacy');
      expect(textOf(await own.callTool('echo', { text: 'old' }))).toBe('old era=legacy');
    } finally {
      await own.stop();
    }
  });

  it('follow on a modern-only HTTP server: the legacy lane is refused, older callers share the modern session', async () => {
    const f = await fixture('v2-modern');
    const own = httpSession(f, laneSessionPreference('follow', 'own'));
    const legacy = httpSession(f, laneSessionPreference('follow', 'legacy'));
    try {
      expect((await own.start()).era).toBe('modern');
      await expect(legacy.start()).rejects.toMatchObject({ code: 'MCPX_ERA_MISMATCH' });
    } finally {
      await Promise.all([own.stop(), legacy.stop()]);
    }
  });

  it('a legacy session is ended with DELETE and its session id when mcpx stops', async () => {
    const f = await fixture('v1-legacy-sessions');
    const session = httpSession(f, 'prefer-discover');
    await session.start();
    await session.stop();
    const del = httpRequests(f.log).find((r) => r.httpMethod === 'DELETE');
    expect(del?.headers['mcp-session-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('statuses that are errors, not era evidence (nothing cached)', () => {
  it.each([
    ['500 to everything', ['500'], 'MCPX_UPSTREAM_UNAVAILABLE'],
    ['401', ['401'], 'MCPX_UPSTREAM_UNAUTHORIZED'],
  ])('%s', async (_, args, code) => {
    const f = await fixture('raw-http', args);
    const state = join(dir.path, `state-${args[0]}`);
    const cache = await EraCache.open(state);
    const secret = 'Bearer s3cr3t-token-value';
    const session = httpSession(f, 'prefer-discover', { cache, definition: { url: f.url, headers: { Authorization: secret } } });
    const err = (await session.start().catch((e: unknown) => e)) as Error & { code: string };
    expect(err.code).toBe(code);
    expect(JSON.stringify({ message: err.message, data: (err as { data?: unknown }).data })).not.toContain('s3cr3t');
    await session.stop();
    await cache.whenIdle();
    expect(cache.get(session.cacheKey)).toBeUndefined();
    await expect(stat(join(state, 'upstream-eras.json'))).rejects.toThrow();
  });

  it('a refused connection is an error and leaves the cache untouched', async () => {
    const f = await fixture('v2-dual');
    const url = f.url;
    await f.stop();
    const state = join(dir.path, 'state-refused');
    const cache = await EraCache.open(state);
    const session = new UpstreamSession({ name: 'gone', definition: { url }, preference: 'prefer-discover', cache });
    const err = await session.start().catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'MCPX_UPSTREAM_UNAVAILABLE' });
    expect((err as Error).message).toContain('127.0.0.1');
    await session.stop();
    await cache.whenIdle();
    expect(cache.entries()).toEqual([]);
  });

  it('a slow server is only slow: no probe timeout on HTTP', async () => {
    const f = await fixture('raw-http', ['slow'], { SLOW_MS: '900' });
    const session = httpSession(f, 'prefer-discover', { probeTimeoutMs: 100 });
    try {
      const t0 = Date.now();
      expect((await session.start()).era).toBe('legacy');
      expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
      // discover answered (slowly) before initialize was sent: no initialize alongside on HTTP.
      expect(wire(f).slice(0, 2)).toEqual(['server/discover', 'initialize']);
      const log = readHttpLog(f.log);
      const discoverDone = log.find((e) => e.event === 'response' && e.seq === 1)?.t ?? Infinity;
      const initSent = httpRequests(f.log).find((r) => r.rpcMethod === 'initialize')!.t;
      expect(initSent).toBeGreaterThanOrEqual(discoverDone);
    } finally {
      await session.stop();
    }
  });

  it('a response stream dropped mid-call fails that call; the session serves the next one', async () => {
    const f = await fixture('raw-http', ['drop']);
    const session = httpSession(f, 'prefer-discover');
    try {
      await session.start();
      await expect(session.callTool('drop', {})).rejects.toMatchObject({ code: 'MCPX_TRANSPORT_CLOSED' });
      expect(textOf(await session.callTool('echo', { text: 'still here' }))).toBe('still here era=legacy');
    } finally {
      await session.stop();
    }
  });
});

describe("an expired legacy HTTP session (the chart's renewing state)", () => {
  it('is opened again with a fresh initialize when the server says 404, and the request is sent once more', async () => {
    const f = await fixture('v1-legacy-sessions');
    const { logger, records } = recordingLogger();
    const session = httpSession(f, 'force-initialize', { logger });
    try {
      await session.start();
      expect(textOf(await session.callTool('echo', { text: 'before' }))).toBe('before era=legacy');
      const log = async () => httpRequests(f.log);
      const oldSid = (await log()).filter((r) => r.rpcMethod === 'tools/call').at(-1)!.headers['mcp-session-id'];
      const initsBefore = (await log()).filter((r) => r.rpcMethod === 'initialize').length;
      await fetch(`${f.origin}/kill-sessions`, { method: 'POST' });

      expect(textOf(await session.callTool('echo', { text: 'after' }))).toBe('after era=legacy');
      expect(session.snapshot.value).toBe('ready');
      expect(session.snapshot.context.renewals).toBe(1);

      const wireLog = await log();
      const calls = wireLog.filter((r) => r.rpcMethod === 'tools/call').slice(-2);
      expect(calls[0]!.headers['mcp-session-id']).toBe(oldSid);
      const newSid = calls[1]!.headers['mcp-session-id'];
      expect(newSid).toBeDefined();
      expect(newSid).not.toBe(oldSid);
      const inits = wireLog.filter((r) => r.rpcMethod === 'initialize');
      expect(inits.length).toBe(initsBefore + 1);
      expect(inits.at(-1)!.headers['mcp-session-id']).toBeUndefined();
      // notifications/initialized is its own POST, which may reach the server after the retried call.
      await waitForHttpLog(
        f.log,
        (events) =>
          events.some(
            (e) =>
              e.event === 'request' &&
              (e as { rpcMethod?: string }).rpcMethod === 'notifications/initialized' &&
              (e as { headers: Record<string, string> }).headers['mcp-session-id'] === newSid,
          ),
        30_000,
      );
      expect(records.some((r) => /expired the legacy session/.test(r.msg ?? ''))).toBe(true);
    } finally {
      await session.stop();
    }
  });

  it('that cannot be opened again closes the session (it does not stay ready on a dead connection)', async () => {
    const f = await fixture('v1-legacy-sessions');
    const session = httpSession(f, 'force-initialize');
    try {
      await session.start();
      const closed = new Promise<void>((resolve) => session.once('closed', () => resolve()));
      await fetch(`${f.origin}/kill-sessions?refuse=initialize`, { method: 'POST' });
      await expect(session.callTool('echo', { text: 'after' })).rejects.toMatchObject({
        code: 'MCPX_SESSION_CLOSED',
        message: expect.stringMatching(/would not open the expired legacy session again/),
      });
      await closed;
      expect(session.snapshot.value).toBe('closed');
    } finally {
      await session.stop();
    }
  });
});

describe('the HTTP+SSE fallback (an old server)', () => {
  it('initialize refused with a bare 405 → HTTP+SSE; works end to end; the transport is remembered', async () => {
    const f = await fixture('v1-sse-legacy');
    const state = join(dir.path, 'state-sse');
    const cache = await EraCache.open(state);
    const first = httpSession(f, 'prefer-discover', { cache });
    try {
      expect(await first.start()).toMatchObject({ era: 'legacy', spawns: 2 });
      expect(textOf(await first.callTool('echo', { text: 'old' }))).toBe('old era=legacy');
    } finally {
      await first.stop();
      await cache.whenIdle();
    }
    expect(wire(f).slice(0, 3)).toEqual(['server/discover', 'initialize', 'GET /sse']);
    const saved = JSON.parse(await readFile(join(state, 'upstream-eras.json'), 'utf8'));
    expect(Object.values(saved.servers)).toEqual([expect.objectContaining({ era: 'legacy', transport: 'sse' })]);

    // The next start goes straight to HTTP+SSE: no POST probe at all.
    const before = httpRequests(f.log).length;
    const second = httpSession(f, 'prefer-discover', { cache: await EraCache.open(state) });
    try {
      expect(await second.start()).toMatchObject({ era: 'legacy', eraSource: 'cache', spawns: 1 });
      expect(wire(f).slice(before)[0]).toBe('GET /sse');
      expect(wire(f).slice(before)).not.toContain('server/discover');
    } finally {
      await second.stop();
    }
  });
});

describe('a server declared `type: "sse"`', () => {
  it('is reached over HTTP+SSE directly: GET first, no POST probe', async () => {
    const f = await fixture('v1-sse-legacy');
    const session = new UpstreamSession({ name: 'old', definition: { url: f.url, transport: 'sse' }, preference: 'prefer-discover' });
    try {
      expect(await session.start()).toMatchObject({ era: 'legacy', spawns: 1 });
      expect(textOf(await session.callTool('echo', { text: 'direct' }))).toBe('direct era=legacy');
      expect(wire(f)[0]).toBe('GET /sse');
      expect(wire(f)).not.toContain('server/discover');
    } finally {
      await session.stop();
    }
  });
});

describe('attribution: questions reach the call that provoked them', () => {
  it('two calls in flight on one legacy HTTP session each get their own elicitation/create', async () => {
    const f = await fixture('v1-legacy-sessions');
    const session = httpSession(f, 'prefer-initialize', { clientCapabilities: { elicitation: {} } });
    try {
      await session.start();
      const asked: string[] = [];
      const call = (tag: string, name: string) =>
        session.callTool(
          'ask',
          { tag },
          {
            id: tag,
            relay: answering(async (req, call) => {
              asked.push(`${call.id}:${req.method}`);
              // Hold the first answer back so both questions are open at once.
              await new Promise((r) => setTimeout(r, tag === 'one' ? 150 : 10));
              return { action: 'accept', content: { name } };
            }),
          },
        );
      const [a, b] = await Promise.all([call('one', 'Ada'), call('two', 'Grace')]);
      expect(textOf(a)).toBe('answer=Ada to=one');
      expect(textOf(b)).toBe('answer=Grace to=two');
      expect(asked.sort()).toEqual(['one:elicitation/create', 'two:elicitation/create']);
    } finally {
      await session.stop();
    }
  });
});

describe('SEP-2243 Mcp-Param-* headers on 2026-07-28 Streamable HTTP', () => {
  const b64 = (s: string) => `=?base64?${Buffer.from(s, 'utf8').toString('base64')}?=`;
  const paramHeadersOf = (r: { headers: Record<string, string> }) => Object.fromEntries(Object.entries(r.headers).filter(([k]) => k.startsWith('mcp-param-')));

  it('a tool with invalid x-mcp-header annotations is excluded from listTools (one warning naming it and why) and refused by callTool', async () => {
    const f = await fixture('v2-modern');
    const { logger, records } = recordingLogger();
    const session = httpSession(f, 'prefer-discover', { logger });
    try {
      await session.start();
      const names = (await session.listTools()).map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['echo', 'route']));
      expect(names).not.toContain('bad_number');
      await session.listTools();
      const warnings = records.filter((r) => r.level === 'warn' && r.obj.tool === 'bad_number');
      expect(warnings).toEqual([
        {
          level: 'warn',
          obj: {
            tool: 'bad_number',
            reason: '/properties/score: x-mcp-header "Score" is on a property of type number (type number is not permitted, only integer)',
          },
          msg: 'excluding a tool whose x-mcp-header annotations are invalid (SEP-2243)',
        },
      ]);
      expect(session.excludedTools()).toEqual([{ name: 'bad_number', reason: expect.stringContaining('type number is not permitted') }]);
      await expect(session.callTool('bad_number', { score: 1 })).rejects.toMatchObject({
        code: 'MCPX_BAD_TOOL',
        data: { server: 'remote', tool: 'bad_number', reason: expect.stringContaining('/properties/score') },
      });
      expect(httpRequests(f.log, 'tools/call')).toEqual([]);
    } finally {
      await session.stop();
    }
  });

  it('annotated arguments arrive as Mcp-Param-* headers, encoded, and the SDK server (which checks them against the body) accepts them', async () => {
    const f = await fixture('v2-modern');
    const session = httpSession(f, 'prefer-discover');
    try {
      await session.start();
      await session.listTools();
      const args = { region: 'us-west1', priority: 42, verbose: false, note: 'Hello, 世界', target: { tenant: ' acme ' }, query: 'SELECT 1' };
      expect(textOf(await session.callTool('route', args))).toBe(`routed ${JSON.stringify(args)}`);
      // Absent arguments send no header; an empty string is a value.
      expect(textOf(await session.callTool('route', { region: '' }))).toBe('routed {"region":""}');
      // Control: the same call without the headers is refused by the fixture (HeaderMismatch).
      await expect(session.request('tools/call', { name: 'route', arguments: { region: 'us-west1' } })).rejects.toMatchObject({
        code: 'MCPX_UPSTREAM_ERROR',
        data: { rpcCode: -32020 },
      });
      const [full, empty, bare] = httpRequests(f.log, 'tools/call');
      expect(paramHeadersOf(full!)).toEqual({
        'mcp-param-region': 'us-west1',
        'mcp-param-priority': '42',
        'mcp-param-verbose': 'false',
        'mcp-param-note': '=?base64?SGVsbG8sIOS4lueVjA==?=',
        'mcp-param-tenantid': b64(' acme '),
      });
      expect(full!.headers).toMatchObject({ 'mcp-method': 'tools/call', 'mcp-name': 'route' });
      expect(paramHeadersOf(empty!)).toEqual({ 'mcp-param-region': '' });
      expect(paramHeadersOf(bare!)).toEqual({});
    } finally {
      await session.stop();
    }
  });

  it('a call before any listing lists the tools once first (shared by concurrent calls), then uses that list', async () => {
    const f = await fixture('v2-modern');
    const session = httpSession(f, 'prefer-discover');
    try {
      await session.start();
      const [a, b] = await Promise.all([session.callTool('route', { region: 'eu' }), session.callTool('route', { region: 'us', priority: 7 })]);
      expect([textOf(a), textOf(b)]).toEqual(['routed {"region":"eu"}', 'routed {"region":"us","priority":7}']);
      await session.callTool('echo', { text: 'hi' });
      expect(wire(f)).toEqual(['server/discover', 'tools/list', 'tools/call', 'tools/call', 'tools/call']);
      expect(httpRequests(f.log, 'tools/call').map(paramHeadersOf)).toEqual(
        expect.arrayContaining([{ 'mcp-param-region': 'eu' }, { 'mcp-param-region': 'us', 'mcp-param-priority': '7' }, {}]),
      );
    } finally {
      await session.stop();
    }
  });

  it('an argument the headers cannot carry (an integer that is not one) is refused before anything is sent', async () => {
    const f = await fixture('v2-modern');
    const session = httpSession(f, 'prefer-discover');
    try {
      await session.start();
      await session.listTools();
      await expect(session.callTool('route', { region: 'eu', priority: 1.5 })).rejects.toMatchObject({
        code: 'MCPX_BAD_REQUEST',
        message: 'remote: route: argument "priority" cannot be sent as Mcp-Param-Priority: 1.5 is not an integer',
      });
      expect(httpRequests(f.log, 'tools/call')).toEqual([]);
    } finally {
      await session.stop();
    }
  });

  it('HeaderMismatch from a stale inputSchema: the session re-lists the tools and retries once with the new headers', async () => {
    const f = await fixture('raw-http', ['modern-param-headers']);
    const session = httpSession(f, 'prefer-discover');
    try {
      await session.start();
      await session.listTools(); // the fixture's first listing lacks the annotation
      expect(textOf(await session.callTool('route', { region: 'Zürich' }))).toBe('routed region=Zürich');
      expect(wire(f)).toEqual(['server/discover', 'tools/list', 'tools/call', 'tools/list', 'tools/call']);
      const [stale, fresh] = httpRequests(f.log, 'tools/call');
      expect(paramHeadersOf(stale!)).toEqual({});
      expect(paramHeadersOf(fresh!)).toEqual({ 'mcp-param-region': b64('Zürich') });
      // The next call uses the re-listed schema straight away.
      expect(textOf(await session.callTool('route', { region: 'eu' }))).toBe('routed region=eu');
      expect(wire(f).slice(5)).toEqual(['tools/call']);
    } finally {
      await session.stop();
    }
  });
});
