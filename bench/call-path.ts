/**
 * The warm call path, side by side on one warm stdio fixture (examples/servers/dual.mjs, official SDK
 * v2, `echo`), each at concurrency 1 and 16: p50, p99 and calls/s, the median of ROUNDS runs with the
 * spread. Rounds are interleaved (every variant runs once per round, in turn), so machine load hits
 * every variant alike. The same daemon also fronts three HTTP upstreams (HTTP_UPSTREAMS), so the
 * binary's HTTP transports are on a measured path too (a bundling fault once broke them all unseen).
 *
 *   a  the official SDK v2 client calling the fixture directly (the floor): as a 2025-11-25 caller
 *      (default negotiation) and as a 2026-07-28 caller (pinned)
 *   r  the floor of one extra hop: the same POST, made the same way, to a minimal `node:http` relay on a
 *      Unix socket (bench/relay.ts, a process of its own) whose SDK v2 client (2026-07-28) calls the fixture
 *   b  POST /v1/call over the daemon's Unix socket (undici, keep-alive, one connection per worker)
 *   c  the same SDK client through `mcpx serve` (stdio), as a 2025-11-25 and a 2026-07-28 caller
 *   d  the same SDK client through supergateway (stdio → Streamable HTTP, stateful: one fixture
 *      process per session), as a 2025-11-25 caller
 *   e  `mcpx call dual echo` from the shell against the warm daemon (a whole process each time),
 *      next to bare `node -e 0` and `mcpx --version`
 *
 * Over each HTTP upstream (test/fixtures/http: a Streamable HTTP SDK v2 modern-only server, an SDK v1
 * sessionful legacy one, an SDK v1 HTTP+SSE one, which mcpx reaches through its fallback), `echo`:
 *   a-<id>  the SDK v2 client calling that server directly over its transport (the floor of b-<id>)
 *   b-<id>  POST /v1/call over the daemon's socket to it
 *   e-<id>  `mcpx call <server> echo` from the shell
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { Client, SSEClientTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Pool } from 'undici';
import { BASELINE_MCPX, CALLS, MCPX, ROOT, ROUNDS } from './lib/knobs.js';
import { drive } from './lib/load.js';
import { DUAL, freePort, nodeServer, removeFolder, sleep, startDaemon, startHttpServer, stopChild, tempFolder, track, type Daemon } from './lib/procs.js';
import { figure, percentile, type Figure } from './lib/stats.js';

export const CONCURRENCY = [1, 16] as const;
/** Calls timed from a fresh process (one in flight), then calls at 16 in flight before the rounds begin. */
const COLD_CALLS = 1_000;
const WARM_CALLS = 5_000;

/** The first COLD_CALLS calls of a variant, one at a time, before anything warmed it. */
export interface ColdRow {
  id: string;
  label: string;
  calls: number;
  p50: number;
  mean: number;
  errors: number;
}

export interface CallRow {
  id: string;
  label: string;
  concurrency: number;
  p50: Figure;
  p99: Figure;
  rate: Figure;
  errors: number;
  note?: string;
}

export interface ShellRow {
  id: string;
  label: string;
  wallMs: Figure;
  maxRssMiB: Figure | null;
}

export interface CallResults {
  fixture: string;
  rounds: number;
  calls: { 1: number; 16: number };
  rows: CallRow[];
  /** The first calls of each variant, before the warm-up (absent in results from before it was measured). */
  cold?: ColdRow[];
  /** Calls at 16 in flight after those, on each path, before the rounds. */
  warmCalls?: number;
  missing: Array<{ id: string; label: string; why: string }>;
  shell: ShellRow[];
}

interface Variant {
  id: string;
  label: string;
  call: () => Promise<void>;
  close: () => Promise<void>;
  note?: string;
}

