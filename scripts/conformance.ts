/**
 * `npm run conformance`: the official MCP conformance suite's *client* scenarios, with the built `mcpx`
 * binary as the client under test (scripts/conformance-client.ts: a daemon per run, driven through
 * `mcpx login` for auth/*, `mcpx tools`, `mcpx call` and its socket; MCPX_TEST_BIN names an installed one),
 * at every spec version the CLI tags a client scenario with, and its extension scenarios.
 *
 *   node dist/scripts/conformance.js [--spec-version V]… [--scenario NAME]… [--parallel N]
 *                                    [--timeout S] [--json FILE] [--markdown FILE] [--output DIR]
 *
 *   --spec-version V   a spec version (2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28 in the pinned CLI) or
 *                      `extension` (repeatable; default every one `conformance list --client` tags a
 *                      scenario with). Extension scenarios run without --spec-version, at the CLI's default.
 *   --scenario NAME    only these scenarios (repeatable; default every one `conformance list --client`
 *                      tags with V)
 *   --parallel N       CLI runs at a time (default 2)
 *   --timeout S        per-run limit in seconds (default 30): the CLI gives the client S - 5 seconds, and
 *                      the CLI's process group is killed at S
 *   --json FILE        write the results (scenario, version, counts, failing checks, verdict) as JSON
 *   --markdown FILE    write the table with verdicts only (pass, FAIL, xfail, STALE, n/a, -) as Markdown
 *   --output DIR       keep every run's checks.json and CLI output under DIR/<version>/<scenario>/
 *
 * The scenarios come from the CLI itself (`list --client`), so a new one is run as soon as the pinned
 * package has it. Two committed files say what is not expected to pass, each entry with a one-line reason:
 *   conformance/client-not-applicable.yml     scenarios mcpx has no business passing (not run)
 *   conformance/client-expected-failures.yml  applicable scenarios mcpx fails today (run; must still fail)
 * Prints the table scenario × version → checks passed/failed, then every failing check. Exit status 0 when
 * every run passes or is an expected failure and no entry of either file is stale, 1 otherwise, 2 when
 * the run itself could not be done.
 *
 * The mock servers the CLI starts bind 127.0.0.1 only (scripts/conformance/loopback.mjs, preloaded
 * next to the Node 20 fs.globSync shim); each CLI runs in its own process group, killed when it overruns
 * (the client's daemon with it). Each client's temp folder lives under one scratch folder
 * (MCPX_CONFORMANCE_TMP), removed at the end, so a killed client leaves nothing behind either.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { children, failing, killGroup, printHelp, root, runCli, UsageError, type Check, type Status } from './conformance/common.js';

const preloads = ['register.mjs', 'loopback.mjs'].flatMap((f) => ['--import', join(root, 'scripts', 'conformance', f)]);
const adapter = join(root, 'dist', 'scripts', 'conformance-client.js');
const NOT_APPLICABLE = join(root, 'conformance', 'client-not-applicable.yml');
const EXPECTED_FAILURES = join(root, 'conformance', 'client-expected-failures.yml');

/** The column for scenarios the CLI tags `[extension]`: not on the spec timeline, run without --spec-version. */
const EXTENSION = 'extension';

/** The client gets this much less than the run, so the CLI can still write its checks after killing it. */
const CLIENT_MARGIN_MS = 5_000;

interface RunResult {
  scenario: string;
  version: string;
  ms: number;
  /** The CLI's own verdict: exit 0 and "OVERALL: PASSED" (a client that exits non-zero fails the run). */
  passed: boolean;
  checks: Check[];
  /** Why the run has no checks.json, or what the CLI said about the client (exited with an error, timed out). */
  problem?: string;
}

/** A line of one of the two files: a scenario name, or `prefix/*`, with its reason. */
interface Entry {
  pattern: string;
  reason: string;
  /** undefined: every spec version. */
  version?: string;
  file: string;
  line: number;
}

// ------------------------------------------------------------------ arguments

