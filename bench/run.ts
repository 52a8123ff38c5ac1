/**
 * `npm run bench`: the call path side by side (bench/call-path.ts), the era probe against the SDK's
 * `auto` negotiation (bench/probe.ts), starts (bench/startup.ts), the pool at scale (bench/pool-scale.ts)
 * the memory of K clients × N servers through mcpx and direct (bench/memory.ts) and tool search's quality
 * and speed (bench/tool-search/quality.ts), in one run. Writes bench/results.json (figures, ratios, the machine,
 * versions) and regenerates docs/benchmarks.md and docs/benchmarks.svg (bench/report.ts).
 *
 * Not part of `npm test`. Knobs (bench/lib/knobs.ts): MCPX_BENCH_QUICK=1 for a run of a few minutes,
 * MCPX_BENCH_ROUNDS, MCPX_BENCH_CALLS, MCPX_BENCH_ONLY=call,probe,startup,pool,memory,search, MCPX_BENCH_NO_DOCS=1.
 * Every process it starts is stopped and every temp folder removed, also when interrupted.
 */
import { execFileSync } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, platform, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { benchCallPath } from './call-path.js';
import { QUICK, ROOT, WRITE_DOCS, wanted } from './lib/knobs.js';
import { cleanupAll } from './lib/procs.js';
import { benchMemory } from './memory.js';
import { benchPool } from './pool-scale.js';
import { benchProbe } from './probe.js';
import { computeTargets, httpFloorLines, writeReport, type Results } from './report.js';
import { benchStartup } from './startup.js';
import { benchToolCost } from './tool-search/cost.js';
import { benchToolSearch } from './tool-search/quality.js';

function versionOf(pkg: string): string | null {
  const file = join(ROOT, 'node_modules', ...pkg.split('/'), 'package.json');
  if (!existsSync(file)) return null;
  return (JSON.parse(readFileSync(file, 'utf8')) as { version?: string }).version ?? null;
}

const log = (line: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

async function main(): Promise<void> {
  // The SDK client's Streamable HTTP transport (path d) hands every request one abort signal, and undici's
  // fetch keeps a listener on it per request until the request is garbage-collected: past 1,500 node
  // prints a warning per request, thousands in a run. No limit on the emitters made from here on.
  setMaxListeners(0);
  const cpu = cpus();
  const results: Results = {
    generatedAt: new Date().toISOString(),
    quick: QUICK,
    machine: {
      cpus: cpu.length,
      cpuModel: cpu[0]?.model.trim() ?? 'unknown',
      memGiB: Math.round(totalmem() / 2 ** 30),
      platform: `${platform()} ${release()}`,
      loadStart: loadavg()
        .map((x) => x.toFixed(2))
        .join(' '),
    },
    versions: {
      node: process.versions.node,
      mcpx: (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version,
      '@modelcontextprotocol/client': versionOf('@modelcontextprotocol/client'),
      '@modelcontextprotocol/server': versionOf('@modelcontextprotocol/server'),
      '@modelcontextprotocol/sdk': versionOf('@modelcontextprotocol/sdk'),
      supergateway: versionOf('supergateway'),
      fastify: versionOf('fastify'),
      undici: versionOf('undici'),
      xstate: versionOf('xstate'),
    },
  };
  // A section that fails is reported and the others still run.
  const section = async <T>(name: 'call' | 'startup' | 'probe' | 'pool' | 'memory' | 'search', run: () => Promise<T>): Promise<T | undefined> => {
    if (!wanted(name)) return undefined;
    try {
      return await run();
    } catch (err) {
      log(`${name}: failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      (results.failed ??= {})[name] = err instanceof Error ? err.message : String(err);
      await cleanupAll();
      return undefined;
    }
  };
  const baseline = process.env['MCPX_BENCH_BASELINE'];
  if (baseline) {
    try {
      results.baselineCommit = execFileSync('git', ['-C', baseline, 'rev-parse', '--short', 'HEAD'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim();
    } catch {
      // not a git checkout: the report names no commit
    }
  }
  results.call = await section('call', () => benchCallPath(log));
  results.startup = await section('startup', () => benchStartup(log));
  results.probe = await section('probe', () => benchProbe(log));
  results.pool = await section('pool', () => benchPool(log));
  results.memory = await section('memory', () => benchMemory(log));
  results.toolSearch = await section('search', async () => ({ ...benchToolSearch(log), cost: await benchToolCost(log) }));
  results.machine['loadEnd'] = loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
  results.targets = computeTargets(results);
  const baselineTargets = computeTargets(results, true);
  if (baselineTargets.length > 0) results.baselineTargets = baselineTargets;
  writeFileSync(join(ROOT, 'bench', 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  if (WRITE_DOCS) writeReport(results);
  console.log('| measure | target | figure | met? |');
  console.log('|---|---|---|---|');
  for (const t of results.targets) console.log(`| ${t.measure} | ${t.target} | ${t.shown} | ${t.met === null ? '–' : t.met ? 'yes' : 'NO'} (${t.by}) |`);
  // The HTTP upstreams have no target of their own: each is shown against its floor.
  for (const line of httpFloorLines(results)) console.log(line);
  console.log(`\nwrote bench/results.json${WRITE_DOCS ? ', docs/benchmarks.md and docs/benchmarks.svg' : ''}`);
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => cleanupAll());
