/**
 * One daemon, many configs (docs/contract.md, "Configs"): a daemon first started from a project folder
 * answers every caller for the config that caller names — `mcpx … --config`, a command in the project
 * folder, `mcpx serve --config` with the SDK v1 and v2 clients — and a server two configs define alike
 * runs once. A broken edit of one config is said to its callers only; an idle config unloads, stopping
 * the servers no other config uses.
 */
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES } from '../fixtures/index.js';
import { startHttpFixture } from '../fixtures/http/index.js';
import { packageRoot } from '../../src/package-info.js';
import { stdioCaller, textOf, type McpCaller } from '../serve/clients.js';
import { tempDir } from '../support/real.js';
import { api, cleanEnv, killAll, mcpx, mcpxJson, trackPid, until } from './helpers.js';

const FILESYSTEM = join(packageRoot(), 'node_modules', '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js');
const legacy = (tag: string) => ({ command: process.execPath, args: [FIXTURES['legacy-v1'], tag] });
const modern = (tag: string) => ({ command: process.execPath, args: [FIXTURES['modern-v2'], tag] });

interface Status {
  pid: number;
  config: { file: string | null; rejected?: { problems: string[] } };
  configs: Array<{
    file: string | null;
    home: boolean;
    callers: Array<{ kind: string }>;
    servers: Array<{ server: string; instance: string; sharedWith: unknown[] }>;
  }>;
  servers: Array<{ server: string; instances: Array<{ pid: number | null }> }>;
}

