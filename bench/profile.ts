/**
 * `npm run bench:profile`: the daemon under `node --cpu-prof`, loaded with POST /v1/call over its socket
 * (16 in flight, the warm dual fixture), then its profile summarised (bench/cpu-summary.ts) for the load
 * window only, into bench/profile.json under the label MCPX_BENCH_PROFILE_LABEL (default "current"). The
 * file holds this one profile (docs/benchmarks.md shows it; earlier ones are in git). The raw .cpuprofile
 * is kept when MCPX_BENCH_KEEP_PROFILE names a folder.
 *
 *   MCPX_BENCH_PROFILE_CALLS=N   calls in the load phase (default 20000; quick mode 6000)
 *   MCPX_BENCH_PROFILE_VIA=v1|serve-legacy|serve-modern   the caller: POST /v1/call (default), or the SDK v2
 *                                client through `mcpx serve` as a 2025-11-25 or a 2026-07-28 caller
 *   MCPX_BENCH_PROFILE_INFLIGHT=N  calls in flight (default 16)
 */
import { copyFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Pool } from 'undici';
import { summarise, type CpuSummary } from './cpu-summary.js';
import { MCPX, QUICK, ROOT } from './lib/knobs.js';
import { drive } from './lib/load.js';
import { cleanupAll, DUAL, nodeServer, removeFolder, startDaemon, stopChild, tempFolder } from './lib/procs.js';

export interface ProfileSummary extends CpuSummary {
  at: string;
  what: string;
  calls: number;
  wallMs: number;
}

export type ProfileFile = Record<string, ProfileSummary>;

const nowUs = () => Number(process.hrtime.bigint() / 1000n);

async function main(): Promise<void> {
  const label = process.env['MCPX_BENCH_PROFILE_LABEL'] ?? 'current';
  const calls = Number(process.env['MCPX_BENCH_PROFILE_CALLS']) || (QUICK ? 6_000 : 20_000);
  const profDir = tempFolder('mcpx-bench-prof-');
  const d = await startDaemon({ servers: { dual: nodeServer(DUAL) }, nodeArgs: ['--cpu-prof', '--cpu-prof-dir', profDir, '--cpu-prof-interval', '200'] });
  const via = process.env['MCPX_BENCH_PROFILE_VIA'] ?? 'v1';
  const inflight = Number(process.env['MCPX_BENCH_PROFILE_INFLIGHT']) || 16;
  let call: () => Promise<void>;
  let close: () => Promise<void>;
  if (via === 'v1') {
    const pool = new Pool('http://localhost', { socketPath: d.socket, connections: 16, pipelining: 1 });
    const body = JSON.stringify({ server: 'dual', tool: 'echo', args: { text: 'bench' } });
    call = async () => {
      const res = await pool.request({ path: '/v1/call', method: 'POST', headers: { 'content-type': 'application/json' }, body });
      const out = (await res.body.json()) as { ok?: boolean };
      if (!out.ok) throw new Error(JSON.stringify(out));
    };
    close = () => pool.close();
  } else if (via === 'serve-legacy' || via === 'serve-modern') {
    const serveArgs = process.env['MCPX_BENCH_PROFILE_SERVE_DIR']
      ? ['--cpu-prof', '--cpu-prof-dir', process.env['MCPX_BENCH_PROFILE_SERVE_DIR'], '--cpu-prof-interval', '200']
      : [];
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [...serveArgs, MCPX, 'serve'],
      env: d.env as Record<string, string>,
      stderr: 'ignore',
    });
    const client = new Client(
      { name: 'mcpx-profile', version: '1.0.0' },
      via === 'serve-modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {},
    );
    await client.connect(transport);
    call = async () => {
      const out = (await client.callTool({ name: 'dual__echo', arguments: { text: 'bench' } })) as { isError?: boolean };
      if (out.isError) throw new Error(JSON.stringify(out));
    };
    close = () => client.close();
  } else throw new Error(`MCPX_BENCH_PROFILE_VIA: ${via} is not v1, serve-legacy or serve-modern`);
  let window: { fromUs: number; toUs: number };
  let wallMs: number;
  try {
    await drive(call, inflight, 6_000); // warm: the session, and the JIT (the daemon takes some 5,000 calls to settle)
    const fromUs = nowUs();
    const run = await drive(call, inflight, calls);
    window = { fromUs, toUs: nowUs() };
    wallMs = run.wallMs;
    if (run.errors > 0) throw new Error(`${run.errors} calls failed: ${run.firstError}`);
  } finally {
    await close();
    await stopChild(d.child, 15_000);
  }
  const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error('the daemon wrote no profile');
  const keep = process.env['MCPX_BENCH_KEEP_PROFILE'];
  if (keep) copyFileSync(join(profDir, file), join(keep, `daemon-${label}.cpuprofile`));
  const summary = summarise(JSON.parse(readFileSync(join(profDir, file), 'utf8')), calls, window);
  removeFolder(profDir);
  removeFolder(d.dir);
  const out = join(ROOT, 'bench', 'profile.json');
  const all: ProfileFile = {};
  all[label] = {
    at: new Date().toISOString(),
    what: `The daemon serving ${via === 'v1' ? 'POST /v1/call over its socket' : `an SDK v2 client through \`mcpx serve\` (${via === 'serve-modern' ? '2026-07-28' : '2025-11-25'})`}, ${inflight} in flight, to the warm dual fixture (examples/servers/dual.mjs echo)`,
    calls,
    wallMs,
    ...summary,
    topSelf: summary.topSelf.slice(0, 20),
    topTotalOwn: summary.topTotalOwn.slice(0, 20),
  };
  writeFileSync(out, `${JSON.stringify(all, null, 2)}\n`);
  console.log(
    `profile "${label}": ${summary.cpuPerCallUs.toFixed(0)} µs of daemon CPU per call; busy ${summary.busyPct.toFixed(0)}%; ${((wallMs * 1000) / calls).toFixed(0)} µs wall per call`,
  );
  for (const a of summary.areas.slice(0, 12)) console.log(`  ${a.pct.toFixed(1).padStart(5)}%  ${a.usPerCall.toFixed(0).padStart(4)} µs/call  ${a.area}`);
  console.log('  top self:');
  for (const f of summary.topSelf.slice(0, 15)) console.log(`  ${f.selfPct.toFixed(1).padStart(5)}%  ${f.name}  ${f.where}`);
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => cleanupAll());
