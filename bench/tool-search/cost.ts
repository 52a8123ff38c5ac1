/**
 * What tools cost a client, through the built binary: the 24 captured real listings behind one daemon
 * (each served by test/fixtures/replay-listing-server.mjs), an SDK v1 client (a 2025-11-25 caller)
 * connected through `mcpx serve --tools all` and `--tools search`. Counted in tokens (js-tiktoken,
 * cl100k_base and o200k_base), of what the client receives at connect — the initialize result (with the
 * front's `instructions`) and the `tools/list` result — and of every labelled query's `search_tools`
 * answer at limit 5.
 *
 * Search reads the catalogue: the daemon is restarted on the same state folder before the `search` client
 * connects, so no upstream runs, and the upstream processes are counted before and after every search.
 */
import { request } from 'node:http';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Tiktoken } from 'js-tiktoken/lite';
import cl100k from 'js-tiktoken/ranks/cl100k_base';
import o200k from 'js-tiktoken/ranks/o200k_base';
import { MCPX, ROOT } from '../lib/knobs.js';
import { removeFolder, startDaemon, stopChild, type Daemon } from '../lib/procs.js';
import { percentile } from '../lib/stats.js';
import { FOLDER, loadListings, loadQueries } from './corpus.js';
import type { CostResults } from './lines.js';

const REPLAY = join(ROOT, 'test', 'fixtures', 'replay-listing-server.mjs');
const ENCODINGS = { cl100k_base: new Tiktoken(cl100k), o200k_base: new Tiktoken(o200k) } as const;

const tokens = (text: string) => ({ cl100k_base: ENCODINGS.cl100k_base.encode(text).length, o200k_base: ENCODINGS.o200k_base.encode(text).length });

/** The upstream processes the daemon runs now (every config's instances). */
function upstreamPids(socket: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: socket, path: '/v1/status', method: 'GET' }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        const body = JSON.parse(text) as { servers: Array<{ instances: Array<{ pid?: number | null }> }> };
        resolve(body.servers.flatMap((s) => s.instances.filter((i) => typeof i.pid === 'number')).length);
      });
    });
    req.once('error', reject);
    req.end();
  });
}

async function connect(d: Daemon, strategy: 'all' | 'search'): Promise<{ client: Client; connectText: string; listText: string; tools: number }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MCPX, 'serve', '--tools', strategy],
    env: d.env as Record<string, string>,
    stderr: 'ignore',
  });
  const client = new Client({ name: 'mcpx-bench-cost', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  const init = { serverInfo: client.getServerVersion(), capabilities: client.getServerCapabilities(), instructions: client.getInstructions() };
  const list = await client.listTools();
  return { client, connectText: JSON.stringify(init), listText: JSON.stringify(list), tools: list.tools.length };
}

export async function benchToolCost(log: (line: string) => void): Promise<CostResults> {
  const listings = loadListings();
  const queries = loadQueries();
  const servers = Object.fromEntries(
    // One working folder for both daemons: the catalogue keys a listing by the whole definition, cwd included.
    listings.map((l) => [
      l.server,
      { command: process.execPath, args: [REPLAY, join(FOLDER, 'listings', `${l.server}.json`)], cwd: FOLDER, mcpx: { startTimeout: '60s' } },
    ]),
  );
  // First run: `all` lists every server (each starts once) and the catalogue keeps the listings.
  let d = await startDaemon({ servers });
  let all: Awaited<ReturnType<typeof connect>>;
  try {
    all = await connect(d, 'all');
    await all.client.close();
  } catch (err) {
    await d.stop();
    throw err;
  }
  // Second run on the same state folder: nothing runs; `search` reads the catalogue.
  const { dir } = d;
  await stopChild(d.child, 15_000);
  d = await startDaemon({ servers, stateDir: join(dir, 'state') });
  try {
    const search = await connect(d, 'search');
    const before = await upstreamPids(d.socket);
    const answers: Array<{ cl100k_base: number; o200k_base: number }> = [];
    for (const q of queries) {
      const r = (await search.client.callTool({ name: 'search_tools', arguments: { query: q.query, limit: 5 } })) as { content?: unknown };
      answers.push(tokens(JSON.stringify(r.content ?? r)));
    }
    const after = await upstreamPids(d.socket);
    await search.client.close();
    const connectOf = (x: { connectText: string; listText: string }) => {
      const c = tokens(x.connectText);
      const l = tokens(x.listText);
      return { cl100k_base: c.cl100k_base + l.cl100k_base, o200k_base: c.o200k_base + l.o200k_base };
    };
    const of = (enc: 'cl100k_base' | 'o200k_base') => {
      const xs = answers.map((a) => a[enc]);
      return { mean: Math.round(xs.reduce((s, x) => s + x, 0) / xs.length), p95: Math.round(percentile(xs, 95)), max: Math.max(...xs) };
    };
    log(`tool cost: all ${all.tools} tools, search ${search.tools} tools; upstreams before/after searching: ${before}/${after}`);
    return {
      tools: all.tools,
      servers: listings.length,
      connect: { all: connectOf(all), search: connectOf(search) },
      listing: { all: tokens(all.listText), search: tokens(search.listText) },
      instructions: tokens(search.connectText),
      searchAnswer: { queries: queries.length, limit: 5, cl100k_base: of('cl100k_base'), o200k_base: of('o200k_base') },
      upstreamsDuringSearch: { before, after },
    };
  } finally {
    await d.stop();
    removeFolder(dir);
  }
}
