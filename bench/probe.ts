/**
 * What the era probe costs, per kind of server, against the official SDK v2 client's
 * `versionNegotiation: { mode: 'auto' }` in the same run: start → first tools/call result, the
 * JSON-RPC requests the server received before that call, and the processes spawned.
 *
 *   mcpx forced   the era forced (force-initialize / force-discover): no probe at all (a reference)
 *   mcpx first    prefer-discover with an empty era cache (the one-time probe)
 *   mcpx cached   prefer-discover with the record the first start wrote, on the same server definition
 *                 (command, args, env; over HTTP the same server), so the era-cache key is the one the
 *                 first start wrote under; its wire must match the era-forced start's (no probe), or the
 *                 cell is marked failed
 *   SDK auto      the SDK v2 client, `versionNegotiation: { mode: 'auto', probe: { timeoutMs } }`, the
 *                 probe timeout set to mcpx's upstream.probeTimeout (2 s) so a silent server costs
 *                 both the same wait (the SDK's default would be its 60 s request timeout)
 *
 * Fixtures (test/fixtures; every stdio one through the wire-log preload, which records each received
 * line and each process start): stdio — legacy answering the probe with an error (SDK v1),
 * legacy silent before initialize, legacy exiting on the probe, dual (SDK v2), modern-only (SDK v2);
 * HTTP — legacy (SDK v1, sessions), dual (SDK v2), modern-only (SDK v2).
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { SessionPreference } from '../src/machines/preference.js';
import { EraCache } from '../src/upstream/era-cache.js';
import { eraCacheKey } from '../src/upstream/process-key.js';
import { UpstreamSession } from '../src/upstream/session.js';
import type { ServerDefinition } from '../src/upstream/definition.js';
import { ROOT, ROUNDS } from './lib/knobs.js';
import { removeFolder, stopChild, tempFolder, track } from './lib/procs.js';
import { figure, type Figure } from './lib/stats.js';

const FIX = join(ROOT, 'test', 'fixtures');
const PRELOAD = join(FIX, 'wire-log.mjs');
const PROBE_TIMEOUT_MS = 2_000;

interface Fixture {
  id: string;
  label: string;
  transport: 'stdio' | 'http';
  args: string[];
  forced: SessionPreference;
}

const FIXTURES: Fixture[] = [
  {
    id: 'stdio-legacy-error',
    label: 'legacy, answers the probe with an error (SDK v1)',
    transport: 'stdio',
    args: [join(FIX, 'legacy-v1.mjs')],
    forced: 'force-initialize',
  },
  {
    id: 'stdio-legacy-silent',
    label: 'legacy, silent before initialize',
    transport: 'stdio',
    args: [join(FIX, 'raw.mjs'), 'silent'],
    forced: 'force-initialize',
  },
  {
    id: 'stdio-legacy-exit',
    label: 'legacy, exits on the probe',
    transport: 'stdio',
    args: [join(FIX, 'raw.mjs'), 'exit-pre-init'],
    forced: 'force-initialize',
  },
  { id: 'stdio-dual', label: 'dual (SDK v2)', transport: 'stdio', args: [join(FIX, 'dual-v2.mjs')], forced: 'force-discover' },
  { id: 'stdio-modern', label: 'modern-only (SDK v2)', transport: 'stdio', args: [join(FIX, 'modern-v2.mjs')], forced: 'force-discover' },
  { id: 'http-legacy', label: 'legacy (SDK v1, sessions)', transport: 'http', args: [join(FIX, 'http', 'v1-legacy-sessions.mjs')], forced: 'force-initialize' },
  { id: 'http-dual', label: 'dual (SDK v2)', transport: 'http', args: [join(FIX, 'http', 'v2-dual.mjs')], forced: 'force-discover' },
  { id: 'http-modern', label: 'modern-only (SDK v2)', transport: 'http', args: [join(FIX, 'http', 'v2-modern.mjs')], forced: 'force-discover' },
];

export type ProbeVariant = 'forced' | 'first' | 'cached' | 'sdkAuto';

export interface ProbeCell {
  /** start → first tools/call result */
  ms: Figure;
  /** JSON-RPC requests the server received before the first tools/call (median over rounds). */
  requests: number;
  /** Server processes spawned (stdio; 0 over HTTP). */
  processes: number;
  /** The methods of those requests, in order (the first round's). */
  methods?: string[];
  error?: string;
}

