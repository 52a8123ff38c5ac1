/**
 * test/fixtures/replay-listing-server.mjs puts a real server's captured listing
 * (bench/tool-search/listings) behind the built binary: `mcpx tools --config …` lists its tools under
 * `<server>__<tool>` with the exact schemas the real server sent, and `mcpx call` reaches it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-info.js';
import { FIXTURE_DIR } from '../fixtures/index.js';
import { writeConfig } from '../server/helpers.js';
import { tempDir } from '../support/real.js';
import { cleanEnv, killAll, mcpx, readJson, trackPid } from './helpers.js';

const LISTINGS = join(packageRoot(), 'bench', 'tool-search', 'listings');
const REPLAY = join(FIXTURE_DIR, 'replay-listing-server.mjs');
const listing = (server: string) => JSON.parse(readFileSync(join(LISTINGS, `${server}.json`), 'utf8')) as { tools: Array<Record<string, any>> };

describe('replay-listing-server: captured listings behind mcpx', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let env: NodeJS.ProcessEnv;
  let config: string;

  beforeAll(async () => {
    dir = await tempDir('mcpx-replay-listing-');
    const state = join(dir.path, 'state');
    const entry = (server: string) => ({ command: process.execPath, args: [REPLAY, join(LISTINGS, `${server}.json`)], mcpx: { startTimeout: '30s' } }) as never;
    config = writeConfig(dir.path, { github: entry('github'), memory: entry('memory') });
    env = cleanEnv(dir.path, { MCPX_STATE_DIR: state });
  }, 60_000);
  afterAll(async () => {
    await mcpx(['stop'], { env }).catch(() => undefined);
    await killAll();
    await dir?.remove();
  }, 60_000);

  it('mcpx tools --config lists every captured tool with its exact schema', async () => {
    const r = await mcpx(['tools', '--json', '--config', config], { env, timeoutMs: 90_000 });
    trackPid(readJson(join(dir.path, 'state', 'daemon.json'))?.pid);
    expect(r.code, r.stderr).toBe(0);
    const { tools } = JSON.parse(r.stdout) as { tools: Array<Record<string, any>> };
    for (const server of ['github', 'memory']) {
      const want = listing(server).tools;
      const got = tools.filter((t) => t['server'] === server);
      expect(got.map((t) => t['name'])).toEqual(want.map((t) => t['name']));
      expect(got.map((t) => t['exposed'])).toEqual(want.map((t) => `${server}__${t['name']}`));
      for (const [i, t] of got.entries()) {
        expect(t['description']).toBe(want[i]!['description']);
        expect(t['inputSchema']).toEqual(want[i]!['inputSchema']);
      }
    }
  }, 120_000);

  it('mcpx call reaches a replayed tool, which echoes its name and arguments', async () => {
    const r = await mcpx(['call', 'github', 'create_issue', '{"owner":"o","repo":"r","title":"t"}', '--config', config], { env, timeoutMs: 90_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('called create_issue {"owner":"o","repo":"r","title":"t"}');
  }, 120_000);
});
