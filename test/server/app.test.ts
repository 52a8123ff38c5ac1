/**
 * The /v1 API with `app.inject`, on a real PoolRegistry over the real fixture servers
 * (test/fixtures: SDK v1 legacy-only, SDK v2 dual and modern-only; `echo` answers "<text> era=<era>").
 */
import type { AddressInfo } from 'node:net';
import { Client } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CANONICAL_PREFERENCES, PREFERENCE_ALIASES } from '../../src/machines/preference.js';
import { cookieName, UiHub } from '../../src/ui/hub.js';
import { tempDir } from '../support/real.js';
import { collectEvents } from '../support/sse-events.js';
import { harness, textOf, type Harness } from './helpers.js';

const SECRET_ENV = 's3cr3t-value';
const SECRET_HEADER = 's3cr3t-header';
const LEGACY = '2025-11-25';

async function json(h: Harness, method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await h.app.inject({
    method,
    url,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
  return { status: res.statusCode, body: res.json() as any, text: res.body, headers: res.headers };
}

describe('the /v1 API over real fixture servers', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let h: Harness;
  const seen: string[] = []; // every response body, for the secrets check

  beforeAll(async () => {
    dir = await tempDir('mcpx-api-');
    h = await harness(dir.path, {
      legacy: { fixture: 'legacy-v1' },
      dual: { fixture: 'dual-v2', protocol: 'follow' },
      modern: { fixture: 'modern-v2', protocol: 'follow' },
      secretive: { fixture: 'dual-v2', env: { SECRET_TOKEN: SECRET_ENV } },
      perSession: { fixture: 'dual-v2', mcpx: { scope: 'session' } },
      remote: { url: 'http://127.0.0.1:9/mcp', headers: { Authorization: `Bearer ${SECRET_HEADER}` } },
    });
  });
  afterAll(async () => {
    await h?.close();
    await dir?.remove();
  });

  const get = async (url: string, headers?: Record<string, string>) => {
    const r = await json(h, 'GET', url, undefined, headers);
    seen.push(r.text);
    return r;
  };
  const post = async (url: string, body: unknown, headers?: Record<string, string>) => {
    const r = await json(h, 'POST', url, body, headers);
    seen.push(r.text);
    return r;
  };

  describe.concurrent('reads and calls', () => {
    it('GET /v1/health', async () => {
      const r = await get('/v1/health');
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ ok: true, version: expect.any(String), pid: process.pid });
    });

    it('GET /v1/servers: transport and effective preference, secrets redacted', async () => {
      const r = await get('/v1/servers');
      expect(r.status).toBe(200);
      const by = Object.fromEntries(r.body.servers.map((s: any) => [s.server, s]));
      expect(by.legacy).toMatchObject({ transport: 'stdio', preference: 'prefer-discover', preferenceSource: 'setting', disabled: false });
      expect(by.dual).toMatchObject({ preference: 'follow', preferenceSource: 'server' });
      expect(by.secretive.env).toMatchObject({ SECRET_TOKEN: '<redacted>' });
      expect(by.remote).toMatchObject({ transport: 'http', url: 'http://127.0.0.1:9/mcp', headers: { Authorization: '<redacted>' } });
      expect(r.text).not.toContain('s3cr3t');
    });

    it('POST /v1/call: each era, and the caller protocol header choosing the follow lane', async () => {
      const legacy = await post('/v1/call', { server: 'legacy', tool: 'echo', args: { text: 'a' } });
      expect(legacy.body).toMatchObject({ ok: true });
      expect(textOf(legacy.body)).toBe('a era=legacy');

      const modernCaller = await post('/v1/call', { server: 'dual', tool: 'echo', args: { text: 'b' } });
      expect(textOf(modernCaller.body)).toBe('b era=modern');
      const legacyCaller = await post('/v1/call', { server: 'dual', tool: 'echo', args: { text: 'c' } }, { 'X-Mcpx-Caller-Protocol': LEGACY });
      expect(textOf(legacyCaller.body)).toBe('c era=legacy');

      // modern-only: the legacy lane is refused, legacy callers share the modern session
      const shared = await post('/v1/call', { server: 'modern', tool: 'echo', args: { text: 'd' } }, { 'X-Mcpx-Caller-Protocol': LEGACY });
      expect(textOf(shared.body)).toBe('d era=modern');

      const status = await get('/v1/status');
      const dual = status.body.servers.find((s: any) => s.server === 'dual');
      expect(dual.lanes.map((l: any) => l.lane)).toEqual(['own', 'legacy']);
      expect(dual.lanes[1]).toMatchObject({ instances: 1, max: 1, state: 'available' });
      const lanes = dual.instances.map((i: any) => [i.lane, i.era]).sort();
      expect(lanes).toEqual([
        ['legacy', 'legacy'],
        ['own', 'modern'],
      ]);
      for (const i of dual.instances)
        expect(i).toMatchObject({ id: expect.any(String), pid: expect.any(Number), scopeKey: 'global', holders: 0, uptimeMs: expect.any(Number) });

      const protocol = await get('/v1/protocol');
      const rows = Object.fromEntries(protocol.body.servers.map((s: any) => [s.server, s]));
      expect(rows.legacy).toMatchObject({ preference: 'prefer-discover', era: 'legacy', negotiated: '2025-11-25', eraSource: 'probe', legacyLane: null });
      expect(rows.legacy.cached).toMatchObject({ era: 'legacy', version: '2025-11-25' });
      expect(rows.dual).toMatchObject({ preference: 'follow', era: 'modern', negotiated: '2026-07-28', legacyLane: { state: 'available' } });
      expect(rows.modern).toMatchObject({ preference: 'follow', era: 'modern', legacyLane: { state: 'refused' } });
      expect(rows.remote).toMatchObject({ era: null, negotiated: null, eraSource: null });
    });

    it('GET /v1/tools answers for the lane of X-Mcpx-Caller-Protocol', async () => {
      const modern = await get('/v1/tools?server=dual');
      expect(modern.status).toBe(200);
      expect(modern.body.lanes).toEqual({ dual: 'own' });
      const legacy = await get('/v1/tools?server=dual', { 'X-Mcpx-Caller-Protocol': LEGACY });
      expect(legacy.body.lanes).toEqual({ dual: 'legacy' });
      const names = (b: any) => b.tools.map((t: any) => t.name).sort();
      expect(names(legacy.body)).toContain('legacy_only_ask');
      expect(names(modern.body)).not.toContain('legacy_only_ask');
      expect(modern.body.tools[0]).toMatchObject({ server: 'dual', name: expect.any(String) });
    });

    it('the session id reaches the pool (scope: session), from the body or X-Mcpx-Session', async () => {
      const none = await post('/v1/call', { server: 'perSession', tool: 'echo', args: { text: 'x' } });
      expect(none.status).toBe(400);
      expect(none.body.error).toMatchObject({ code: 'MCPX_BAD_REQUEST', path: ['session'] });
      expect(textOf((await post('/v1/call', { server: 'perSession', tool: 'echo', args: { text: 'x' }, session: 'alice' })).body)).toBe('x era=modern');
      expect(textOf((await post('/v1/call', { server: 'perSession', tool: 'echo', args: { text: 'y' } }, { 'X-Mcpx-Session': 'bob' })).body)).toBe(
        'y era=modern',
      );
      const status = await get('/v1/status');
      const keys = status.body.servers
        .find((s: any) => s.server === 'perSession')
        .instances.map((i: any) => i.scopeKey)
        .sort();
      expect(keys).toEqual(['alice', 'bob']);
    });

    it('upstream and tool failures are ok:false with a stable code; unknown server is 404', async () => {
      const noTool = await post('/v1/call', { server: 'legacy', tool: 'nope', args: {} });
      expect(noTool.status).toBe(200);
      expect(noTool.body.ok).toBe(false);
      expect(noTool.body.error.code).toMatch(/^MCPX_(UPSTREAM_ERROR|TOOL_ERROR)$/);
      const unreachable = await post('/v1/call', { server: 'remote', tool: 'x', args: {} });
      expect(unreachable.status).toBe(200);
      expect(unreachable.body).toMatchObject({ ok: false, error: { code: expect.stringMatching(/^MCPX_/) } });
      expect(unreachable.text).not.toContain('s3cr3t');
      const unknown = await post('/v1/call', { server: 'nosuch', tool: 'echo', args: {} });
      expect(unknown.status).toBe(404);
      expect(unknown.body.error).toMatchObject({ code: 'MCPX_UNKNOWN_SERVER' });
      expect(unknown.body.error.message).toContain('legacy');
      expect((await get('/v1/tools?server=nosuch')).status).toBe(404);
      expect((await get('/v1/statecharts/nosuch')).body.error.code).toBe('MCPX_UNKNOWN_SERVER');
    });

    it('bad bodies, queries and headers are 400 naming the field', async () => {
      const cases: Array<[unknown, Array<string | number>]> = [
        [{ tool: 'echo' }, ['server']],
        [{ server: 'dual' }, ['tool']],
        [{ server: '', tool: 'echo' }, ['server']],
        [{ server: 'dual', tool: 'echo', args: [1] }, ['args']],
        [{ server: 'dual', tool: 'echo', args: 'x' }, ['args']],
        [{ server: 'dual', tool: 'echo', arguments: {} }, ['arguments']],
        [{ server: 'dual', tool: 'echo', timeoutMs: -1 }, ['timeoutMs']],
        [{ server: 'dual', tool: 'echo', session: 5 }, ['session']],
      ];
      for (const [body, path] of cases) {
        const r = await post('/v1/call', body);
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(r.body.error).toMatchObject({ code: 'MCPX_BAD_REQUEST', path, message: expect.stringContaining(String(path[0])) });
      }
      // The one check of what mcpx relays (RELAYED_METHODS): a method outside it never reaches a pool.
      for (const method of ['ping', 'server/discover', 'initialize', 'resources/subscribe', 'tools/list']) {
        const r = await post('/v1/request', { server: 'dual', method, params: {} });
        expect(r.status, method).toBe(400);
        expect(r.body.error).toMatchObject({
          code: 'MCPX_BAD_REQUEST',
          path: ['method'],
          allowed: ['tools/call', 'prompts/get', 'resources/read', 'completion/complete'],
        });
      }
      const header = await post('/v1/call', { server: 'dual', tool: 'echo' }, { 'X-Mcpx-Caller-Protocol': 'yesterday' });
      expect(header.status).toBe(400);
      expect(header.body.error).toMatchObject({ path: ['x-mcpx-caller-protocol'], in: 'headers' });
      const notJson = await h.app.inject({ method: 'POST', url: '/v1/call', headers: { 'content-type': 'application/json' }, payload: '{nope' });
      expect(notJson.statusCode).toBe(400);
      expect(notJson.json().error.code).toBe('MCPX_BAD_REQUEST');
      const noBody = await h.app.inject({ method: 'POST', url: '/v1/call' });
      expect(noBody.statusCode).toBe(400);
      const query = await get('/v1/tools?server=dual&bogus=1');
      expect(query.status).toBe(400);
      expect(query.body.error).toMatchObject({ path: ['bogus'], in: 'query' });
      const format = await get('/v1/statecharts/dual?format=svg');
      expect(format.body.error).toMatchObject({ path: ['format'], allowed: ['json', 'html'] });
      expect((await get('/v1/nothing-here')).body.error.code).toBe('MCPX_NOT_FOUND');
    });

    it('/v1/ask: an unknown ask is 404, a bad body or query is 400 naming the field (the rest: test/server/asks.test.ts)', async () => {
      for (const [method, url] of [
        ['GET', '/v1/ask/nope?waitMs=10'],
        ['POST', '/v1/ask/nope/abandon'],
      ] as const) {
        const r = await h.app.inject({ method, url });
        expect(r.statusCode, url).toBe(404);
        expect(r.json().error).toMatchObject({ code: 'MCPX_NOT_FOUND' });
      }
      const noServer = await post('/v1/ask', { server: 'nobody', tool: 'echo' });
      expect(noServer.status).toBe(404);
      expect(noServer.body.error.code).toBe('MCPX_UNKNOWN_SERVER');
      const badCaps = await post('/v1/ask', { server: 'dual', tool: 'echo', capabilities: { sampling: true } });
      expect(badCaps.status).toBe(400);
      expect(badCaps.body.error).toMatchObject({ code: 'MCPX_BAD_REQUEST', path: ['capabilities', 'sampling'], in: 'body' });
      const badWait = await get('/v1/ask/nope?waitMs=soon');
      expect(badWait.body.error).toMatchObject({ code: 'MCPX_BAD_REQUEST', path: ['waitMs'], in: 'query' });
    });

    it('/mcp refuses a request that is neither a 2026-07-28 request nor a legacy initialize, and an unknown server', async () => {
      const bare = await h.app.inject({
        method: 'POST',
        url: '/mcp',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      });
      expect(bare.statusCode).toBe(400);
      expect(bare.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32000, message: expect.stringContaining('No valid session ID') } });
      const unknown = await h.app.inject({
        method: 'POST',
        url: '/mcp/nobody',
        headers: { 'content-type': 'application/json' },
        payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      });
      expect(unknown.statusCode).toBe(404);
      expect(unknown.json().error).toMatchObject({ code: 'MCPX_UNKNOWN_SERVER' });
      const session = await h.app.inject({
        method: 'POST',
        url: '/mcp',
        headers: { 'content-type': 'application/json', 'mcp-session-id': 'no-such-session' },
        payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      });
      expect(session.statusCode).toBe(404);
    });

    it('GET /v1/openapi.json is generated from the zod schemas', async () => {
      const r = await get('/v1/openapi.json');
      expect(r.body.openapi).toBe('3.1.0');
      const call = r.body.paths['/v1/call'].post;
      const schema = call.requestBody.content['application/json'].schema;
      expect(schema.required).toEqual(expect.arrayContaining(['server', 'tool']));
      expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(['server', 'tool', 'args', 'session']));
      expect(call.parameters.map((p: any) => p.name)).toContain('x-mcpx-caller-protocol');
      expect(r.body.paths['/v1/settings/{path}'].put).toBeDefined();
      expect(r.body.paths['/v1/protocol'].get.responses['200'].content['application/json'].schema.properties.servers).toBeDefined();
    });

    it('GET /v1/statecharts/:server: the session chart with live states highlighted; ?format=html embeds it', async () => {
      await post('/v1/call', { server: 'legacy', tool: 'echo', args: { text: 's' } });
      const r = await get('/v1/statecharts/legacy');
      expect(r.status).toBe(200);
      expect(r.body.server).toBe('legacy');
      expect(r.body.mermaid).toMatch(/^stateDiagram-v2/);
      expect(r.body.instances).toEqual([expect.objectContaining({ lane: 'own', state: 'ready', activeStateIds: ['session_ready'] })]);
      expect(r.body.mermaid).toContain('class session_ready active');
      const page = await h.app.inject({ method: 'GET', url: '/v1/statecharts/legacy?format=html' });
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      expect(page.body).toContain('stateDiagram-v2');
      expect(page.body).toContain('class session_ready active');
      expect(page.body).not.toMatch(/<script[^>]+src="https?:/);
    });
  });

  it('GET /v1/events streams pool events and call.finished', async () => {
    const listening = await h.app2({});
    await listening.listen({ host: '127.0.0.1', port: 0 });
    const port = (listening.server.address() as AddressInfo).port;
    const client = new Client(`http://127.0.0.1:${port}`);
    const ac = new AbortController();
    const events: Array<{ type: string; data: any }> = [];
    try {
      const res = await client.request({ path: '/v1/events?server=secretive', method: 'GET', signal: ac.signal });
      expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
      const reading = collectEvents(res.body, events, (e) => e.type === 'call.finished');
      // the secret, sent by the caller itself, comes back scrubbed: responses never carry a configured secret
      const call = await json(h, 'POST', '/v1/call', { server: 'secretive', tool: 'echo', args: { text: SECRET_ENV } });
      expect(call.body.ok).toBe(true);
      expect(textOf(call.body)).toBe('<redacted> era=modern');
      await reading;
    } finally {
      ac.abort();
      await client.destroy();
    }
    const types = events.map((e) => e.type);
    expect(types).toContain('session.state');
    expect(types).toContain('server.start');
    expect(events.find((e) => e.type === 'session.state')!.data).toMatchObject({
      server: 'secretive',
      instance: expect.any(String),
      lane: 'own',
      state: expect.any(String),
    });
    expect(events.at(-1)).toEqual({
      type: 'call.finished',
      data: { type: 'call.finished', server: 'secretive', tool: 'echo', ok: true, ms: expect.any(Number), lane: 'own' },
    });
  });

  it('no response and no log line carries a configured secret', async () => {
    for (const url of ['/v1/servers', '/v1/status', '/v1/protocol', '/v1/config', '/v1/settings']) seen.push((await get(url)).text);
    for (const text of seen) {
      expect(text).not.toContain(SECRET_ENV);
      expect(text).not.toContain(SECRET_HEADER);
    }
    expect(h.logs.lines.length).toBeGreaterThan(10);
    expect(h.logs.text).not.toContain(SECRET_ENV);
    expect(h.logs.text).not.toContain(SECRET_HEADER);
  });
});

