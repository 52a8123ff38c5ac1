/**
 * The official MCP conformance suite's client scenarios (`@modelcontextprotocol/conformance`, pinned in
 * package.json) with the built `mcpx` binary as the client (a daemon per run, `mcpx login` for auth/*,
 * `mcpx tools`, `mcpx call`; MCPX_TEST_BIN: an installed package's), at every spec version
 * `conformance list --client` tags a scenario with (2025-03-26 … 2026-07-28) and its extension scenarios:
 * every scenario listed must pass, unless conformance/client-not-applicable.yml says it does not apply or
 * conformance/client-expected-failures.yml says it fails today (and it still does).
 * scripts/conformance.ts decides; this test runs it as built by `npm test` (dist/), four CLI runs at a time
 * (a run spends much of its time waiting on its processes and sockets). docs/conformance.md has the table.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../src/package-info.js';

const RUNNER = join(packageRoot(), 'dist', 'scripts', 'conformance.js');

interface Result {
  scenario: string;
  version: string;
  verdict: 'pass' | 'FAIL' | 'xfail' | 'STALE';
  passed: number;
  failed: number;
}

interface Report {
  ok: boolean;
  results: Result[];
  notApplicable: Array<{ scenario: string; version: string }>;
  stale: string[];
}

/** The pinned suite's core auth/* runs: 27 scenarios over its 4 revisions (2 + 3 + 14 + 25). */
const CORE_AUTH_RUNS = 44;
/** Its auth extensions, none of which mcpx offers (conformance/client-not-applicable.yml). */
const AUTH_EXTENSIONS = [
  'auth/client-credentials-jwt',
  'auth/client-credentials-basic',
  'auth/enterprise-managed-authorization',
  'auth/dpop',
  'auth/dpop-nonce',
  'auth/wif-jwt-bearer',
];

let runner: ChildProcess | undefined;
let dir: string | undefined;
afterAll(async () => {
  // The runner kills every CLI process group it started when it gets SIGTERM.
  if (runner && runner.exitCode === null && runner.signalCode === null) runner.kill('SIGTERM');
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('conformance client scenarios, the mcpx binary as the client', () => {
  it('every applicable scenario passes at every spec version, every core auth/* run included', async () => {
    dir = await mkdtemp(join(tmpdir(), 'mcpx-conformance-client-'));
    const json = join(dir, 'results.json');
    const run = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, [RUNNER, '--parallel', '4', '--timeout', '30', '--json', json], {
        env: { ...process.env, NODE_OPTIONS: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      runner = child;
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr.on('data', (c: Buffer) => (out += c.toString()));
      child.on('close', (code) => resolve({ code, out }));
    });
    // The table and the summary, for the test log.

    console.log(run.out.slice(run.out.indexOf('\nSCENARIO')).trim());
    expect(run.code, run.out).toBe(0);

    const report = JSON.parse(await readFile(json, 'utf8')) as Report;
    expect(report.ok).toBe(true);
    expect(report.stale).toEqual([]);
    expect(report.results.filter((r) => r.verdict !== 'pass' && r.verdict !== 'xfail')).toEqual([]);
    // Every revision was run, and the scenario behind the -32022 rule (docs/decisions.md) is among the passes.
    expect(new Set(report.results.map((r) => r.version))).toEqual(new Set(['2025-03-26', '2025-06-18', '2025-11-25', '2026-07-28']));
    expect(report.results.find((r) => r.scenario === 'request-metadata' && r.version === '2026-07-28')).toMatchObject({ verdict: 'pass', failed: 0 });
    // Every core auth run passes outright (none is an expected failure); the extensions were listed and set aside.
    const auth = report.results.filter((r) => r.scenario.startsWith('auth/'));
    expect(auth.filter((r) => r.verdict !== 'pass')).toEqual([]);
    expect(auth).toHaveLength(CORE_AUTH_RUNS);
    expect(report.notApplicable.filter((n) => n.scenario.startsWith('auth/'))).toEqual(
      AUTH_EXTENSIONS.map((scenario) => expect.objectContaining({ scenario, version: 'extension' })),
    );
    // The runner kills a run at 30 s: 59 runs four at a time end within 15 rounds (450 s) even if every run overran.
  }, 480_000);
});
