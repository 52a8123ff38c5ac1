/**
 * Every lazily loaded chunk of the shipped bundle, loaded the way the binary reaches it, and working.
 *
 * Why: tsc's output and the esbuild bundle differ in what a dynamic import gives back (a lazily imported
 * CommonJS package is a chunk exporting only `default`), so code that works in one can be broken in the
 * other: once every HTTP upstream failed in the binary while every test passed. Here the binary (or
 * MCPX_TEST_BIN) runs each command, each transport and each optional part with the load recorder of
 * test/support/record-loads.mjs on, and each run must give its real answer. Then the chunks those runs
 * loaded must be every chunk of bundle-meta.json but the few exempted below, so a new lazy import with
 * no path through the binary fails here, naming the chunk. Last, a static check of the bug class itself:
 * a dynamic import of a package whose chunk exports only `default` must read `.default`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { packageRoot } from '../../src/package-info.js';
import { startHttpFixture, type HttpFixture } from '../fixtures/http/index.js';
import { browserCommand, FOLLOW_REDIRECTS, startAutoApprove } from '../fixtures/oauth/index.js';
import { httpCaller, stdioCaller, textOf, freePort } from '../serve/clients.js';
import { fixtureEntry } from '../server/helpers.js';
import { tempDir } from '../support/real.js';
import { api, cleanEnv, ForegroundDaemon, healthy, killAll, MCPX, mcpx, readJson, trackPid, until } from './helpers.js';

const ROOT = packageRoot();
const RECORDER = pathToFileURL(join(ROOT, 'test', 'support', 'record-loads.mjs')).href;
const SERVERS = join(ROOT, 'examples', 'servers');
/** Room on a busy machine: every wait is for a condition; these only turn a hang into a failure. */
const WAIT_MS = 60_000;

/**
 * Chunks no path of the binary reaches, by the source module that is their entry point, each with why.
 * An entry that matches no chunk, or a chunk that some run did load, fails the test: the list stays minimal.
 */
const EXEMPT: Array<{ source: string; reason: string }> = [
  { source: 'src/api/response-contract.ts', reason: 'tests only: loaded when buildApp gets deps.checkResponses, which the daemon never passes' },
  { source: 'node_modules/jose/dist/webapi/index.js', reason: "the SDK's OAuth client loads it for private-key JWT and DPoP, which mcpx does not offer" },
];

// ---- the metafile: every output chunk, keyed by its last two path segments ----

interface MetaOutput {
  inputs: Record<string, unknown>;
  entryPoint?: string;
  exports?: string[];
}

/** The binary's own metafile when it has one beside it (an installed copy), else the build's. */
const META_FILE = existsSync(join(dirname(MCPX), 'bundle-meta.json'))
  ? join(dirname(MCPX), 'bundle-meta.json')
  : join(ROOT, 'dist', 'src', 'cli', 'bundle-meta.json');
const META = JSON.parse(readFileSync(META_FILE, 'utf8')) as { outputs: Record<string, MetaOutput> };

/** `chunks/x-HASH.js`, `cli/main.js`: by file name (and its folder), so an installed copy of the same build matches. */
const chunkKey = (file: string): string => file.split(/[\\/]/).slice(-2).join('/');

const CHUNKS = new Map(
  Object.entries(META.outputs)
    .filter(([out]) => out.endsWith('.js'))
    .map(([out, o]) => [chunkKey(out), o]),
);

// ---- recording: each process of a path writes the files it loads to its own file ----

let dir: { path: string; remove: () => Promise<void> };
const runs: Array<{ path: string; file: string }> = [];

/** `env` with the recorder preloaded; what the process loads is counted for `path`. */
function recording(path: string, env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const file = join(dir.path, `loads-${runs.length}.txt`);
  runs.push({ path, file });
  return { ...env, NODE_OPTIONS: `--import=${RECORDER}`, MCPX_TEST_LOADS: file };
}

/** The chunks (keys of CHUNKS) one recorded process loaded. */
function chunksLoaded(file: string): Set<string> {
  if (!existsSync(file)) return new Set();
  const lines = readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.length > 0 && !l.startsWith('node:'));
  return new Set(lines.map((l) => chunkKey(l.startsWith('file:') ? fileURLToPath(l) : l)).filter((k) => CHUNKS.has(k)));
}