export interface ProbeRow {
  id: string;
  label: string;
  transport: 'stdio' | 'http';
  cells: Partial<Record<ProbeVariant, ProbeCell>>;
}

export interface ProbeResults {
  rounds: number;
  probeTimeoutMs: number;
  rows: ProbeRow[];
}

interface WireEvent {
  event: string;
  kind?: string;
  method?: string;
  rpc?: Array<{ kind: string; method?: string }>;
}

function readLog(file: string): WireEvent[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim().length > 0)
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as WireEvent];
      } catch {
        return [];
      }
    });
}

interface Wire {
  requests: number;
  processes: number;
  methods: string[];
}

/** Requests before the first tools/call (how many, which), and process starts. */
function countWire(file: string, transport: 'stdio' | 'http'): Wire {
  const events = readLog(file);
  let requests = 0;
  let processes = 0;
  const methods: string[] = [];
  outer: for (const e of events) {
    if (e.event === 'start') processes += 1;
    const items =
      transport === 'stdio'
        ? e.event === 'recv'
          ? [{ kind: e.kind ?? '', ...(e.method ? { method: e.method } : {}) }]
          : []
        : e.event === 'request'
          ? (e.rpc ?? [])
          : [];
    for (const item of items) {
      if (item.kind !== 'request') continue;
      if (item.method === 'tools/call') break outer;
      requests += 1;
      methods.push(item.method ?? '?');
    }
  }
  return { requests, processes: transport === 'stdio' ? processes : 0, methods };
}

/**
 * Why a cached start's wire is not a cached start's, or null: it must do what the era-forced start did
 * (the same requests, no more processes). A probe (server/discover sent to a server the record says is
 * legacy, a second process) means the record was not used: a first start timed as a cached one.
 */
export function probedWhenCached(cached: Wire, forced: Wire): string | null {
  const same = cached.methods.length === forced.methods.length && cached.methods.every((m, i) => m === forced.methods[i]);
  if (same && cached.processes <= forced.processes) return null;
  return `the cached start probed: [${cached.methods.join(', ')}], ${cached.processes} proc; era forced: [${forced.methods.join(', ')}], ${forced.processes} proc`;
}

interface HttpServer {
  url: string;
  stop(): Promise<void>;
}

async function startHttp(args: string[], log: string): Promise<HttpServer> {
  const child = track(spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'ignore'], env: { ...process.env, MCPX_FIXTURE_LOG: log } }));
  child.stdin?.on('error', () => undefined);
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('no LISTENING line within 15 s')), 15_000);
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (s: string) => {
      out += s;
      const m = /^LISTENING (\d+)$/m.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.once('exit', () => reject(new Error('exited before listening')));
  });
  return { url: `http://127.0.0.1:${port}/mcp`, stop: () => stopChild(child) };
}

async function timeMcpx(definition: ServerDefinition, preference: SessionPreference, cache: EraCache | null): Promise<number> {
  const session = new UpstreamSession({ name: 'bench', definition, preference, cache, probeTimeoutMs: PROBE_TIMEOUT_MS });
  const t0 = performance.now();
  try {
    await session.start();
    await session.callTool('echo', { text: 'bench' });
    return performance.now() - t0;
  } finally {
    await session.stop();
  }
}

async function timeSdkAuto(fx: Fixture, log: string, url: string | undefined): Promise<number> {
  const client = new Client({ name: 'mcpx-bench', version: '1.0.0' }, { versionNegotiation: { mode: 'auto', probe: { timeoutMs: PROBE_TIMEOUT_MS } } });
  const t0 = performance.now();
  try {
    const transport =
      fx.transport === 'stdio'
        ? new StdioClientTransport({
            command: process.execPath,
            args: ['--import', PRELOAD, ...fx.args],
            env: { ...(process.env as Record<string, string>), MCPX_FIXTURE_LOG: log },
            stderr: 'ignore',
          })
        : new StreamableHTTPClientTransport(new URL(url!));
    await client.connect(transport);
    await client.callTool({ name: 'echo', arguments: { text: 'bench' } });
    return performance.now() - t0;
  } finally {
    await client.close().catch(() => undefined);
  }
}

