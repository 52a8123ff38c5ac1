/**
 * The official MCP conformance suite's server scenarios (`@modelcontextprotocol/conformance`, pinned in
 * package.json) against mcpx's `/mcp/conformance` — the passthrough of an upstream fixture that offers
 * what the scenarios call (test/fixtures/conformance-upstream.mjs, over stdio) — at 2025-11-25 and
 * 2026-07-28. Scenarios that need something mcpx does not offer are listed, each with its reason, in
 * conformance/server-expected-failures.yml; anything else failing, or a listed entry that passes,
 * fails this test (scripts/conformance-server.ts decides, with the suite's own rules).
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-info.js';
import { FIXTURE_DIR } from '../fixtures/index.js';
import { cleanEnv, ForegroundDaemon, killAll, readJson, until } from '../cli/helpers.js';
import { tempDir } from '../support/real.js';
import { freePort } from './clients.js';

const RUNNER = join(packageRoot(), 'dist', 'scripts', 'conformance-server.js');

describe('conformance server scenarios against /mcp', () => {
  const dirs: Array<{ remove: () => Promise<void> }> = [];
  afterAll(async () => {
    await killAll();
    for (const d of dirs) await d.remove();
  });

  it('every applicable scenario passes at 2025-11-25 and 2026-07-28', async () => {
    const dir = await tempDir('mcpx-conformance-');
    dirs.push(dir);
    const state = join(dir.path, 'state');
    // The upstream itself, without the wire-log preload: the scenarios send many requests.
    const config = join(dir.path, 'mcpx.json');
    writeFileSync(config, JSON.stringify({ mcpServers: { conformance: { command: process.execPath, args: [join(FIXTURE_DIR, 'conformance-upstream.mjs')] } } }));
    const port = await freePort();
    const env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: config, MCPX_DAEMON_PORT: String(port) });
    await ForegroundDaemon.start(join(state, 'daemon.sock'), [], { env });
    await until(() => existsSync(join(state, 'daemon.json')), 10_000, 'daemon.json');
    const token = readJson(join(state, 'daemon.json')).token as string;
    const results = join(dir.path, 'results.json');

    const run = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, [RUNNER, '--url', `http://127.0.0.1:${port}/mcp/conformance`, '--header', `Authorization: Bearer ${token}`, '--json', results], {
        env: { ...process.env, NODE_OPTIONS: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr.on('data', (c: Buffer) => (out += c.toString()));
      child.on('close', (code) => resolve({ code, out }));
    });
    // eslint-disable-next-line no-console
    console.log(run.out.split('\n').filter((l) => /^\S+\s+(pass|FAIL|warn|xfail|STALE|-)/.test(l) || l.startsWith('baseline') || /runs,/.test(l)).join('\n'));
    expect(run.code, run.out).toBe(0);
    const table = JSON.parse(readFileSync(results, 'utf8'));
    expect(Array.isArray(table.results ?? table)).toBe(true);
  }, 480_000);
});
