/**
 * One server's malformed listing costs a client nothing else (docs/serving.md, what a caller sees):
 * through the built binary, server-gitlab 2025.4.25's tools as a fresh install lists them (inputSchema
 * `{"$schema": …}` alone, replayed from a file) are served repaired and still called; what cannot be made
 * valid is left out and named by `mcpx tools` and `mcpx doctor`; the SDK v1 and v2 clients of `mcpx serve` list every
 * other server's tools, prompts and resources. The real server-gitlab runs behind mcpx alongside.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-info.js';
import { killAll, mcpx, mcpxJson, until } from '../cli/helpers.js';
import { fixtureEntry } from '../server/helpers.js';
import { startServeDaemon, stdioCaller, textOf, type CallerEra, type ServeDaemon } from './clients.js';

const REPLAY = join(packageRoot(), 'test', 'fixtures', 'replay-listing.mjs');
const GITLAB_FRESH = join(packageRoot(), 'test', 'fixtures', 'listings', 'server-gitlab-2025.4.25-fresh-install.json');
const GITLAB = join(packageRoot(), 'node_modules', '@modelcontextprotocol', 'server-gitlab', 'dist', 'index.js');
const GITLAB_TOOLS = [
  'create_or_update_file',
  'search_repositories',
  'create_repository',
  'get_file_contents',
  'push_files',
  'create_issue',
  'create_merge_request',
  'fork_repository',
  'create_branch',
];
const timeouts = { probeTimeout: '10s', startTimeout: '30s' };

let d: ServeDaemon;
beforeAll(async () => {
  d = await startServeDaemon('mcpx-valid-listing-', {});
  const bad = join(d.dir, 'bad-listing.json');
  writeFileSync(
    bad,
    JSON.stringify({
      tools: [
        { name: 'fine', description: 'kept', inputSchema: { type: 'object', properties: { a: { type: 'string' } } } },
        { name: 'stringy', inputSchema: { type: 'string' } },
        { name: 'fine', inputSchema: { type: 'object' } },
        { name: 'out', inputSchema: { type: 'object' }, outputSchema: { type: 'array' } },
      ],
      prompts: [
        { name: 'p', arguments: [{ name: 'x' }] },
        { name: 'q', arguments: 'none' },
      ],
      resources: [
        { name: 'r', uri: 'mem://r' },
        { name: 'r2', uri: 'mem://r2', size: 'big' },
      ],
      resourceTemplates: [{ name: 't', uriTemplate: 'mem://{id}' }],
    }),
  );
  const replay = (file: string, env: Record<string, string> = {}) => ({
    command: process.execPath,
    args: [REPLAY],
    env: { LISTING: file, ...env },
    mcpx: timeouts,
  });
  const resourcesOnly = join(d.dir, 'resources-only.json');
  writeFileSync(resourcesOnly, JSON.stringify({ tools: [{ name: 'only', inputSchema: { type: 'object' } }], resources: [{ name: 'doc', uri: 'mem://doc' }] }));
  writeFileSync(
    d.config,
    `${JSON.stringify(
      {
        mcpServers: {
          gitlab: replay(GITLAB_FRESH),
          bad: replay(bad),
          // Declares resources, answers resources/templates/list -32601 (an empty list, not a failed server).
          notemplates: replay(resourcesOnly, { UNANSWERED: 'resources/templates/list' }),
          plain: fixtureEntry(d.dir, 'plain', { fixture: 'legacy-v1' }),
          // The real server lists its tools without calling GitLab; the token is never used.
          real: { command: process.execPath, args: [GITLAB], env: { GITLAB_PERSONAL_ACCESS_TOKEN: 'not-a-token' }, mcpx: timeouts },
        },
      },
      null,
      2,
    )}\n`,
  );
  const r = await mcpx(['reload'], { env: d.env });
  expect(r.code, r.stderr).toBe(0);
}, 60_000);
afterAll(async () => {
  await killAll();
  await d?.remove();
});

describe('every tool stands alone', () => {
  it('mcpx tools: repaired tools listed, the others named with their reason, exit 0', async () => {
    const v = await mcpxJson<{ tools: Array<Record<string, any>>; leftOut: Array<Record<string, string>> }>(['tools'], { env: d.env });
    const of = (server: string) => v.tools.filter((t) => t['server'] === server);
    expect(of('gitlab').map((t) => t['name'])).toEqual(GITLAB_TOOLS);
    for (const t of of('gitlab')) expect(t['inputSchema']).toMatchObject({ type: 'object' });
    expect(of('real').map((t) => t['name'])).toEqual(GITLAB_TOOLS);
    expect(of('bad').map((t) => t['name'])).toEqual(['fine']);
    expect(v.leftOut).toEqual([
      { server: 'bad', list: 'tools', name: 'stringy', reason: expect.stringMatching(/^inputSchema\.type: /) },
      { server: 'bad', list: 'tools', name: 'fine', reason: 'a second tool with this name' },
      { server: 'bad', list: 'tools', name: 'out', reason: expect.stringMatching(/^outputSchema\.type: /) },
      { server: 'bad', list: 'prompts', name: 'q', reason: expect.stringMatching(/^arguments: /) },
      { server: 'bad', list: 'resources', name: 'mem://r2', reason: expect.stringMatching(/^size: /) },
    ]);
    const text = await mcpx(['tools'], { env: d.env });
    expect(text.code).toBe(0);
    expect(text.stderr).toContain('mcpx: bad: tool "stringy" is not served: inputSchema.type: ');
    expect(text.stdout).toContain('gitlab__create_issue');
  }, 90_000);

  it('a server that declared resources but answers resources/templates/list -32601: its tools and resources are served', async () => {
    const v = await mcpxJson<{ tools: Array<Record<string, any>>; errors?: Array<Record<string, any>> }>(['tools', 'notemplates'], { env: d.env });
    expect(v.tools.map((t) => t['name'])).toEqual(['only']);
    expect(v.errors ?? []).toEqual([]);
  }, 60_000);

  it('mcpx doctor: names what a server listed and is not served, from the catalogue, as a note', async () => {
    let checks: Array<{ check: string; ok: boolean; detail: string }> = [];
    await until(
      async () => {
        const r = await mcpx(['doctor', '--json'], { env: d.env });
        checks = JSON.parse(r.stdout).checks;
        return checks.some((c) => c.check === 'listing bad');
      },
      20_000,
      'the catalogue written',
    );
    const bad = checks.find((c) => c.check === 'listing bad')!;
    expect(bad.ok).toBe(true);
    expect(bad.detail).toContain('tool "stringy" is not served: inputSchema.type: ');
    expect(bad.detail).toContain('prompt "q" is not served: arguments: ');
    expect(checks.filter((c) => c.check.startsWith('listing ')).map((c) => c.check)).toEqual(['listing bad']);
  }, 60_000);

  it('the live page: each left-out item on its server, with its reason', async () => {
    const r = await mcpx(['ui'], { env: d.env });
    expect(r.code, r.stderr).toBe(0);
    const url = r.stdout.split('\n')[0]!;
    const login = await fetch(url, { redirect: 'manual', headers: { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' } });
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const state = (await (await fetch(`${new URL(url).origin}/ui/api/state`, { headers: { cookie, 'sec-fetch-site': 'same-origin' } })).json()) as {
      servers: Array<{ server: string; leftOut: Array<{ text: string }> }>;
    };
    const leftOut = (server: string) => state.servers.find((s) => s.server === server)?.leftOut.map((l) => l.text);
    expect(leftOut('bad')).toContain('tool "stringy" is not served: inputSchema.type: Invalid input: expected "object"');
    expect(leftOut('gitlab')).toEqual([]);
  }, 60_000);

  it('mcpx call: a repaired tool is still called', async () => {
    const r = await mcpx(['call', 'gitlab', 'create_issue', '{"project_id":"1","title":"t"}'], { env: d.env });
    expect([r.code, r.stdout.trim()]).toEqual([0, 'called create_issue {"project_id":"1","title":"t"}']);
  }, 60_000);

  it.each(['legacy', 'modern'] as CallerEra[])(
    'mcpx serve, SDK %s client: every server listed, the repaired tool called',
    async (era) => {
      const c = await stdioCaller(era, { env: d.env });
      try {
        const names = (await c.listTools()).tools.map((t) => t['name']);
        for (const t of GITLAB_TOOLS) expect(names).toContain(`gitlab__${t}`);
        for (const t of GITLAB_TOOLS) expect(names).toContain(`real__${t}`);
        expect(names).toContain('bad__fine');
        expect(names).not.toContain('bad__stringy');
        expect(names.some((n) => n.startsWith('plain__'))).toBe(true);
        expect((await c.listPrompts()).prompts.map((p) => p['name'])).toContain('bad__p');
        expect((await c.listResources()).resources.map((r) => r['uri'])).toContain('mem://r');
        expect((await c.listResourceTemplates()).resourceTemplates.map((r) => r['uriTemplate'])).toContain('mem://{id}');
        expect(textOf(await c.callTool('gitlab__create_issue', { project_id: '1', title: 't' }))).toBe('called create_issue {"project_id":"1","title":"t"}');
      } finally {
        await c.close();
      }
    },
    90_000,
  );
});
