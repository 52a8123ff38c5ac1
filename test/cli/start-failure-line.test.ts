/**
 * Issue 36, item 3: a server that cannot start is told in one plain line. An `npx` package the registry
 * does not have (a fixture printing npm's real 404 stderr and exiting 1, as npx does) names the package
 * through npm's "404 Not Found - GET … <package>" line — not its closing note about tarballs — once,
 * though both processes of the attempt (discover, then initialize) died; `mcpx tools` prefixes the server
 * once. A command that does not exist says "command not found: X" with the PATH searched.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_DIR } from '../fixtures/index.js';
import { writeConfig } from '../server/helpers.js';
import { tempDir } from '../support/real.js';
import { cleanEnv, ForegroundDaemon, killAll, mcpx } from './helpers.js';

const PKG = '@mcpx-test/no-such-package';
const NOT_FOUND = `404 Not Found - GET https://registry.npmjs.org/@mcpx-test%2fno-such-package - Not found`;

function count(text: string, part: string): number {
  return text.split(part).length - 1;
}

describe('start failures in one plain line (issue 36)', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    dir = await tempDir('mcpx-start-line-');
    const state = join(dir.path, 'state');
    const config = writeConfig(dir.path, {
      // Plain command entries, not fixtures (writeConfig writes them as they are).
      badpkg: { command: process.execPath, args: [join(FIXTURE_DIR, 'npm-404.mjs'), PKG] } as never,
      ghost: { command: 'mcpx-test-ghost-command', args: [] } as never,
    });
    env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: config, PATH: `${join(dir.path, 'bin')}:${process.env['PATH']}` });
    await ForegroundDaemon.start(join(state, 'daemon.sock'), [], { env });
  }, 60_000);
  afterAll(async () => {
    await killAll();
    await dir?.remove();
  });

  it('names the missing npm package from the line that says so, once', async () => {
    const r = await mcpx(['call', 'badpkg', 'anything', '--json'], { env });
    expect(r.code).toBe(1);
    const { error } = JSON.parse(r.stdout) as { error: { code: string; message: string } };
    expect(error.message).toContain(NOT_FOUND);
    expect(count(error.message, '404 Not Found')).toBe(1);
    expect(error.message).not.toContain('Note that you can also install');
    expect(error.message).not.toContain('A complete log of this run');
    expect(error.message).not.toContain('\n');
  });

  it('mcpx tools prefixes each failing server once', async () => {
    const r = await mcpx(['tools'], { env });
    expect(r.code).toBe(1);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(2);
    const bad = lines.find((l) => l.startsWith('mcpx: badpkg: '))!;
    expect(bad).toBeDefined();
    expect(bad).not.toContain('badpkg: badpkg:');
    expect(count(bad, NOT_FOUND)).toBe(1);
    const ghost = lines.find((l) => l.startsWith('mcpx: ghost: '))!;
    expect(ghost).toBeDefined();
    expect(ghost).not.toContain('ghost: ghost:');
  });

  it('a missing command says "command not found: X" and the PATH it searched', async () => {
    const r = await mcpx(['call', 'ghost', 'anything'], { env });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain(`command not found: mcpx-test-ghost-command (PATH searched: ${env['PATH']})`);
    expect(r.stderr).not.toContain('ENOENT');
    expect(count(r.stderr, 'command not found')).toBe(1);
  });
});
