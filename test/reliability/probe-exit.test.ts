/**
 * Issue 10 #1: a stdio server that exits on any request before `initialize` (a legacy server that quits
 * on `server/discover`). The session replaces the process and connects with initialize; the close of
 * the replaced process must never be taken for the new instance's, so the first call through the pool
 * is served, and the pool reports no crash.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServerPool } from '../../src/pool/server-pool.js';
import type { PoolEvent } from '../../src/pool/types.js';
import { UpstreamSession } from '../../src/upstream/session.js';
import { fixtureCommand } from '../fixtures/index.js';
import { methodsReceived, pids, readWireLog } from '../fixtures/wire-log-read.js';
import { tempDir, textOf } from '../support/real.js';
import { isGone } from './helpers.js';
import { callTool } from '../support/calls.js';

let dir: { path: string; remove: () => Promise<void> };
beforeAll(async () => {
  dir = await tempDir('mcpx-probe-exit-');
});
afterAll(async () => {
  await dir.remove();
});

describe('a server that exits on the probe', () => {
  it('through the pool: the replacement process serves the first call; nothing is reported as crashed', async () => {
    const log = `${dir.path}/pool.log`;
    const cmd = fixtureCommand('raw', { mode: 'exit-pre-init', log });
    const pool = new ServerPool({
      name: 'quits-on-discover',
      definition: { command: cmd.command, args: cmd.args, env: cmd.env },
      preference: 'prefer-discover',
      limits: { scope: 'global', max: 1, sharing: 'shared', idleTimeoutMs: 60_000 },
      probeTimeoutMs: 10_000,
      startTimeoutMs: 20_000,
    });
    const events: PoolEvent[] = [];
    pool.on('event', (e) => events.push(e));
    try {
      expect(textOf(await callTool(pool, 'echo', { text: 'first' }))).toBe('first era=legacy');
      expect(textOf(await callTool(pool, 'echo', { text: 'second' }))).toBe('second era=legacy');
      const wire = readWireLog(log);
      const started = pids(wire);
      expect(started).toHaveLength(2);
      expect(methodsReceived(wire, started[0])).toEqual(['server/discover']);
      expect(methodsReceived(wire, started[1])).toEqual(['initialize', 'notifications/initialized', 'tools/call', 'tools/call']);
      expect(events.filter((e) => e.type === 'server.stop')).toEqual([]);
      expect(pool.instances()).toMatchObject([{ pid: started[1], era: 'legacy' }]);
    } finally {
      await pool.stop();
    }
    for (const pid of pids(readWireLog(log))) expect(isGone(pid), `pid ${pid} is gone`).toBe(true);
  });

  it('the session emits no `closed` for the replaced process; it does for the ready one', async () => {
    const log = `${dir.path}/session.log`;
    const cmd = fixtureCommand('raw', { mode: 'exit-pre-init', log });
    const session = new UpstreamSession({
      name: 'quits-on-discover',
      definition: { command: cmd.command, args: cmd.args, env: cmd.env },
      preference: 'prefer-discover',
      probeTimeoutMs: 10_000,
      startTimeoutMs: 20_000,
      stopGraceMs: 500,
    });
    const closed: unknown[] = [];
    session.on('closed', (info) => closed.push(info));
    try {
      expect(await session.start()).toMatchObject({ era: 'legacy', spawns: 2 });
      expect(textOf(await session.callTool('echo', { text: 'x' }))).toBe('x era=legacy');
      expect(closed).toEqual([]);
      const pid = session.info().pid!;
      const gone = new Promise((resolve) => session.once('closed', resolve));
      process.kill(pid, 'SIGKILL');
      expect(await gone).toMatchObject({ signal: 'SIGKILL' });
      expect(closed).toHaveLength(1);
    } finally {
      await session.stop();
    }
  });
});
