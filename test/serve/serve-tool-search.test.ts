/**
 * Tool strategies through the built binary (`mcpx serve --tools`, `/mcp?tools=`), with the official SDK
 * clients of both eras (SDK v1: legacy initialize; SDK v2 pinned to 2026-07-28), over stdio and HTTP:
 * - `search`: a client finds and calls a tool of a stopped server in three steps (search_tools →
 *   describe_tools → call_tool), and nothing starts before call_tool; arguments that do not match the
 *   tool's schema come back with the errors and the schema, and nothing is called;
 * - `auto`: a client saying it is Cursor gets a listing within Cursor's cap when there are more tools,
 *   and every tool below it; Claude Code (which defers tools itself) gets every tool;
 * - `--allow-tools` / `--deny-tools` (and `/mcp?allowTools=&denyTools=`): a denied tool is absent from
 *   tools/list, search_tools and describe_tools, and refused on call, by its name and through call_tool;
 * - `GET /v1/tools/search` and `mcpx tools --search` rank as search_tools does, starting nothing;
 * - the front's instructions name the servers and say when to search.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { api, cleanEnv, ForegroundDaemon, killAll, MCPX, mcpx, readJson, until } from '../cli/helpers.js';
import { fixturePids, writeConfig, type ServerEntry } from '../server/helpers.js';
import { tempDir } from '../support/real.js';
import { freePort, textOf, type CallerEra, type Way } from './clients.js';

const SERVERS: Record<string, ServerEntry> = {
  solo: { fixture: 'legacy-v1' },
  other: { fixture: 'dual-v2' },
  // 48 tools: with the others, more than Cursor's 40.
  many: { fixture: 'raw', mode: 'huge', env: { HUGE_TOOLS: '45' } },
  rich: { fixture: 'rich-v2' },
  ask: { fixture: 'asking-v2' },
};

let dir: { path: string; remove: () => Promise<void> };
let env: NodeJS.ProcessEnv;
let state: string;
let socket: string;
let allTools: string[];

/** Every process a server was started as, so far (from its fixture's wire log). */
const started = (server: string): number => (existsSync(join(dir.path, `${server}.wire.log`)) ? fixturePids(dir.path, server).length : 0);

interface Daemon {
  url: string;
  token: string;
  env: NodeJS.ProcessEnv;
  stop(): Promise<unknown>;
}

/** Daemons a test started: each is stopped after its test, whatever happened in it. */
const running: ForegroundDaemon[] = [];

/** A fresh daemon on the state folder the catalogue is in: no server runs. */
async function daemon(): Promise<Daemon> {
  const port = await freePort();
  const denv = { ...env, MCPX_DAEMON_PORT: String(port) };
  const d = await ForegroundDaemon.start(socket, [], { env: denv });
  running.push(d);
  await until(() => existsSync(join(state, 'daemon.json')), 10_000, 'daemon.json');
  return { url: `http://127.0.0.1:${port}/mcp`, token: readJson(join(state, 'daemon.json')).token, env: denv, stop: () => d.stop() };
}

/** The part of both SDK clients used here. */
interface Caller {
  listTools(): Promise<{ tools: Array<Record<string, any>> }>;
  call(name: string, args?: Record<string, unknown>, onprogress?: (p: { progress: number; total?: number }) => void): Promise<Record<string, any>>;
  instructions(): string | undefined;
  close(): Promise<void>;
}

/** An SDK client (v1 legacy, v2 2026-07-28) saying it is `info`, over `mcpx serve ARGS` or `/mcp?QUERY`. */
async function connect(
  era: CallerEra,
  way: Way,
  d: Daemon,
  o: { info?: { name: string; version: string }; args?: string[]; query?: string; answers?: string } = {},
): Promise<Caller> {
  // A caller that can answer an elicitation form, with this name.
  const capabilities = o.answers === undefined ? {} : { elicitation: { form: {} } };
  const answer = { action: 'accept', content: { name: o.answers } };
  const info = o.info ?? { name: 'mcpx-test-caller', version: '1.0.0' };
  const stdio = { command: process.execPath, args: [MCPX, 'serve', ...(o.args ?? [])], env: d.env as Record<string, string>, stderr: 'pipe' as const };
  const url = new URL(`${d.url}${o.query ? `?${o.query}` : ''}`);
  const requestInit = { headers: { authorization: `Bearer ${d.token}` } };
  if (era === 'legacy') {
    const c = new ClientV1(info, { capabilities });
    if (o.answers !== undefined) c.setRequestHandler(ElicitRequestSchema, async () => answer as never);
    await c.connect(way === 'stdio' ? new StdioV1(stdio) : new HttpV1(url, { requestInit }));
    return {
      listTools: () => c.listTools() as never,
      call: (name, args = {}, onprogress) =>
        c.callTool({ name, arguments: args }, undefined, { timeout: 60_000, ...(onprogress ? { onprogress } : {}) }) as never,
      instructions: () => c.getInstructions(),
      close: () => c.close(),
    };
  }
  const c = new ClientV2(info, { capabilities, versionNegotiation: { mode: { pin: '2026-07-28' } } } as never);
  if (o.answers !== undefined) c.setRequestHandler('elicitation/create', async () => answer as never);
  await c.connect(way === 'stdio' ? new StdioV2(stdio) : new HttpV2(url, { requestInit } as never));
  return {
    listTools: () => c.listTools() as never,
    call: (name, args = {}, onprogress) => c.callTool({ name, arguments: args }, { timeout: 60_000, ...(onprogress ? { onprogress } : {}) }) as never,
    instructions: () => (c as unknown as { getInstructions(): string | undefined }).getInstructions(),
    close: () => c.close(),
  };
}

