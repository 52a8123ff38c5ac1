/**
 * Issue 23 (part): an HTTP upstream that cannot be reached is worded as one, not as a process: an
 * HTTP+SSE upstream whose stream cannot be opened fails with MCPX_UPSTREAM_UNAVAILABLE, "could not
 * connect to the upstream over HTTP+SSE — the connection failed (…)", never MCPX_SPAWN_FAILED or
 * "the process closed before answering". Through the built binary, against a port nothing listens on.
 */
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeConfig } from '../server/helpers.js';
import { tempDir } from '../support/real.js';
import { cleanEnv, ForegroundDaemon, killAll, mcpx } from './helpers.js';

/** A loopback port that was free a moment ago (and so refuses connections). */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

describe('an unreachable HTTP+SSE upstream (issue 23)', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    dir = await tempDir('mcpx-http-start-');
    const state = join(dir.path, 'state');
    const port = await closedPort();
    const config = writeConfig(dir.path, { gone: { type: 'sse', url: `http://127.0.0.1:${port}/sse` } as never });
    env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: config });
    await ForegroundDaemon.start(join(state, 'daemon.sock'), [], { env });
  }, 60_000);
  afterAll(async () => {
    await killAll();
    await dir?.remove();
  });

  it('fails with MCPX_UPSTREAM_UNAVAILABLE, worded for a connection', async () => {
    const j = await mcpx(['call', 'gone', 'echo', '--json'], { env });
    expect(j.code).toBe(1);
    const error = JSON.parse(j.stdout).error as { code: string; message: string };
    expect(error.code).toBe('MCPX_UPSTREAM_UNAVAILABLE');
    expect(error.message).toContain('gone: could not connect to the upstream over HTTP+SSE — the connection failed (');
    expect(error.message).toContain('could not open the HTTP+SSE stream');
    const r = await mcpx(['call', 'gone', 'echo'], { env });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('could not connect to the upstream over HTTP+SSE');
    for (const text of [j.stdout, r.stderr]) {
      expect(text).not.toContain('MCPX_SPAWN_FAILED');
      expect(text).not.toContain('process');
    }
  });
});
