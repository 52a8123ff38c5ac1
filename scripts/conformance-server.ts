/**
 * The official MCP conformance suite's *server* scenarios (`conformance server`) against one MCP endpoint,
 * for every spec version asked (default 2025-11-25 and 2026-07-28). Meant for mcpx's own `/mcp/<server>`
 * passthrough in front of test/fixtures/conformance-upstream.mjs; `--fixture` runs the same scenarios
 * against that fixture served directly (test/fixtures/http/conformance-upstream-http.mjs), the baseline.
 *
 *   node dist/scripts/conformance-server.js --url http://127.0.0.1:PORT/mcp/conformance [options]
 *   node dist/scripts/conformance-server.js --fixture [options]
 *
 *   --url URL                the endpoint (loopback only: 127.0.0.1, localhost or [::1])
 *   --fixture                start the direct fixture host and test it instead of --url
 *   --header 'Name: value'   add a header to every request (repeatable). The CLI has no header option,
 *                            so the runner puts a loopback relay in front of URL that adds them
 *   --spec-version V         2025-11-25 and/or 2026-07-28 (repeatable; default both)
 *   --scenario NAME          only these scenarios (repeatable; default every one the CLI lists for V)
 *   --extensions             also run the extension scenarios (tasks-*, sep-2640-skills-*) at 2026-07-28
 *   --expected-failures F    baseline file (default conformance/server-expected-failures.yml;
 *                            `none` for no baseline, the default with --fixture)
 *   --timeout S              per-scenario limit in seconds (default 60); the CLI process is killed 10 s later
 *   --output DIR             keep every scenario's checks.json under DIR/<version>/<scenario>/
 *   --json FILE              write the results (scenario, version, counts, failing checks) as JSON
 *
 * One CLI process per scenario and version, in its own process group, killed with the group when it
 * overruns. Prints a table scenario × version, then every failing or warning check. Exit status: 0 when
 * every FAILURE/WARNING is listed in the baseline and no baseline entry passes (the CLI's own
 * `--expected-failures` rules), 1 otherwise, 2 when the run itself could not be done.
 *
 * The baseline is the CLI's expected-failures YAML: `server:` lists `<scenario>` or `<scenario>:<check-id>`
 * for every spec version (so the file also works with `conformance server --expected-failures`), and
 * `server-<version>:` lists entries for one spec version only (the CLI ignores those keys). Each entry
 * needs a one-line reason as a trailing `# comment`. Not part of `npm test`: the suite is an alpha.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  children,
  DEFAULT_VERSIONS,
  failing,
  killGroup,
  printHelp,
  root,
  runCli,
  spawnTracked,
  UsageError,
  type Check,
  type Status,
} from './conformance/common.js';

const shim = join(root, 'scripts', 'conformance', 'register.mjs');
const fixtureHost = join(root, 'test', 'fixtures', 'http', 'conformance-upstream-http.mjs');
const defaultBaseline = join(root, 'conformance', 'server-expected-failures.yml');

const EXTENSION_VERSION = '2026-07-28';
const KILL_GRACE_MS = 10_000;
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

interface RunResult {
  scenario: string;
  version: string;
  checks: Check[];
  ms: number;
  /** Set when the CLI produced no checks.json (crash, kill); a synthetic FAILURE check explains it. */
  problem?: string;
}

interface BaselineEntry {
  scenario: string;
  checkId?: string;
  reason: string;
  /** undefined: every spec version (`server:`). */
  version?: string;
  line: number;
}

// ------------------------------------------------------------------ arguments

