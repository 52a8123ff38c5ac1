/**
 * Issue 36, item 6: commands that say what they do, through the built binary. `mcpx status` reports
 * whether a daemon runs and starts none unless `--start`; `stop` takes `--json`; under `--json` an error
 * is JSON on stdout too; `--timeout` names the server and tool that got no answer; `mcpx settings set`
 * says a runtime value does not outlive a restart; `mcpx logs [-f]` shows the auto-started daemon's log.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeConfig } from '../server/helpers.js';
import { tempDir } from '../support/real.js';
import { cleanEnv, killAll, MCPX, mcpx, trackPid, until } from './helpers.js';

const WAIT_MS = 60_000;

describe('commands that say what they do (issue 36)', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let env: NodeJS.ProcessEnv;
  let state: string;

  beforeAll(async () => {
    dir = await tempDir('mcpx-say-');
    state = join(dir.path, 'state');
    const config = writeConfig(dir.path, { tools: { fixture: 'serve-tools' } });
    env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: config, MCPX_DAEMON_START_TIMEOUT: String(WAIT_MS) });
  }, WAIT_MS);
  afterAll(async () => {
    await mcpx(['stop'], { env }).catch(() => undefined);
    await killAll();
    await dir?.remove();
  });

  it('status with no daemon says so, starts none, and --json says running:false; stop --json likewise', async () => {
    const r = await mcpx(['status'], { env });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^no daemon is running \(state folder .*\); mcpx status --start starts one/);
    const j = await mcpx(['status', '--json'], { env });
    expect(j.code).toBe(0);
    expect(JSON.parse(j.stdout)).toEqual({ ok: true, running: false, daemon: { stateDir: state, socket: join(state, 'daemon.sock') } });
    const s = await mcpx(['stop', '--json'], { env });
    expect(s.code).toBe(0);
    expect(JSON.parse(s.stdout)).toMatchObject({ ok: true, running: false, stopped: false });
    expect(existsSync(join(state, 'daemon.sock'))).toBe(false);
    expect(existsSync(join(state, 'daemon.json'))).toBe(false);
  });

  it('status --start starts one and says it did; the next status does not', async () => {
    const r = await mcpx(['status', '--start'], { env, timeoutMs: WAIT_MS });
    trackPid(JSON.parse(readFileSync(join(state, 'daemon.json'), 'utf8')).pid);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^no daemon was running: started one \(pid \d+\)\nmcpx \S+, daemon pid \d+, up /);
    const again = await mcpx(['status'], { env });
    expect(again.stdout).toMatch(/^mcpx \S+, daemon pid \d+, up /);
  });

  it('under --json an error is JSON on stdout too: an unknown server, an unknown option', async () => {
    const r = await mcpx(['call', 'memry', 'x', '--json'], { env });
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual({ ok: false, error: { code: 'MCPX_UNKNOWN_SERVER', message: expect.stringContaining('"memry"') } });
    expect(r.stderr).toMatch(/^mcpx: no server named "memry"/);
    const u = await mcpx(['servers', '--json', '--bogus'], { env });
    expect(u.code).toBe(2);
    expect(JSON.parse(u.stdout)).toEqual({ ok: false, error: { code: 'MCPX_USAGE', message: "unknown option '--bogus'" } });
    // A failed call's own outcome is printed once, not followed by a second JSON document.
    const t = await mcpx(['call', 'tools', 'nope', '--json'], { env, timeoutMs: WAIT_MS });
    expect(t.code).toBe(1);
    expect(JSON.parse(t.stdout)).toMatchObject({ ok: false });
  });

  it('--timeout names the server and the tool that got no answer', async () => {
    expect((await mcpx(['call', 'tools', 'sleep', '{"ms":0}'], { env, timeoutMs: WAIT_MS })).stdout).toBe('slept 0\n'); // started
    const r = await mcpx(['call', 'tools', 'sleep', '{"ms":30000}', '--timeout', '1s'], { env, timeoutMs: WAIT_MS });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`mcpx: tools: tool "sleep" got no answer within 1000 ms (the call's timeout)\n`);
  });

  it('settings set says whether the value outlives a restart', async () => {
    const r = await mcpx(['settings', 'set', 'upstream.probeTimeout', '3s'], { env });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('upstream.probeTimeout = 3s  (runtime;');
    expect(r.stdout).toContain(
      'note: kept until the daemon stops, not across a restart; to keep it, put {"upstream":{"probeTimeout":3000}} in the config file, or set MCPX_UPSTREAM_PROBE_TIMEOUT',
    );
    const j = await mcpx(['settings', 'unset', 'upstream.probeTimeout', '--json'], { env });
    expect(JSON.parse(j.stdout)).toMatchObject({ outlivesRestart: true });
    const k = await mcpx(['settings', 'set', 'daemon.port', '0', '--json'], { env });
    expect(JSON.parse(k.stdout)).toMatchObject({ appliesTo: 'the next daemon start', outlivesRestart: false });
  });

  it('mcpx logs shows the auto-started daemon log readably; --json as written; -f follows until Ctrl-C', async () => {
    const r = await mcpx(['logs', '-n', 'all'], { env });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z INFO {2}mcpx daemon ready {2}.*servers=\["tools"\]/m);
    const j = await mcpx(['logs', '--json', '-n', '2'], { env });
    const lines = j.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    for (const l of lines) expect(JSON.parse(l)).toHaveProperty('level');

    const child = spawn(process.execPath, [MCPX, 'logs', '-f', '-n', '0'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let seen = '';
    child.stdout.on('data', (c: Buffer) => (seen += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      // Something the daemon logs after the follow began: a setting change.
      await until(
        async () => {
          await mcpx(['settings', 'set', 'log.level', 'info'], { env });
          return seen.includes('setting changed  component=daemon setting=log.level');
        },
        WAIT_MS,
        'the appended line',
      );
      expect(seen).not.toContain('mcpx daemon ready'); // -n 0: nothing from before
      child.kill('SIGINT');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
