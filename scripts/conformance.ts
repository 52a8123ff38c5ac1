/**
 * `npm run conformance`: the official MCP conformance suite's client scenarios, with mcpx's upstream
 * session as the client under test (scripts/conformance-client.ts). Prints one line per scenario and a
 * final "N passed, N failed" line; exits non-zero when a scenario fails. Not part of `npm test`: the
 * suite is an alpha and its scenarios change.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const require = createRequire(import.meta.url);
const cli = join(dirname(require.resolve('@modelcontextprotocol/conformance/package.json')), 'dist', 'index.js');
const shim = join(root, 'scripts', 'conformance', 'register.mjs');
const adapter = join(root, 'dist', 'scripts', 'conformance-client.js');

/** Scenario, spec version. `request-metadata` is left out on purpose: see docs/decisions.md (-32022). */
const SCENARIOS: Array<[string, string | undefined]> = [
  ['initialize', undefined],
  ['tools_call', undefined],
  ['tools_call', '2026-07-28'],
  ['http-standard-headers', '2026-07-28'],
  ['http-custom-headers', '2026-07-28'],
  ['http-invalid-tool-headers', '2026-07-28'],
  ['sep-2322-client-request-state', '2026-07-28'],
  ['json-schema-2020-12-preservation', '2026-07-28'],
];

const out = mkdtempSync(join(tmpdir(), 'mcpx-conformance-'));
let passed = 0;
let failed = 0;
try {
  for (const [scenario, version] of SCENARIOS) {
    const args = [cli, 'client', '--command', `${process.execPath} ${adapter}`, '--scenario', scenario, '-o', out, ...(version ? ['--spec-version', version] : [])];
    const r = spawnSync(process.execPath, ['--import', shim, ...args], { encoding: 'utf8', timeout: 120_000 });
    const text = `${r.stdout}\n${r.stderr}`;
    const summary = /Passed: (\d+)\/(\d+), (\d+) failed/.exec(text);
    const ok = r.status === 0 && /OVERALL: PASSED/.test(text);
    if (ok) passed++;
    else failed++;
    console.log(`${ok ? 'PASS' : 'FAIL'}  ${scenario}${version ? ` @${version}` : ''}  ${summary ? `${summary[1]}/${summary[2]} checks` : '(no summary)'}`);
    if (!ok) console.log(text.split('\n').filter((l) => /FAILURE|WARNING|Error|exited/.test(l)).slice(0, 10).join('\n'));
  }
} finally {
  rmSync(out, { recursive: true, force: true });
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