function parseOptions() {
  const { values } = parseArgs({
    options: {
      url: { type: 'string' },
      fixture: { type: 'boolean', default: false },
      header: { type: 'string', multiple: true, default: [] },
      'spec-version': { type: 'string', multiple: true, default: [] },
      scenario: { type: 'string', multiple: true, default: [] },
      extensions: { type: 'boolean', default: false },
      'expected-failures': { type: 'string' },
      timeout: { type: 'string', default: '60' },
      output: { type: 'string' },
      json: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) printHelp(import.meta.url);
  if (!values.fixture && values.url === undefined) throw new UsageError('give --url <endpoint> or --fixture');
  if (values.fixture && values.url !== undefined) throw new UsageError('--url and --fixture exclude each other');
  if (values.url !== undefined) checkLoopback(values.url);
  const timeoutS = Number(values.timeout);
  if (!Number.isFinite(timeoutS) || timeoutS <= 0) throw new UsageError(`--timeout wants seconds, got ${values.timeout}`);
  const headers = values.header.map((h) => {
    const i = h.indexOf(':');
    const name = i > 0 ? h.slice(0, i).trim() : '';
    if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(name)) throw new UsageError(`--header wants 'Name: value', got ${JSON.stringify(h)}`);
    return [name, h.slice(i + 1).trim()] as [string, string];
  });
  const baseline = values['expected-failures'] ?? (values.fixture ? 'none' : defaultBaseline);
  return {
    url: values.url,
    fixture: values.fixture,
    headers,
    versions: values['spec-version'].length > 0 ? values['spec-version'] : DEFAULT_VERSIONS,
    scenarios: values.scenario,
    extensions: values.extensions,
    baseline: baseline === 'none' ? undefined : resolve(baseline),
    timeoutMs: Math.round(timeoutS * 1000),
    output: values.output === undefined ? undefined : resolve(values.output),
    json: values.json === undefined ? undefined : resolve(values.json),
  };
}

function checkLoopback(url: string): URL {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new UsageError(`not a URL: ${url}`);
  }
  if (u.protocol !== 'http:' || !LOOPBACK.has(u.hostname)) throw new UsageError(`only http:// loopback endpoints (127.0.0.1, localhost, [::1]), got ${url}`);
  return u;
}

// ------------------------------------------------------------------ child processes

// ------------------------------------------------------------------ scenario lists

/** `  - name [tags]` lines of `conformance list` output, up to the first blank line after the header. */
function parseList(text: string, header: RegExp): Array<{ name: string; tags: string[] }> {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => header.test(l));
  if (start === -1) return [];
  const out: Array<{ name: string; tags: string[] }> = [];
  for (const line of lines.slice(start + 1)) {
    const m = /^\s+- (\S+)(?: \[([^\]]*)\])?\s*$/.exec(line);
    if (!m) break;
    out.push({ name: m[1] as string, tags: (m[2] ?? '').split(',').filter(Boolean) });
  }
  return out;
}

/** Every server scenario with its tags: the spec versions it applies to, or `extension`. */
async function listServer(): Promise<Array<{ name: string; tags: string[] }>> {
  const r = await runCli(['--import', shim], ['list', '--server'], 30_000);
  const list = r.code === 0 ? parseList(r.out, /^Server scenarios/) : [];
  if (list.length === 0) throw new Error(`conformance list --server failed (exit ${r.code}):\n${r.out.slice(-2000)}`);
  return list;
}

/** Per revision, the server scenarios of its frozen requirement set (`list --requirements`); empty when the CLI has none. */
async function listRequired(versions: string[]): Promise<Map<string, Set<string>>> {
  const required = new Map<string, Set<string>>();
  const r = await runCli(['--import', shim], ['list', '--requirements', versions.join(',')], 30_000);
  if (r.code !== 0) return required;
  for (const section of r.out.split(/^(?=Required for )/m)) {
    const revision = /^Required for (\S+)/.exec(section)?.[1];
    if (revision) required.set(revision, new Set(parseList(section, /^Server scenarios/).map((s) => s.name)));
  }
  return required;
}

// ------------------------------------------------------------------ one scenario

