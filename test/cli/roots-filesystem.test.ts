/**
 * Roots with the real `@modelcontextprotocol/server-filesystem` (docs/serving.md, roots): a server that
 * takes its folders from its command line keeps them — mcpx declares no `roots` when it has none to give,
 * so the server never trades them for the folder it runs in (the config file's, with mcpx's backups) —
 * through `mcpx call` and through `mcpx serve` with the SDK v1 and v2 clients, over several seconds (the
 * server asks for roots right after initialize, so a wrong answer shows a moment after the first call).
 * A server started with no folders and given `mcpx.roots` reads them from mcpx.
 */
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-info.js';
import { stdioCaller, textOf, type CallerEra } from '../serve/clients.js';
import { tempDir } from '../support/real.js';
import { cleanEnv, ForegroundDaemon, killAll, mcpx, until } from './helpers.js';

const FILESYSTEM = join(packageRoot(), 'node_modules', '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js');
/** How long each client keeps checking: well past the server's start-up roots/list and its answer. */
const WATCH_MS = 3_000;

describe('server-filesystem keeps the folder it was given', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let env: NodeJS.ProcessEnv;
  let home: string;
  let data: string;
  let given: string;

  beforeAll(async () => {
    dir = await tempDir('mcpx-roots-fs-');
    home = realpathSync(dir.path);
    data = join(home, 'data');
    given = join(home, 'given');
    mkdirSync(data);
    mkdirSync(given);
    writeFileSync(join(data, 'hello.txt'), 'hello from data\n');
    writeFileSync(join(given, 'note.txt'), 'a note from the configured roots\n');
    const state = join(home, 'state');
    const config = join(home, 'mcpx.json');
    const timeouts = { probeTimeout: '10s', startTimeout: '30s' };
    writeFileSync(
      config,
      `${JSON.stringify(
        {
          mcpServers: {
            // Runs in the config file's folder (its default cwd), with `data` on its command line.
            files: { command: process.execPath, args: [FILESYSTEM, data], mcpx: timeouts },
            // No folder on its command line: it needs roots, and gets mcpx.roots.
            rooted: { command: process.execPath, args: [FILESYSTEM], mcpx: { ...timeouts, roots: [given] } },
          },
        },
        null,
        2,
      )}\n`,
    );
    env = cleanEnv(home, { MCPX_STATE_DIR: state, MCPX_CONFIG: config });
    await ForegroundDaemon.start(join(state, 'daemon.sock'), [], { env });
  }, 60_000);
  afterAll(async () => {
    await killAll();
    await dir?.remove();
  });

  it(`mcpx call: list_allowed_directories answers the command-line folder for ${WATCH_MS} ms, files there are read, the config folder is not`, async () => {
    let start = 0; // from the first answer: the server has started and asked for its roots by then
    let calls = 0;
    do {
      const r = await mcpx(['call', 'files', 'list_allowed_directories'], { env });
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
      expect(r.stdout.trim()).toBe(`Allowed directories:\n${data}`);
      if (calls++ === 0) start = Date.now();
    } while (Date.now() - start < WATCH_MS);
    expect(calls).toBeGreaterThan(1);
    const read = await mcpx(['call', 'files', 'read_text_file', JSON.stringify({ path: join(data, 'hello.txt') })], { env });
    expect([read.code, read.stdout]).toEqual([0, 'hello from data\n']);
    const outside = await mcpx(['call', 'files', 'read_text_file', JSON.stringify({ path: join(home, 'mcpx.json') })], { env });
    expect(outside.code).not.toBe(0);
    expect(outside.stdout + outside.stderr).toMatch(/Access denied - path outside allowed directories/);
  }, 90_000);

  it('mcpx call: a server with no folder of its own reads the configured mcpx.roots', async () => {
    // The server asks for its roots after initialize and applies the answer on its own time: a call that
    // comes first sees none yet (as with any client). Once they are there, they stay.
    const listed = async () => (await mcpx(['call', 'rooted', 'list_allowed_directories'], { env })).stdout.trim();
    await until(async () => (await listed()) === `Allowed directories:\n${given}`, 30_000, 'the configured roots');
    const start = Date.now();
    do expect(await listed()).toBe(`Allowed directories:\n${given}`);
    while (Date.now() - start < WATCH_MS);
    const read = await mcpx(['call', 'rooted', 'read_text_file', JSON.stringify({ path: join(given, 'note.txt') })], { env });
    expect([read.code, read.stdout]).toEqual([0, 'a note from the configured roots\n']);
  }, 60_000);

  it.each(['legacy', 'modern'] as CallerEra[])(
    'mcpx serve, an SDK %s client that declares no roots: the same folders, over time',
    async (era) => {
      const caller = await stdioCaller(era, { env });
      try {
        const start = Date.now();
        do {
          const files = await caller.callTool('files__list_allowed_directories');
          expect(textOf(files)).toBe(`Allowed directories:\n${data}`);
          const rooted = await caller.callTool('rooted__list_allowed_directories');
          expect(textOf(rooted)).toBe(`Allowed directories:\n${given}`);
        } while (Date.now() - start < WATCH_MS);
        const read = await caller.callTool('files__read_text_file', { path: join(data, 'hello.txt') });
        expect([read['isError'] ?? false, textOf(read)]).toEqual([false, 'hello from data\n']);
        const outside = await caller.callTool('files__read_text_file', { path: join(home, 'mcpx.json') });
        expect(outside['isError']).toBe(true);
        expect(textOf(outside)).toMatch(/Access denied - path outside allowed directories/);
      } finally {
        await caller.close();
      }
    },
    90_000,
  );
});
