/**
 * End to end through the BUILT BINARY (MCPX: the bundle, or an installed package's `mcpx` via
 * MCPX_TEST_BIN): every upstream transport × every way a user calls a tool.
 *
 * Upstreams (test/e2e/helpers.ts): stdio legacy-only, modern-only and dual; Streamable HTTP SDK v2
 * modern-only, SDK v2 dual and SDK v1 legacy with sessions; HTTP+SSE found by the probe and declared.
 * Callers: `mcpx call`, `POST /v1/call` on the Unix socket, `mcpx serve` under an SDK client of each era
 * (2025-11-25, 2026-07-28), and `/mcp` on the daemon's TCP port under an SDK client of each era.
 *
 * Why: the bundle is what ships, and it once broke every HTTP upstream ("Agent is not a constructor")
 * while the suite stayed green, because no test drove the binary against an HTTP upstream. Each cell
 * checks the tool's own answer, whose era suffix is the fixture's word for the era that served it; then
 * `mcpx protocol --json` and the upstreams' logs confirm the era and that the requests arrived.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, mcpx, mcpxJson } from '../cli/helpers.js';
import { httpRequests, type HttpRequestEvent } from '../fixtures/http/log.js';
import { readWireLog, received } from '../fixtures/wire-log-read.js';
import { httpCaller, stdioCaller, textOf, type McpCaller } from '../serve/clients.js';
import { REVISION, startMatrix, UPSTREAMS, type Matrix, type Upstream } from './helpers.js';

/** One way of calling `echo` on a server; resolves to the answer's text (a failure throws with the reason). */
interface Caller {
  name: string;
  call(server: string, text: string): Promise<string>;
}

let m: Matrix;
/** Every MCP client started, closed in afterAll (each ends the `mcpx serve` it spawned). */
const clients: Array<Promise<McpCaller>> = [];

function mcpCaller(name: string, connect: (stderr: (line: string) => void) => Promise<McpCaller>): Caller {
  // One client per caller, connected by its first cell and shared by the others (concurrent calls on one session).
  let session: Promise<{ client: McpCaller; tools: string[] }> | undefined;
  let stderr = '';
  const open = () => {
    if (!session) {
      const client = connect((line) => (stderr += line));
      clients.push(client);
      session = client.then(async (c) => ({ client: c, tools: (await c.listTools()).tools.map((t) => t['name'] as string) }));
    }
    return session;
  };
  return {
    name,
    async call(server, text) {
      const { client, tools } = await open();
      // tools/list reaches every upstream too: the catalogue lists each server on the spot. A server that
      // failed is just missing there, so the failure message carries the daemon's reason.
      if (!tools.includes(`${server}__echo`)) {
        const why = await api(m.socket, 'GET', `/v1/tools?server=${encodeURIComponent(server)}`);
        expect.fail(`tools/list of ${name} has no ${server}__echo; GET /v1/tools says: ${why.text}`);
      }
      const r = await client.callTool(`${server}__echo`, { text });
      expect(r['isError'] ?? false, `${textOf(r)}\n${stderr}`).toBe(false);
      return textOf(r);
    },
  };
}

const CALLERS: Caller[] = [
  {
    name: 'mcpx call',
    async call(server, text) {
      const r = await mcpx(['call', server, 'echo', JSON.stringify({ text })], { env: m.env, timeoutMs: 60_000 });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      return r.stdout.replace(/\n$/, '');
    },
  },
  {
    name: 'POST /v1/call',
    async call(server, text) {
      const r = await api(m.socket, 'POST', '/v1/call', { server, tool: 'echo', args: { text } });
      expect(r.status, r.text).toBe(200);
      expect(r.body.ok, r.text).toBe(true);
      expect(r.body.result.content).toHaveLength(1);
      expect(r.body.result.content[0].type).toBe('text');
      return r.body.result.content[0].text as string;
    },
  },
  mcpCaller('mcpx serve, 2025-11-25 caller', (stderr) => stdioCaller('legacy', { env: m.env, stderr })),
  mcpCaller('mcpx serve, 2026-07-28 caller', (stderr) => stdioCaller('modern', { env: m.env, stderr })),
  mcpCaller('/mcp, 2025-11-25 caller', () => httpCaller('legacy', { url: m.url, token: m.token })),
  mcpCaller('/mcp, 2026-07-28 caller', () => httpCaller('modern', { url: m.url, token: m.token })),
];

/** The text each caller sends: the answer must be this call's, not another's. */
const word = (c: Caller) => c.name.replace(/[^a-z0-9]+/gi, '-');

beforeAll(async () => {
  m = await startMatrix('mcpx-e2e-transports-');
}, 60_000);

afterAll(async () => {
  // Each MCP client ends what it started (`mcpx serve`); then the daemon and the fixtures.
  await Promise.all(
    clients.map((c) =>
      c.then(
        (x) => x.close(),
        () => undefined,
      ),
    ),
  );
  await m?.stop();
});

