/**
 * What a user installs: `npm pack` of this build, installed with `npm install -g` into an empty prefix
 * with no registry (`--offline`, an empty npm cache), then run the way users run it — with nothing but
 * Node and that prefix: the demo, HTTP upstreams (SDK v2 Streamable HTTP, SDK v1 Streamable HTTP,
 * HTTP+SSE) and a stdio one through `mcpx call`, the same through `mcpx serve` spawned by SDK clients of
 * both eras as a GUI client would (absolute paths, no node on PATH), through `/mcp`, and through
 * `npx -y file:…/mcpx-<v>.tgz serve`.
 *
 * The package must hold exactly what the binary loads at run time (docs/packaging.md); a chunk left out,
 * a dependency the bundle still needs, or a file read from the repo would fail here, not for a user.
 */
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Client as ClientV2, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-info.js';
import { api, cleanEnv, healthy, killAll, trackPid, until } from '../cli/helpers.js';
import { startHttpFixture, type HttpFixture } from '../fixtures/http/index.js';
import { writeConfig } from '../server/helpers.js';
import { freePort } from '../serve/clients.js';
import { tempDir } from '../support/real.js';

const ROOT = packageRoot();
const PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; files: string[]; dependencies?: Record<string, string> };
/** Node's own folder: npm and npx live beside node. */
const NODE_BIN = dirname(process.execPath);
/** A GUI client's PATH: system folders only, no node (it is named by absolute path). */
const GUI_PATH = '/usr/bin:/bin';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], opts: { env: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number }): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: opts.env, cwd: opts.cwd ?? opts.env['HOME'], stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command} ${args.join(' ')} did not finish in ${opts.timeoutMs ?? 60_000} ms\n${stdout}\n${stderr}`));
    }, opts.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function ok(command: string, args: string[], opts: { env: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number }): Promise<string> {
  const r = await run(command, args, opts);
  if (r.code !== 0) throw new Error(`${command} ${args.join(' ')} exited ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  return r.stdout;
}

function du(path: string): { bytes: number; files: number } {
  const st = lstatSync(path);
  if (!st.isDirectory()) return { bytes: st.size, files: 1 };
  let bytes = 0;
  let files = 0;
  for (const e of readdirSync(path)) {
    const sub = du(join(path, e));
    bytes += sub.bytes;
    files += sub.files;
  }
  return { bytes, files };
}

interface PackResult {
  filename: string;
  size: number;
  unpackedSize: number;
  entryCount: number;
  files: Array<{ path: string; size: number }>;
}

let work: { path: string; remove: () => Promise<void> };
let pack: PackResult;
let tarball: string;
/** The installed package's folder and its `mcpx` (the link npm made in <prefix>/bin). */
let installed: string;
let bin: string;
let mainJs: string;
const fixtures: HttpFixture[] = [];
const clients: Array<{ close(): Promise<void> }> = [];
const daemons: ChildProcess[] = [];
/** Every state folder a run may have started a daemon in (a test that failed half-way leaves nothing running). */
const stateDirs = new Set<string>();

/** The environment without npm's own variables (`npm test` and `npx` set dozens: prefix, cache, lifecycle). */
function withoutNpm(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([k]) => !/^npm_/i.test(k) && k !== 'INIT_CWD'));
}

/** An environment with no trace of this checkout: a temp home and state folder, a PATH of the prefix, node and the system. */
function userEnv(name: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const home = join(work.path, name);
  mkdirSync(home, { recursive: true });
  stateDirs.add(join(home, 'state'));
  return {
    ...withoutNpm(cleanEnv(home, { PATH: `${join(work.path, 'prefix', 'bin')}:${NODE_BIN}:${GUI_PATH}`, MCPX_STATE_DIR: join(home, 'state') })),
    ...extra,
  };
}

