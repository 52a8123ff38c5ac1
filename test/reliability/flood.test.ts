/**
 * Issue 17, through the built binary: an upstream that says `notifications/tools/list_changed` in a loop
 * (raw.mjs flood-list-changed, a bounded flood that stops itself after FLOOD_MS). One catalogue refresh
 * is in flight per server, later notices fold into one follow-up, and a server that keeps it up is slowed
 * down and the daemon log says so. Measured: the daemon's RSS (/proc/<pid>/status) before and after, and a
 * healthy server's call latency during the flood.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeConfig } from '../server/helpers.js';
import { tempDir } from '../support/real.js';
import { api, cleanEnv, ForegroundDaemon, killAll, until } from '../cli/helpers.js';

const FLOOD_MS = 4_000;

let dir: { path: string; remove: () => Promise<void> };
let socket: string;
let daemon: ForegroundDaemon;

beforeAll(async () => {
  dir = await tempDir('mcpx-flood-');
  const state = join(dir.path, 'state');
  socket = join(state, 'daemon.sock');
  const config = writeConfig(dir.path, {
    healthy: { fixture: 'dual-v2' },
    flood: { fixture: 'raw', mode: 'flood-list-changed', env: { FLOOD_MS: String(FLOOD_MS) } },
    // Floods for up to 40 s; the session must fail long before (its call's timeout is 20 s).
    roots: { fixture: 'raw', mode: 'flood-roots', env: { FLOOD_MS: '40000' } },
  });
  daemon = await ForegroundDaemon.start(socket, [], { env: cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: config }) });
});
afterAll(async () => {
  await killAll();
  await dir?.remove();
});

const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${daemon.pid}/status`, 'utf8'))![1]);
const call = (server: string, tool: string, args: Record<string, unknown> = {}) => api(socket, 'POST', '/v1/call', { server, tool, args, timeoutMs: 20_000 });
const textOf = (r: { body: any }): string => r.body.result.content[0].text;

describe('#17 an upstream that says list_changed in a loop', () => {
  it('gets one refresh at a time, is slowed down and said so; a healthy server stays fast', async () => {
    expect(textOf(await call('healthy', 'echo', { text: 'warm' }))).toBe('warm era=modern');
    const rssBefore = kb('VmRSS');

    // The first call starts the flooding server; its flood begins with the handshake.
    const started = Date.now();
    expect(textOf(await call('flood', 'echo', { text: 'go' }))).toBe('go era=legacy');
    const latencies: number[] = [];
    while (Date.now() - started < FLOOD_MS - 500) {
      const t = Date.now();
      expect(textOf(await call('healthy', 'echo', { text: 'during' }))).toBe('during era=modern');
      latencies.push(Date.now() - t);
    }
    let stats = { sent: 0, done: false, toolsLists: 0 };
    await until(
      async () => {
        stats = JSON.parse(textOf(await call('flood', 'flood')));
        return stats.done;
      },
      30_000,
      'the end of the flood',
    );
    const rssAfter = kb('VmRSS');
    const figures = {
      notices: stats.sent,
      toolsLists: stats.toolsLists,
      rssBeforeMB: rssBefore / 1024,
      rssAfterMB: rssAfter / 1024,
      peakMB: kb('VmHWM') / 1024,
      healthyCalls: latencies.length,
      healthyMaxMs: Math.max(...latencies),
      healthyMedianMs: latencies.sort((a, b) => a - b)[Math.floor(latencies.length / 2)],
    };
    console.log(`[flood] ${JSON.stringify(figures)}`);

    expect(stats.sent).toBeGreaterThan(10_000);
    // Refreshes: the start's, up to REFRESH_BURST more, then at most one per second (plus one follow-up).
    expect(stats.toolsLists).toBeLessThanOrEqual(1 + 5 + Math.ceil(FLOOD_MS / 1000) + 2);
    expect(daemon.stdout).toContain('flood keeps saying its lists changed');
    expect(figures.healthyMaxMs).toBeLessThan(2_000);
    expect(rssAfter - rssBefore).toBeLessThan(100 * 1024);
  }, 60_000);
});

describe('#17 an upstream that sends server-to-client requests without reading the answers', () => {
  it('fails that session (MCPX_BAD_UPSTREAM naming the limit), not the daemon; the healthy server goes on', async () => {
    const rssBefore = kb('VmRSS');
    // The call that starts it is read before the flood; the next one waits behind the unread answers.
    expect(textOf(await call('roots', 'echo', { text: 'go' }))).toBe('go era=legacy');
    const started = Date.now();
    const r = await call('roots', 'echo', { text: 'stuck' });
    const ms = Date.now() - started;
    const rssAfter = kb('VmRSS');
    console.log(
      `[roots-flood] ${JSON.stringify({ status: r.status, code: r.body.error?.code, ms, rssBeforeMB: rssBefore / 1024, rssAfterMB: rssAfter / 1024, peakMB: kb('VmHWM') / 1024 })}`,
    );
    expect(r.body.error?.code, JSON.stringify(r.body).slice(0, 300)).toBe('MCPX_BAD_UPSTREAM');
    expect(r.body.error.message).toContain('does not read what mcpx sends it');
    expect(r.body.error.message).toContain('64 MiB (67108864 bytes)');
    expect(textOf(await call('healthy', 'echo', { text: 'still' }))).toBe('still era=modern');
  }, 60_000);
});