// ---- the daemons and upstreams the paths use ----

/** The main daemon: `mcpx daemon --inspect=0` (the command's own chunk), TCP on, every kind of upstream. */
let main: { env: NodeJS.ProcessEnv; socket: string; port: number; token: string };
/** A config of one stdio server, for the daemons started by a path of their own. */
let dualOnly: string;
const fixtures: Array<Pick<HttpFixture, 'stop'>> = [];
const terminals = new Set<ChildProcess>();

const stdio = (file: string) => ({ command: process.execPath, args: [join(SERVERS, file)], mcpx: { probeTimeout: '30s', startTimeout: '60s' } });

beforeAll(async () => {
  dir = await tempDir('mcpx-chunks-');
  const [web, old, locked] = await Promise.all([startHttpFixture('v2-modern'), startHttpFixture('v1-sse-legacy'), startAutoApprove()]);
  fixtures.push(web, old, locked);
  const config = join(dir.path, 'mcpx.json');
  writeFileSync(
    config,
    JSON.stringify({
      mcpServers: {
        dual: stdio('dual.mjs'),
        asking: stdio('asking.mjs'),
        // Slow to answer its probe, so a call is still pending when the progress line is due.
        slow: fixtureEntry(dir.path, 'slow', {
          fixture: 'raw',
          mode: 'slow-modern',
          env: { SLOW_MS: '1500' },
          mcpx: { probeTimeout: '30s', startTimeout: '60s' },
        }),
        web: { url: web.url, mcpx: { probeTimeout: '30s', startTimeout: '60s' } },
        old: { type: 'sse', url: old.url, mcpx: { probeTimeout: '30s', startTimeout: '60s' } },
        locked: { type: 'http', url: locked.url, mcpx: { probeTimeout: '30s', startTimeout: '60s' } },
      },
    }),
  );
  dualOnly = join(dir.path, 'dual-only.json');
  writeFileSync(dualOnly, JSON.stringify({ mcpServers: { dual: stdio('dual.mjs') } }));
  const state = join(dir.path, 'main');
  const port = await freePort();
  const env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: config, MCPX_DAEMON_PORT: String(port), MCPX_DAEMON_START_TIMEOUT: String(WAIT_MS) });
  const socket = join(state, 'daemon.sock');
  await ForegroundDaemon.start(socket, ['--inspect=0'], { env: recording('mcpx daemon --inspect=0 (the main daemon)', env), timeoutMs: WAIT_MS });
  await until(() => existsSync(join(state, 'daemon.json')), WAIT_MS, 'daemon.json'); // written just after the socket answers
  main = { env, socket, port, token: readJson(join(state, 'daemon.json')).token as string };
}, 2 * WAIT_MS);

afterAll(async () => {
  await killAll();
  for (const t of terminals) t.kill('SIGKILL');
  await Promise.all(fixtures.map((f) => f.stop()));
  await dir?.remove();
}, WAIT_MS);

