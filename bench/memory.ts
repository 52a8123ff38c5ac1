/**
 * Memory: what a person's MCP clients cost, for K clients × N servers (3 × 10; the warm fixture,
 * examples/servers/dual.mjs, under N names), resident memory (VmRSS, /proc/<pid>/status) of every process:
 *
 *   through mcpx  one daemon with the N servers, K `mcpx serve` (one per client, spawned by an SDK v2
 *                 client as a 2025-11-25 caller), N upstream processes (global scope: one per server)
 *   direct        the same K clients with the N servers configured in each (what a person runs
 *                 today): K × N upstream processes
 *
 * Each client connects, lists its tools and calls `echo` on every server (so every upstream runs), then
 * every process is read: its resident memory, and the private part of it (smaps_rollup: what the process
 * alone holds; the rest is mostly the pages of the node binary every node process shares). Next to bare `node` (an idle `node -e "process.stdin.resume()"`): the serve
 * target is a serve's resident memory against it. MCPX_BENCH_BASELINE's build gets the through-mcpx
 * rows too, in the same rounds.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'node:http';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { BASELINE_MCPX, MCPX, QUICK, ROUNDS } from './lib/knobs.js';
import { DUAL, nodeServer, sleep, startDaemon, stopChild, track } from './lib/procs.js';
import { figure, median, type Figure } from './lib/stats.js';

export const CLIENTS = 3;
export const SERVERS = 10;

export interface MemorySide {
  daemonMiB: Figure;
  /** Each serve (the median serve of a round, over rounds). */
  serveMiB: Figure;
  /** Each upstream process. */
  upstreamMiB: Figure;
  upstreams: number;
  /** Every process of the side, summed. */
  totalMiB: Figure;
  /** The same, private memory only. */
  private?: { daemonMiB: Figure; serveMiB: Figure; upstreamMiB: Figure; totalMiB: Figure };
}

export interface MemoryResults {
  rounds: number;
  clients: number;
  servers: number;
  bareNodeMiB: Figure;
  bareNodePrivateMiB?: Figure;
  mcpx: MemorySide;
  direct: { upstreamMiB: Figure; upstreams: number; totalMiB: Figure; private?: { upstreamMiB: Figure; totalMiB: Figure } };
  baseline?: MemorySide;
  /**
   * One daemon, one config per client (CLIENTS configs × SERVERS servers, SHARED of them defined alike in
   * every config, the rest each config's own): one process per distinct definition.
   */
  configs?: MemorySide & { configs: number; shared: number };
}

/** Servers every config of the many-configs row defines alike. */
export const SHARED = 5;

/** Resident memory of a live process, and the private part of it, MiB. */
export function memOf(pid: number): Mem {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
  return { rss: kib('Rss') / 1024, priv: (kib('Private_Clean') + kib('Private_Dirty')) / 1024 };
}

interface Mem {
  rss: number;
  priv: number;
}

function statusPids(socket: string, config?: string): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: socket, path: '/v1/status', method: 'GET', headers: config ? { 'x-mcpx-config': config } : {} }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        const body = JSON.parse(text) as { servers: Array<{ instances: Array<{ pid?: number }> }> };
        resolve(body.servers.flatMap((s) => s.instances.map((i) => i.pid).filter((p): p is number => typeof p === 'number')));
      });
    });
    req.once('error', reject);
    req.end();
  });
}

const INFO = { name: 'mcpx-bench-memory', version: '1.0.0' };

async function client(command: string, args: string[], env: NodeJS.ProcessEnv | undefined): Promise<{ c: Client; pid: number }> {
  const transport = new StdioClientTransport({ command, args, ...(env ? { env: env as Record<string, string> } : {}), stderr: 'ignore' });
  const c = new Client(INFO, {});
  await c.connect(transport);
  return { c, pid: transport.pid! };
}

async function echo(c: Client, name: string): Promise<void> {
  const r = (await c.callTool({ name, arguments: { text: 'memory' } })) as { isError?: boolean; content?: Array<{ text?: string }> };
  if (r.isError || !String(r.content?.[0]?.text ?? '').startsWith('memory')) throw new Error(`${name}: ${JSON.stringify(r).slice(0, 200)}`);
}

/** A client through `mcpx serve` (with `args`): it lists its tools and calls `echo` on every server, so every upstream runs. */
async function serveAndCallAll(cli: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ c: Client; pid: number }> {
  const x = await client(process.execPath, [cli, 'serve', ...args], env);
  try {
    const { tools } = await x.c.listTools();
    for (let i = 0; i < SERVERS; i++) {
      if (!tools.some((t) => t.name === `s${i}__echo`)) throw new Error(`serve listed ${tools.map((t) => t.name).join(', ')}`);
      await echo(x.c, `s${i}__echo`);
    }
    return x;
  } catch (err) {
    await x.c.close().catch(() => undefined);
    throw err;
  }
}

/** Bare node, idle. */
async function bareNode(): Promise<Mem> {
  const child = track(spawn(process.execPath, ['-e', 'process.stdin.resume()'], { stdio: ['pipe', 'ignore', 'ignore'] }));
  try {
    await sleep(500);
    return memOf(child.pid!);
  } finally {
    await stopChild(child);
  }
}