/**
 * The HTTP upstreams: the daemon's server name, the fixture, the path it serves MCP on, and how the
 * floor's SDK client reaches it (the era it speaks, the transport). A plain `url` in the config for
 * each, as a user writes it: mcpx finds the SSE server through the Streamable HTTP attempt's 405.
 */
const HTTP_UPSTREAMS = [
  {
    id: 'http-modern',
    server: 'modern-http',
    file: 'v2-modern.mjs',
    path: '/mcp',
    modern: true,
    sse: false,
    what: 'Streamable HTTP SDK v2 modern-only server (v2-modern.mjs)',
    era: '2026-07-28',
  },
  {
    id: 'http-legacy',
    server: 'legacy-http',
    file: 'v1-legacy-sessions.mjs',
    path: '/mcp',
    modern: false,
    sse: false,
    what: 'Streamable HTTP SDK v1 sessionful server (v1-legacy-sessions.mjs)',
    era: '2025-11-25',
  },
  {
    id: 'sse',
    server: 'sse-http',
    file: 'v1-sse-legacy.mjs',
    path: '/sse',
    modern: false,
    sse: true,
    what: 'HTTP+SSE SDK v1 server (v1-sse-legacy.mjs)',
    era: '2025-11-25',
  },
] as const;

const INFO = { name: 'mcpx-bench', version: '1.0.0' };
const MODERN = { versionNegotiation: { mode: { pin: '2026-07-28' } } };
const ARGS = { text: 'bench' };

function checkResult(r: unknown): void {
  const c = (r as { content?: Array<{ text?: string }>; isError?: boolean }) ?? {};
  if (c.isError || !Array.isArray(c.content) || !String(c.content[0]?.text ?? '').startsWith('bench'))
    throw new Error(`unexpected result ${JSON.stringify(r).slice(0, 200)}`);
}

async function sdkStdio(
  id: string,
  label: string,
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv | undefined,
  modern: boolean,
  tool: string,
): Promise<Variant> {
  const transport = new StdioClientTransport({ command, args, ...(env ? { env: env as Record<string, string> } : {}), stderr: 'ignore' });
  const client = new Client(INFO, modern ? MODERN : {});
  await client.connect(transport);
  return {
    id,
    label,
    call: async () => checkResult(await client.callTool({ name: tool, arguments: ARGS })),
    close: () => client.close(),
  };
}

async function sdkHttp(id: string, label: string, url: string, modern: boolean, tool: string, sse = false): Promise<Variant> {
  const client = new Client(INFO, modern ? MODERN : {});
  await client.connect(sse ? new SSEClientTransport(new URL(url)) : new StreamableHTTPClientTransport(new URL(url)));
  return {
    id,
    label,
    call: async () => checkResult(await client.callTool({ name: tool, arguments: ARGS })),
    close: () => client.close(),
  };
}

function v1Call(socket: string, id = 'b', label = 'POST /v1/call (daemon socket)', server = 'dual', path = '/v1/call'): Variant {
  const pool = new Pool('http://localhost', { socketPath: socket, connections: 16, pipelining: 1 });
  const body = JSON.stringify({ server, tool: 'echo', args: ARGS });
  return {
    id,
    label,
    call: async () => {
      const res = await pool.request({ path, method: 'POST', headers: { 'content-type': 'application/json' }, body });
      const out = (await res.body.json()) as { ok?: boolean; result?: unknown };
      if (res.statusCode !== 200 || !out.ok) throw new Error(`${path} answered ${res.statusCode} ${JSON.stringify(out).slice(0, 200)}`);
      checkResult(out.result);
    },
    close: () => pool.close(),
  };
}

