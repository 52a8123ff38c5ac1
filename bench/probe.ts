/**
 * What the era probe costs, per kind of server, against the official SDK v2 client's
 * `versionNegotiation: { mode: 'auto' }` in the same run: start → first tools/call result, the
 * JSON-RPC requests the server received before that call, and the processes spawned.
 *
 *   mcpx forced   the era forced (force-initialize / force-discover): no probe at all (a reference)
 *   mcpx first    prefer-discover with an empty era cache (the one-time probe)
 *   mcpx cached   prefer-discover with the record the first start wrote
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
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { SessionPreference } from '../src/machines/preference.js';
import { EraCache } from '../src/upstream/era-cache.js';
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

/** Requests before the first tools/call, and process starts. */
function countWire(file: string, transport: 'stdio' | 'http'): { requests: number; processes: number } {
  const events = readLog(file);
  let requests = 0;
  let processes = 0;
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
    }
  }
  return { requests, processes: transport === 'stdio' ? processes : 0 };
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
    const wire: Record<ProbeVariant, Array<{ requests: number; processes: number }>> = { forced: [], first: [], cached: [], sdkAuto: [] };
    const errors: Partial<Record<ProbeVariant, string>> = {};
    for (let round = 0; round < ROUNDS; round++) {
      const dir = tempFolder('mcpx-bench-p-');
      let http: HttpServer | undefined;
      try {
        const logOf = (v: ProbeVariant) => join(dir, `${v}.jsonl`);
        // One HTTP server per variant, so each log holds one variant's traffic.
        const definitionFor = async (v: ProbeVariant): Promise<{ def: ServerDefinition; url?: string }> => {
          if (fx.transport === 'stdio')
            return { def: { command: process.execPath, args: ['--import', PRELOAD, ...fx.args], env: { MCPX_FIXTURE_LOG: logOf(v) } } };
          await http?.stop();
          http = await startHttp(fx.args, logOf(v));
          return { def: { url: http.url }, url: http.url };
        };
        const state = join(dir, 'state');
        const run = async (v: ProbeVariant, fn: (d: { def: ServerDefinition; url?: string }) => Promise<number>) => {
          try {
            const d = await definitionFor(v);
            times[v].push(await fn(d));
            wire[v].push(countWire(logOf(v), fx.transport));
          } catch (err) {
            errors[v] ??= (err as Error).message;
          }
        };
        await run('forced', (d) => timeMcpx(d.def, fx.forced, null));
        // The cached start must reach the same server definition: over HTTP the URL changes with each
        // server, so the record is written and read on one server (first, then cached, same process).
        if (fx.transport === 'stdio') {
          const firstCache = await EraCache.open(state);
          await run('first', (d) => timeMcpx(d.def, 'prefer-discover', firstCache));
          await firstCache.whenIdle();
          await run('cached', async (d) => timeMcpx(d.def, 'prefer-discover', await EraCache.open(state)));
        } else {
          const d = await definitionFor('first');
          const firstCache = await EraCache.open(state);
          try {
            times.first.push(await timeMcpx(d.def, 'prefer-discover', firstCache));
            wire.first.push(countWire(logOf('first'), fx.transport));
            await firstCache.whenIdle();
            const before = readLog(logOf('first')).length;
            const t = await timeMcpx(d.def, 'prefer-discover', await EraCache.open(state));
            times.cached.push(t);
            const after = readLog(logOf('first')).slice(before);
            const { writeFileSync } = await import('node:fs');
            writeFileSync(logOf('cached'), after.map((e) => JSON.stringify(e)).join('\n'));
            wire.cached.push(countWire(logOf('cached'), fx.transport));
          } catch (err) {
            errors.first ??= (err as Error).message;
          }
        }
        await run('sdkAuto', (d) => timeSdkAuto(fx, logOf('sdkAuto'), d.url));
      } finally {
        await http?.stop();
        removeFolder(dir);
      }
    }
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
        ...(errors[v] ? { error: errors[v] } : {}),
      };
    }
    rows.push({ id: fx.id, label: fx.label, transport: fx.transport, cells });
    log(`probe: ${fx.transport} ${fx.label} done`);
  }
  return { rounds: ROUNDS, probeTimeoutMs: PROBE_TIMEOUT_MS, rows };
}