/** `mcpx …` with its loads recorded for `path`; fails with the output unless it exits 0. */
async function run(path: string, args: string[], env: NodeJS.ProcessEnv = main.env): Promise<{ stdout: string; stderr: string }> {
  const r = await mcpx(args, { env: recording(path, env), timeoutMs: WAIT_MS });
  if (r.code !== 0) throw new Error(`mcpx ${args.join(' ')} exited ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  return r;
}

/** `mcpx ui --json` on the main daemon, run once: the live page and the inspector tests both read its answer. */
let uiAnswer: Promise<{ url: string; page: string; inspector: string }> | undefined;
const uiLogin = () => (uiAnswer ??= run('mcpx ui', ['ui', '--json']).then((r) => JSON.parse(r.stdout) as { url: string; page: string; inspector: string }));

/** A GET over loopback TCP (the daemon's listener, the inspector's relay). */
async function tcpGet(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  const res = await request(url, { headers });
  return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
}

describe.concurrent('each path through the binary to a lazily loaded chunk works', () => {
  it('the commands that read or change the daemon: status, servers, tools, protocol, settings, reload; config without one', async ({ expect }) => {
    const [status, servers, tools, protocol, settings, reload, config] = await Promise.all([
      run('mcpx status', ['status']),
      run('mcpx servers', ['servers']),
      run('mcpx tools dual', ['tools', 'dual']),
      run('mcpx protocol', ['protocol']),
      run('mcpx settings', ['settings']),
      run('mcpx reload', ['reload']),
      run('mcpx config', ['config']),
    ]);
    expect(status.stdout).toMatch(/^mcpx \S+, daemon pid \d+/);
    expect(status.stdout).toMatch(/\ndual\s+prefer-discover/);
    expect(servers.stdout).toMatch(/\nweb\s+http\s/);
    expect(tools.stdout).toMatch(/\ndual\s+echo\s+dual__echo\s+Echo the text back/);
    expect(protocol.stdout).toMatch(/^SERVER\s+PREFERENCE\s+ERA/);
    expect(settings.stdout).toMatch(/\nupstream\.protocol\s+prefer-discover/);
    expect(reload.stdout).toMatch(/^reloaded .*unchanged: 6/);
    expect(config.stdout).toContain('(found via env)');
    expect(config.stdout).toMatch(/\nold\s+http\s/);
  });

  it('mcpx call through each transport: stdio (with --timeout), Streamable HTTP (undici), HTTP+SSE', async ({ expect }) => {
    const [viaStdio, viaHttp, viaSse] = await Promise.all([
      run('mcpx call (stdio upstream, --timeout)', ['call', 'dual', 'echo', '{"text":"stdio"}', '--timeout', '60s']),
      run('mcpx call (Streamable HTTP upstream)', ['call', 'web', 'echo', '{"text":"http"}']),
      run('mcpx call (HTTP+SSE upstream)', ['call', 'old', 'echo', '{"text":"sse"}']),
    ]);
    expect(viaStdio.stdout).toMatch(/^stdio \(from dual, era=\w+\)\n$/);
    expect(viaHttp.stdout).toBe('http era=modern\n');
    expect(viaSse.stdout).toBe('sse era=legacy\n');
  });

  it('OAuth: mcpx login (the browser a redirect follower), mcpx auth, a call with the token, mcpx logout', async ({ expect }) => {
    const env = { ...main.env, BROWSER: browserCommand(FOLLOW_REDIRECTS) };
    const login = await run('mcpx login', ['login', 'locked'], env);
    expect(login.stdout).toMatch(/^authorized mcpx for locked \(scopes: mcp:tools\)\n$/);
    expect((await run('mcpx auth', ['auth', 'locked'])).stdout).toMatch(/\nlocked\s+authorized\s+mcp:tools\s/);
    expect((await run('mcpx call (OAuth)', ['call', 'locked', 'echo', '{"text":"t"}'])).stdout).toBe('authorized: t\n');
    expect((await run('mcpx logout', ['logout', 'locked'])).stdout).toBe('forgot the tokens of locked\n');
  });

  it("mcpx call answering an upstream's question (--answer)", async ({ expect }) => {
    const r = await run('mcpx call answering a question', ['call', 'asking', 'greet', '--answer', 'name="Ada"']);
    expect(r.stdout).toMatch(/^Hello Ada! green it is\. \(asked over the \w+ era\)\n$/);
  });

  it('mcpx call with its progress line (forced on) while a server is slow to start', async ({ expect }) => {
    const r = await run('mcpx call with the progress line', ['call', 'slow', 'echo', '{"text":"p"}'], { ...main.env, MCPX_PROGRESS: '1' });
    expect(r.stdout).toBe('p era=modern\n');
    expect(r.stderr).toMatch(/slow: (?:starting the server|waiting for its first answer) \(/);
    expect(r.stderr.endsWith('\r\x1b[K')).toBe(true);
  });

  it('mcpx serve to a real SDK client (2026-07-28) over stdio, logging on', async ({ expect }) => {
    const caller = await stdioCaller('modern', { env: recording('mcpx serve (SDK client)', main.env), args: ['--servers', 'dual'] });
    try {
      expect((await caller.listTools()).tools.map((t) => t['name'])).toContain('dual__echo');
      expect(textOf(await caller.callTool('dual__echo', { text: 'served' }))).toMatch(/^served \(from dual, era=\w+\)$/);
    } finally {
      await caller.close();
    }
  });

  it('mcpx serve --tools search: call_tool checks the arguments with the SDK validator (ajv), then calls', async ({ expect }) => {
    const caller = await stdioCaller('legacy', { env: recording('mcpx serve --tools search', main.env), args: ['--servers', 'dual', '--tools', 'search'] });
    try {
      expect((await caller.listTools()).tools.map((t) => t['name'])).toEqual(['search_tools', 'describe_tools', 'call_tool']);
      expect(textOf(await caller.callTool('call_tool', { name: 'dual__echo', arguments: { text: 'checked' } }))).toMatch(/^checked \(from dual, era=\w+\)$/);
    } finally {
      await caller.close();
    }
  });

  it('mcpx serve through commander (a command line its quick path leaves to it: an option given twice), to a real SDK client (2025-11-25)', async ({
    expect,
  }) => {
    const caller = await stdioCaller('legacy', { env: recording('mcpx serve (commander)', main.env), args: ['--servers', 'web', '--servers', 'dual'] });
    try {
      // commander keeps the last value: only dual is shown.
      const names = (await caller.listTools()).tools.map((t) => String(t['name']));
      expect(names).toContain('dual__echo');
      expect(names.some((n) => n.startsWith('web__'))).toBe(false);
      expect(textOf(await caller.callTool('dual__echo', { text: 'commander' }))).toMatch(/^commander \(from dual, era=\w+\)$/);
    } finally {
      await caller.close();
    }
  });

  it('/mcp on the TCP port with the token, to a real SDK client (2025-11-25)', async ({ expect }) => {
    const caller = await httpCaller('legacy', { url: `http://127.0.0.1:${main.port}/mcp/dual`, token: main.token });
    try {
      expect(textOf(await caller.callTool('echo', { text: 'tcp' }))).toMatch(/^tcp \(from dual, era=\w+\)$/);
    } finally {
      await caller.close();
    }
  });

  it('/v1/openapi.json and /v1/statecharts/:server (json and html)', async ({ expect }) => {
    const [openapi, chart, page] = await Promise.all([
      api(main.socket, 'GET', '/v1/openapi.json'),
      api(main.socket, 'GET', '/v1/statecharts/dual'),
      api(main.socket, 'GET', '/v1/statecharts/dual?format=html'),
    ]);
    expect(openapi.status).toBe(200);
    expect(openapi.body.openapi).toBe('3.1.0');
    expect(Object.keys(openapi.body.paths)).toContain('/v1/call');
    expect(chart.status).toBe(200);
    expect(chart.body.server).toBe('dual');
    expect(chart.body.mermaid).toMatch(/^stateDiagram-v2\n/);
    expect(page.status).toBe(200);
    expect(page.text).toContain('<title>mcpx · dual · session statechart</title>');
  });

  it('the live page: mcpx ui, its one-time login, the page, its script and its state', async ({ expect }) => {
    const login = await uiLogin();
    const redeemed = await tcpGet(login.url);
    expect(redeemed.status).toBe(303);
    const cookie = String(redeemed.headers['set-cookie']).split(';')[0]!;
    const origin = new URL(login.page).origin;
    const [page, script, state] = await Promise.all([
      tcpGet(login.page, { cookie }),
      tcpGet(`${origin}/ui/assets/app.js`, { cookie }),
      tcpGet(`${origin}/ui/api/state`, { cookie }),
    ]);
    expect(page.status).toBe(200);
    expect(page.text).toContain('<title>mcpx · live statecharts</title>');
    expect(script.status).toBe(200);
    expect(script.text).toContain('window.mcpxUi');
    expect(state.status).toBe(200);
    expect((JSON.parse(state.text) as { servers: Array<{ server: string }> }).servers.map((s) => s.server)).toEqual([
      'dual',
      'asking',
      'slow',
      'web',
      'old',
      'locked',
    ]);
  });

  it('the Stately inspector (--inspect): its relay page, and the pools streamed to a viewer', async ({ expect }) => {
    const inspector = new URL((await uiLogin()).inspector);
    expect(inspector.hostname).toBe('127.0.0.1');
    const page = await tcpGet(`http://${inspector.host}/`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('<title>mcpx · Stately inspector</title>');
    const viewer = new WebSocket(`ws://${inspector.host}/relay?role=viewer&token=${encodeURIComponent(inspector.hash.slice(1))}`);
    const actors = new Set<string>();
    viewer.on('message', (m) => {
      const f = JSON.parse(m.toString()) as { type: string; sessionId: string };
      if (f.type === '@xstate.actor') actors.add(f.sessionId);
    });
    try {
      // The relay keeps a backlog for late viewers: the pools, made at the daemon's start, are in it.
      await until(() => actors.has('pool:dual'), WAIT_MS, 'pool:dual on the relay');
    } finally {
      viewer.terminate();
    }
  });

  it('mcpx install (--dry-run, then for real), doctor and uninstall (--dry-run, then for real) in a home with a Cursor config', async ({ expect }) => {
    const home = join(dir.path, 'client-home');
    const file = join(home, '.cursor', 'mcp.json');
    mkdirSync(join(home, '.cursor'), { recursive: true });
    const original = '{\n  // the user\'s own\n  "mcpServers": {}\n}\n';
    writeFileSync(file, original);
    const env = cleanEnv(home, { MCPX_STATE_DIR: join(home, 'state') });
    const dry = await run('mcpx install --dry-run', ['install', '--client', 'cursor', '--config', dualOnly, '--dry-run'], env);
    expect(dry.stdout).toContain('+');
    expect(readFileSync(file, 'utf8')).toBe(original);
    const installed = await run('mcpx install', ['install', '--client', 'cursor', '--config', dualOnly], env);
    expect(installed.stdout).toContain('mcpx');
    expect(JSON.stringify(readFileSync(file, 'utf8'))).toContain('serve');
    const doctor = JSON.parse((await mcpx(['doctor', '--json'], { env: recording('mcpx doctor', env), timeoutMs: WAIT_MS })).stdout) as {
      clients: Array<{ client: string; installed: boolean }>;
    };
    expect(doctor.clients.find((c) => c.client === 'cursor')).toMatchObject({ installed: true });
    const undo = await run('mcpx uninstall --dry-run', ['uninstall', '--client', 'cursor', '--dry-run'], env);
    expect(undo.stdout).toContain('-');
    await run('mcpx uninstall', ['uninstall', '--client', 'cursor'], env);
    expect(readFileSync(file, 'utf8')).toBe(original);
  });

  it('a daemon started in the background by mcpx call, then mcpx stop', async ({ expect }) => {
    const state = join(dir.path, 'auto');
    const env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: dualOnly, MCPX_DAEMON_START_TIMEOUT: String(WAIT_MS) });
    // The daemon inherits the recorder from the call that starts it: both count for this path.
    const call = await run('mcpx call starting a daemon in the background', ['call', 'dual', 'echo', '{"text":"auto"}'], env);
    trackPid(readJson(join(state, 'daemon.json')).pid as number);
    expect(call.stdout).toMatch(/^auto \(from dual, era=\w+\)\n$/);
    const logs = await run('mcpx logs (the background daemon)', ['logs', '-n', 'all'], env);
    expect(logs.stdout).toMatch(/ INFO {2}mcpx daemon ready/);
    const stop = await run('mcpx stop', ['stop'], env);
    expect(stop.stdout).toMatch(/^stopped the mcpx daemon \(pid \d+\)\n$/);
  });

  it('mcpx daemon on a terminal: pretty logs (pino-pretty)', async ({ expect }) => {
    const state = join(dir.path, 'pretty');
    const socket = join(state, 'daemon.sock');
    const env = recording('mcpx daemon on a terminal (pretty logs)', cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: dualOnly }));
    // In a real pseudo-terminal (util-linux `script`), as test/cli/call-questions.test.ts does.
    const child = spawn('script', ['-qfec', `'${process.execPath}' '${MCPX}' daemon`, '/dev/null'], {
      env: { ...env, TERM: 'dumb' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    terminals.add(child);
    let screen = '';
    child.stdout.on('data', (c: Buffer) => (screen += c.toString()));
    child.stderr.on('data', (c: Buffer) => (screen += c.toString()));
    const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
    let gone = false;
    void closed.then(() => (gone = true));
    await until(async () => gone || (await healthy(socket)), WAIT_MS, 'the daemon on a terminal');
    expect(gone, screen).toBe(false);
    await until(() => existsSync(join(state, 'daemon.json')), WAIT_MS, 'daemon.json');
    trackPid(readJson(join(state, 'daemon.json')).pid as number);
    await until(() => screen.includes('mcpx daemon ready'), WAIT_MS, 'the ready line');
    expect(screen).toMatch(/\[\d\d:\d\d:\d\d\.\d{3}\] \S*INFO\S*: \S*mcpx daemon ready/);
    expect(screen).not.toContain('"level":');
    const stop = await run('mcpx stop (the daemon on a terminal)', ['stop'], env);
    expect(stop.stdout).toMatch(/^stopped the mcpx daemon/);
    expect(await closed).toBe(0);
    terminals.delete(child);
  });
});