beforeAll(async () => {
  work = await tempDir('mcpx-package-');
  const npm = join(NODE_BIN, 'npm');
  // The build is npm test's; --ignore-scripts so packing does not build it again.
  const out = await ok(npm, ['pack', '--ignore-scripts', '--json', '--pack-destination', work.path], {
    env: { ...withoutNpm(process.env), npm_config_loglevel: 'error' },
    cwd: ROOT,
  });
  pack = (JSON.parse(out) as PackResult[])[0]!;
  tarball = join(work.path, pack.filename);
  const prefix = join(work.path, 'prefix');
  // Offline, with an empty cache: a package that still needed a dependency from the registry fails here.
  await ok(
    npm,
    ['install', '-g', '--prefix', prefix, '--offline', '--cache', join(work.path, 'npm-cache'), '--no-audit', '--no-fund', '--ignore-scripts', tarball],
    { env: { ...userEnv('installer'), npm_config_loglevel: 'error' }, cwd: work.path, timeoutMs: 120_000 },
  );
  installed = join(prefix, 'lib', 'node_modules', 'mcpx');
  bin = join(prefix, 'bin', 'mcpx');
  mainJs = join(installed, 'dist', 'src', 'cli', 'main.js');
}, 180_000);

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  for (const d of daemons) d.kill('SIGTERM');
  for (const state of stateDirs) {
    const file = join(state, 'daemon.json');
    if (existsSync(file)) trackPid((JSON.parse(readFileSync(file, 'utf8')) as { pid?: number }).pid);
  }
  await killAll();
  for (const f of fixtures) await f.stop();
  await work?.remove();
});