async function runScenario(url: string, scenario: string, version: string, force: boolean, timeoutMs: number, outRoot: string): Promise<RunResult> {
  const dir = join(outRoot, version, scenario);
  mkdirSync(dir, { recursive: true });
  const started = Date.now();
  const args = ['server', '--url', url, '--scenario', scenario, '--spec-version', version, '--timeout', String(timeoutMs), '-o', dir];
  if (force) args.push('--force');
  const r = await runCli(['--import', shim], args, timeoutMs + KILL_GRACE_MS);
  const ms = Date.now() - started;
  writeFileSync(join(dir, 'output.txt'), r.out);
  const sub = readdirSync(dir, { withFileTypes: true }).find((d) => d.isDirectory() && existsSync(join(dir, d.name, 'checks.json')));
  if (sub) {
    const checks = JSON.parse(readFileSync(join(dir, sub.name, 'checks.json'), 'utf8')) as Check[];
    return { scenario, version, checks, ms };
  }
  const tail = r.out
    .replace(/\x1b\[[0-9;]*m/g, '')
    .trim()
    .split('\n')
    .slice(-6)
    .join(' | ');
  const problem = r.killed
    ? `killed after ${Math.round((timeoutMs + KILL_GRACE_MS) / 1000)} s without results`
    : /SKIPPED: scenario/.test(r.out)
      ? 'skipped by the CLI (not applicable at this spec version)'
      : `no checks.json (exit ${r.code}): ${tail}`;
  return { scenario, version, ms, problem, checks: [{ id: 'runner', status: 'FAILURE', errorMessage: problem }] };
}

// ------------------------------------------------------------------ baseline

const ENTRY = /^([A-Za-z0-9_./-]+)(?::([A-Za-z0-9_./-]+))?$/;

/** The CLI's expected-failures YAML, restricted to top-level keys holding lists of plain strings. */
function readBaseline(file: string): BaselineEntry[] {
  const entries: BaselineEntry[] = [];
  let key: string | undefined;
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((raw, i) => {
      const line = i + 1;
      if (/^\s*(#.*)?$/.test(raw)) return;
      const top = /^([A-Za-z0-9_.-]+):\s*(\[\s*\])?\s*(#.*)?$/.exec(raw);
      if (top) {
        key = top[1];
        return;
      }
      const item = /^\s+-\s+(?:'([^']*)'|"([^"]*)"|([^\s#'"]+))\s*(?:#\s*(.*?))?\s*$/.exec(raw);
      if (!item || key === undefined) throw new UsageError(`${file}:${line}: expected '<key>:' or '  - <entry>  # reason', got ${JSON.stringify(raw)}`);
      if (key !== 'server' && !key.startsWith('server-')) return; // `client:` and other keys are not ours
      const value = (item[1] ?? item[2] ?? item[3] ?? '').trim();
      const m = ENTRY.exec(value);
      if (!m) throw new UsageError(`${file}:${line}: entry ${JSON.stringify(value)} is not '<scenario>' or '<scenario>:<check-id>'`);
      const reason = (item[4] ?? '').trim();
      if (reason === '') throw new UsageError(`${file}:${line}: entry ${value} needs a reason: '  - ${value}  # why it fails'`);
      entries.push({
        scenario: m[1] as string,
        ...(m[2] !== undefined && { checkId: m[2] }),
        reason,
        ...(key !== 'server' && { version: key.slice('server-'.length) }),
        line,
      });
    });
  for (const e of entries) {
    if (e.checkId && entries.some((o) => o.scenario === e.scenario && !o.checkId && (o.version === undefined || o.version === e.version))) {
      throw new UsageError(`${file}:${e.line}: ${e.scenario}:${e.checkId} is redundant, the whole scenario is already expected to fail`);
    }
  }
  return entries;
}

interface Verdict {
  unexpected: string[];
  expected: string[];
  stale: string[];
}

/** The CLI's rules (`--expected-failures`), per spec version: FAILURE and WARNING both need an entry; a listed scenario or check that passes is stale. */
function judge(results: RunResult[], entries: BaselineEntry[]): Verdict {
  const v: Verdict = { unexpected: [], expected: [], stale: [] };
  for (const r of results) {
    const mine = entries.filter((e) => e.scenario === r.scenario && (e.version === undefined || e.version === r.version));
    const tag = (s: string) => `${s} @${r.version}`;
    if (mine.some((e) => !e.checkId)) {
      (r.checks.some(failing) ? v.expected : v.stale).push(tag(r.scenario));
      continue;
    }
    const listed = new Set(mine.map((e) => e.checkId));
    for (const c of r.checks.filter(failing)) (listed.has(c.id) ? v.expected : v.unexpected).push(tag(`${r.scenario}:${c.id}`));
    for (const id of listed) {
      const seen = r.checks.filter((c) => c.id === id && c.status !== 'INFO');
      if (seen.length > 0 && seen.every((c) => c.status === 'SUCCESS')) v.stale.push(tag(`${r.scenario}:${id}`));
    }
  }
  return v;
}

// ------------------------------------------------------------------ header relay and fixture host

/** A loopback relay to `target` that adds `headers` to every request; streams both ways (SSE included). */
function startRelay(target: URL, headers: Array<[string, string]>): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const upstream = httpRequest(
      {
        host: target.hostname.replace(/^\[|\]$/g, ''),
        port: target.port || 80,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, ...Object.fromEntries(headers.map(([k, v]) => [k.toLowerCase(), v])) },
      },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.rawHeaders);
        up.pipe(res);
      },
    );
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    });
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  return new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      ok({ server, url: `http://127.0.0.1:${port}${target.pathname}${target.search}` });
    });
  });
}

