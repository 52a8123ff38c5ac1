/**
 * The official MCP conformance suite's server scenarios (`@modelcontextprotocol/conformance`, pinned in
 * package.json) against the binary's `/mcp/<server>` passthrough: `/mcp/conformance` and `/mcp/conformance-modern`
 * front test/fixtures/conformance-upstream.mjs over stdio (2025-11-25 and 2026-07-28), `/mcp/conformance-http`
 * the same fixture over Streamable HTTP (test/fixtures/http/conformance-upstream-http.mjs; 2026-07-28, why below).
 * One daemon fronts both; three runners go at the same time, the stdio endpoint's two spec versions apart
 * and the HTTP one (each scenario run is its own CLI process, often waiting on the daemon; runners of
 * about 40 runs each end together, where the stdio endpoint's 73 runs in one runner went on alone for
 * the last third of the test). Scenarios that need something mcpx
 * does not offer are listed, each with its reason, in conformance/server-expected-failures.yml; anything
 * else failing, or a listed entry that passes, fails this test (scripts/conformance-server.ts decides,
 * with the suite's own rules). No HTTP+SSE upstream: there is no SSE host for this fixture (the SDK v2
 * server has no SSE transport; an SDK v1 one would serve the legacy era only), and a third full pass
 * would add half again to the longest test of the suite (and, with a legacy-only upstream, measure
 * mcpx's era bridging more than the transport); the binary's SSE fallback is driven by the benchmark
 * (bench/call-path.ts: `/v1/call` and `mcpx call` against an SDK v1 HTTP+SSE server).
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-info.js';
import { FIXTURE_DIR } from '../fixtures/index.js';
import { HTTP_FIXTURE_DIR, startHttpFixture, type HttpFixture } from '../fixtures/http/index.js';
import { cleanEnv, ForegroundDaemon, killAll, readJson, until } from '../cli/helpers.js';
import { tempDir } from '../support/real.js';
import { freePort } from './clients.js';

const RUNNER = join(packageRoot(), 'dist', 'scripts', 'conformance-server.js');

/** One runner process (every scenario of `versions`) against `url`; its exit status and output. */
function runScenarios(url: string, token: string, json: string, versions: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [RUNNER, '--url', url, '--header', `Authorization: Bearer ${token}`, '--json', json, ...versions.flatMap((v) => ['--spec-version', v])],
      {
        env: { ...process.env, NODE_OPTIONS: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('close', (code) => resolve({ code, out }));
  });
}

describe('conformance server scenarios against /mcp', () => {
  const dirs: Array<{ remove: () => Promise<void> }> = [];
  let http: HttpFixture | undefined;
  afterAll(async () => {
    await killAll();
    await http?.stop();
    for (const d of dirs) await d.remove();
  });

  it('every applicable scenario passes at 2025-11-25 and 2026-07-28 over a stdio upstream, and at 2026-07-28 over a Streamable HTTP one', async () => {
    const dir = await tempDir('mcpx-conformance-');
    dirs.push(dir);
    const state = join(dir.path, 'state');
    // The upstreams themselves, without the wire log or the HTTP request log: the scenarios send many requests.
    http = await startHttpFixture(join(HTTP_FIXTURE_DIR, 'conformance-upstream-http.mjs'), [], { MCPX_FIXTURE_LOG: '' });
    const config = join(dir.path, 'mcpx.json');
    writeFileSync(
      config,
      JSON.stringify({
        mcpServers: {
          conformance: { command: process.execPath, args: [join(FIXTURE_DIR, 'conformance-upstream.mjs')] },
          // The same fixture for the 2026-07-28 stdio runner: the two stdio runners go at the same time, so each
          // has an upstream process of its own, and one runner's scenarios (a question held open, a list
          // changed) never delay or change the other's, whose streaming checks wait 600 ms at most.
          'conformance-modern': { command: process.execPath, args: [join(FIXTURE_DIR, 'conformance-upstream.mjs')] },
          'conformance-http': { url: http.url },
        },
      }),
    );
    const port = await freePort();
    const env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: config, MCPX_DAEMON_PORT: String(port) });
    await ForegroundDaemon.start(join(state, 'daemon.sock'), [], { env });
    await until(() => existsSync(join(state, 'daemon.json')), 10_000, 'daemon.json');
    const token = readJson(join(state, 'daemon.json')).token as string;

    // The HTTP upstream at 2026-07-28 only: mcpx speaks 2026-07-28 to this (dual-era) upstream whichever era
    // the caller has, so a 2025-11-25 caller's scenarios cross the same upstream wire as the stdio pass shows
    // for the front, while 2026-07-28 carries what is HTTP-specific upstream (per-request headers, _meta).
    // Both versions over HTTP passed too (73 runs, the stdio pass's results) at twice the cost: 380–480 s of
    // wall time on a loaded machine, the longest test of the suite by far.
    const endpoints = [
      { server: 'conformance', transport: 'stdio', versions: ['2025-11-25'] },
      { server: 'conformance-modern', transport: 'stdio', versions: ['2026-07-28'] },
      { server: 'conformance-http', transport: 'http', versions: ['2026-07-28'] },
    ];
    // Each endpoint's upstream started and its front loaded before the runners go: the first scenario of a
    // runner (server-stateless at 2026-07-28) waits 600 ms at most for a streamed answer, and three runners
    // starting at once on two cores would otherwise have it pay for a cold start.
    for (const e of endpoints) {
      const res = await fetch(`http://127.0.0.1:${port}/mcp/${e.server}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'tools/list',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/list',
          params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } },
        }),
      });
      expect(res.status, `warming /mcp/${e.server}: ${await res.text()}`).toBe(200);
    }
    const runs = await Promise.all(
      endpoints.map(async (e) => {
        const json = join(dir.path, `results-${e.server}-${e.versions.join('-')}.json`);
        return { ...e, json, ...(await runScenarios(`http://127.0.0.1:${port}/mcp/${e.server}`, token, json, e.versions)) };
      }),
    );
    for (const run of runs) {
      console.log(
        `/mcp/${run.server} (${run.transport} upstream, ${run.versions.join(', ')})\n${run.out
          .split('\n')
          .filter(
            (l) =>
              /^\S+\s+(pass|FAIL|warn|xfail|STALE|-)/.test(l) ||
              l.startsWith('baseline') ||
              l.startsWith('  unexpected') ||
              l.startsWith('  stale') ||
              /runs,/.test(l),
          )
          .join('\n')}`,
      );
    }
    for (const run of runs) {
      expect(run.code, `/mcp/${run.server} (${run.transport} upstream, ${run.versions.join(', ')}):\n${run.out}`).toBe(0);
      const table = JSON.parse(readFileSync(run.json, 'utf8'));
      expect(Array.isArray(table.results ?? table)).toBe(true);
    }
    // Each scenario run is a CLI process whose start costs about 1.7 s of CPU; the stdio pass alone took
    // 220–305 s of wall time on 2 cores shared with other work. 600 s leaves room above the worst seen.
  }, 600_000);
});
