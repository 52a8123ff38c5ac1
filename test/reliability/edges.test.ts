/**
 * Issue 37 #19, the parts fixed here:
 * - `mcpx config` with 200,000 servers: its table printer overflowed the stack (`Math.max(...column)`),
 *   and once it did not, exiting at once cut its 14 MB on a pipe.
 * - an empty `daemon.lock` is a starting daemon's for one second (docs/contract.md), not two: a start
 *   takes it over once it is a second old (before: 10 × 50 ms of waiting ran out and the start failed).
 * - `/v1/status` uptime comes from a monotonic clock, so a wall clock set back cannot make it negative.
 * - `mcpx doctor` names a process an upstream left in a session of its own (`setsid`), which neither a
 *   stop nor the start-up sweep reaches.
 */
import { utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { acquireLock } from '../../src/daemon/state-dir.js';
import { uptimeSince } from '../../src/core/uptime.js';
import { api, cleanEnv, ForegroundDaemon, killAll, mcpx, until } from '../cli/helpers.js';
import { isGone } from '../server/helpers.js';
import { tempDir } from '../support/real.js';
import { FAULTY } from './helpers.js';

const removers: Array<() => Promise<void>> = [];
const strays = new Set<number>();
afterAll(async () => {
  await killAll();
  for (const pid of strays) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  for (const r of removers) await r().catch(() => undefined);
});

async function folder(prefix: string): Promise<string> {
  const dir = await tempDir(prefix);
  removers.push(dir.remove);
  return dir.path;
}

describe('issue 37 #19', () => {
  it('mcpx config prints 200,000 servers whole through a pipe (before: "Maximum call stack size exceeded")', async () => {
    const dir = await folder('mcpx-200k-');
    const servers: Record<string, unknown> = {};
    for (let i = 0; i < 200_000; i++) servers[`s${i}`] = { command: 'node', args: ['server.js'] };
    const file = join(dir, 'mcpx.json');
    writeFileSync(file, JSON.stringify({ mcpServers: servers }));
    const t0 = Date.now();
    // The helper reads stdout from a pipe, as `mcpx config | less` would.
    const r = await mcpx(['config', '--config', file], { env: cleanEnv(dir, { MCPX_STATE_DIR: join(dir, 'state') }), timeoutMs: 170_000 });
    console.log(`mcpx config, 200,000 servers: exit ${r.code} in ${Date.now() - t0} ms, ${r.stdout.length} bytes, ${r.stdout.split('\n').length - 1} lines`);
    expect(r.stderr).not.toContain('Maximum call stack');
    expect(r.code, r.stderr.slice(0, 500)).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines.filter((l) => /^s\d+\s+stdio\s/.test(l))).toHaveLength(200_000);
    expect(lines.some((l) => l.startsWith('s199999 '))).toBe(true);
  }, 180_000);

  it('an empty daemon.lock is stale after one second: one a second old is taken at once, a fresh one after its second', async () => {
    const dir = await folder('mcpx-empty-lock-');
    const socket = join(dir, 'daemon.sock');
    const lockFile = join(dir, 'daemon.lock');

    // Made 1.2 s ago and still empty: its writer could not write it. Before: waited for 2 s, gave up after 0.5 s.
    writeFileSync(lockFile, '', { mode: 0o600 });
    const old = (Date.now() - 1_200) / 1000;
    utimesSync(lockFile, old, old);
    let t0 = Date.now();
    const a = await acquireLock(dir, socket);
    const oldMs = Date.now() - t0;
    expect(a.cleaned).toContain(lockFile);
    await a.release();

    // Just made: a daemon may be writing it; it is taken once a second old.
    writeFileSync(lockFile, '', { mode: 0o600 });
    t0 = Date.now();
    const b = await acquireLock(dir, socket);
    const freshMs = Date.now() - t0;
    expect(b.cleaned).toContain(lockFile);
    await b.release();
    console.log(`empty daemon.lock 1.2 s old: taken in ${oldMs} ms; just made: taken in ${freshMs} ms`);
    expect(oldMs).toBeLessThan(500);
    expect(freshMs).toBeGreaterThanOrEqual(900);
    expect(freshMs).toBeLessThan(2_000);
  }, 30_000);

  it('uptime is measured on a monotonic clock: the wall clock set back an hour does not move it back', () => {
    let wall = 1_000_000_000_000;
    let mono = 5_000;
    const uptime = uptimeSince(wall - 2_000, { wall: () => wall, monotonic: () => mono });
    expect(uptime()).toBe(2_000);
    mono += 1_000;
    wall -= 3_600_000; // the clock goes back an hour while the daemon runs
    expect(uptime()).toBe(3_000);
    mono += 500;
    wall += 7_200_000; // and forward two
    expect(uptime()).toBe(3_500);
    // A start dated ahead of the wall clock (set back before the daemon started) counts from now, not below 0.
    expect(uptimeSince(wall + 60_000, { wall: () => wall, monotonic: () => mono })()).toBe(0);
  });

  it('/v1/status uptime through the daemon: non-negative and growing', async () => {
    const dir = await folder('mcpx-uptime-');
    const state = join(dir, 'state');
    const socket = join(state, 'daemon.sock');
    writeFileSync(join(dir, 'mcpx.json'), JSON.stringify({ mcpServers: {} }));
    const env = cleanEnv(dir, { MCPX_STATE_DIR: state, MCPX_CONFIG: join(dir, 'mcpx.json') });
    const d = await ForegroundDaemon.start(socket, [], { env });
    const first = (await api(socket, 'GET', '/v1/status')).body.uptimeMs;
    await new Promise((r) => setTimeout(r, 300));
    const second = (await api(socket, 'GET', '/v1/status')).body.uptimeMs;
    expect(first).toBeGreaterThanOrEqual(0);
    expect(second).toBeGreaterThanOrEqual(first + 250);
    await d.stop();
  }, 60_000);

  it.runIf(process.platform === 'linux')(
    "mcpx doctor names a setsid'd grandchild of an upstream that outlived its daemon's stop",
    async () => {
      const dir = await folder('mcpx-leftover-');
      const state = join(dir, 'state');
      const socket = join(state, 'daemon.sock');
      const marker = String(400_000 + Math.floor(Math.random() * 99_999));
      // The upstream starts `sleep` in a session of its own, then becomes the server.
      writeFileSync(
        join(dir, 'mcpx.json'),
        JSON.stringify({
          mcpServers: {
            spawner: {
              command: 'sh',
              args: ['-c', `setsid sleep ${marker} </dev/null >/dev/null 2>&1 & exec ${process.execPath} ${FAULTY} plain`],
              mcpx: { startTimeout: '20s' },
            },
          },
        }),
      );
      const env = cleanEnv(dir, { MCPX_STATE_DIR: state, MCPX_CONFIG: join(dir, 'mcpx.json') });
      const d = await ForegroundDaemon.start(socket, [], { env });
      // Nothing left over while the upstream runs (its child's parent is the upstream, its parent the daemon).
      const call = await mcpx(['call', 'spawner', 'echo', '{"text":"hi"}'], { env });
      expect(call.code, call.stderr).toBe(0);
      const sleepPid = await findPid(`sleep ${marker}`);
      strays.add(sleepPid);
      const during = JSON.parse((await mcpx(['doctor', '--json'], { env })).stdout);
      expect(during.leftovers.map((l: { pid: number }) => l.pid)).not.toContain(sleepPid);

      await d.stop();
      // The stop ended the upstream's group; the setsid'd sleep lives on (documented).
      expect(isGone(sleepPid)).toBe(false);
      const text = await mcpx(['doctor'], { env });
      const json = JSON.parse((await mcpx(['doctor', '--json'], { env })).stdout);
      console.log(text.stdout.split('\n').find((l) => l.startsWith('warn')));
      expect(text.stdout).toMatch(new RegExp(`^warn leftover processes +pid ${sleepPid} \\(sleep ${marker};`, 'm'));
      expect(text.stdout).toContain(`kill ${sleepPid}`);
      expect(json.leftovers).toContainEqual(expect.objectContaining({ pid: sleepPid, command: `sleep ${marker}` }));
      process.kill(sleepPid, 'SIGKILL');
      await until(() => isGone(sleepPid), 10_000, 'the sleep to end');
    },
    120_000,
  );
});

/** The pid of the one process whose command line is `command`. */
async function findPid(command: string): Promise<number> {
  let pid = 0;
  await until(
    async () => {
      const { readdirSync, readFileSync } = await import('node:fs');
      for (const n of readdirSync('/proc')) {
        if (!/^\d+$/.test(n)) continue;
        try {
          if (readFileSync(`/proc/${n}/cmdline`, 'utf8').split('\0').join(' ').trim() === command) pid = Number(n);
        } catch {
          // gone
        }
      }
      return pid !== 0;
    },
    10_000,
    command,
  );
  return pid;
}