describe('completeness', () => {
  it('the runs above loaded every chunk of the bundle, but the exempted ones', () => {
    const loaded = new Map<string, string[]>(); // chunk -> the paths that loaded it
    for (const r of runs) for (const c of chunksLoaded(r.file)) loaded.set(c, [...(loaded.get(c) ?? []), r.path]);
    const exemptOf = (o: MetaOutput) => EXEMPT.find((e) => o.entryPoint === e.source);
    // Its source modules, a package's files as the package: what a reader needs to find the import.
    const show = (i: string) => packageOf(i) ?? i;
    const sources = (o: MetaOutput) => [...new Set(Object.keys(o.inputs).map(show))].join(', ') || '(a facade: it re-exports another chunk)';
    const missing = [...CHUNKS]
      .filter(([c, o]) => !loaded.has(c) && !exemptOf(o))
      .map(([c, o]) => `${c}${o.entryPoint ? ` (entry ${show(o.entryPoint)})` : ''}: ${sources(o)}`);
    expect(missing, `chunks no path through the binary loads; add a run that reaches each (or an exemption with its reason):\n${missing.join('\n')}`).toEqual(
      [],
    );
    for (const e of EXEMPT) {
      const chunk = [...CHUNKS].find(([, o]) => o.entryPoint === e.source);
      expect(chunk, `exemption ${e.source} matches no chunk of the bundle: remove it`).toBeDefined();
      expect(loaded.get(chunk![0]) ?? [], `exempted ${e.source} is loaded by a path: remove the exemption`).toEqual([]);
    }
  });
});

