/**
 * The tool catalogue and the daemon's life under `mcpx serve`:
 * - a fresh client's first tools/list with 5 configured, stopped servers answers from the persisted
 *   catalogue without starting any of them (processes counted from the fixtures' own logs);
 * - a server with no catalogue yet is started on the first listing;
 * - serve starts the daemon itself; a call in flight when the daemon is killed gets an isError
 *   result saying so and is not retried; the next call starts a fresh daemon.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { methodsReceived, pids, readWireLog, received } from '../fixtures/wire-log-read.js';
import { writeConfig, type ServerEntry } from '../server/helpers.js';
import { tempDir } from '../support/real.js';
import { api, cleanEnv, ForegroundDaemon, killAll, mcpx, readJson, trackPid, until } from '../cli/helpers.js';
import { stdioCaller, textOf } from './clients.js';

const FIVE: Record<string, ServerEntry> = {
  one: { fixture: 'legacy-v1' },
  two: { fixture: 'dual-v2' },
  three: { fixture: 'modern-v2' },
  four: { fixture: 'rich-v2' },
  five: { fixture: 'serve-tools' },
};

const dirs: Array<{ remove: () => Promise<void> }> = [];
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

afterAll(async () => {
  await killAll();
  for (const d of dirs) await d.remove();
});

describe('the tool catalogue', () => {
  it("answers a fresh client's first tools/list with 5 stopped servers without starting any", async () => {
    const dir = await tempDir('mcpx-serve-catalog-');
    dirs.push(dir);
    const state = join(dir.path, 'state');
    const socket = join(state, 'daemon.sock');
    const config = writeConfig(dir.path, FIVE);
    const env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: config });
    const allPids = () =>
      Object.keys(FIVE).flatMap((n) => (existsSync(join(dir.path, `${n}.wire.log`)) ? pids(readWireLog(join(dir.path, `${n}.wire.log`))) : []));

    // A first daemon lists every server once (this is what fills the catalogue), then stops them all.
    let daemon = await ForegroundDaemon.start(socket, [], { env });
    const listed = await mcpx(['tools', '--json'], { env });
    expect(listed.code, listed.stderr).toBe(0);
    expect(await daemon.stop()).toEqual({ code: 0, signal: null });
    const file = readJson(join(state, 'tool-catalog.json'));
    expect(file.version).toBe(1);
    expect(Object.keys(file.servers)).toHaveLength(5);
    const started = allPids().length;
    expect(started).toBe(5);

    // A new daemon: nothing runs. A client connects and lists.
    daemon = await ForegroundDaemon.start(socket, [], { env });
    const t0 = performance.now();
    const c = await stdioCaller('legacy', { env });
    const t1 = performance.now();
    const { tools } = await c.listTools();
    const t2 = performance.now();
    try {
      const names = tools.map((t) => t['name']);
      expect(names).toEqual(expect.arrayContaining(['one__echo', 'two__echo', 'three__echo', 'four__progress', 'five__sleep']));
      expect(allPids()).toHaveLength(started); // not one server was started to answer
      const catalog = await api(socket, 'GET', '/v1/catalog');
      expect(catalog.body.servers.map((s: any) => s.source)).toEqual(['catalog', 'catalog', 'catalog', 'catalog', 'catalog']);

      console.log(
        `[measure] 5 stopped servers: spawn serve + initialize ${Math.round(t1 - t0)} ms; initialize → first tools/list answer ${Math.round(t2 - t1)} ms`,
      );

      // The first call starts its server; its listing is then confirmed live.
      expect(textOf(await c.callTool('two__echo', { text: 'x' }))).toBe('x era=modern');
      expect(allPids()).toHaveLength(started + 1);
      await until(async () => (await api(socket, 'GET', '/v1/catalog')).body.servers[1].source === 'live', 10_000, 'the refreshed listing');
    } finally {
      await c.close();
      await daemon.stop();
    }
  }, 120_000);

  it('starts a server with no catalogue yet on the first listing', async () => {
    const dir = await tempDir('mcpx-serve-nocatalog-');
    dirs.push(dir);
    const state = join(dir.path, 'state');
    const env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: writeConfig(dir.path, { solo: { fixture: 'legacy-v1' } }) });
    const daemon = await ForegroundDaemon.start(join(state, 'daemon.sock'), [], { env });
    const c = await stdioCaller('modern', { env });
    try {
      // A client that sends a progress token hears of the server being started for its listing.
      const seen: Array<{ progress: number; total?: number; message?: string }> = [];
      const listed = await c.raw.listTools(undefined, { onprogress: (p: any) => seen.push(p) });
      expect(listed.tools.map((t: any) => t.name)).toEqual(['solo__echo', 'solo__whoami']);
      expect(seen).toEqual([
        { progress: 0, total: 1, message: 'starting solo' },
        { progress: 1, total: 1, message: 'solo: listed' },
      ]);
      expect(pids(readWireLog(join(dir.path, 'solo.wire.log')))).toHaveLength(1);
    } finally {
      await c.close();
      await daemon.stop();
    }
  }, 60_000);
});

describe("serve and the daemon's life", () => {
  it('starts the daemon; calls in flight when it is killed are isError results, not retried; the next call starts a fresh daemon', async () => {
    const dir = await tempDir('mcpx-serve-daemon-');
    dirs.push(dir);
    const state = join(dir.path, 'state');
    const config = writeConfig(dir.path, { tools: { fixture: 'serve-tools' } });
    const env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: config });
    const log = join(dir.path, 'tools.wire.log');
    const c = await stdioCaller('legacy', { env });
    try {
      expect(textOf(await c.callTool('tools__echo', { text: 'one' }))).toBe('one era=modern');
      const first = readJson(join(state, 'daemon.json')).pid as number;
      trackPid(first);
      const upstream = pids(readWireLog(log))[0]!;

      // Two calls in flight on the stream serve has to the daemon: both are told the daemon went away.
      const pending = [c.callTool('tools__sleep', { ms: 60_000 }), c.callTool('tools__sleep', { ms: 60_000 })];
      await until(() => methodsReceived(readWireLog(log), upstream).filter((m) => m === 'tools/call').length === 3, 20_000, 'the sleep calls upstream');
      process.kill(first, 'SIGKILL');
      for (const r of await Promise.all(pending)) {
        expect(r['isError']).toBe(true);
        expect(textOf(r)).toMatch(/^mcpx: tools: MCPX_DAEMON_UNAVAILABLE: the mcpx daemon went away .*not retried/);
      }

      expect(textOf(await c.callTool('tools__echo', { text: 'two' }))).toBe('two era=modern');
      const second = readJson(join(state, 'daemon.json')).pid as number;
      trackPid(second);
      expect(second).not.toBe(first);
      // The new daemon's upstream got the echo, and never the sleep again.
      const fresh = pids(readWireLog(log)).filter((p) => p !== upstream);
      expect(fresh).toHaveLength(1);
      const calls = received(readWireLog(log), fresh[0]).filter((e) => e.method === 'tools/call');
      expect(calls).toHaveLength(1);

      // A daemon that went away between two calls (none in flight) is replaced before the next call is sent.
      process.kill(second, 'SIGKILL');
      await until(() => !alive(second), 10_000, 'the second daemon gone');
      expect(textOf(await c.callTool('tools__echo', { text: 'three' }))).toBe('three era=modern');
      const third = readJson(join(state, 'daemon.json')).pid as number;
      trackPid(third);
      expect(third).not.toBe(second);
      // ... and its catalogue changes are followed: a server added to the config reaches the caller.
      let notes = 0;
      c.raw.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        notes++;
      });
      writeConfig(dir.path, { tools: { fixture: 'serve-tools' }, added: { fixture: 'legacy-v1' } }, {}, config);
      await until(() => notes > 0, 20_000, 'list_changed from the third daemon');
    } finally {
      await c.close();
    }
  }, 90_000);

  it('calls do not wait for one another: a slow call in flight does not hold up the next', async () => {
    const dir = await tempDir('mcpx-serve-concurrent-');
    dirs.push(dir);
    const state = join(dir.path, 'state');
    const env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: writeConfig(dir.path, { tools: { fixture: 'serve-tools' } }) });
    const log = join(dir.path, 'tools.wire.log');
    const c = await stdioCaller('modern', { env });
    try {
      expect(textOf(await c.callTool('tools__echo', { text: 'warm' }))).toBe('warm era=modern');
      trackPid(readJson(join(state, 'daemon.json')).pid as number);
      const ac = new AbortController();
      const slow = c.callTool('tools__sleep', { ms: 60_000 }, { signal: ac.signal });
      await until(() => methodsReceived(readWireLog(log)).filter((m) => m === 'tools/call').length === 2, 20_000, 'the sleep call upstream');
      const t0 = performance.now();
      expect(textOf(await c.callTool('tools__echo', { text: 'meanwhile' }))).toBe('meanwhile era=modern');
      expect(performance.now() - t0).toBeLessThan(10_000);
      ac.abort();
      await expect(slow).rejects.toThrow();
    } finally {
      await c.close();
    }
  }, 60_000);
});