/** The live page's state (`mcpx ui`, its one-time login, then `/ui/api/state`). */
async function pageState(
  env: NodeJS.ProcessEnv,
): Promise<{ configs: Array<{ file: string | null; rejected?: { problems: string[] }; servers: Array<{ server: string }> }> }> {
  const r = await mcpx(['ui'], { env });
  expect(r.code, r.stderr).toBe(0);
  const url = r.stdout.split('\n')[0]!;
  const login = await fetch(url, { redirect: 'manual', headers: { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' } });
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  return (await (await fetch(`${new URL(url).origin}/ui/api/state`, { headers: { cookie, 'sec-fetch-site': 'same-origin' } })).json()) as never;
}

const write = (file: string, servers: Record<string, unknown>) => writeFileSync(file, `${JSON.stringify({ mcpServers: servers }, null, 2)}\n`);
const pidOf = (text: string) => Number(/pid=(\d+)/.exec(text)?.[1]);
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('one daemon, many configs', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let env: NodeJS.ProcessEnv;
  let home: string;
  let project: string;
  let a: string;
  let b: string;
  let c: string;
  const callers: McpCaller[] = [];

  beforeAll(async () => {
    dir = await tempDir('mcpx-configs-');
    home = realpathSync(dir.path);
    project = join(home, 'project');
    mkdirSync(project);
    write(join(project, '.mcp.json'), { proj: legacy('proj') });
    a = join(home, 'a.json');
    b = join(home, 'b.json');
    c = join(home, 'c.json');
    // `shared`/`common`/`same` are one definition in three configs; `memory` is two different servers of one name.
    write(a, { alpha: legacy('alpha'), shared: modern('shared'), memory: legacy('memory-a') });
    // `twin` is `common` again in the same config: within one config each server is its own process.
    write(b, { beta: modern('beta'), common: modern('shared'), memory: legacy('memory-b'), twin: modern('shared') });
    // C also sets a daemon-wide block, which a named config does not set (nor ask a restart for).
    writeFileSync(c, `${JSON.stringify({ mcpServers: { gamma: legacy('gamma'), same: modern('shared') }, daemon: { port: 1 } }, null, 2)}\n`);
    env = cleanEnv(home, { MCPX_STATE_DIR: join(home, 'state'), MCPX_DAEMON_CONFIG_IDLE_TIMEOUT: '3s' });
    // The daemon starts from the project folder: that project's config is its own.
    const started = await mcpxJson<Status>(['status', '--start'], { env, cwd: project });
    trackPid(started.pid);
    expect(started.config.file).toBe(join(project, '.mcp.json'));
  }, 60_000);

  afterAll(async () => {
    await Promise.all(callers.map((x) => x.close().catch(() => undefined)));
    await mcpx(['stop'], { env, cwd: project }).catch(() => undefined);
    await killAll();
    await dir?.remove();
  });

  it('mcpx tools --config A lists A’s servers only; mcpx call --config B calls B’s; a command in the project folder sees the project’s', async () => {
    const toolsA = await mcpxJson<{ tools: Array<{ server: string; exposed: string }> }>(['tools', '--config', a], { env, cwd: project });
    expect([...new Set(toolsA.tools.map((t) => t.server))].sort()).toEqual(['alpha', 'memory', 'shared']);
    const called = await mcpx(['call', '--config', b, 'beta', 'echo', '{"text":"hi"}'], { env, cwd: project });
    expect([called.code, called.stdout.trim(), called.stderr]).toEqual([0, 'hi era=modern', '']);
    const toolsP = await mcpxJson<{ tools: Array<{ server: string }> }>(['tools'], { env, cwd: project });
    expect([...new Set(toolsP.tools.map((t) => t.server))]).toEqual(['proj']);
    // A's server is not B's: a name only A has is unknown to B, and said with B's servers.
    const unknown = await mcpx(['call', '--config', b, 'alpha', 'whoami'], { env, cwd: project });
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/no server named "alpha" is configured in .*b\.json \(configured: beta, common, memory, twin\)/);
  }, 60_000);

  it('two mcpx serve (SDK v1 on A, SDK v2 on B) each list and call only their own servers', async () => {
    const onA = await stdioCaller('legacy', { env, args: ['--config', a] });
    const onB = await stdioCaller('modern', { env, args: ['--config', b] });
    callers.push(onA, onB);
    const names = async (x: McpCaller) => (await x.listTools()).tools.map((t) => String(t['name'])).sort();
    expect(await names(onA)).toEqual(['alpha__echo', 'alpha__whoami', 'memory__echo', 'memory__whoami', 'shared__echo', 'shared__whoami']);
    expect(await names(onB)).toEqual([
      'beta__echo',
      'beta__whoami',
      'common__echo',
      'common__whoami',
      'memory__echo',
      'memory__whoami',
      'twin__echo',
      'twin__whoami',
    ]);
    expect(textOf(await onA.callTool('alpha__echo', { text: 'a' }))).toBe('a era=legacy');
    expect(textOf(await onB.callTool('beta__echo', { text: 'b' }))).toBe('b era=modern');
    // One name, two servers: each config's `memory` is its own process.
    const memA = pidOf(textOf(await onA.callTool('memory__whoami', {})));
    const memB = pidOf(textOf(await onB.callTool('memory__whoami', {})));
    expect(memA).not.toBe(memB);
    // One definition, one process: A's `shared` and B's `common` answer from the same pid.
    const sharedA = pidOf(textOf(await onA.callTool('shared__whoami', {})));
    const sharedB = pidOf(textOf(await onB.callTool('common__whoami', {})));
    expect(sharedA).toBe(sharedB);
    expect(pidOf(textOf(await onB.callTool('twin__whoami', {})))).not.toBe(sharedB);
    const status = await mcpxJson<Status>(['status', '--config', a], { env });
    const inA = status.configs.find((x) => x.file === a)!;
    expect(inA.callers.map((x) => x.kind)).toEqual(['serve']);
    const shared = inA.servers.find((x) => x.server === 'shared')!;
    expect(shared.sharedWith).toEqual([{ file: b, server: 'common' }]);
    const sharedPids = status.servers.find((x) => x.server === 'shared')!.instances.map((i) => i.pid);
    expect(sharedPids).toEqual([sharedA]);
    const viaB = await mcpxJson<Status>(['status', '--config', b], { env });
    expect(viaB.servers.find((x) => x.server === 'common')!.instances.map((i) => i.pid)).toEqual([sharedA]);
  }, 90_000);

  it('a broken edit of A: A’s callers keep A’s last good servers and are told; B’s see no change', async () => {
    const [onA, onB] = callers as [McpCaller, McpCaller];
    // A legacy client on B too: the one kind of caller that would hear a log message.
    const onB1 = await stdioCaller('legacy', { env, args: ['--config', b] });
    callers.push(onB1);
    const heardA: string[] = [];
    const heardB: string[] = [];
    onA.raw.setNotificationHandler(LoggingMessageNotificationSchema, (n: { params: { data: unknown } }) => heardA.push(String(n.params.data)));
    onB1.raw.setNotificationHandler(LoggingMessageNotificationSchema, (n: { params: { data: unknown } }) => heardB.push(String(n.params.data)));
    writeFileSync(a, '{ "mcpServers": { "alpha": ');
    await until(async () => (await mcpxJson<Status>(['status', '--config', a], { env })).config.rejected !== undefined, 20_000, 'A’s edit refused');
    const servers = await mcpxJson<{ servers: Array<{ server: string }>; rejected?: { problems: string[] } }>(['servers', '--config', a], { env });
    expect(servers.servers.map((s) => s.server)).toEqual(['alpha', 'shared', 'memory']);
    expect(servers.rejected?.problems.join('\n')).toMatch(/a\.json/);
    await until(() => heardA.length > 0, 10_000, 'A’s serve client told');
    expect(heardA[0]).toMatch(/config was edited but not reloaded/);
    expect(textOf(await onA.callTool('alpha__echo', { text: 'still' }))).toBe('still era=legacy');
    const ofB = await mcpxJson<{ servers: Array<{ server: string }>; rejected?: unknown }>(['servers', '--config', b], { env });
    expect(ofB.rejected).toBeUndefined();
    // The live page: its state groups servers by config, A's refused edit under A alone.
    const page = await pageState(env);
    expect(page.configs.find((x) => x.file === a)?.rejected?.problems.join('\n')).toMatch(/a\.json/);
    expect(page.configs.find((x) => x.file === b)?.rejected).toBeUndefined();
    expect(page.configs.find((x) => x.file === b)?.servers.map((x) => x.server)).toEqual(['beta', 'common', 'memory', 'twin']);
    expect((await onB.listTools()).tools).toHaveLength(8);
    expect((await onB1.listTools()).tools).toHaveLength(8);
    expect(heardB).toEqual([]);
    // Put right: A reloads by itself.
    write(a, { alpha: legacy('alpha'), shared: modern('shared'), memory: legacy('memory-a') });
    await until(async () => (await mcpxJson<Status>(['status', '--config', a], { env })).config.rejected === undefined, 20_000, 'A fixed');
  }, 90_000);

  it('search answers for the caller’s config, and a server’s config filter hides a tool from it', async () => {
    type Found = { tools: Array<{ server: string; exposed: string }> };
    const inA = await mcpxJson<Found>(['tools', '--search', 'echo the text back', '--limit', '10', '--config', a], { env });
    expect(inA.tools.length).toBeGreaterThan(0);
    expect(new Set(inA.tools.map((t) => t.server))).toEqual(new Set(['alpha', 'shared', 'memory']));
    const inB = await mcpxJson<Found>(['tools', '--search', 'echo the text back', '--limit', '10', '--config', b], { env });
    expect(new Set(inB.tools.map((t) => t.server))).toEqual(new Set(['beta', 'common', 'memory', 'twin']));
    // A config whose server denies `echo`: not a search result there, by the CLI or the API.
    const d = join(home, 'd.json');
    writeFileSync(d, `${JSON.stringify({ mcpServers: { delta: { ...legacy('delta'), mcpx: { tools: { deny: ['echo'] } } } } }, null, 2)}\n`);
    await mcpx(['tools', '--config', d], { env }); // listed once, so the catalogue knows delta
    const inD = await mcpxJson<Found>(['tools', '--search', 'echo the text back', '--limit', '10', '--config', d], { env });
    expect(inD.tools.map((t) => t.exposed)).not.toContain('delta__echo');
    const other = await mcpxJson<Found>(['tools', '--search', 'report era and pid', '--config', d], { env });
    expect(other.tools.map((t) => t.exposed)).toEqual(['delta__whoami']);
    // The API answers the same for the same config.
    const viaApi = await api(join(home, 'state', 'daemon.sock'), 'GET', '/v1/tools/search?q=echo%20the%20text%20back&limit=10', undefined, {
      'x-mcpx-config': d,
    });
    expect(viaApi.status).toBe(200);
    expect(viaApi.body.tools.map((t: { exposed: string }) => t.exposed)).toEqual(inD.tools.map((t) => t.exposed));
    const called = await mcpx(['call', '--config', d, 'delta', 'echo', '{"text":"no"}'], { env });
    expect(called.code).not.toBe(0);
    expect(called.stderr).toMatch(/MCPX_TOOL_DENIED|not served|denied/i);
  }, 60_000);

  it('over every upstream transport: a Streamable HTTP, an HTTP+SSE and a real registry server alike in two configs are one instance each', async () => {
    const streamable = await startHttpFixture('v2-dual');
    const sse = await startHttpFixture('v1-sse-legacy');
    try {
      const data = join(home, 'data');
      mkdirSync(data, { recursive: true });
      writeFileSync(join(data, 'note.txt'), 'from the shared folder\n');
      const servers = (tag: string) => ({
        [`web-${tag}`]: { url: streamable.url, mcpx: { probeTimeout: '10s' } },
        [`old-${tag}`]: { type: 'sse', url: sse.url, mcpx: { probeTimeout: '10s' } },
        [`files-${tag}`]: { command: process.execPath, args: [FILESYSTEM, data], mcpx: { startTimeout: '30s' } },
      });
      const e = join(home, 'e.json');
      const f = join(home, 'f.json');
      write(e, servers('e'));
      write(f, servers('f'));
      for (const [file, tag] of [
        [e, 'e'],
        [f, 'f'],
      ] as const) {
        // Output through a pipe, as a script reads it.
        const web = await mcpx(['call', '--config', file, `web-${tag}`, 'echo', '{"text":"w"}'], { env });
        expect([web.code, web.stdout.trim()], web.stderr).toEqual([0, 'w era=modern']);
        const old = await mcpx(['call', '--config', file, `old-${tag}`, 'echo', '{"text":"o"}'], { env });
        expect([old.code, old.stdout.trim()], old.stderr).toEqual([0, 'o era=legacy']);
        const read = await mcpx(['call', '--config', file, `files-${tag}`, 'read_text_file', JSON.stringify({ path: join(data, 'note.txt') })], { env });
        expect([read.code, read.stdout], read.stderr).toEqual([0, 'from the shared folder\n']);
      }
      const status = await mcpxJson<Status>(['status', '--config', e], { env });
      const inE = status.configs.find((x) => x.file === e)!.servers;
      const inF = status.configs.find((x) => x.file === f)!.servers;
      for (const kind of ['web', 'old', 'files']) {
        const one = inE.find((x) => x.server === `${kind}-e`)!;
        expect(inF.find((x) => x.server === `${kind}-f`)!.instance).toBe(one.instance);
        expect(one.sharedWith).toEqual([{ file: f, server: `${kind}-f` }]);
      }
      // The registry server runs once for both configs.
      const pids = async (file: string, server: string) =>
        (await mcpxJson<Status>(['status', '--config', file], { env })).servers.find((x) => x.server === server)!.instances.map((i) => i.pid);
      expect(await pids(f, 'files-f')).toEqual(await pids(e, 'files-e'));
      expect(await pids(e, 'files-e')).toHaveLength(1);
    } finally {
      await streamable.stop();
      await sse.stop();
    }
  }, 120_000);

  it('mcpx serve --help says how its config is chosen and shared', async () => {
    const help = await mcpx(['serve', '--help'], { env });
    expect(help.code).toBe(0);
    expect(help.stdout.replace(/\s+/g, ' ')).toContain("each client entry sees exactly its own config's servers");
    expect(help.stdout.replace(/\s+/g, ' ')).toContain('a server two configs define alike runs once for both');
  });

  it('a --config that does not parse is a clear error naming the file, line and column', async () => {
    const bad = join(home, 'bad.json');
    writeFileSync(bad, '{\n  "mcpServers": {\n    "x": { "command": }\n  }\n}\n');
    const r = await mcpx(['tools', '--config', bad], { env });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/bad\.json/);
    expect(r.stderr).toMatch(/line 3/);
    const missing = await mcpx(['tools', '--config', join(home, 'nope.json')], { env });
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/nope\.json/);
  }, 30_000);

  it('an idle config unloads: its unshared server stops, the one another config uses keeps running', async () => {
    const gamma = pidOf((await mcpx(['call', '--config', c, 'gamma', 'whoami'], { env })).stdout);
    const reloaded = await mcpxJson<{ ok: boolean; restartNeeded: string[] }>(['reload', '--config', c], { env });
    expect(reloaded).toMatchObject({ ok: true, restartNeeded: [] });
    const same = pidOf((await mcpx(['call', '--config', c, 'same', 'whoami'], { env })).stdout);
    expect(alive(gamma)).toBe(true);
    const sharedA = pidOf(textOf(await callers[0]!.callTool('shared__whoami', {})));
    expect(same).toBe(sharedA);
    // No caller attached to C: past daemon.configIdleTimeout (3 s here) it goes, and gamma with it.
    await until(async () => !(await mcpxJson<Status>(['status', '--config', a], { env })).configs.some((x) => x.file === c), 20_000, 'C unloaded');
    await until(() => !alive(gamma), 10_000, 'gamma stopped');
    expect(alive(same)).toBe(true);
    expect(pidOf(textOf(await callers[0]!.callTool('shared__whoami', {})))).toBe(same);
    // A config with a serve stream attached stays, idle or not.
    const status = await mcpxJson<Status>(['status', '--config', a], { env });
    expect(status.configs.map((x) => x.file)).toEqual(expect.arrayContaining([a, b]));
  }, 90_000);
});
