/**
 * End to end through `mcpx serve` and `/mcp`: what a caller sees besides tools (prompts, resources,
 * templates, completions), the naming rules with real clients, passthrough and --servers, progress,
 * cancellation reaching the upstream, a crashed upstream mid-call, and changes reaching connected
 * callers (a config reload; an upstream's own list_changed).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { methodsReceived, readWireLog } from '../fixtures/wire-log-read.js';
import { writeConfig, type ServerEntry } from '../server/helpers.js';
import { killAll, MCPX, mcpxJson, until } from '../cli/helpers.js';
import { httpCaller, startServeDaemon, stdioCaller, textOf, type CallerEra, type McpCaller, type Way } from './clients.js';

const LONG_TOOL = `a_tool_whose_name_is_much_longer_than_the_sixty_four_characters_${'x'.repeat(6)}`;

describe('mcpx serve and /mcp: features', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let env: NodeJS.ProcessEnv;
  let url: string;
  let token: string;
  let config: string;
  let servers: Record<string, ServerEntry>;

  beforeAll(async () => {
    servers = {
      rich: { fixture: 'rich-v2' },
      richlegacy: { fixture: 'rich-v2', protocol: 'prefer-initialize' },
      tools: { fixture: 'serve-tools' },
      legacy: { fixture: 'legacy-v1' },
    };
    const d = await startServeDaemon('mcpx-serve-features-', servers);
    dir = { path: d.dir, remove: d.remove };
    ({ env, url, token, config } = d);
  }, 60_000);
  afterAll(async () => {
    await killAll();
    await dir?.remove();
  });

  const connect = (era: CallerEra, way: Way, args: string[] = [], path = ''): Promise<McpCaller> =>
    way === 'stdio' ? stdioCaller(era, { env, args }) : httpCaller(era, { url: `${url}${path}`, token });

  async function using<T>(caller: McpCaller | Promise<McpCaller>, fn: (c: McpCaller) => Promise<T>): Promise<T> {
    const c = await caller;
    try {
      return await fn(c);
    } finally {
      await c.close();
    }
  }

  for (const [era, way] of [
    ['legacy', 'stdio'],
    ['modern', 'http'],
    ['legacy', 'http'],
    ['modern', 'stdio'],
  ] as const) {
    it(
      `prompts, resources, templates and completions for a ${era} caller over ${way}`,
      () =>
        using(connect(era, way), async (c) => {
          const { prompts } = await c.listPrompts();
          expect(prompts.map((p) => p['name'])).toEqual(expect.arrayContaining(['rich__greet', 'richlegacy__greet']));
          expect(prompts.find((p) => p['name'] === 'rich__greet')).toMatchObject({
            description: 'Greet someone',
            arguments: [{ name: 'name', required: true }],
          });
          const got = await c.getPrompt('rich__greet', { name: 'ada' });
          expect(got['messages'][0].content.text).toBe('hello ada era=modern');
          const legacyGot = await c.getPrompt('richlegacy__greet', { name: 'grace' });
          expect(legacyGot['messages'][0].content.text).toBe('hello grace era=legacy');

          const { resources } = await c.listResources();
          expect(resources.filter((r) => r['uri'] === 'note://hello')).toHaveLength(1); // both rich servers list it: the first serves it
          const read = await c.readResource('note://hello');
          expect(read['contents'][0]).toMatchObject({ uri: 'note://hello', text: 'hello note era=modern' });
          const { resourceTemplates } = await c.listResourceTemplates();
          expect(resourceTemplates.map((t) => t['uriTemplate'])).toContain('note://{topic}');
          const topic = await c.readResource('note://beta');
          expect(topic['contents'][0].text).toBe('note about beta era=modern');
          await expect(c.readResource('nothing://here')).rejects.toThrow();

          const done = await c.raw.complete({ ref: { type: 'ref/prompt', name: 'rich__greet' }, argument: { name: 'name', value: 'a' } });
          expect(done.completion.values).toEqual(['ada', 'alan']);
          const topics = await c.raw.complete({ ref: { type: 'ref/resource', uri: 'note://{topic}' }, argument: { name: 'topic', value: 'b' } });
          expect(topics.completion.values).toEqual(['beta']);
        }),
      60_000,
    );
  }

  it('/mcp keeps the /v1 access rules (token, loopback Host and Origin) and the 2026-07-28 header rules', async () => {
    const { request } = await import('undici');
    const port = new URL(url).port;
    const modernBody = (id: number, method: string, params: Record<string, unknown> = {}) =>
      JSON.stringify({
        jsonrpc: '2.0',
        id,
        method,
        params: {
          ...params,
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': {},
            'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' },
          },
        },
      });
    const post = async (headers: Record<string, string>, body: string, target = url) => {
      const r = await request(target, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body,
      });
      return { status: r.statusCode, text: await r.body.text() };
    };
    const good = { authorization: `Bearer ${token}`, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' };
    expect((await post(good, modernBody(1, 'tools/list'))).status).toBe(200);
    // no token, a wrong token
    expect((await post({ ...good, authorization: '' }, modernBody(1, 'tools/list'))).status).toBe(401);
    expect((await post({ ...good, authorization: 'Bearer nope' }, modernBody(1, 'tools/list'))).status).toBe(401);
    // a browser page on another origin; DNS rebinding (a foreign Host that resolves to loopback)
    expect((await post({ ...good, origin: 'https://evil.example' }, modernBody(1, 'tools/list'))).status).toBe(403);
    expect((await post({ ...good, host: `evil.example:${port}` }, modernBody(1, 'tools/list'))).status).toBe(403);
    expect((await post({ ...good, origin: `http://localhost:${port}` }, modernBody(1, 'tools/list'))).status).toBe(200);
    // headers that disagree with the body, or are missing: 400 with -32020 (HeaderMismatch)
    const mismatch = await post({ ...good, 'mcp-method': 'prompts/list' }, modernBody(1, 'tools/list'));
    expect(mismatch.status).toBe(400);
    expect(mismatch.text).toContain('-32020');
    const noVersion = await post({ authorization: `Bearer ${token}`, 'mcp-method': 'tools/list' }, modernBody(1, 'tools/list'));
    expect(noVersion.status).toBe(400);
    const wrongName = await post(
      { ...good, 'mcp-method': 'tools/call', 'mcp-name': 'other__tool' },
      modernBody(2, 'tools/call', { name: 'rich__echo', arguments: { text: 'x' } }),
    );
    expect(wrongName.status).toBe(400);
    expect(wrongName.text).toContain('-32020');
    const rightName = await post(
      { ...good, 'mcp-method': 'tools/call', 'mcp-name': 'rich__echo' },
      modernBody(2, 'tools/call', { name: 'rich__echo', arguments: { text: 'x' } }),
    );
    expect(rightName.status).toBe(200);
    expect(rightName.text).toContain('x era=modern');
  }, 60_000);

  it('names: long and dotted tool names within the rules, and the mapping mcpx tools shows is the one clients get', async () => {
    const cli = await mcpxJson<{ tools: Array<{ server: string; name: string; exposed: string }> }>(['tools'], { env });
    await using(await connect('legacy', 'stdio'), async (c) => {
      const { tools } = await c.listTools();
      const names = tools.map((t) => t['name'] as string);
      for (const n of names) expect(n).toMatch(/^[A-Za-z0-9_.-]{1,64}$/);
      expect(names).toContain('tools__dotted.name-1');
      const long = cli.tools.find((t) => t.server === 'tools' && t.name === LONG_TOOL)!;
      expect(long.exposed).toHaveLength(64);
      expect(long.exposed).toMatch(/-[0-9a-f]{6}$/);
      expect(names).toContain(long.exposed);
      expect(textOf(await c.callTool(long.exposed))).toBe('long');
      // every name the CLI shows is a name the client was given, and nothing else
      expect(new Set(names)).toEqual(new Set(cli.tools.map((t) => t.exposed)));
      // the same tool name on two servers is two names
      expect(names).toEqual(expect.arrayContaining(['rich__echo', 'richlegacy__echo', 'tools__echo', 'legacy__echo']));
    });
  }, 60_000);

  it('--passthrough serves one server under its own names; --servers limits what a connection sees', async () => {
    await using(await connect('modern', 'stdio', ['--passthrough', 'rich']), async (c) => {
      const { tools } = await c.listTools();
      const names = tools.map((t) => t['name']);
      expect(names).toEqual(expect.arrayContaining(['add_tool', 'echo', 'progress']));
      for (const n of names) expect(n).not.toMatch(/__/); // its own names, no server prefix
      expect(textOf(await c.callTool('echo', { text: 'pt' }))).toBe('pt era=modern');
      expect((await c.listPrompts()).prompts.map((p) => p['name'])).toEqual(['greet']);
      expect((await c.getPrompt('greet', { name: 'alan' }))['messages'][0].content.text).toBe('hello alan era=modern');
      expect((await c.readResource('note://alpha'))['contents'][0].text).toBe('note about alpha era=modern');
    });
    await using(await connect('legacy', 'http', [], '/tools'), async (c) => {
      const { tools } = await c.listTools();
      expect(tools.map((t) => t['name'])).toEqual(expect.arrayContaining(['echo', 'sleep', LONG_TOOL]));
      expect(textOf(await c.callTool(LONG_TOOL))).toBe('long');
    });
    await using(await connect('legacy', 'stdio', ['--servers', 'legacy,tools']), async (c) => {
      const names = (await c.listTools()).tools.map((t) => t['name'] as string);
      expect(names.length).toBeGreaterThan(0);
      for (const n of names) expect(n.startsWith('legacy__') || n.startsWith('tools__')).toBe(true);
      // a name stays the same whatever a connection is limited to
      expect(names).toContain('legacy__echo');
      expect((await c.listPrompts()).prompts).toEqual([]);
    });
    const bad = await stdioCaller('legacy', { env, args: ['--passthrough', 'nobody'] }).then(
      (c) => c.close().then(() => 'connected'),
      (err: unknown) => String(err),
    );
    expect(bad).not.toBe('connected');
  }, 60_000);

  for (const [era, way] of [
    ['modern', 'http'],
    ['legacy', 'http'],
  ] as const) {
    it(
      `progress reaches a ${era} caller over ${way} with its own token`,
      () =>
        using(connect(era, way), async (c) => {
          const seen: Array<{ progress: number; total?: number }> = [];
          const r = await c.callTool('rich__progress', { steps: 3 }, { onprogress: (p) => seen.push({ progress: p.progress, total: p.total! }) });
          expect(textOf(r)).toBe('progress done steps=3 token=yes era=modern');
          expect(seen).toEqual([
            { progress: 1, total: 3 },
            { progress: 2, total: 3 },
            { progress: 3, total: 3 },
          ]);
        }),
      60_000,
    );
  }

  for (const era of ['legacy', 'modern'] as const)
    it(`progress reaches a ${era} caller over stdio with its own token, before the result (read off the wire)`, async () => {
      // The SDK clients drop progress that arrives in the same read as the result (they handle
      // notifications a tick later than responses), so this reads serve's stdout itself.
      const child = spawn(process.execPath, [MCPX, 'serve'], { env, stdio: ['pipe', 'pipe', 'inherit'] });
      try {
        const lines: any[] = [];
        let buf = '';
        child.stdout.on('data', (d: Buffer) => {
          buf += d.toString();
          let i: number;
          while ((i = buf.indexOf('\n')) !== -1) {
            lines.push(JSON.parse(buf.slice(0, i)));
            buf = buf.slice(i + 1);
          }
        });
        const send = (m: unknown) => child.stdin.write(`${JSON.stringify(m)}\n`);
        const meta: Record<string, unknown> = { progressToken: 'tok-7' };
        if (era === 'legacy') {
          send({
            jsonrpc: '2.0',
            id: 0,
            method: 'initialize',
            params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'wire', version: '1' } },
          });
          await until(() => lines.some((l) => l.id === 0), 20_000, 'the initialize answer');
          send({ jsonrpc: '2.0', method: 'notifications/initialized' });
        } else {
          Object.assign(meta, {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': {},
            'io.modelcontextprotocol/clientInfo': { name: 'wire', version: '1' },
          });
        }
        send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'rich__progress', arguments: { steps: 3 }, _meta: meta } });
        await until(() => lines.some((l) => l.id === 1), 20_000, "the call's answer");
        const after = lines.slice(lines.findIndex((l) => l.id === 0) + 1);
        expect(after.map((l) => (l.id === 1 ? 'result' : `${l.method} ${l.params?.progressToken} ${l.params?.progress}/${l.params?.total}`))).toEqual([
          'notifications/progress tok-7 1/3',
          'notifications/progress tok-7 2/3',
          'notifications/progress tok-7 3/3',
          'result',
        ]);
        expect(after[3].result.content[0].text).toBe('progress done steps=3 token=yes era=modern');
      } finally {
        child.stdin.end();
        child.kill();
      }
    }, 60_000);

  it('a caller cancelling a call cancels the upstream request; a crash mid-call is an isError result naming the server, and the next call works', async () => {
    await using(await connect('legacy', 'stdio'), async (c) => {
      const wire = () => methodsReceived(readWireLog(join(dir.path, 'tools.wire.log')));
      const count = (m: string) => wire().filter((x) => x === m).length;
      await c.callTool('tools__echo', { text: 'warm' });
      const calls = count('tools/call');
      const cancels = count('notifications/cancelled');
      const ac = new AbortController();
      const pending = c.callTool('tools__sleep', { ms: 60_000 }, { signal: ac.signal });
      await until(() => count('tools/call') > calls, 20_000, 'the sleep call upstream');
      ac.abort();
      await expect(pending).rejects.toThrow();
      await until(() => count('notifications/cancelled') > cancels, 20_000, 'notifications/cancelled upstream');

      const crashed = await c.callTool('tools__crash');
      expect(crashed['isError']).toBe(true);
      expect(textOf(crashed)).toMatch(/^mcpx: tools: MCPX_TRANSPORT_CLOSED: .*exit code 3/);
      expect(textOf(await c.callTool('tools__echo', { text: 'after' }))).toBe('after era=modern');
    });
  }, 60_000);

  it('changes reach connected callers: an upstream list_changed and a config reload', async () => {
    const legacy = await connect('legacy', 'stdio');
    const modernChanges: unknown[] = [];
    const { Client } = await import('@modelcontextprotocol/client');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
    const modern = new Client({ name: 'listener', version: '1' }, {
      versionNegotiation: { mode: { pin: '2026-07-28' } },
      listChanged: { tools: { onChanged: (_err: unknown, tools: unknown) => modernChanges.push(tools) } },
    } as never);
    await modern.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } } as never));
    try {
      let legacyNotes = 0;
      legacy.raw.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        legacyNotes++;
      });
      await legacy.listTools();
      // richlegacy speaks legacy to its upstream: adding a tool there makes it send list_changed
      expect(textOf(await legacy.callTool('richlegacy__add_tool', { name: 'brand_new' }))).toBe('registered brand_new era=legacy');
      await until(() => legacyNotes > 0, 20_000, 'list_changed at the legacy caller');
      expect((await legacy.listTools()).tools.map((t) => t['name'])).toContain('richlegacy__brand_new');
      await until(() => modernChanges.length > 0, 20_000, "list_changed on the modern caller's listen stream");

      // a server added to the config file appears for connected callers
      const before = legacyNotes;
      writeConfig(dir.path, { ...servers, added: { fixture: 'legacy-v1' } }, {}, config);
      await until(() => legacyNotes > before, 20_000, 'list_changed after the config reload');
      await until(async () => (await legacy.listTools()).tools.some((t) => t['name'] === 'added__echo'), 20_000, "the added server's tools");
      expect(readFileSync(config, 'utf8')).toContain('added');
    } finally {
      writeConfig(dir.path, servers, {}, config);
      await legacy.close();
      await modern.close();
    }
  }, 90_000);
});