describe('settings through the API', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let h: Harness;
  beforeAll(async () => {
    dir = await tempDir('mcpx-api-settings-');
    h = await harness(
      dir.path,
      {
        idle: { fixture: 'dual-v2' },
        busy: { fixture: 'dual-v2', mcpx: { idleTimeout: '400ms' } },
        own: { fixture: 'dual-v2', protocol: 'force-discover' },
      },
      { extra: { upstream: { eraCache: false } } },
    );
  });
  afterAll(async () => {
    await h?.close();
    await dir?.remove();
  });

  it('GET lists value, default and source; GET one; unknown is 404', async () => {
    const list = await json(h, 'GET', '/v1/settings');
    const protocol = list.body.settings.find((s: any) => s.path === 'upstream.protocol');
    expect(protocol).toMatchObject({
      value: 'prefer-discover',
      default: 'prefer-discover',
      source: 'default',
      env: 'MCPX_UPSTREAM_PROTOCOL',
      flag: '--upstream-protocol',
      allowed: [...CANONICAL_PREFERENCES],
    });
    expect(list.body.settings.find((s: any) => s.path === 'upstream.eraCache')).toMatchObject({ value: false, source: 'file' });
    expect((await json(h, 'GET', '/v1/settings/pool.max')).body).toMatchObject({ path: 'pool.max', value: 4 });
    const unknown = await json(h, 'GET', '/v1/settings/pool.maxx');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatchObject({ code: 'MCPX_UNKNOWN_SETTING', message: expect.stringContaining('pool.max') });
  });

  it('PUT normalises every alias of upstream.protocol, refuses others listing the allowed values', async () => {
    for (const [alias, canonical] of [...Object.entries(PREFERENCE_ALIASES), ...CANONICAL_PREFERENCES.map((c) => [` ${c.toUpperCase()} `, c])]) {
      const r = await json(h, 'PUT', '/v1/settings/upstream.protocol', { value: alias });
      expect(r.status, alias).toBe(200);
      expect(r.body.setting).toMatchObject({ value: canonical, source: 'runtime' });
      expect(r.body.appliesTo).toBe('sessions started from now on');
      const rows = (await json(h, 'GET', '/v1/protocol')).body.servers;
      expect(rows.find((s: any) => s.server === 'idle').preference, alias).toBe(canonical);
      expect(rows.find((s: any) => s.server === 'own').preference).toBe('force-discover'); // a server's own key wins
    }
    const bad = await json(h, 'PUT', '/v1/settings/upstream.protocol', { value: 'newest' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'MCPX_BAD_SETTING', path: ['value'], allowed: [...CANONICAL_PREFERENCES] });
    for (const c of CANONICAL_PREFERENCES) expect(bad.body.error.message).toContain(c);
    expect((await json(h, 'PUT', '/v1/settings/upstream.protocol', {})).body.error).toMatchObject({ code: 'MCPX_BAD_REQUEST', path: ['value'] });
    expect((await json(h, 'PUT', '/v1/settings/pool.scope', { value: 'planet' })).body.error.allowed).toEqual(['global', 'session', 'call']);
    expect((await json(h, 'PUT', '/v1/settings/pool.max', { value: '8' })).body.setting.value).toBe(8);
    expect((await json(h, 'PUT', '/v1/settings/log.level', { value: 'debug' })).body.appliesTo).toBe('now');
    expect((await json(h, 'PUT', '/v1/settings/daemon.port', { value: 8080 })).body.appliesTo).toBe('the next daemon start');
    const del = await json(h, 'DELETE', '/v1/settings/upstream.protocol');
    expect(del.body.setting).toMatchObject({ value: 'prefer-discover', source: 'default' });
  });

  it('a runtime change reaches sessions started afterwards; a busy pool takes it once its instances stop', async () => {
    await json(h, 'DELETE', '/v1/settings/upstream.protocol');
    const first = await json(h, 'POST', '/v1/call', { server: 'busy', tool: 'echo', args: { text: '1' } });
    expect(textOf(first.body)).toBe('1 era=modern');
    const put = await json(h, 'PUT', '/v1/settings/upstream.protocol', { value: 'legacy' });
    expect(put.body.servers.deferred).toContain('busy');
    expect(put.body.servers.applied).toContain('idle');
    let row = (await json(h, 'GET', '/v1/protocol')).body.servers.find((s: any) => s.server === 'busy');
    expect(row).toMatchObject({ preference: 'prefer-discover', pendingPreference: 'prefer-initialize' });
    // the running session keeps what it started with...
    expect(textOf((await json(h, 'POST', '/v1/call', { server: 'idle', tool: 'echo', args: { text: '2' } })).body)).toBe('2 era=legacy');
    // ...and once the busy server's instance idles out, the next session starts under the new value
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      row = (await json(h, 'GET', '/v1/protocol')).body.servers.find((s: any) => s.server === 'busy');
      if (row.preference === 'prefer-initialize') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(row.preference).toBe('prefer-initialize');
    expect(row.pendingPreference).toBeUndefined();
    expect(textOf((await json(h, 'POST', '/v1/call', { server: 'busy', tool: 'echo', args: { text: '3' } })).body)).toBe('3 era=legacy');
  });
});