/** Start test/fixtures/http/conformance-upstream-http.mjs; resolves with its /mcp URL once it listens. */
function startFixtureHost(): Promise<{ url: string; stop: () => Promise<void> }> {
  return new Promise((ok, fail) => {
    const child = spawnTracked([fixtureHost], 'pipe');
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      killGroup(child, 'SIGKILL');
      fail(new Error(`fixture host did not listen within 15 s: ${err.slice(-500)}`));
    }, 15_000);
    child.stderr?.on('data', (b: Buffer) => (err = (err + b.toString()).slice(-4000)));
    child.stdout?.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /LISTENING (\d+)/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      ok({
        url: `http://127.0.0.1:${m[1]}/mcp`,
        stop: () =>
          new Promise<void>((done) => {
            if (child.exitCode !== null || child.signalCode !== null) return done();
            const hard = setTimeout(() => killGroup(child, 'SIGKILL'), 5_000);
            child.once('exit', () => {
              clearTimeout(hard);
              killGroup(child, 'SIGKILL');
              done();
            });
            child.stdin?.end();
            setTimeout(() => killGroup(child, 'SIGTERM'), 2_000).unref();
          }),
      });
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`fixture host exited (${code}) before listening: ${err.slice(-500)}`));
    });
  });
}

// ------------------------------------------------------------------ report

function cell(r: RunResult | undefined, required: boolean, entries: BaselineEntry[]): string {
  if (!r) return '-';
  const n = (s: Status) => r.checks.filter((c) => c.status === s).length;
  const ok = n('SUCCESS');
  const bad = n('FAILURE');
  const warn = n('WARNING');
  const v = judge([r], entries);
  const word = v.stale.length > 0 ? 'STALE' : v.unexpected.length > 0 ? (bad > 0 ? 'FAIL' : 'warn') : v.expected.length > 0 ? 'xfail' : 'pass';
  const skipped = n('SKIPPED');
  const counts = r.problem ? 'no result' : `${ok}/${ok + bad}${warn > 0 ? ` +${warn}w` : ''}${skipped > 0 ? ` +${skipped}s` : ''}`;
  return `${word} ${counts}${required ? ' *' : ''}`;
}

function printTable(results: RunResult[], versions: string[], order: string[], required: Map<string, Set<string>>, entries: BaselineEntry[]): void {
  const rows = order.map((s) => [
    s,
    ...versions.map((v) =>
      cell(
        results.find((r) => r.scenario === s && r.version === v),
        required.get(v)?.has(s) ?? false,
        entries,
      ),
    ),
  ]);
  const head = ['SCENARIO', ...versions];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const fmt = (cols: string[]) =>
    cols
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  console.log(fmt(head));
  for (const r of rows) console.log(fmt(r));
  console.log('\nN/M: SUCCESS checks of SUCCESS+FAILURE; +Nw / +Ns: WARNING / SKIPPED checks. pass: nothing failing;');
  console.log('FAIL: a FAILURE, warn: only WARNINGs (not in the baseline); xfail: every failing check is in the baseline;');
  console.log("STALE: a baseline entry passes; '*': in the revision's frozen requirement set (conformance list --requirements);");
  console.log("'-': the scenario does not apply at that spec version.");
}

// ------------------------------------------------------------------ main

