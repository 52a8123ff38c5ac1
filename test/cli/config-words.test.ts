/**
 * Config mistakes named everywhere, through the built binary: an unknown key at the top level and in a
 * server entry gets a warning with the nearest known key (as inside the `mcpx` block), other clients' keys
 * are accepted or pointed at mcpx's own; every problem on a line of its own; and an edit a running daemon
 * refused shows in `mcpx status` and `mcpx servers` until the file is fixed.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeConfig } from '../server/helpers.js';
import { tempDir } from '../support/real.js';
import { cleanEnv, ForegroundDaemon, killAll, mcpx, until } from './helpers.js';

const CONDITION_MS = 60_000;

let root: { path: string; remove: () => Promise<void> };
beforeAll(async () => {
  root = await tempDir('mcpx-config-words-');
});
afterAll(async () => {
  await killAll();
  await root?.remove();
});

async function home(name: string): Promise<string> {
  const h = join(root.path, name);
  await mkdir(h, { recursive: true });
  return h;
}

describe('config mistakes, named', { timeout: 180_000 }, () => {
  it('an unknown key at the top level and in a server gets a warning naming the nearest key; other clients keys are told apart', async () => {
    const h = await home('unknown');
    const file = join(h, 'mcpx.json');
    writeFileSync(
      file,
      JSON.stringify(
        {
          $schema: 'https://example.com/schema.json',
          upstrem: { protocol: 'legacy' },
          mcpServers: {
            a: { command: 'node', args: ['a.js'], protocl: 'legacy', alwaysAllow: ['echo'], autoApprove: [], description: 'a' },
            b: { url: 'http://127.0.0.1:9/mcp', headres: { X: '1' }, timeout: 60, oauth: { clientID: 'x' } },
          },
        },
        null,
        2,
      ),
    );
    const r = await mcpx(['config', '--config', file], { env: cleanEnv(h) });
    expect(r.code).toBe(0);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines).toEqual([
      `mcpx: warning: config ${file}: upstrem: is not a key mcpx reads and is ignored (did you mean upstream?)`,
      `mcpx: warning: config ${file}: mcpServers.a.protocl: is not a key mcpx reads and is ignored (did you mean protocol?)`,
      `mcpx: warning: config ${file}: mcpServers.b.headres: is not a key mcpx reads and is ignored (did you mean headers?)`,
      `mcpx: warning: config ${file}: mcpServers.b.timeout: is another client's key, ignored by mcpx: for mcpx's request timeout write "mcpx": {"requestTimeout": "60s"}`,
      `mcpx: warning: config ${file}: mcpServers.b.oauth.clientID: is not an oauth key mcpx reads and is ignored (did you mean clientId?) (known: clientId, clientSecret, callbackPort, authServerMetadataUrl, scopes, clientMetadataUrl)`,
    ]);
  });

  it('every problem of a bad config on a line of its own (mcpx config, mcpx daemon)', async () => {
    const h = await home('lines');
    const file = join(h, 'mcpx.json');
    writeFileSync(
      file,
      JSON.stringify({
        pool: { maxx: 2 },
        mcpServers: { a: { command: 'node', mcpx: { scop: 'session' } }, b: { command: 'node', mcpx: { idelTimeout: '1s' } } },
      }),
    );
    const env = cleanEnv(h, { MCPX_STATE_DIR: join(h, 'state') });
    for (const args of [
      ['config', '--config', file],
      ['daemon', '--config', file],
    ]) {
      const r = await mcpx(args, { env });
      expect(r.code).toBe(1);
      const lines = r.stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(3);
      expect(lines.every((l) => l.startsWith(`mcpx: config ${file}: `))).toBe(true);
      expect(lines.join('\n')).toContain('pool.maxx: not a setting (did you mean pool.max?)');
      expect(lines.join('\n')).toContain('mcpServers.a.mcpx.scop: is not an mcpx key (did you mean scope?)');
      expect(lines.join('\n')).toContain('mcpServers.b.mcpx.idelTimeout: is not an mcpx key (did you mean idleTimeout?)');
    }
    // a client command that starts the daemon in the background: the same lines, after what happened
    const auto = await mcpx(['status', '--start', '--config', file], { env, timeoutMs: 90_000 });
    expect(auto.code).toBe(1);
    const lines = auto.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(new RegExp(`^mcpx: the daemon did not start: config ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: pool\\.maxx: `));
    expect(lines.slice(1).every((l) => l.startsWith(`mcpx: config ${file}: mcpServers.`))).toBe(true);
    expect(lines[2]).toMatch(/ \(log: .*daemon\.log\)$/);
  });

  it('an edit a running daemon refused shows in mcpx status and mcpx servers until the file is fixed', async () => {
    const h = await home('rejected');
    const state = join(h, 'state');
    const socket = join(state, 'daemon.sock');
    const file = writeConfig(h, { a: { fixture: 'dual-v2' } });
    const env = cleanEnv(h, { MCPX_STATE_DIR: state });
    const daemon = await ForegroundDaemon.start(socket, ['--config', file], { env, timeoutMs: CONDITION_MS });
    try {
      const json = async (cmd: string) => {
        const r = await mcpx([cmd, '--json'], { env });
        expect(r.code).toBe(0);
        return JSON.parse(r.stdout);
      };
      expect((await json('status')).config.rejected).toBeUndefined();
      const good = readFileSync(file, 'utf8');
      writeFileSync(file, good.replace('"mcpx": {', '"mcpx": {\n        "scop": "session",'));
      await until(async () => (await json('status')).config.rejected !== undefined, CONDITION_MS, 'the refused edit in mcpx status');
      const problem = `config ${file}: mcpServers.a.mcpx.scop: is not an mcpx key (did you mean scope?)`;
      expect((await json('status')).config.rejected).toMatchObject({ file, problems: [expect.stringContaining(problem)] });
      expect((await json('servers')).rejected).toMatchObject({ file, problems: [expect.stringContaining(problem)] });
      for (const cmd of ['status', 'servers']) {
        const r = await mcpx([cmd], { env });
        expect(r.code).toBe(0);
        expect(r.stdout).toMatch(
          new RegExp(`the last edit of ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} was rejected at .* \\(1 problem\\); the config before it stays in force`),
        );
        expect(r.stdout).toContain(problem);
      }
      // the server still runs on the config before the edit
      expect((await json('servers')).servers.map((s: { server: string }) => s.server)).toEqual(['a']);
      writeFileSync(file, good);
      await until(async () => (await json('servers')).rejected === undefined, CONDITION_MS, 'the note gone once the file is fixed');
      expect((await json('status')).config.rejected).toBeUndefined();
      expect((await mcpx(['status'], { env })).stdout).not.toContain('was rejected');
    } finally {
      expect(await daemon.stop()).toEqual({ code: 0, signal: null });
    }
  });
});