/** Row r: bench/relay.ts in a process of its own, on a socket in a temp folder, driven exactly as (b) is. */
async function relay(): Promise<Variant> {
  const dir = tempFolder('mcpx-bench-r-');
  const socket = join(dir, 'relay.sock');
  const child = track(spawn(process.execPath, [join(ROOT, 'dist', 'bench', 'relay.js'), socket, DUAL], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] }));
  let err = '';
  child.stderr?.on('data', (c: Buffer) => (err = (err + c.toString()).slice(-2000)));
  try {
    await new Promise<void>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`the relay did not listen within 20 s: ${err.trim()}`)), 20_000);
      child.stdout?.on('data', (c: Buffer) => {
        out += c.toString();
        if (!out.includes('LISTENING\n')) return;
        clearTimeout(timer);
        resolve();
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the relay exited (${code}) before listening: ${err.trim()}`));
      });
    });
  } catch (e) {
    await stopChild(child);
    removeFolder(dir);
    throw e;
  }
  const v = v1Call(socket, 'r', 'one-hop `node:http` relay on a Unix socket → SDK v2 client → fixture, 2026-07-28 (floor of one extra hop)', 'dual', '/call');
  return {
    ...v,
    close: async () => {
      await v.close().catch(() => undefined);
      await stopChild(child);
      removeFolder(dir);
    },
  };
}

function portAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

async function supergateway(): Promise<{ variant: Variant } | { why: string }> {
  const entry = join(ROOT, 'node_modules', 'supergateway', 'dist', 'index.js');
  if (!existsSync(entry)) return { why: 'supergateway is not installed (npm install)' };
  const port = await freePort();
  const child = track(
    spawn(
      process.execPath,
      [
        '--import',
        join(ROOT, 'bench', 'loopback-only.mjs'),
        entry,
        '--stdio',
        `${process.execPath} ${DUAL}`,
        '--outputTransport',
        'streamableHttp',
        '--stateful',
        '--port',
        String(port),
        '--logLevel',
        'none',
      ],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
        cwd: ROOT,
      },
    ),
  );
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  const deadline = Date.now() + 20_000;
  while (!(await portAnswers(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stopChild(child);
      return { why: `supergateway did not start: ${stderr.trim().split('\n').slice(-1)[0] ?? ''}` };
    }
    await sleep(20);
  }
  try {
    const v = await sdkHttp('d', 'supergateway (stdio → Streamable HTTP), 2025-11-25 caller', `http://127.0.0.1:${port}/mcp`, false, 'echo');
    return {
      variant: {
        ...v,
        note: 'stateful: one fixture process per session',
        close: async () => {
          await v.close().catch(() => undefined);
          await stopChild(child);
        },
      },
    };
  } catch (err) {
    await stopChild(child);
    return { why: `supergateway: ${(err as Error).message}` };
  }
}

/** Wall time and peak RSS of one command (peak RSS through /usr/bin/time when it exists). */
function timeCommand(args: string[], env: NodeJS.ProcessEnv, cwd: string): { ms: number; rssKiB: number | null } {
  const useTime = existsSync('/usr/bin/time');
  const t0 = performance.now();
  const r = useTime
    ? spawnSync('/usr/bin/time', ['-f', 'MAXRSS %M', process.execPath, ...args], { env, cwd, encoding: 'utf8' })
    : spawnSync(process.execPath, args, { env, cwd, encoding: 'utf8' });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  const m = /MAXRSS (\d+)/.exec(r.stderr ?? '');
  return { ms, rssKiB: m ? Number(m[1]) : null };
}