describe.concurrent('every caller × every upstream transport: echo answers in the expected era', () => {
  for (const c of CALLERS) {
    for (const u of UPSTREAMS) {
      it(`${c.name} → ${u.name} (${u.transport}, ${u.era})`, async () => {
        expect(await c.call(u.name, word(c))).toBe(`${word(c)} era=${u.era}`);
      });
    }
  }
});

describe('what the daemon and the upstreams say afterwards', () => {
  it('mcpx protocol --json: each server in the era of the table (prefer-discover)', async () => {
    const report = await mcpxJson<{ servers: Array<Record<string, any>> }>(['protocol'], { env: m.env });
    const rows = Object.fromEntries(report.servers.map((s) => [s['server'] as string, s]));
    expect(Object.keys(rows).sort()).toEqual(UPSTREAMS.map((u) => u.name).sort());
    for (const u of UPSTREAMS) {
      const row = rows[u.name]!;
      expect(row, u.name).toMatchObject({ preference: 'prefer-discover', era: u.era, negotiated: REVISION[u.era], eraSource: 'probe', legacyLane: null });
      // What was found is cached; over HTTP+SSE the record says so (the next start goes straight there).
      expect(row['cached'], u.name).toMatchObject({ era: u.era, version: REVISION[u.era] });
      expect(row['cached']['transport'], u.name).toBe(u.transport === 'sse' ? 'sse' : undefined);
    }
  });

  it('mcpx tools --json: every upstream lists its echo', async () => {
    const r = await mcpx(['tools', '--json'], { env: m.env, timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(0);
    const body = JSON.parse(r.stdout);
    expect(body.errors).toEqual([]);
    for (const u of UPSTREAMS) expect(body.tools, u.name).toContainEqual(expect.objectContaining({ server: u.name, name: 'echo', exposed: `${u.name}__echo` }));
  });

  it('each HTTP fixture received one tools/call per caller, in the era and the transport expected', () => {
    const calls = (name: string): HttpRequestEvent[] => httpRequests(m.http[name]!.log, 'tools/call');
    for (const u of UPSTREAMS.filter((x) => x.http)) {
      expect(calls(u.name), u.name).toHaveLength(CALLERS.length);
    }
    // Streamable HTTP, modern: discovered, never initialized; every call says MCP-Protocol-Version 2026-07-28.
    for (const name of ['http-modern', 'http-dual']) {
      for (const req of calls(name))
        expect(req, name).toMatchObject({ httpMethod: 'POST', path: '/mcp', headers: { 'mcp-protocol-version': REVISION.modern } });
      expect(httpRequests(m.http[name]!.log, 'server/discover').length, name).toBeGreaterThan(0);
      expect(httpRequests(m.http[name]!.log, 'initialize'), name).toEqual([]);
    }
    // Streamable HTTP, legacy: initialized, then calls in the session it minted.
    expect(httpRequests(m.http['http-legacy']!.log, 'initialize').length).toBeGreaterThan(0);
    for (const req of calls('http-legacy')) {
      expect(req.headers['mcp-protocol-version']).toBe(REVISION.legacy);
      expect(req.headers['mcp-session-id']).toMatch(/^[0-9a-f-]{36}$/);
    }
    // HTTP+SSE: calls are POSTs to the endpoint the stream named; the stream is a GET of /sse.
    for (const name of ['sse', 'sse-declared']) {
      for (const req of calls(name)) expect(req, name).toMatchObject({ httpMethod: 'POST', path: expect.stringMatching(/^\/messages\?sessionId=/) });
      expect(
        httpRequests(m.http[name]!.log).some((r) => r.httpMethod === 'GET' && r.path === '/sse'),
        name,
      ).toBe(true);
    }
    // Found by the probe: a Streamable HTTP POST to /sse came first; declared: no such attempt.
    expect(httpRequests(m.http['sse']!.log).filter((r) => r.httpMethod === 'POST' && r.path === '/sse').length).toBeGreaterThan(0);
    expect(httpRequests(m.http['sse-declared']!.log).filter((r) => r.httpMethod === 'POST' && r.path === '/sse')).toEqual([]);
  });

  it('each stdio fixture received one tools/call per caller, in the era expected', () => {
    for (const u of UPSTREAMS.filter((x): x is Upstream & { stdio: string } => x.stdio !== undefined)) {
      const recv = received(readWireLog(m.wireLog(u.name)));
      const calls = recv.filter((e) => e.method === 'tools/call');
      expect(calls, u.name).toHaveLength(CALLERS.length);
      // A modern request names its revision in _meta; a legacy session was initialized at 2025-11-25.
      if (u.era === 'modern') for (const e of calls) expect(e.version, u.name).toBe(REVISION.modern);
      else {
        expect(
          recv.filter((e) => e.method === 'initialize').map((e) => e.version),
          u.name,
        ).toContain(REVISION.legacy);
        // A 2026-07-28 caller's revision is not passed on to a legacy server.
        for (const e of calls) expect(e.version, u.name).toBeUndefined();
      }
    }
  });
});
