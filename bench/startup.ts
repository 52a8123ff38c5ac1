/**
 * Starts: the daemon from spawn to its socket answering (the bundled demo config, no config file; the
 * demo's servers start in the background and are not waited for), and `mcpx serve` from spawn to the
 * first tools/list answered when the tool catalogue is already on disk (an SDK v2 client spawning it,
 * against a warm daemon).
 */
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { MCPX, ROUNDS } from './lib/knobs.js';
import { DUAL, nodeServer, startDaemon } from './lib/procs.js';
import { figure, type Figure } from './lib/stats.js';

export interface StartupResults {
  rounds: number;
  daemonReadyMs: Figure;
  serveFirstListMs: Figure;
}

async function serveFirstList(env: NodeJS.ProcessEnv): Promise<number> {
  const client = new Client({ name: 'mcpx-bench', version: '1.0.0' }, {});
  const t0 = performance.now();
  try {
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [MCPX, 'serve'], env: env as Record<string, string>, stderr: 'ignore' }));
    const { tools } = await client.listTools();
    if (!tools.some((t) => t.name === 'dual__echo')) throw new Error(`serve listed ${tools.map((t) => t.name).join(', ')}`);
    return performance.now() - t0;
  } finally {
    await client.close().catch(() => undefined);
  }
}

export async function benchStartup(log: (line: string) => void): Promise<StartupResults> {
  const ready: number[] = [];
  const rounds = Math.max(ROUNDS, 5);
  for (let r = 0; r < rounds; r++) {
    const d = await startDaemon({});
    ready.push(d.readyMs);
    await d.stop();
  }
  log('startup: daemon start → ready done');
  const serve: number[] = [];
  const d = await startDaemon({ servers: { dual: nodeServer(DUAL) } });
  try {
    await serveFirstList(d.env); // starts dual and writes the tool catalogue
    for (let r = 0; r < rounds; r++) serve.push(await serveFirstList(d.env));
  } finally {
    await d.stop();
  }
  log('startup: serve start → first tools/list done');
  return { rounds, daemonReadyMs: figure(ready), serveFirstListMs: figure(serve) };
}
