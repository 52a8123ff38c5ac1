/**
 * Issue 2, through the built binary: a dual-era server slower to start than `probeTimeout` that pins a process
 * to the first era it answers (the Python SDK does). discover is answered first; the initialize sent alongside
 * meets the pinned process and gets -32022. That refusal says nothing about a fresh process, so the era cache
 * must not record `"initialize": "refused"`: a later prefer-initialize entry with the same command is then
 * served 2025-11-25, as the era matrix says for a dual server (docs/behaviour.md §2, §3).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { fixtureCommand } from '../fixtures/index.js';
import { tempDir } from '../support/real.js';
import { cleanEnv, ForegroundDaemon, killAll, mcpx, mcpxJson, readJson, until } from './helpers.js';

let dir: { path: string; remove: () => Promise<void> };
let env: NodeJS.ProcessEnv;
let state: string;

beforeAll(async () => {
  dir = await tempDir('mcpx-e2e-pinned-');
  state = join(dir.path, 'state');
  // Both entries run the same process definition (one wire log, same env): one era-cache key.
  const cmd = fixtureCommand('raw', { mode: 'pinning-dual', log: join(dir.path, 'pinning.wire.log'), env: { SLOW_MS: '900' } });
  const entry = (protocol: string) => ({ command: cmd.command, args: cmd.args, env: cmd.env, protocol, mcpx: { probeTimeout: '300ms', startTimeout: '20s' } });
  const config = join(dir.path, 'mcpx.json');
  writeFileSync(config, JSON.stringify({ mcpServers: { first: entry('prefer-discover'), later: entry('prefer-initialize') } }, null, 2));
  env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: config });
  await ForegroundDaemon.start(join(state, 'daemon.sock'), [], { env });
});
afterAll(async () => {
  await killAll();
  await dir?.remove();
});

describe('a dual server that pins its process to the era it answered first', () => {
  it('is not cached as refusing initialize; a later prefer-initialize entry gets 2025-11-25', async () => {
    const first = await mcpx(['call', 'first', 'echo', '{"text":"a"}'], { env });
    expect(first.stderr).toBe('');
    expect(first.stdout).toBe('a era=modern\n');
    const file = join(state, 'upstream-eras.json');
    await until(
      () => {
        try {
          return Object.keys(readJson(file).servers).length === 1;
        } catch {
          return false;
        }
      },
      10_000,
      'the era record',
    );
    const records = Object.values(readJson(file).servers) as Array<Record<string, unknown>>;
    expect(records[0]).toMatchObject({ era: 'modern', version: '2026-07-28' });
    expect(records[0]).not.toHaveProperty('initialize');

    const later = await mcpx(['call', 'later', 'echo', '{"text":"b"}'], { env });
    expect(later.stderr).toBe('');
    expect(later.stdout).toBe('b era=legacy\n');
    const rows = Object.fromEntries((await mcpxJson<{ servers: any[] }>(['protocol'], { env })).servers.map((s) => [s.server, s]));
    expect(rows['later']).toMatchObject({ era: 'legacy', negotiated: '2025-11-25' });
  });
});
