/**
 * A socket path taken by something that is not a stale mcpx socket stops the daemon with its own code,
 * naming the path (not MCPX_BAD_CONFIG: the configuration is fine, the path is occupied).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon } from '../../src/daemon/daemon.js';
import { tempDir } from '../support/real.js';

let dir: { path: string; remove: () => Promise<void> };
beforeAll(async () => {
  dir = await tempDir('mcpx-sock-');
});
afterAll(async () => dir.remove());

describe('daemon.socket taken', () => {
  it('by a regular file: MCPX_SOCKET_CONFLICT naming the path, and the file is left alone', async () => {
    const state = join(dir.path, 'state');
    mkdirSync(state, { recursive: true, mode: 0o700 });
    const socket = join(state, 'mcpx.sock');
    writeFileSync(socket, 'not a socket');
    writeFileSync(join(dir.path, 'mcpx.json'), JSON.stringify({ mcpServers: {} }));
    const env: NodeJS.ProcessEnv = {
      ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MCPX_'))),
      MCPX_STATE_DIR: state,
      MCPX_DAEMON_SOCKET: socket,
      MCPX_CONFIG: join(dir.path, 'mcpx.json'),
      MCPX_LOG_LEVEL: 'warn',
    };
    const sink = new Writable({ write: (_c, _e, cb) => cb() });
    await expect(startDaemon({ env, cwd: dir.path, logStream: sink, prettyLogs: false })).rejects.toMatchObject({
      code: 'MCPX_SOCKET_CONFLICT',
      message: expect.stringContaining(socket),
    });
    expect(readFileSync(socket, 'utf8')).toBe('not a socket');
  });
});
