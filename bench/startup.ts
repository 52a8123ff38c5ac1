/**
 * Starts: the daemon from spawn to its socket answering (the bundled demo config, no config file; the
 * demo's servers start in the background and are not waited for), and `mcpx serve` from spawn to the
 * first tools/list answered when the tool catalogue is already on disk (an SDK v2 client spawning it,
 * against a warm daemon).
 */
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { BASELINE_MCPX, MCPX, ROUNDS } from './lib/knobs.js';
import { DUAL, nodeServer, startDaemon, type Daemon } from './lib/procs.js';
import { figure, type Figure } from './lib/stats.js';

export interface StartupResults {
  rounds: number;
  daemonReadyMs: Figure;
  serveFirstListMs: Figure;
  /** The same, for MCPX_BENCH_BASELINE, interleaved with the above. */
  baseline?: { daemonReadyMs: Figure; serveFirstListMs: Figure };
}

async function serveFirstList(env: NodeJS.ProcessEnv, cli = MCPX): Promise<number> {
  const client = new Client({ name: 'mcpx-bench', version: '1.0.0' }, {});
  const t0 = performance.now();
  try {
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [cli, 'serve'], env: env as Record<string, string>, stderr: 'ignore' }));
    const { tools } = await client.listTools();
    if (!tools.some((t) => t.name === 'dual__echo')) throw new Error(`serve listed ${tools.map((t) => t.name).join(', ')}`);
    return performance.now() - t0;
  } finally {
    await client.close().catch(() => undefined);
  }
}

export async function benchStartup(log: (line: string) => void): Promise<StartupResults> {
  const clis = [MCPX, ...(BASELINE_MCPX ? [BASELINE_MCPX] : [])];
  const ready = new Map<string, number[]>(clis.map((c) => [c, []]));
  const serve = new Map<string, number[]>(clis.map((c) => [c, []]));
  const rounds = Math.max(ROUNDS, 5);
  for (let r = 0; r < rounds; r++) {
    for (const cli of clis) {
      const d = await startDaemon({ cli });
      ready.get(cli)!.push(d.readyMs);
      await d.stop();
    }
  }
  log('startup: daemon start → ready done');
  const daemons = new Map<string, Daemon>();
  try {
    for (const cli of clis) {
      const d = await startDaemon({ cli, servers: { dual: nodeServer(DUAL) } });
      daemons.set(cli, d);
      await serveFirstList(d.env, cli); // starts dual and writes the tool catalogue
    }
    for (let r = 0; r < rounds; r++) for (const cli of clis) serve.get(cli)!.push(await serveFirstList(daemons.get(cli)!.env, cli));
  } finally {
    for (const d of daemons.values()) await d.stop();
  }
  log('startup: serve start → first tools/list done');
  return {
    rounds,
    daemonReadyMs: figure(ready.get(MCPX)!),
    serveFirstListMs: figure(serve.get(MCPX)!),
    ...(BASELINE_MCPX ? { baseline: { daemonReadyMs: figure(ready.get(BASELINE_MCPX)!), serveFirstListMs: figure(serve.get(BASELINE_MCPX)!) } } : {}),
  };
}