// ---- the static check: a CommonJS package reached by import() is read through `.default` ----

/** A package's name from a path inside node_modules (`…/node_modules/@scope/name/x.js` → `@scope/name`). */
function packageOf(path: string): string | undefined {
  const i = path.lastIndexOf('node_modules/');
  if (i < 0) return undefined;
  const [a, b] = path.slice(i + 'node_modules/'.length).split('/');
  return a!.startsWith('@') ? `${a}/${b}` : a;
}

/**
 * Each runtime `import('<pkg>')` of `text` that does not read `.default`, as `line N: <the line>`. Read
 * means one of `(await import(p)).default`, `import(p).then((m) => m.default)`,
 * `import(p).then(({ default: x }) => …)` or `const { default: x } = await import(p)`; a type's
 * `typeof import(p)` is no import. Anything else (named bindings, a namespace kept for later) is reported.
 */
function importsMissingDefault(text: string, pkg: string): string[] {
  const escaped = pkg.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const found: string[] = [];
  for (const m of text.matchAll(new RegExp(`import\\(\\s*(['"])${escaped}\\1\\s*\\)`, 'g'))) {
    const before = text.slice(0, m.index);
    const after = text.slice(m.index + m[0].length);
    if (/\btypeof\s+$/.test(before)) continue;
    const reads =
      /^\s*\)\s*\.\s*default\b/.test(after) ||
      /^\s*\.then\(\s*\(?\s*(\w+)\s*\)?\s*=>\s*\1\s*\.\s*default\b/.test(after) ||
      /^\s*\.then\(\s*\(\s*\{\s*default\s*(:\s*\w+\s*)?\}\s*\)/.test(after) ||
      /\{\s*default\s*(:\s*\w+\s*)?\}\s*=\s*await\s+$/.test(before);
    if (!reads) {
      const line = before.split('\n').length;
      found.push(`line ${line}: ${text.split('\n')[line - 1]!.trim()}`);
    }
  }
  return found;
}

/** The packages whose chunk is a dynamically imported entry exporting only `default` (CommonJS). */
const DEFAULT_ONLY = [
  ...new Set(
    [...CHUNKS.values()]
      .filter((o) => o.entryPoint !== undefined && o.entryPoint.includes('node_modules/') && JSON.stringify(o.exports) === '["default"]')
      .map((o) => packageOf(o.entryPoint!)!),
  ),
].sort();

function sourceFiles(d: string): string[] {
  return readdirSync(d, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(d, e.name)) : e.name.endsWith('.ts') ? [join(d, e.name)] : [],
  );
}