describe('the npm package', () => {
  it('holds the binary, its chunks, the demo, the page asset, README and LICENSE — nothing else — and no dependency', () => {
    const paths = pack.files.map((f) => f.path).sort();
    const allowed = [
      /^package\.json$/,
      /^README\.md$/,
      /^LICENSE$/,
      /^dist\/src\/cli\/main\.js$/,
      /^dist\/src\/cli\/chunks\/[\w-]+\.js$/,
      /^dist\/demo\/demo\.json$/,
      /^dist\/demo\/servers\/(chunks\/)?[\w-]+\.mjs$/,
      /^dist\/assets\/mermaid\.min\.js$/,
    ];
    expect(paths.filter((p) => !allowed.some((a) => a.test(p)))).toEqual([]);
    // Every chunk of the bundle is in it (a missing one fails only on the path that loads it).
    const meta = JSON.parse(readFileSync(join(ROOT, 'dist', 'src', 'cli', 'bundle-meta.json'), 'utf8')) as { outputs: Record<string, unknown> };
    const chunks = Object.keys(meta.outputs).filter((o) => o.endsWith('.js'));
    expect(chunks.length).toBeGreaterThan(10);
    expect(chunks.filter((c) => !paths.includes(c))).toEqual([]);
    for (const demo of ['dual', 'legacy-only', 'modern-only']) expect(paths).toContain(`dist/demo/servers/${demo}.mjs`);
    expect(paths).toEqual(expect.arrayContaining(['LICENSE', 'README.md', 'dist/assets/mermaid.min.js', 'dist/demo/demo.json']));
    expect(PKG.dependencies ?? {}).toEqual({});
    // What it costs, for the README's table (the run's log).
    const tree = du(installed);

    console.log(
      `[package] ${pack.filename}: ${pack.entryCount} files, tarball ${(pack.size / 1e6).toFixed(2)} MB, unpacked ${(pack.unpackedSize / 1e6).toFixed(2)} MB; installed ${(tree.bytes / 1e6).toFixed(2)} MB in ${tree.files} files`,
    );
    expect(existsSync(join(installed, 'node_modules'))).toBe(false);
    // The docs state the unpacked figures as what is installed (figures.test.ts checks them against npm pack).
    expect(tree.files).toBe(pack.entryCount);
    expect(Math.abs(tree.bytes - pack.unpackedSize)).toBeLessThan(0.05e6);
    expect(tree.bytes).toBeLessThan(20e6);
    expect(realpathSync(bin)).toBe(realpathSync(mainJs));
  });

  it('mcpx --version, and mcpx daemon runs the bundled demo: three eras, calls served, the page draws with its own Mermaid', async () => {
    expect((await ok(bin, ['--version'], { env: userEnv('version') })).trim()).toBe(PKG.version);

    const env = userEnv('demo');
    const socket = join(env['MCPX_STATE_DIR']!, 'daemon.sock');
    const daemon = spawn(bin, ['daemon'], { env, cwd: '/', stdio: ['ignore', 'pipe', 'pipe'] });
    daemons.push(daemon);
    let log = '';
    daemon.stdout!.on('data', (c: Buffer) => (log += c.toString()));
    daemon.stderr!.on('data', (c: Buffer) => (log += c.toString()));
    await until(() => healthy(socket), 30_000, `the installed daemon (${log})`);
    // The demo's servers start with the daemon; wait until each has an era.
    let eras: Record<string, string | undefined> = {};
    await until(
      async () => {
        const { servers } = JSON.parse(await ok(bin, ['protocol', '--json'], { env })) as { servers: Array<{ server: string; era: string | null }> };
        eras = Object.fromEntries(servers.map((r) => [r.server, r.era ?? undefined]));
        return Object.values(eras).every((e) => e === 'legacy' || e === 'modern') && Object.keys(eras).length === 3;
      },
      30_000,
      "the demo servers' eras",
    );
    expect(eras).toEqual({ 'legacy-only': 'legacy', dual: 'modern', 'modern-only': 'modern' });
    expect((await ok(bin, ['call', 'dual', 'echo', '{"text":"hi"}'], { env })).trim()).toBe('hi (from dual, era=modern)');
    expect((await ok(bin, ['call', 'legacy-only', 'add', '{"a":2,"b":3}'], { env })).trim()).toBe('2 + 3 = 5 (from legacy-only, era=legacy)');
    // The chart page finds the packaged Mermaid and the daemon serves it.
    const page = await api(socket, 'GET', '/v1/statecharts/dual?format=html');
    expect(page.status).toBe(200);
    expect(page.text).toContain('/v1/statecharts/assets/mermaid.min.js');
    const asset = await api(socket, 'GET', '/v1/statecharts/assets/mermaid.min.js');
    expect(asset.status).toBe(200);
    expect(asset.text === readFileSync(join(installed, 'dist', 'assets', 'mermaid.min.js'), 'utf8')).toBe(true);
    expect(await ok(bin, ['stop'], { env })).toContain('stopped');
    await until(() => daemon.exitCode !== null, 20_000, 'the demo daemon to exit');
    expect(daemon.exitCode).toBe(0);
  }, 120_000);

  describe('with an SDK v2 HTTP server, an SDK v1 HTTP server, an HTTP+SSE server and a stdio one', () => {
    let env: NodeJS.ProcessEnv;
    let config: string;
    const EXPECT: Record<string, string> = { modern: 'modern', legacy: 'legacy', sse: 'legacy', stdio: 'modern' };

    beforeAll(async () => {
      const [modern, legacy, sse] = await Promise.all([
        startHttpFixture('v2-modern'),
        startHttpFixture('v1-legacy-sessions'),
        startHttpFixture('v1-sse-legacy'),
      ]);
      fixtures.push(modern!, legacy!, sse!);
      env = userEnv('servers');
      config = writeConfig(
        work.path,
        { modern: { url: modern!.url }, legacy: { url: legacy!.url }, sse: { url: sse!.url }, stdio: { fixture: 'modern-v2' } },
        {},
        join(work.path, 'servers.json'),
      );
      env = { ...env, MCPX_CONFIG: config, MCPX_DAEMON_PORT: String(await freePort()) };
    }, 60_000);

    it('mcpx call serves each (the daemon started by the first call, from the installed binary)', async () => {
      const results = await Promise.all(
        Object.keys(EXPECT).map(async (server) => [server, (await ok(bin, ['call', server, 'echo', '{"text":"hi"}'], { env })).trim()] as const),
      );
      const daemonJson = join(env['MCPX_STATE_DIR']!, 'daemon.json');
      trackPid((JSON.parse(readFileSync(daemonJson, 'utf8')) as { pid: number }).pid);
      for (const [server, text] of results) expect(text, server).toBe(`hi era=${EXPECT[server]}`);
      const { servers } = JSON.parse(await ok(bin, ['protocol', '--json'], { env })) as { servers: Array<{ server: string; era: string | null }> };
      expect(Object.fromEntries(servers.map((r) => [r.server, r.era]))).toEqual(EXPECT);
      // The daemon runs the package's own code (the chunks beside the installed main.js).
      const pid = (JSON.parse(readFileSync(daemonJson, 'utf8')) as { pid: number }).pid;
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      expect(realpathSync(cmdline[1]!)).toBe(realpathSync(mainJs));
    }, 90_000);

    it('mcpx serve, spawned by absolute paths with no node on PATH, serves each to a 2025-11-25 and a 2026-07-28 client', async () => {
      const params = { command: process.execPath, args: [mainJs, 'serve'], env: { ...env, PATH: GUI_PATH } as Record<string, string>, stderr: 'pipe' as const };
      const legacy = new ClientV1({ name: 'gui-legacy', version: '1.0.0' }, { capabilities: {} });
      await legacy.connect(new StdioV1(params));
      clients.push(legacy);
      const modern = new ClientV2({ name: 'gui-modern', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } } as never);
      await modern.connect(new StdioV2(params));
      clients.push(modern);
      for (const client of [legacy, modern] as any[]) {
        const names = ((await client.listTools()) as { tools: Array<{ name: string }> }).tools.map((t) => t.name);
        for (const server of Object.keys(EXPECT)) expect(names).toContain(`${server}__echo`);
        for (const server of Object.keys(EXPECT)) {
          const result = (await client.callTool({ name: `${server}__echo`, arguments: { text: 'via serve' } })) as {
            content: Array<{ text: string }>;
            isError?: boolean;
          };
          expect(result.isError ?? false, server).toBe(false);
          expect(result.content[0]!.text, server).toBe(`via serve era=${EXPECT[server]}`);
        }
      }
    }, 90_000);

    it("/mcp on the daemon's TCP port serves them to an HTTP MCP client (the SDK front the package bundles)", async () => {
      const { token } = JSON.parse(readFileSync(join(env['MCPX_STATE_DIR']!, 'daemon.json'), 'utf8')) as { token: string };
      const client = new ClientV2({ name: 'http-entry', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } } as never);
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${env['MCPX_DAEMON_PORT']}/mcp`), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        } as never),
      );
      clients.push(client);
      for (const server of Object.keys(EXPECT)) {
        const result = (await (client as any).callTool({ name: `${server}__echo`, arguments: { text: 'via /mcp' } })) as { content: Array<{ text: string }> };
        expect(result.content[0]!.text, server).toBe(`via /mcp era=${EXPECT[server]}`);
      }
    }, 90_000);

    it('npx -y ./mcpx-<v>.tgz runs it with no install, and a client entry `npx -y file:/abs/mcpx-<v>.tgz serve` serves them, offline', async () => {
      const npx = join(NODE_BIN, 'npx');
      const npxEnv = {
        ...env,
        PATH: `${NODE_BIN}:${GUI_PATH}`,
        npm_config_cache: join(work.path, 'npx-cache'),
        npm_config_offline: 'true',
        npm_config_loglevel: 'error',
        npm_config_update_notifier: 'false',
      } as Record<string, string>;
      // As typed beside the tarball. npx takes a bare absolute path for a command to run, not a package:
      // an entry naming the tarball by absolute path says file: (the README).
      expect((await ok(npx, ['-y', `./${pack.filename}`, '--version'], { env: npxEnv, cwd: work.path, timeoutMs: 90_000 })).trim()).toBe(PKG.version);
      const client = new ClientV2({ name: 'npx-entry', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } } as never);
      const transport = new StdioV2({ command: npx, args: ['-y', `file:${tarball}`, 'serve'], env: npxEnv, cwd: work.path, stderr: 'pipe' });
      let stderr = '';
      transport.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
      await client.connect(transport).catch((err: unknown) => {
        throw new Error(`npx -y file:${tarball} serve: ${String(err)}\nstderr: ${stderr}`);
      });
      clients.push(client);
      const result = (await (client as any).callTool({ name: 'sse__echo', arguments: { text: 'via npx' } })) as { content: Array<{ text: string }> };
      expect(result.content[0]!.text).toBe('via npx era=legacy');
      const modern = (await (client as any).callTool({ name: 'modern__echo', arguments: { text: 'via npx' } })) as { content: Array<{ text: string }> };
      expect(modern.content[0]!.text).toBe('via npx era=modern');
    }, 120_000);
  });
});