export async function benchProbe(log: (line: string) => void): Promise<ProbeResults> {
  const rows: ProbeRow[] = [];
  for (const fx of FIXTURES) {
    const times: Record<ProbeVariant, number[]> = { forced: [], first: [], cached: [], sdkAuto: [] };
    const wire: Record<ProbeVariant, Wire[]> = { forced: [], first: [], cached: [], sdkAuto: [] };
    const errors: Partial<Record<ProbeVariant, string>> = {};
    for (let round = 0; round < ROUNDS; round++) {
      const dir = tempFolder('mcpx-bench-p-');
      let http: HttpServer | undefined;
      try {
        const logOf = (v: ProbeVariant) => join(dir, `${v}.jsonl`);
        // One HTTP server per variant, so each log holds one variant's traffic (first and cached share one).
        const definitionFor = async (log: string): Promise<{ def: ServerDefinition; url?: string }> => {
          if (fx.transport === 'stdio') return { def: { command: process.execPath, args: ['--import', PRELOAD, ...fx.args], env: { MCPX_FIXTURE_LOG: log } } };
          await http?.stop();
          http = await startHttp(fx.args, log);
          return { def: { url: http.url }, url: http.url };
        };
        const state = join(dir, 'state');
        const run = async (v: ProbeVariant, fn: (d: { def: ServerDefinition; url?: string }) => Promise<number>): Promise<Wire | undefined> => {
          try {
            const d = await definitionFor(logOf(v));
            times[v].push(await fn(d));
            const w = countWire(logOf(v), fx.transport);
            wire[v].push(w);
            return w;
          } catch (err) {
            errors[v] ??= (err as Error).message;
            return undefined;
          }
        };
        const forced = await run('forced', (d) => timeMcpx(d.def, fx.forced, null));
        // First and cached start on one definition (the same command, args and env; over HTTP the same
        // server), so the cached start finds the record under the key the first wrote. Their one wire log is
        // moved aside after each start (the preload opens it by name per line), so each start's traffic is
        // read on its own while the definition stays the same.
        const shared = join(dir, 'start.jsonl');
        const start = async (v: 'first' | 'cached', d: { def: ServerDefinition }, cache: EraCache) => {
          const ms = await timeMcpx(d.def, 'prefer-discover', cache);
          if (existsSync(shared)) renameSync(shared, logOf(v));
          const w = countWire(logOf(v), fx.transport);
          const probed = v === 'cached' && forced ? probedWhenCached(w, forced) : null;
          if (probed) throw new Error(probed);
          times[v].push(ms);
          wire[v].push(w);
        };
        try {
          const d = await definitionFor(shared);
          const firstCache = await EraCache.open(state);
          try {
            await start('first', d, firstCache);
          } catch (err) {
            errors.first ??= (err as Error).message;
            throw new Error('no first start to fill the era cache');
          }
          await firstCache.whenIdle();
          const cache = await EraCache.open(state);
          if (!cache.usable(eraCacheKey(d.def))) throw new Error('the first start left no era record for this definition');
          await start('cached', d, cache);
        } catch (err) {
          errors.cached ??= (err as Error).message;
        }
        await run('sdkAuto', (d) => timeSdkAuto(fx, logOf('sdkAuto'), d.url));
      } finally {
        await http?.stop();
        removeFolder(dir);
      }
    }
    if (errors.cached?.startsWith('the cached start probed')) log(`probe: ${fx.transport} ${fx.label}: ${errors.cached}`);
    const cells: ProbeRow['cells'] = {};
    for (const v of ['forced', 'first', 'cached', 'sdkAuto'] as const) {
      if (times[v].length === 0) {
        cells[v] = { ms: figure([Number.NaN]), requests: Number.NaN, processes: Number.NaN, error: errors[v] ?? 'no run' };
        continue;
      }
      const reqs = wire[v].map((w) => w.requests).sort((a, b) => a - b);
      const procs = wire[v].map((w) => w.processes).sort((a, b) => a - b);
      cells[v] = {
        ms: figure(times[v]),
        requests: reqs[Math.floor(reqs.length / 2)]!,
        processes: procs[Math.floor(procs.length / 2)]!,
        methods: wire[v][0]!.methods,
        ...(errors[v] ? { error: errors[v] } : {}),
      };
    }
    rows.push({ id: fx.id, label: fx.label, transport: fx.transport, cells });
    log(`probe: ${fx.transport} ${fx.label} done`);
  }
  return { rounds: ROUNDS, probeTimeoutMs: PROBE_TIMEOUT_MS, rows };
}
