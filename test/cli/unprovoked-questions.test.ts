/**
 * Questions no call provoked (docs/serving.md): a legacy stdio server that asks `roots/list` right after
 * `initialize` (like server-filesystem) gets mcpx's own answer — the server's `mcpx.roots`, and no roots
 * without them — the same for every caller of a shared session, and hears
 * `notifications/roots/list_changed` when the configured roots change. `mcpx call` never fails a call
 * that finished because one of its questions closed.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureEntry, fixturePids } from '../server/helpers.js';
import { tempDir } from '../support/real.js';
import { api, cleanEnv, ForegroundDaemon, killAll, mcpx, until } from './helpers.js';

describe('questions no call provoked: roots/list at start-up', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let env: NodeJS.ProcessEnv;
  let socket: string;
  let config: string;
  let configured: string;
  const FRESH = 6;
  const write = (roots: string) => {
    const servers: Record<string, unknown> = {};
    for (let i = 1; i <= FRESH; i++) servers[`fs${i}`] = fixtureEntry(dir.path, `fs${i}`, { fixture: 'roots-v1', mcpx: { roots: [roots] } });
    servers['plain'] = fixtureEntry(dir.path, 'plain', { fixture: 'roots-v1' });
    writeFileSync(config, `${JSON.stringify({ mcpServers: servers }, null, 2)}\n`);
  };

  beforeAll(async () => {
    dir = await tempDir('mcpx-unprovoked-');
    configured = join(dir.path, 'configured');
    mkdirSync(configured);
    const state = join(dir.path, 'state');
    socket = join(state, 'daemon.sock');
    config = join(dir.path, 'mcpx.json');
    write(configured);
    env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: config });
    await ForegroundDaemon.start(socket, [], { env });
  }, 60_000);
  afterAll(async () => {
    await killAll();
    await dir?.remove();
  });

  it(`${FRESH} fresh starts: every mcpx call exits 0 with its result, and the server holds the configured roots, whoever calls`, async () => {
    // Each server's first call is a fresh start, the call in flight when the server asks its roots.
    const first = await Promise.all(
      Array.from({ length: FRESH }, (_, i) =>
        mcpx(['call', `fs${i + 1}`, i % 2 === 0 ? 'echo' : 'show_roots', ...(i % 2 === 0 ? ['{"text":"hi"}'] : []), '--roots', join(dir.path, `caller-${i}`)], {
          env,
        }),
      ),
    );
    for (const [i, r] of first.entries()) {
      expect({ i, code: r.code, stderr: r.stderr }).toEqual({ i, code: 0, stderr: '' });
      expect(r.stdout).toBe(i % 2 === 0 ? 'hi era=legacy\n' : `roots file://${configured}\n`);
    }
    // Two callers of one shared session, each naming other roots: both see the configured ones.
    const a = await mcpx(['call', 'fs1', 'show_roots', '--roots', join(dir.path, 'a')], { env });
    const b = await mcpx(['call', 'fs1', 'show_roots', '--roots', join(dir.path, 'b')], { env });
    expect([a.code, a.stdout]).toEqual([0, `roots file://${configured}\n`]);
    expect([b.code, b.stdout]).toEqual([0, `roots file://${configured}\n`]);
    // No mcpx.roots: no roots to give (never the folder the server runs in, nor the caller's of a shared
    // session); a server that asks anyway is refused as by a client that declared none.
    const plain = await mcpx(['call', 'plain', 'show_roots', '--roots', join(dir.path, 'c')], { env });
    expect(plain.code).toBe(0);
    expect(plain.stdout).toMatch(/^roots error: MCP error -32601: mcpx has no roots to give this server/);
  }, 90_000);

  it('a change of mcpx.roots reaches the running session as notifications/roots/list_changed', async () => {
    const other = join(dir.path, 'other');
    mkdirSync(other);
    write(other);
    expect((await api(socket, 'POST', '/v1/reload', {})).status).toBe(200);
    // The same process (the pool was kept), told of the change: it lists the roots again.
    await until(async () => (await mcpx(['call', 'fs2', 'show_roots'], { env })).stdout === `roots file://${other}\n`, 15_000, 'the new roots');
    expect(fixturePids(dir.path, 'fs2')).toHaveLength(1);
  }, 60_000);
});