function parseOptions() {
  const { values } = parseArgs({
    options: {
      'spec-version': { type: 'string', multiple: true, default: [] },
      scenario: { type: 'string', multiple: true, default: [] },
      parallel: { type: 'string', default: '2' },
      timeout: { type: 'string', default: '30' },
      json: { type: 'string' },
      markdown: { type: 'string' },
      output: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) printHelp(import.meta.url);
  const parallel = Number(values.parallel);
  if (!Number.isInteger(parallel) || parallel < 1) throw new UsageError(`--parallel wants a positive integer, got ${values.parallel}`);
  const timeoutS = Number(values.timeout);
  if (!Number.isFinite(timeoutS) || timeoutS * 1000 <= CLIENT_MARGIN_MS)
    throw new UsageError(`--timeout wants more than ${CLIENT_MARGIN_MS / 1000} seconds, got ${values.timeout}`);
  return {
    /** Empty: every version the CLI lists. */
    versions: values['spec-version'],
    scenarios: values.scenario,
    parallel,
    timeoutMs: Math.round(timeoutS * 1000),
    json: values.json === undefined ? undefined : resolve(values.json),
    markdown: values.markdown === undefined ? undefined : resolve(values.markdown),
    output: values.output === undefined ? undefined : resolve(values.output),
  };
}

// ------------------------------------------------------------------ the two files

/**
 * Top-level keys holding lists of `  - <scenario or prefix/*>  # reason`. `keys` maps each accepted key
 * to the spec version it is for (undefined: all).
 */
function readEntries(file: string, keys: (key: string) => { version?: string } | null): Entry[] {
  const entries: Entry[] = [];
  let key: { version?: string } | null | undefined;
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((raw, i) => {
      const line = i + 1;
      if (/^\s*(#.*)?$/.test(raw)) return;
      const top = /^([A-Za-z0-9_.-]+):\s*(\[\s*\])?\s*(#.*)?$/.exec(raw);
      if (top) {
        key = keys(top[1] as string);
        if (key === null) throw new UsageError(`${file}:${line}: unknown key ${top[1]}`);
        return;
      }
      const item = /^\s+-\s+([A-Za-z0-9_./*-]+)\s*(?:#\s*(.*?))?\s*$/.exec(raw);
      if (!item || !key) throw new UsageError(`${file}:${line}: expected '<key>:' or '  - <scenario>  # reason', got ${JSON.stringify(raw)}`);
      const pattern = item[1] as string;
      if (pattern.includes('*') && !/^[^*]+\/\*$/.test(pattern))
        throw new UsageError(`${file}:${line}: a pattern is a scenario name or '<prefix>/*', got ${pattern}`);
      const reason = (item[2] ?? '').trim();
      if (reason === '') throw new UsageError(`${file}:${line}: ${pattern} needs a reason: '  - ${pattern}  # why'`);
      entries.push({ pattern, reason, ...(key.version !== undefined && { version: key.version }), file, line });
    });
  return entries;
}

const matches = (e: Entry, scenario: string, version: string) =>
  (e.version === undefined || e.version === version) && (e.pattern.endsWith('/*') ? scenario.startsWith(e.pattern.slice(0, -1)) : scenario === e.pattern);

const versionKeys = (prefix: string) => (key: string) =>
  key === prefix ? {} : key.startsWith(`${prefix}-`) ? { version: key.slice(prefix.length + 1) } : null;

// ------------------------------------------------------------------ child processes

/**
 * Every client scenario, in the CLI's order, by version: the `  - name [v1,v2]` lines after the "Client
 * scenarios" header of `conformance list --client`. A scenario's tags are the spec versions it applies
 * to (what `list --client --spec-version V` filters by), or `extension`. One CLI start for all versions.
 */
async function listClient(): Promise<Map<string, string[]>> {
  const r = await runCli(preloads, ['list', '--client'], 30_000);
  const lines = r.out.split('\n');
  const start = lines.findIndex((l) => /^Client scenarios/.test(l));
  const byVersion = new Map<string, string[]>();
  for (const line of start === -1 ? [] : lines.slice(start + 1)) {
    const m = /^\s+- (\S+) \[([^\]]+)\]\s*$/.exec(line);
    if (!m) break;
    for (const tag of (m[2] as string).split(',')) byVersion.set(tag, [...(byVersion.get(tag) ?? []), m[1] as string]);
  }
  if (r.code !== 0 || byVersion.size === 0) throw new Error(`conformance list --client failed (exit ${r.code}):\n${r.out.slice(-2000)}`);
  // Dates sort as strings; the extension column goes last.
  return new Map([...byVersion].sort(([a], [b]) => (a === EXTENSION ? 1 : b === EXTENSION ? -1 : a.localeCompare(b))));
}

// ------------------------------------------------------------------ one run

async function runScenario(scenario: string, version: string, timeoutMs: number, outRoot: string): Promise<RunResult> {
  const dir = join(outRoot, version, scenario.replace(/\//g, '__'));
  mkdirSync(dir, { recursive: true });
  const started = Date.now();
  const args = [
    'client',
    '--command',
    `${process.execPath} ${adapter}`,
    '--scenario',
    scenario,
    ...(version === EXTENSION ? [] : ['--spec-version', version]),
    '--timeout',
    String(timeoutMs - CLIENT_MARGIN_MS),
    '-o',
    dir,
  ];
  const r = await runCli(preloads, args, timeoutMs);
  const ms = Date.now() - started;
  const text = r.out.replace(/\x1b\[[0-9;]*m/g, '');
  writeFileSync(join(dir, 'output.txt'), text);
  const passed = r.code === 0 && /OVERALL: PASSED/.test(text);
  const client = /CLIENT (EXITED WITH ERROR \(code \d+\)|TIMED OUT)/.exec(text)?.[0];
  // The CLI writes <scenario>-<time>/checks.json; a scenario named `auth/x` puts it one folder deeper.
  const sub = readdirSync(dir, { recursive: true, encoding: 'utf8' }).find((f) => f.endsWith('checks.json'));
  if (sub) {
    const checks = JSON.parse(readFileSync(join(dir, sub), 'utf8')) as Check[];
    return { scenario, version, ms, passed, checks, ...(client && { problem: client.toLowerCase() }) };
  }
  const tail = text.trim().split('\n').slice(-4).join(' | ');
  const problem = r.killed ? `killed after ${timeoutMs / 1000} s without results` : `no checks.json (exit ${r.code}): ${tail}`;
  return { scenario, version, ms, passed: false, checks: [], problem };
}

/** Run `jobs` with at most `parallel` at a time, in order of start. */
async function pool<T, R>(jobs: T[], parallel: number, run: (job: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(jobs.length);
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const i = next++;
      results[i] = await run(jobs[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, jobs.length) }, worker));
  return results;
}

// ------------------------------------------------------------------ report

const count = (r: RunResult, ...s: Status[]) => r.checks.filter((c) => s.includes(c.status)).length;

type Verdict = 'pass' | 'FAIL' | 'xfail' | 'STALE';

function verdictOf(r: RunResult, expected: Entry[]): Verdict {
  const listed = expected.some((e) => matches(e, r.scenario, r.version));
  if (listed) return r.passed ? 'STALE' : 'xfail';
  return r.passed ? 'pass' : 'FAIL';
}

function cell(r: RunResult, expected: Entry[]): string {
  const counts = r.checks.length === 0 ? 'no checks' : `${count(r, 'SUCCESS')} passed, ${count(r, 'FAILURE', 'WARNING')} failed`;
  return `${verdictOf(r, expected)} ${counts}`;
}

/** A line of the table: a scenario (or a folded not-applicable pattern) and its run, or n/a, or '-', per version. */
interface Row {
  name: string;
  cells: Array<RunResult | 'n/a' | '-'>;
}

/** --markdown: the table with verdicts only, auth/* scenarios apart from the rest. */
function markdown(table: Row[], versions: string[], expected: Entry[]): string {
  const part = (title: string, rows: Row[]) => {
    const cols = versions.map((_, i) => i).filter((i) => rows.some((r) => r.cells[i] !== '-'));
    const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
    return [
      title,
      '',
      line(['scenario', ...cols.map((i) => versions[i] as string)]),
      line(['---', ...cols.map(() => '---')]),
      ...rows.map((r) =>
        line([
          `\`${r.name}\``,
          ...cols.map((i) => {
            const c = r.cells[i] as Row['cells'][number];
            return typeof c === 'string' ? c : verdictOf(c, expected);
          }),
        ]),
      ),
    ].join('\n');
  };
  const auth = table.filter((r) => r.name.startsWith('auth/'));
  const rest = table.filter((r) => !r.name.startsWith('auth/'));
  const parts = [auth.length > 0 && part('Authorization (`auth/*`):', auth), rest.length > 0 && part('The others:', rest)];
  return `${parts.filter((p) => p !== false).join('\n\n')}\n`;
}

function printTable(rows: string[][]): void {
  const widths = (rows[0] ?? []).map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  for (const r of rows)
    console.log(
      r
        .map((c, i) => c.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    );
}

// ------------------------------------------------------------------ main

async function main(): Promise<number> {
  const opts = parseOptions();
  const notApplicable = readEntries(NOT_APPLICABLE, (k) => (k === 'not-applicable' ? {} : null));
  const expected = readEntries(EXPECTED_FAILURES, versionKeys('client'));
  const t0 = Date.now();
  const outRoot = opts.output ?? mkdtempSync(join(tmpdir(), 'mcpx-conformance-client-'));
  // Short, apart from outRoot: a client's daemon socket lives under it (a socket path has ~100 bytes).
  const scratch = mkdtempSync(join(tmpdir(), 'mcpx-confc-'));
  process.env.MCPX_CONFORMANCE_TMP = scratch;
  const cleanup = () => {
    for (const c of children) killGroup(c);
    rmSync(scratch, { recursive: true, force: true });
    if (!opts.output) rmSync(outRoot, { recursive: true, force: true });
  };
  const onSignal = () => {
    cleanup();
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    const everything = await listClient();
    for (const v of opts.versions)
      if (!everything.has(v)) throw new UsageError(`no client scenario is tagged ${v}; the CLI lists ${[...everything.keys()].join(', ')}`);
    const versions = opts.versions.length > 0 ? [...everything.keys()].filter((v) => opts.versions.includes(v)) : [...everything.keys()];
    const listed = new Map(versions.map((v) => [v, everything.get(v) ?? []]));
    // In the CLI's own order (every listing is one), whatever the versions.
    const order = [...new Set([...everything.values()].flat())];
    const all = order.filter((s) => [...listed.values()].some((names) => names.includes(s)));
    for (const s of opts.scenarios) if (!all.includes(s)) throw new UsageError(`no client scenario named ${s} at ${versions.join(', ')}`);

    const plan: Array<{ scenario: string; version: string }> = [];
    const skipped: Array<{ scenario: string; version: string; entry: Entry }> = [];
    for (const [version, names] of listed) {
      for (const scenario of names) {
        if (opts.scenarios.length > 0 && !opts.scenarios.includes(scenario)) continue;
        const entry = notApplicable.find((e) => matches(e, scenario, version));
        if (entry) skipped.push({ scenario, version, entry });
        else plan.push({ scenario, version });
      }
    }
    // An entry matching nothing the CLI lists, at any version, is stale (renamed or dropped upstream).
    const stale: string[] = [];
    if (opts.scenarios.length === 0) {
      for (const e of [...notApplicable, ...expected])
        if (![...everything].some(([v, names]) => names.some((n) => matches(e, n, v))))
          stale.push(`${e.file}:${e.line}: ${e.pattern} matches no client scenario listed`);
    }

    console.log(`${plan.length} runs (${opts.parallel} at a time, ${opts.timeoutMs / 1000} s each at most); ${skipped.length} runs not applicable`);
    const results = await pool(plan, opts.parallel, async (p) => {
      const r = await runScenario(p.scenario, p.version, opts.timeoutMs, outRoot);
      console.log(`  ${p.version} ${p.scenario}: ${cell(r, expected)}${r.problem ? ` (${r.problem})` : ''} ${(r.ms / 1000).toFixed(1)} s`);
      return r;
    });

    // The table: every scenario the CLI lists, in its order; not-applicable ones folded by their entry.
    const table: Row[] = [];
    const seen = new Set<string>();
    for (const scenario of all) {
      if (opts.scenarios.length > 0 && !opts.scenarios.includes(scenario)) continue;
      const na = skipped.filter((s) => s.scenario === scenario);
      const key = na[0]?.entry.pattern ?? scenario;
      if (seen.has(key)) continue;
      seen.add(key);
      const group = na.length > 0 ? new Set(skipped.filter((s) => s.entry.pattern === key).map((s) => s.scenario)) : new Set([scenario]);
      const name = na.length > 0 && key.endsWith('/*') ? `${key} (${group.size} scenarios)` : scenario;
      table.push({
        name,
        cells: versions.map((v) => {
          const r = results.find((x) => x.scenario === scenario && x.version === v);
          if (r) return r;
          return skipped.some((s) => group.has(s.scenario) && s.version === v) ? 'n/a' : '-';
        }),
      });
    }
    console.log('');
    printTable([['SCENARIO', ...versions], ...table.map((row) => [row.name, ...row.cells.map((c) => (typeof c === 'string' ? c : cell(c, expected)))])]);
    console.log("\npass / FAIL: the CLI's verdict (a failed or warning check, or a client that exits non-zero, fails);");
    console.log(`xfail: fails, as ${EXPECTED_FAILURES.slice(root.length + 1)} expects; STALE: listed there but passes;`);
    console.log(`n/a: not run (${NOT_APPLICABLE.slice(root.length + 1)}); '-': not a scenario of that spec version.`);
    const reasons = [...new Map(skipped.map((s) => [s.entry, s.entry])).values()];
    for (const e of [...reasons, ...expected]) console.log(`  ${e.pattern}${e.version ? ` @${e.version}` : ''}: ${e.reason}`);

    const details = results.flatMap((r) => [
      ...(r.problem && !r.passed ? [`  ${r.version} ${r.scenario}: ${r.problem}`] : []),
      ...r.checks
        .filter(failing)
        .map((c) => `  ${r.version} ${r.scenario} [${c.id}] ${c.status}: ${(c.errorMessage ?? '').replace(/\s+/g, ' ').slice(0, 240)}`),
    ]);
    if (details.length > 0) console.log(`\nFailing checks:\n${details.join('\n')}`);

    const verdicts = results.map((r) => verdictOf(r, expected));
    const n = (v: Verdict) => verdicts.filter((x) => x === v).length;
    stale.push(
      ...results
        .filter((_, i) => verdicts[i] === 'STALE')
        .map((r) => `${r.scenario} @${r.version} passes: remove it from ${EXPECTED_FAILURES.slice(root.length + 1)}`),
    );
    for (const s of stale) console.log(`stale: ${s}`);
    const seconds = (Date.now() - t0) / 1000;
    const ok = n('FAIL') === 0 && stale.length === 0;
    console.log(
      `\n${results.length} runs in ${seconds.toFixed(1)} s: ${n('pass')} passed, ${n('xfail')} expected failures, ${n('FAIL')} failed, ${stale.length} stale; ${skipped.length} runs not applicable`,
    );
    if (opts.output) console.log(`results kept in ${opts.output}`);
    if (opts.markdown) writeFileSync(opts.markdown, markdown(table, versions, expected));
    if (opts.json) {
      const out = {
        seconds,
        ok,
        results: results.map((r, i) => ({
          scenario: r.scenario,
          version: r.version,
          verdict: verdicts[i],
          ms: r.ms,
          passed: count(r, 'SUCCESS'),
          failed: count(r, 'FAILURE', 'WARNING'),
          ...(r.problem && { problem: r.problem }),
          failing: r.checks.filter(failing).map((c) => ({ id: c.id, status: c.status, errorMessage: c.errorMessage })),
        })),
        notApplicable: skipped.map((s) => ({ scenario: s.scenario, version: s.version, reason: s.entry.reason })),
        stale,
      };
      writeFileSync(opts.json, `${JSON.stringify(out, null, 2)}\n`);
    }
    return ok ? 0 : 1;
  } finally {
    cleanup();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof UsageError ? `conformance: ${err.message}` : err);
    process.exit(2);
  },
);