async function shellRows(daemon: Daemon, base: Daemon | undefined): Promise<ShellRow[]> {
  const per = Math.max(3, Math.round(CALLS / 40));
  const cases = [
    { id: 'node', label: 'bare `node -e 0`', args: ['-e', '0'], d: daemon },
    { id: 'version', label: '`mcpx --version`', args: [MCPX, '--version'], d: daemon },
    { id: 'e', label: '`mcpx call dual echo` (warm daemon)', args: [MCPX, 'call', 'dual', 'echo', JSON.stringify(ARGS)], d: daemon },
    ...HTTP_UPSTREAMS.map((u) => ({
      id: `e-${u.id}`,
      label: `\`mcpx call ${u.server} echo\` (warm daemon; ${u.what})`,
      args: [MCPX, 'call', u.server, 'echo', JSON.stringify(ARGS)],
      d: daemon,
    })),
    ...(base && BASELINE_MCPX
      ? [
          { id: 'version-before', label: 'before: `mcpx --version`', args: [BASELINE_MCPX, '--version'], d: base },
          {
            id: 'e-before',
            label: 'before: `mcpx call dual echo` (warm daemon)',
            args: [BASELINE_MCPX, 'call', 'dual', 'echo', JSON.stringify(ARGS)],
            d: base,
          },
        ]
      : []),
  ];
  const ms = new Map<string, number[]>(cases.map((c) => [c.id, []]));
  const rss = new Map<string, number[]>(cases.map((c) => [c.id, []]));
  for (let round = 0; round < ROUNDS; round++) {
    const runMs = new Map<string, number[]>(cases.map((c) => [c.id, []]));
    for (let i = 0; i < per; i++) {
      for (const c of cases) {
        const r = timeCommand(c.args, c.d.env, c.d.dir);
        runMs.get(c.id)!.push(r.ms);
        if (r.rssKiB !== null) rss.get(c.id)!.push(r.rssKiB / 1024);
      }
    }
    for (const c of cases) ms.get(c.id)!.push(percentile(runMs.get(c.id)!, 50));
  }
  return cases.map((c) => ({ id: c.id, label: c.label, wallMs: figure(ms.get(c.id)!), maxRssMiB: rss.get(c.id)!.length > 0 ? figure(rss.get(c.id)!) : null }));
}