/** One round through mcpx (the given build): every process's resident memory once the clients' work is done. */
async function throughMcpx(cli: string): Promise<Round> {
  const servers = Object.fromEntries(Array.from({ length: SERVERS }, (_, i) => [`s${i}`, nodeServer(DUAL)]));
  const d = await startDaemon({ cli, servers });
  const clients: Array<{ c: Client; pid: number }> = [];
  try {
    for (let k = 0; k < CLIENTS; k++) clients.push(await serveAndCallAll(cli, [], d.env));
    await sleep(500);
    const upstreams = await statusPids(d.socket);
    if (upstreams.length !== SERVERS) throw new Error(`${upstreams.length} upstream processes, not ${SERVERS}`);
    return { daemon: memOf(d.child.pid!), serves: clients.map((x) => memOf(x.pid)), upstreams: upstreams.map(memOf) };
  } finally {
    for (const x of clients) await x.c.close().catch(() => undefined);
    await d.stop();
  }
}

/**
 * One round through mcpx with one config per client: SHARED servers alike in every config (the same
 * command line), SERVERS − SHARED of each config's own (the fixture with the config's tag).
 */
async function throughConfigs(cli: string): Promise<Round> {
  const d = await startDaemon({ cli });
  const files = Array.from({ length: CLIENTS }, (_, k) => {
    const servers = Object.fromEntries(
      Array.from({ length: SERVERS }, (_, i) => [`s${i}`, i < SHARED ? nodeServer(DUAL, ['shared']) : nodeServer(DUAL, [`config-${k}`])]),
    );
    const file = join(d.dir, `config-${k}.json`);
    writeFileSync(file, JSON.stringify({ mcpServers: servers }, null, 2));
    return file;
  });
  const clients: Array<{ c: Client; pid: number }> = [];
  try {
    for (const file of files) clients.push(await serveAndCallAll(cli, ['--config', file], d.env));
    await sleep(500);
    const pids = [...new Set((await Promise.all(files.map((f) => statusPids(d.socket, f)))).flat())];
    const want = SHARED + CLIENTS * (SERVERS - SHARED);
    if (pids.length !== want) throw new Error(`${pids.length} upstream processes for ${CLIENTS} configs, not ${want}`);
    return { daemon: memOf(d.child.pid!), serves: clients.map((x) => memOf(x.pid)), upstreams: pids.map(memOf) };
  } finally {
    for (const x of clients) await x.c.close().catch(() => undefined);
    await d.stop();
  }
}

/** One round direct: each client starts its own N servers. */
async function direct(): Promise<Mem[]> {
  const sessions: Array<{ c: Client; pid: number }> = [];
  try {
    for (let k = 0; k < CLIENTS; k++) {
      for (let i = 0; i < SERVERS; i++) {
        const x = await client(process.execPath, [DUAL], undefined);
        sessions.push(x);
        await x.c.listTools();
        await echo(x.c, 'echo');
      }
    }
    await sleep(500);
    return sessions.map((x) => memOf(x.pid));
  } finally {
    for (const x of sessions) await x.c.close().catch(() => undefined);
  }
}

interface Round {
  daemon: Mem;
  serves: Mem[];
  upstreams: Mem[];
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

function side(runs: Round[]): MemorySide {
  const of = (k: keyof Mem) => ({
    daemonMiB: figure(runs.map((r) => r.daemon[k])),
    serveMiB: figure(runs.map((r) => median(r.serves.map((x) => x[k])))),
    upstreamMiB: figure(runs.map((r) => median(r.upstreams.map((x) => x[k])))),
    totalMiB: figure(runs.map((r) => r.daemon[k] + sum(r.serves.map((x) => x[k])) + sum(r.upstreams.map((x) => x[k])))),
  });
  return { ...of('rss'), upstreams: runs[0]?.upstreams.length ?? SERVERS, private: of('priv') };
}

export async function benchMemory(log: (line: string) => void): Promise<MemoryResults> {
  const rounds = QUICK ? 2 : Math.min(ROUNDS, 3);
  const bare: Mem[] = [];
  const mine: Round[] = [];
  const before: Round[] = [];
  const own: Mem[][] = [];
  const many: Round[] = [];
  for (let r = 0; r < rounds; r++) {
    bare.push(await bareNode());
    mine.push(await throughMcpx(MCPX));
    many.push(await throughConfigs(MCPX));
    if (BASELINE_MCPX) before.push(await throughMcpx(BASELINE_MCPX));
    own.push(await direct());
    log(`memory: round ${r + 1}/${rounds} done`);
  }
  return {
    rounds,
    clients: CLIENTS,
    servers: SERVERS,
    bareNodeMiB: figure(bare.map((x) => x.rss)),
    bareNodePrivateMiB: figure(bare.map((x) => x.priv)),
    mcpx: side(mine),
    direct: {
      upstreamMiB: figure(own.map((r) => median(r.map((x) => x.rss)))),
      upstreams: CLIENTS * SERVERS,
      totalMiB: figure(own.map((r) => sum(r.map((x) => x.rss)))),
      private: { upstreamMiB: figure(own.map((r) => median(r.map((x) => x.priv)))), totalMiB: figure(own.map((r) => sum(r.map((x) => x.priv)))) },
    },
    ...(before.length > 0 ? { baseline: side(before) } : {}),
    configs: { ...side(many), configs: CLIENTS, shared: SHARED },
  };
}