describe('a CommonJS package reached by import() is read through its default export', () => {
  it('the check flags the undici bug and accepts the ways to read default', () => {
    // The code that shipped broken (src/transports/http-channel-base.ts before c60b0e0), and its likes.
    expect(importsMissingDefault("const loadUndici = (): Promise<typeof import('undici')> => (undici ??= import('undici'));", 'undici')).toHaveLength(1);
    expect(importsMissingDefault("const { Agent, request } = await import('undici');", 'undici')).toHaveLength(1);
    expect(importsMissingDefault("const { default: u, Agent } = await import('undici');", 'undici')).toHaveLength(1);
    expect(importsMissingDefault("const Agent = (await import('undici')).Agent;", 'undici')).toHaveLength(1);
    expect(importsMissingDefault("import('undici').then((m) => m.Agent)", 'undici')).toHaveLength(1);
    expect(importsMissingDefault("import('undici').then(({ Agent }) => Agent)", 'undici')).toHaveLength(1);
    // The ways that work in the bundle and in tsc's output alike.
    expect(
      importsMissingDefault("type Undici = typeof import('undici').default;\nconst load = () => import('undici').then((m) => m.default);", 'undici'),
    ).toEqual([]);
    expect(importsMissingDefault("const pretty = (await import('pino-pretty')).default;", 'pino-pretty')).toEqual([]);
    expect(importsMissingDefault("import('pino').then(({ default: pino }) => pino({}))", 'pino')).toEqual([]);
    expect(importsMissingDefault("const { default: pretty } = await import('pino-pretty');", 'pino-pretty')).toEqual([]);
    // A package name is matched whole: pino's check is not pino-pretty's.
    expect(importsMissingDefault("const { x } = await import('pino-pretty');", 'pino')).toEqual([]);
  });

  it('every import() in src of such a package reads .default', () => {
    // undici, pino and pino-pretty today; found from the metafile, so a new one is checked too.
    expect(DEFAULT_ONLY.length).toBeGreaterThan(0);
    const src = join(ROOT, 'src');
    const files = sourceFiles(src).map((f) => ({ rel: relative(ROOT, f).split(sep).join('/'), text: readFileSync(f, 'utf8') }));
    const bad: string[] = [];
    for (const pkg of DEFAULT_ONLY) {
      const importers = files.filter((f) => new RegExp(`import\\(\\s*['"]${pkg.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}['"]`).test(f.text));
      // The chunk exists because src imports it dynamically: finding none means this check's pattern went blind.
      expect(
        importers.map((f) => f.rel),
        `no import('${pkg}') found in src, yet the bundle has it as a lazily loaded chunk`,
      ).not.toEqual([]);
      for (const f of importers) for (const hit of importsMissingDefault(f.text, pkg)) bad.push(`${f.rel} ${hit}`);
    }
    expect(bad, `these read named exports of a CommonJS package's chunk, which has only default (undefined in the binary):\n${bad.join('\n')}`).toEqual([]);
  });
});