export async function benchCallPath(log: (line: string) => void): Promise<CallResults> {
  const variants: Variant[] = [];
  const missing: CallResults['missing'] = [];
  const httpServers: Array<Awaited<ReturnType<typeof startHttpServer>>> = [];
  let daemon: Daemon | undefined;
  let base: Daemon | undefined;
  try {
    const urls = new Map<string, string>();
    for (const u of HTTP_UPSTREAMS) {
      const h = await startHttpServer(u.file);
      httpServers.push(h);
      urls.set(u.id, `${h.origin}${u.path}`);
    }
    daemon = await startDaemon({ servers: { dual: nodeServer(DUAL), ...Object.fromEntries(HTTP_UPSTREAMS.map((u) => [u.server, { url: urls.get(u.id) }])) } });
    if (BASELINE_MCPX) base = await startDaemon({ cli: BASELINE_MCPX, servers: { dual: nodeServer(DUAL) } });
    log(`daemon ready in ${daemon.readyMs.toFixed(0)} ms`);
    variants.push(await sdkStdio('a-legacy', 'SDK v2 client → fixture, 2025-11-25 (floor)', process.execPath, [DUAL], undefined, false, 'echo'));
    variants.push(await sdkStdio('a-modern', 'SDK v2 client → fixture, 2026-07-28 (floor)', process.execPath, [DUAL], undefined, true, 'echo'));
    variants.push(await relay());
    variants.push(v1Call(daemon.socket));
    variants.push(await sdkStdio('c-legacy', 'SDK v2 client → `mcpx serve`, 2025-11-25', process.execPath, [MCPX, 'serve'], daemon.env, false, 'dual__echo'));
    variants.push(await sdkStdio('c-modern', 'SDK v2 client → `mcpx serve`, 2026-07-28', process.execPath, [MCPX, 'serve'], daemon.env, true, 'dual__echo'));
    if (base && BASELINE_MCPX) {
      variants.push(v1Call(base.socket, 'b-before', 'before: POST /v1/call (daemon socket)'));
      variants.push(
        await sdkStdio(
          'c-legacy-before',
          'before: SDK v2 client → `mcpx serve`, 2025-11-25',
          process.execPath,
          [BASELINE_MCPX, 'serve'],
          base.env,
          false,
          'dual__echo',
        ),
      );
      variants.push(
        await sdkStdio(
          'c-modern-before',
          'before: SDK v2 client → `mcpx serve`, 2026-07-28',
          process.execPath,
          [BASELINE_MCPX, 'serve'],
          base.env,
          true,
          'dual__echo',
        ),
      );
    }
    const sg = await supergateway();
    if ('variant' in sg) variants.push(sg.variant);
    else missing.push({ id: 'd', label: 'supergateway', why: sg.why });
    for (const u of HTTP_UPSTREAMS) {
      variants.push(await sdkHttp(`a-${u.id}`, `SDK v2 client → ${u.what}, ${u.era} (floor of b-${u.id})`, urls.get(u.id)!, u.modern, 'echo', u.sse));
      variants.push(v1Call(daemon.socket, `b-${u.id}`, `POST /v1/call (daemon socket) → ${u.what}`, u.server));
    }

    // Warm every path (JIT, connections, the daemon's session) before measuring. V8 optimises a function
    // only after many runs, and a path through several processes has thousands of functions: the daemon
    // takes some 5,000 calls to settle (1,000 calls at a time: about 1.4 ms of its CPU per call over the
    // first thousand, 0.3 ms from the fifth on). The first calls are timed on their own: what a caller
    // who calls now and then gets, from a fresh process.
    const cold: ColdRow[] = [];
    for (const v of variants) {
      const first = await drive(v.call, 1, COLD_CALLS);
      cold.push({
        id: v.id,
        label: v.label,
        calls: first.latencies.length,
        p50: percentile(first.latencies, 50),
        mean: first.latencies.reduce((a, b) => a + b, 0) / Math.max(1, first.latencies.length),
        errors: first.errors,
      });
      await drive(v.call, 16, WARM_CALLS);
    }

    const runs = new Map<string, { p50: number[]; p99: number[]; rate: number[]; errors: number }>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const c of CONCURRENCY) {
        for (const v of variants) {
          const total = c === 1 ? CALLS : CALLS * 2;
          const r = await drive(v.call, c, total);
          const key = `${v.id}@${c}`;
          const acc = runs.get(key) ?? { p50: [], p99: [], rate: [], errors: 0 };
          acc.p50.push(percentile(r.latencies, 50));
          acc.p99.push(percentile(r.latencies, 99));
          acc.rate.push((r.latencies.length / r.wallMs) * 1000);
          acc.errors += r.errors;
          if (r.firstError) log(`${key}: ${r.errors} errors, first: ${r.firstError}`);
          runs.set(key, acc);
        }
      }
      log(`call path: round ${round + 1}/${ROUNDS} done`);
    }
    const rows: CallRow[] = [];
    for (const v of variants) {
      for (const c of CONCURRENCY) {
        const acc = runs.get(`${v.id}@${c}`)!;
        rows.push({
          id: v.id,
          label: v.label,
          concurrency: c,
          p50: figure(acc.p50),
          p99: figure(acc.p99),
          rate: figure(acc.rate),
          errors: acc.errors,
          ...(v.note ? { note: v.note } : {}),
        });
      }
    }
    for (const v of variants) await v.close().catch(() => undefined);
    variants.length = 0;
    log('shell: mcpx call / --version / node -e 0');
    const shell = await shellRows(daemon, base);
    return {
      fixture: `examples/servers/dual.mjs echo (stdio); HTTP upstreams: ${HTTP_UPSTREAMS.map((u) => `test/fixtures/http/${u.file}`).join(', ')} echo`,
      rounds: ROUNDS,
      calls: { 1: CALLS, 16: CALLS * 2 },
      rows,
      cold,
      warmCalls: WARM_CALLS,
      missing,
      shell,
    };
  } finally {
    for (const v of variants) await v.close().catch(() => undefined);
    await daemon?.stop();
    await base?.stop();
    for (const h of httpServers) await stopChild(h.child);
  }
}