/** The tool names of a search_tools answer, best first. */
const hitsOf = (result: Record<string, any>): string[] => [...textOf(result).matchAll(/^\d+\. ([^\s(]+)\(/gm)].map((m) => m[1]!);

beforeAll(async () => {
  dir = await tempDir('mcpx-tool-search-');
  state = join(dir.path, 'state');
  socket = join(state, 'daemon.sock');
  env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: writeConfig(dir.path, SERVERS) });
  // A first daemon lists every server once (the catalogue), then stops them all.
  const d = await ForegroundDaemon.start(socket, [], { env });
  const listed = await mcpx(['tools', '--json'], { env });
  expect(listed.code, listed.stderr).toBe(0);
  allTools = JSON.parse(listed.stdout).tools.map((t: { exposed: string }) => t.exposed);
  expect(allTools.length).toBeGreaterThan(40);
  await d.stop();
}, 120_000);

afterEach(async () => {
  for (const d of running.splice(0)) await d.stop();
});

afterAll(async () => {
  await killAll();
  await dir?.remove();
});

const COMBOS: Array<[CallerEra, Way]> = [
  ['legacy', 'stdio'],
  ['modern', 'stdio'],
  ['legacy', 'http'],
  ['modern', 'http'],
];

describe('--tools search', () => {
  it.each(COMBOS)(
    'a %s caller over %s finds and calls a tool of a stopped server in three steps',
    async (era, way) => {
      const d = await daemon();
      const c = await connect(era, way, d, way === 'stdio' ? { args: ['--tools', 'search'] } : { query: 'tools=search' });
      try {
        const before = started('solo');
        expect((await c.listTools()).tools.map((t) => t['name'])).toEqual(['search_tools', 'describe_tools', 'call_tool']);

        // 1. search: plain words, not the tool's name.
        const found = await c.call('search_tools', { query: 'send my text back to me', limit: 3 });
        expect(hitsOf(found)).toContain('solo__echo');
        expect(textOf(found)).toMatch(/solo__echo\(text: string\) \[solo\]: Echo the text back with the era/);
        // 2. describe: the full definition.
        const described = JSON.parse(textOf(await c.call('describe_tools', { names: ['solo__echo'] })));
        expect(described.tools[0]).toMatchObject({ name: 'solo__echo', server: 'solo', inputSchema: { properties: { text: { type: 'string' } } } });
        expect(started('solo')).toBe(before); // searching and describing started nothing

        // Arguments that do not match the schema: the errors and the schema, and nothing is called.
        const wrong = await c.call('call_tool', { name: 'solo__echo', arguments: { text: 5 } });
        expect(wrong['isError']).toBe(true);
        expect(textOf(wrong)).toMatch(/do not match the input schema of solo__echo: .*text.*string/);
        expect(textOf(wrong)).toContain('"properties":{"text":{"type":"string"}}');
        expect(started('solo')).toBe(before);

        // 3. call: the stopped server starts on first use.
        expect(textOf(await c.call('call_tool', { name: 'solo__echo', arguments: { text: 'hi' } }))).toBe('hi era=legacy');
        expect(started('solo')).toBe(before + 1);
      } finally {
        await c.close();
        await d.stop();
      }
    },
    120_000,
  );

  it('the instructions name every server and say when to search; a bad strategy is refused', async () => {
    const d = await daemon();
    try {
      const c = await connect('legacy', 'stdio', d, { args: ['--tools', 'search'] });
      try {
        const text = c.instructions() ?? '';
        expect(text).toMatch(new RegExp(`in front of ${Object.keys(SERVERS).length} servers`));
        expect(text).toContain('- rich (4 tools): rich fixture, era='); // from its own instructions
        for (const s of Object.keys(SERVERS)) expect(text).toContain(`- ${s} (`);
        expect(text).toMatch(/Use search_tools/);
        const description = (await c.listTools()).tools.find((t) => t['name'] === 'search_tools')!['description'] as string;
        expect(description).toMatch(/solo \(.*\).*other \(.*\).*many \(.*\).*rich \(rich fixture/);
      } finally {
        await c.close();
      }
      // A 2026-07-28 caller reads them in the server/discover result.
      const modern = await connect('modern', 'http', d, { query: 'tools=search' });
      try {
        expect(modern.instructions()).toMatch(/in front of \d+ servers[^]*Use search_tools/);
      } finally {
        await modern.close();
      }
      const bad = await mcpx(['serve', '--tools', 'some'], { env: d.env, input: '' });
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/--tools must be one of all, search, auto/);
      const res = await fetch(`${d.url}?tools=some`, {
        method: 'POST',
        headers: { authorization: `Bearer ${d.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
        }),
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('MCPX_BAD_REQUEST');
    } finally {
      await d.stop();
    }
  }, 120_000);
});

describe('call_tool is a call like any other', () => {
  it.each(COMBOS)(
    "a %s caller over %s hears the tool's progress and answers its question",
    async (era, way) => {
      const d = await daemon();
      const c = await connect(era, way, d, { ...(way === 'stdio' ? { args: ['--tools', 'search'] } : { query: 'tools=search' }), answers: 'Ada' });
      try {
        const seen: Array<{ progress: number; total?: number }> = [];
        const done = await c.call('call_tool', { name: 'rich__progress', arguments: { steps: 3 } }, (p) =>
          seen.push({ progress: p.progress, total: p.total! }),
        );
        expect(textOf(done)).toMatch(/^progress done steps=3 token=yes era=/);
        expect(seen).toEqual([1, 2, 3].map((progress) => ({ progress, total: 3 })));
        expect(textOf(await c.call('call_tool', { name: 'ask__ask_name', arguments: {} }))).toMatch(/^hello Ada era=/);
      } finally {
        await c.close();
        await d.stop();
      }
    },
    120_000,
  );
});

describe('--tools auto (the default)', () => {
  it.each(['legacy', 'modern'] as const)(
    'gives a %s Cursor a listing within its cap when there are more tools, every tool below it',
    async (era) => {
      const d = await daemon();
      const cursor = { name: 'cursor-vscode', version: '1.0.0' };
      const callers: Caller[] = [];
      try {
        const over = await connect(era, 'http', d, { info: cursor });
        callers.push(over);
        const listed = (await over.listTools()).tools.map((t) => t['name']);
        expect(listed.length).toBeLessThanOrEqual(40);
        expect(listed).toEqual(['search_tools', 'describe_tools', 'call_tool']);
        expect((await over.listTools()).tools.map((t) => t['name'])).toEqual(listed); // kept for the connection
        expect(hitsOf(await over.call('search_tools', { query: 'pad', limit: 2 }))).toHaveLength(2);

        const under = await connect(era, 'http', d, { info: cursor, query: 'servers=solo,other' });
        callers.push(under);
        expect((await under.listTools()).tools.map((t) => t['name'])).toEqual(allTools.filter((n) => /^(solo|other)__/.test(n)));

        // A client that defers tools itself gets every one.
        const claude = await connect(era, 'http', d, { info: { name: 'claude-code', version: '2.1.0' } });
        callers.push(claude);
        expect((await claude.listTools()).tools.map((t) => t['name'])).toEqual(allTools);
      } finally {
        for (const c of callers) await c.close();
        await d.stop();
      }
    },
    120_000,
  );

  it('over stdio, decides by the clientInfo of initialize', async () => {
    const d = await daemon();
    const c = await connect('legacy', 'stdio', d, { info: { name: 'Cursor', version: '1.0.0' } });
    try {
      expect((await c.listTools()).tools.map((t) => t['name'])).toEqual(['search_tools', 'describe_tools', 'call_tool']);
    } finally {
      await c.close();
      await d.stop();
    }
  }, 60_000);
});

describe('--allow-tools and --deny-tools', () => {
  it('a denied tool is absent from tools/list, search_tools and describe_tools, and refused on call', async () => {
    const d = await daemon();
    const callers: Caller[] = [];
    try {
      // Undenied, search finds it: what the denied entries below must not show.
      const open = await connect('modern', 'http', d, { query: 'tools=search' });
      callers.push(open);
      expect(hitsOf(await open.call('search_tools', { query: 'report era and pid' }))).toContain('solo__whoami');

      const soloBefore = started('solo');
      const listing = await connect('legacy', 'stdio', d, { args: ['--tools', 'all', '--deny-tools', 'solo__who*', '--deny-tools', 'many__pad-*'] });
      callers.push(listing);
      const names = (await listing.listTools()).tools.map((t) => t['name']);
      expect(names).toEqual(allTools.filter((n) => n !== 'solo__whoami' && !n.startsWith('many__pad-')));
      await expect(listing.call('solo__whoami')).rejects.toThrow(/Unknown tool: solo__whoami/);
      // By a server's own name (an app's call), a hidden tool is no candidate: `whoami` is other's alone here.
      expect(textOf(await listing.call('whoami'))).toMatch(/^era=\w+ pid=\d+$/);
      expect(started('solo')).toBe(soloBefore);
      expect(textOf(await listing.call('solo__echo', { text: 'ok' }))).toBe('ok era=legacy');

      for (const [era, way] of COMBOS) {
        const c = await connect(
          era,
          way,
          d,
          way === 'stdio' ? { args: ['--tools', 'search', '--deny-tools', 'solo__whoami'] } : { query: 'tools=search&denyTools=solo__whoami' },
        );
        callers.push(c);
        expect(hitsOf(await c.call('search_tools', { query: 'report era and pid', limit: 50 }))).not.toContain('solo__whoami');
        const described = await c.call('describe_tools', { names: ['solo__whoami'] });
        expect(described['isError']).toBe(true);
        expect(JSON.parse(textOf(described)).unknown).toEqual(['solo__whoami']);
        const viaCallTool = await c.call('call_tool', { name: 'solo__whoami' });
        expect(viaCallTool['isError']).toBe(true);
        expect(textOf(viaCallTool)).toMatch(/No tool is named "solo__whoami"/);
        await expect(c.call('solo__whoami')).rejects.toThrow(/Unknown tool: solo__whoami/);
      }

      // --allow-tools: only those.
      const allowed = await connect('modern', 'http', d, { query: 'tools=all&allowTools=solo__*,other__echo' });
      callers.push(allowed);
      expect((await allowed.listTools()).tools.map((t) => t['name'])).toEqual(['solo__echo', 'solo__whoami', 'other__echo']);
    } finally {
      for (const c of callers) await c.close();
      await d.stop();
    }
  }, 180_000);
});

describe('GET /v1/tools/search and mcpx tools --search', () => {
  it('rank as search_tools does, from the catalogue, starting nothing', async () => {
    const d = await daemon();
    const c = await connect('legacy', 'http', d, { query: 'tools=search' });
    try {
      const before = Object.keys(SERVERS).map(started);
      const q = 'echo text';
      const viaTool = hitsOf(await c.call('search_tools', { query: q, limit: 4 }));
      const r = await api(socket, 'GET', `/v1/tools/search?q=${encodeURIComponent(q)}&limit=4`);
      expect(r.status).toBe(200);
      expect(r.body.ok).toBe(true);
      expect(r.body.tools.map((t: { exposed: string }) => t.exposed)).toEqual(viaTool);
      expect(r.body.tools[0]).toEqual({
        server: expect.any(String),
        name: expect.any(String),
        exposed: expect.any(String),
        description: expect.any(String),
        signature: expect.any(String),
        score: expect.any(Number),
      });
      const cli = await mcpx(['tools', '--search', q, '--limit', '4', '--json'], { env: d.env });
      expect(cli.code, cli.stderr).toBe(0);
      expect(JSON.parse(cli.stdout)).toEqual(r.body);
      const table = await mcpx(['tools', '--search', q, '--limit', '4'], { env: d.env });
      expect(table.stdout).toMatch(/^MCP NAME\s+SERVER\s+SCORE\s+DESCRIPTION/);
      expect(Object.keys(SERVERS).map(started)).toEqual(before);

      expect((await api(socket, 'GET', '/v1/tools/search')).status).toBe(400);
      expect((await api(socket, 'GET', '/v1/tools/search?q=x&limit=0')).status).toBe(400);
      expect((await mcpx(['tools', '--limit', '3'], { env: d.env })).code).toBe(2);
    } finally {
      await c.close();
      await d.stop();
    }
  }, 120_000);
});