describe('TCP access rules', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let h: Harness;
  const TOKEN = 'test-token-0123456789';
  beforeAll(async () => {
    dir = await tempDir('mcpx-api-tcp-');
    h = await harness(dir.path, { dual: { fixture: 'dual-v2' } });
  });
  afterAll(async () => {
    await h?.close();
    await dir?.remove();
  });

  it('needs a loopback Host and Origin (403 even with the token), then the bearer token (401)', async () => {
    const tcp = await h.app2({ listener: 'tcp', token: () => TOKEN });
    const req = (headers: Record<string, string>) => tcp.inject({ method: 'GET', url: '/v1/health', headers });
    const auth = { authorization: `Bearer ${TOKEN}` };
    expect((await req({ host: '127.0.0.1:7777' })).statusCode).toBe(401);
    expect((await req({ host: '127.0.0.1:7777', authorization: 'Bearer wrong' })).statusCode).toBe(401);
    const ok = await req({ host: '127.0.0.1:7777', ...auth });
    expect(ok.statusCode).toBe(200);
    expect(ok.body).not.toContain(TOKEN);
    expect((await req({ host: 'localhost', ...auth })).statusCode).toBe(200);
    expect((await req({ host: '[::1]:7777', ...auth })).statusCode).toBe(200);
    for (const headers of <Array<Record<string, string>>>[
      { host: 'evil.example' },
      { host: 'evil.example:7777' },
      { host: '10.0.0.1:7777' },
      { host: '127.0.0.1:7777', origin: 'http://evil.example' },
      { host: '127.0.0.1:7777', origin: 'null' },
    ]) {
      const r = await req({ ...headers, ...auth });
      expect(r.statusCode, JSON.stringify(headers)).toBe(403);
      expect(r.json().error.code).toBe('MCPX_FORBIDDEN');
    }
    expect((await req({ host: '127.0.0.1:7777', origin: 'http://localhost:3000', ...auth })).statusCode).toBe(200);
  });

  it('daemon.auth none drops the token; the Host check stays; the socket listener needs neither', async () => {
    const tcp = await h.app2({ listener: 'tcp', token: () => TOKEN });
    const sock = await h.app2({ listener: 'socket' });
    expect((await sock.inject({ method: 'GET', url: '/v1/health', headers: { host: 'anything' } })).statusCode).toBe(200);
    await h.controller.setSetting('daemon.auth', 'none');
    try {
      expect((await tcp.inject({ method: 'GET', url: '/v1/health', headers: { host: '127.0.0.1' } })).statusCode).toBe(200);
      expect((await tcp.inject({ method: 'GET', url: '/v1/health', headers: { host: 'evil.example' } })).statusCode).toBe(403);
    } finally {
      await h.controller.unsetSetting('daemon.auth');
    }
  });

  it("the page's cookie stands in for the token on the routes that admit it (the page's reads), no other", async () => {
    const ui = new UiHub();
    const tcp = await h.app2({ listener: 'tcp', token: () => TOKEN, ui });
    const secret = ui.redeem(ui.newCode().code)!;
    const host = '127.0.0.1:7777';
    const cookie = `${cookieName(7777)}=${secret}`;
    const status = async (method: 'GET' | 'POST', url: string, headers: Record<string, string> = {}) =>
      (await tcp.inject({ method, url, headers: { host, ...headers } })).statusCode;
    for (const url of ['/v1/status', '/v1/protocol', '/v1/statecharts/dual', '/ui/', '/ui/api/state']) {
      expect(await status('GET', url), url).toBe(401);
      expect(await status('GET', url, { cookie }), url).toBe(200);
    }
    for (const url of ['/v1/servers', '/v1/config', '/v1/settings']) expect(await status('GET', url, { cookie }), url).toBe(401);
    expect(await status('POST', '/v1/reload', { cookie })).toBe(401);
    expect(await status('POST', '/v1/ui/login', { cookie })).toBe(401);
    expect(await status('GET', '/v1/status', { cookie: `${cookieName(7777)}=forged` })).toBe(401);
    // The login route needs no token: its code is the credential (a wrong one is its own 401).
    const login = await tcp.inject({ method: 'GET', url: `/ui/login?code=${ui.newCode().code}`, headers: { host } });
    expect(login.statusCode).toBe(303);
  });

  it('while the daemon stops, only the routes declared whileStopping (health, status) answer; the rest get 503', async () => {
    const stopping = await h.app2({ isStopping: () => true });
    for (const url of ['/v1/health', '/v1/status']) expect((await stopping.inject({ method: 'GET', url })).statusCode, url).toBe(200);
    for (const [method, url] of <Array<['GET' | 'POST', string]>>[
      ['GET', '/v1/servers'],
      ['POST', '/v1/call'],
      ['GET', '/v1/no-such-route'],
      ['POST', '/mcp'],
      ['GET', '/ui/'],
    ]) {
      const r = await stopping.inject({ method, url });
      expect(r.statusCode, url).toBe(503);
      expect(r.json().error.code, url).toBe('MCPX_SHUTTING_DOWN');
    }
  });
});