async function main(): Promise<number> {
  const opts = parseOptions();
  const entries = opts.baseline ? readBaseline(opts.baseline) : [];
  const t0 = Date.now();
  const outRoot = opts.output ?? mkdtempSync(join(tmpdir(), 'mcpx-conformance-server-'));
  let relay: Server | undefined;
  let fixture: { url: string; stop: () => Promise<void> } | undefined;
  const cleanup = async () => {
    for (const c of children) killGroup(c, 'SIGKILL');
    const [f, r] = [fixture, relay];
    fixture = undefined;
    relay = undefined;
    await f?.stop();
    r?.closeAllConnections();
    r?.close();
    if (!opts.output) rmSync(outRoot, { recursive: true, force: true });
  };
  const onSignal = () => {
    void cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    const all = await listServer();
    const known = new Set(all.map((s) => s.name));
    for (const e of entries) if (!known.has(e.scenario)) throw new UsageError(`${opts.baseline}:${e.line}: no server scenario named ${e.scenario}`);
    for (const s of opts.scenarios) if (!known.has(s)) throw new UsageError(`no server scenario named ${s}`);

    // What to run: the scenarios the CLI tags with each version (what `list --server --spec-version V`
    // shows), plus the extension ones at 2026-07-28 with --extensions, narrowed by --scenario.
    const required = await listRequired(opts.versions);
    const plan: Array<{ scenario: string; version: string; force: boolean }> = [];
    for (const version of opts.versions) {
      const listed = all.filter((s) => s.tags.includes(version)).map((s) => s.name);
      const names = [...listed];
      if (opts.extensions && version === EXTENSION_VERSION) names.push(...all.filter((s) => s.tags.includes('extension')).map((s) => s.name));
      for (const scenario of names) {
        if (opts.scenarios.length > 0 && !opts.scenarios.includes(scenario)) continue;
        plan.push({ scenario, version, force: !listed.includes(scenario) });
      }
    }
    if (plan.length === 0) throw new UsageError('nothing to run: no scenario matches --scenario at the chosen --spec-version(s)');

    if (opts.fixture) fixture = await startFixtureHost();
    let url = fixture?.url ?? (opts.url as string);
    if (opts.headers.length > 0) {
      const r = await startRelay(checkLoopback(url), opts.headers);
      relay = r.server;
      url = r.url;
      console.log(`headers ${opts.headers.map(([k]) => k).join(', ')} added by a relay at ${url}`);
    }
    console.log(`${plan.length} scenario runs against ${fixture ? `the direct fixture host ${url}` : url}, ${opts.timeoutMs / 1000} s each at most`);

    const results: RunResult[] = [];
    for (const [i, p] of plan.entries()) {
      const r = await runScenario(url, p.scenario, p.version, p.force, opts.timeoutMs, outRoot);
      results.push(r);
      const bad = r.checks.filter((c) => c.status === 'FAILURE').length;
      const warn = r.checks.filter((c) => c.status === 'WARNING').length;
      console.log(
        `[${String(i + 1).padStart(3)}/${plan.length}] ${p.version} ${p.scenario}: ${bad > 0 ? `${bad} failed` : 'ok'}${warn > 0 ? `, ${warn} warnings` : ''} (${(r.ms / 1000).toFixed(1)} s)`,
      );
    }

    const order = [...new Set(plan.map((p) => p.scenario))];
    console.log('');
    printTable(results, opts.versions, order, required, entries);

    const problems = results.flatMap((r) =>
      r.checks.filter(failing).map((c) => `  ${r.version} ${r.scenario} [${c.id}] ${c.status}: ${(c.errorMessage ?? '').replace(/\s+/g, ' ').slice(0, 300)}`),
    );
    if (problems.length > 0) console.log(`\nFailing and warning checks:\n${problems.join('\n')}`);

    const verdict = judge(results, entries);
    if (opts.baseline) {
      console.log(`\nbaseline ${opts.baseline}: ${verdict.expected.length} expected, ${verdict.unexpected.length} unexpected, ${verdict.stale.length} stale`);
      for (const s of verdict.unexpected) console.log(`  unexpected  ${s}`);
      for (const s of verdict.stale) console.log(`  stale       ${s}  (passes now: remove it from the baseline)`);
    }
    const secs = ((Date.now() - t0) / 1000).toFixed(0);
    const scenariosFailing = results.filter((r) => r.checks.some(failing)).length;
    console.log(`\n${results.length} runs, ${results.length - scenariosFailing} clean, ${scenariosFailing} with failures or warnings, ${secs} s`);
    if (opts.output) console.log(`results kept in ${opts.output}`);
    if (opts.json) {
      writeFileSync(
        opts.json,
        JSON.stringify(
          {
            url,
            seconds: Number(secs),
            results: results.map((r) => ({
              scenario: r.scenario,
              version: r.version,
              ms: r.ms,
              counts: Object.fromEntries(
                (['SUCCESS', 'FAILURE', 'WARNING', 'SKIPPED', 'INFO'] as Status[]).map((s) => [s, r.checks.filter((c) => c.status === s).length]),
              ),
              failing: r.checks.filter(failing).map((c) => ({ id: c.id, status: c.status, errorMessage: c.errorMessage })),
            })),
            verdict,
          },
          null,
          2,
        ),
      );
    }
    return verdict.unexpected.length === 0 && verdict.stale.length === 0 ? 0 : 1;
  } finally {
    await cleanup();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    const usage = err instanceof UsageError || String((err as { code?: unknown } | null)?.code).startsWith('ERR_PARSE_ARGS');
    console.error(usage ? `conformance-server: ${(err as Error).message} (see --help)` : err);
    for (const c of children) killGroup(c, 'SIGKILL');
    process.exit(2);
  },
);
