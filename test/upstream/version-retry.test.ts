/**
 * The -32022 rule (docs/decisions.md, src/machines/verdict.ts versionRefusal) on the real Streamable HTTP
 * path, for the probe and for ordinary modern requests: one retry at the best mutual version — even the
 * version just refused — and a second -32022 for the same request is final. The server is a small
 * 2026-07-28 endpoint on 127.0.0.1 that refuses as each test says, with a 400 as the spec has it.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { UpstreamSession } from '../../src/upstream/session.js';

const MODERN = '2026-07-28';
const META_VERSION = 'io.modelcontextprotocol/protocolVersion';

interface Seen {
  method: string;
  header: string | undefined;
  meta: unknown;
}

/** Refuse the request with -32022 (the nth request of its method, counting from 0), or return undefined to answer it. */
type Refuse = (method: string, nth: number, version: string) => { supported?: string[] } | undefined;

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((done) => (server ? server.close(() => done()) : done()));
  server = undefined;
});

async function endpoint(refuse: Refuse): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  server = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const msg = JSON.parse(body) as { id?: number | string; method: string; params?: { _meta?: Record<string, unknown> } };
      const header = req.headers['mcp-protocol-version'] as string | undefined;
      const meta = msg.params?._meta?.[META_VERSION];
      const nth = seen.filter((s) => s.method === msg.method).length;
      seen.push({ method: msg.method, header, meta });
      const send = (status: number, payload: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id ?? null, ...(payload as object) }));
      };
      const refusal = refuse(msg.method, nth, String(meta));
      if (refusal) {
        const data = refusal.supported ? { supported: refusal.supported, requested: String(meta) } : undefined;
        send(400, { error: { code: -32022, message: 'Unsupported protocol version', ...(data ? { data } : {}) } });
        return;
      }
      if (msg.method === 'server/discover') {
        send(200, {
          result: {
            resultType: 'complete',
            supportedVersions: [MODERN],
            capabilities: { tools: {} },
            ttlMs: 0,
            cacheScope: 'private',
            _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'refuser', version: '1' } },
          },
        });
      } else if (msg.method === 'tools/list') {
        send(200, { result: { resultType: 'complete', tools: [{ name: 'echo', inputSchema: { type: 'object' } }], ttlMs: 0, cacheScope: 'private' } });
      } else {
        send(200, { result: { resultType: 'complete', content: [{ type: 'text', text: 'ok' }] } });
      }
    });
  });
  await new Promise<void>((done) => server!.listen(0, '127.0.0.1', () => done()));
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}/mcp`, seen };
}

const session = (url: string) => new UpstreamSession({ name: 'refuser', definition: { url }, preference: 'prefer-discover' });
const only = (seen: Seen[], method: string) => seen.filter((s) => s.method === method);

describe('-32022: one retry at the best mutual version, even the one just sent; the second refusal is final', () => {
  it('the probe: a first discover refused with a list naming the version it refused is retried at that version', async () => {
    const { url, seen } = await endpoint((method, nth) => (method === 'server/discover' && nth === 0 ? { supported: [MODERN] } : undefined));
    const s = session(url);
    try {
      expect(await s.start()).toMatchObject({ era: 'modern', negotiated: MODERN });
      expect(only(seen, 'server/discover')).toEqual([
        { method: 'server/discover', header: MODERN, meta: MODERN },
        { method: 'server/discover', header: MODERN, meta: MODERN },
      ]);
    } finally {
      await s.stop();
    }
  });

  it('the probe: a refused retry is final (MCPX_NO_COMMON_VERSION, saying so); no third discover, no initialize', async () => {
    const { url, seen } = await endpoint((method) => (method === 'server/discover' ? { supported: [MODERN] } : undefined));
    const s = session(url);
    try {
      const err = await s.start().catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'MCPX_NO_COMMON_VERSION' });
      expect((err as Error).message).toContain('again after its one retry');
      expect(seen.map((x) => x.method)).toEqual(['server/discover', 'server/discover']);
    } finally {
      await s.stop();
    }
  });

  it('an ordinary request refused once is sent again, once, at the version the server lists', async () => {
    const { url, seen } = await endpoint((method, nth) => (method === 'tools/list' && nth === 0 ? { supported: [MODERN] } : undefined));
    const s = session(url);
    try {
      await s.start();
      expect((await s.listTools()).map((t) => t.name)).toEqual(['echo']);
      expect(only(seen, 'tools/list')).toEqual([
        { method: 'tools/list', header: MODERN, meta: MODERN },
        { method: 'tools/list', header: MODERN, meta: MODERN },
      ]);
    } finally {
      await s.stop();
    }
  });

  it('an ordinary request refused twice fails with MCPX_NO_COMMON_VERSION, keeping the upstream error; never a third try', async () => {
    const { url, seen } = await endpoint((method) => (method === 'tools/call' ? { supported: [MODERN] } : undefined));
    const s = session(url);
    try {
      await s.start();
      const err = await s.request('tools/call', { name: 'echo', arguments: {} }).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'MCPX_NO_COMMON_VERSION', data: { rpcCode: -32022, method: 'tools/call', supported: [MODERN] } });
      expect((err as Error).message).toMatch(/tools\/call at 2026-07-28 got -32022 again after its one retry.*final/);
      expect(only(seen, 'tools/call')).toHaveLength(2);
      // The session itself stays usable: the rule is per request.
      expect(await s.request('tools/list')).toMatchObject({ tools: [{ name: 'echo' }] });
    } finally {
      await s.stop();
    }
  });

  it('a refusal naming only legacy revisions, or none mcpx speaks, is final at once; one without a list is the upstream error', async () => {
    const lists: Record<string, string[] | undefined> = { 'prompts/list': ['2025-11-25'], 'resources/list': ['2031-01-01'], 'completion/complete': undefined };
    const { url, seen } = await endpoint((method) => (method in lists ? { ...(lists[method] ? { supported: lists[method] } : {}) } : undefined));
    const s = session(url);
    try {
      await s.start();
      await expect(s.request('prompts/list')).rejects.toMatchObject({
        code: 'MCPX_NO_COMMON_VERSION',
        message: expect.stringContaining('only legacy revisions (2025-11-25)'),
      });
      await expect(s.request('resources/list')).rejects.toMatchObject({ code: 'MCPX_NO_COMMON_VERSION', message: expect.stringContaining('2031-01-01') });
      await expect(s.request('completion/complete')).rejects.toMatchObject({ code: 'MCPX_UPSTREAM_ERROR', data: { rpcCode: -32022 } });
      for (const method of Object.keys(lists)) expect(only(seen, method), method).toHaveLength(1);
    } finally {
      await s.stop();
    }
  });
});
