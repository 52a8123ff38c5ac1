/**
 * End to end: every alias of upstream.protocol through the config file, the environment
 * (MCPX_UPSTREAM_PROTOCOL), the flag (--upstream-protocol) and PUT (`mcpx settings set`), reported by
 * its canonical name in `mcpx settings --json` and `GET /v1/protocol`; bad values refused in each place
 * with the canonical values listed.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CANONICAL_PREFERENCES, PREFERENCE_ALIASES } from '../../src/machines/preference.js';
import { writeConfig } from '../server/helpers.js';
import { tempDir } from '../support/real.js';
import { api, cleanEnv, ForegroundDaemon, killAll, mcpx, mcpxJson } from './helpers.js';

/** Every alias, plus canonical names in odd case and with surrounding spaces. */
const VALUES: Array<[string, string]> = [
  ...Object.entries(PREFERENCE_ALIASES),
  ...CANONICAL_PREFERENCES.map((c): [string, string] => [`  ${c.toUpperCase()} `, c]),
];
const ALIASES = Object.entries(PREFERENCE_ALIASES);

let dir: { path: string; remove: () => Promise<void> };
beforeAll(async () => {
  dir = await tempDir('mcpx-e2e-settings-');
});
afterAll(async () => {
  await killAll();
  await dir?.remove();
});

async function reported(socket: string): Promise<{ setting: any; row: any }> {
  const setting = (await api(socket, 'GET', '/v1/settings/upstream.protocol')).body;
  const row = (await api(socket, 'GET', '/v1/protocol')).body.servers.find((s: any) => s.server === 'plain');
  return { setting, row };
}

let seq = 0;
/** A daemon over a config with one server (never started: the preference is reported all the same). */
async function daemonWith(opts: { args?: string[]; env?: Record<string, string>; extra?: Record<string, unknown> }) {
  const home = join(dir.path, `d${++seq}`);
  const state = join(home, 'state');
  const socket = join(state, 'daemon.sock');
  const { mkdir } = await import('node:fs/promises');
  await mkdir(home, { recursive: true });
  const config = writeConfig(home, { plain: { fixture: 'dual-v2' } }, opts.extra ?? {});
  const env = cleanEnv(home, { MCPX_STATE_DIR: state, MCPX_CONFIG: config, ...opts.env });
  const daemon = await ForegroundDaemon.start(socket, opts.args ?? [], { env });
  return { daemon, socket, env, config, home };
}

describe.concurrent('upstream.protocol aliases, by source', () => {
  it('config file (reloaded live): every alias reported by its canonical name', async () => {
    const d = await daemonWith({});
    try {
      for (const [value, canonical] of VALUES) {
        writeConfig(d.home, { plain: { fixture: 'dual-v2' } }, { upstream: { protocol: value } });
        const r = await api(d.socket, 'POST', '/v1/reload');
        expect(r.body.ok, value).toBe(true);
        const { setting, row } = await reported(d.socket);
        expect(setting, value).toMatchObject({ value: canonical, display: canonical, source: 'file' });
        expect(row.preference, value).toBe(canonical);
      }
      // and `mcpx settings --json` prints exactly the API's body
      const cli = await mcpxJson(['settings'], { env: d.env });
      expect(cli).toEqual((await api(d.socket, 'GET', '/v1/settings')).body);
      const one = await mcpxJson(['settings', 'get', 'upstream.protocol'], { env: d.env });
      expect(one).toEqual((await api(d.socket, 'GET', '/v1/settings/upstream.protocol')).body);
      const protocol = await mcpxJson(['protocol'], { env: d.env });
      expect(protocol).toEqual((await api(d.socket, 'GET', '/v1/protocol')).body);
    } finally {
      await d.daemon.stop();
    }
  });

  it('PUT (mcpx settings set): every alias reported by its canonical name; a bad one lists the allowed values', async () => {
    const d = await daemonWith({});
    try {
      for (const [value, canonical] of VALUES) {
        const r = await api(d.socket, 'PUT', '/v1/settings/upstream.protocol', { value });
        expect(r.status, value).toBe(200);
        expect(r.body).toMatchObject({ setting: { value: canonical, source: 'runtime' }, appliesTo: 'sessions started from now on' });
        const { setting, row } = await reported(d.socket);
        expect(setting.value).toBe(canonical);
        expect(row.preference).toBe(canonical);
      }
      const set = await mcpx(['settings', 'set', 'upstream.protocol', 'Prefer-Legacy'], { env: d.env });
      expect(set.code).toBe(0);
      expect(set.stdout).toBe(
        'upstream.protocol = prefer-initialize  (runtime; applies to sessions started from now on)\n' +
          'note: kept until the daemon stops, not across a restart; to keep it, put {"upstream":{"protocol":"prefer-initialize"}} in the config file, or set MCPX_UPSTREAM_PROTOCOL\n',
      );
      const json = await mcpxJson(['settings'], { env: d.env });
      expect(json.settings.find((s: any) => s.path === 'upstream.protocol')).toMatchObject({ value: 'prefer-initialize', source: 'runtime' });
      const bad = await mcpx(['settings', 'set', 'upstream.protocol', 'newest'], { env: d.env });
      expect(bad.code).toBe(1);
      expect(bad.stderr).toMatch(/^mcpx: .*"newest".*prefer-discover, prefer-initialize, force-discover, force-initialize, follow\n$/);
      const unset = await mcpx(['settings', 'unset', 'upstream.protocol'], { env: d.env });
      expect(unset.stdout).toContain('upstream.protocol = prefer-discover  (default');
    } finally {
      await d.daemon.stop();
    }
  });

  it('environment (MCPX_UPSTREAM_PROTOCOL) and flag (--upstream-protocol): every alias', async () => {
    const jobs = ALIASES.flatMap(([value, canonical]) => [
      { how: 'env', value, canonical, opts: { env: { MCPX_UPSTREAM_PROTOCOL: value } } },
      { how: 'flag', value, canonical, opts: { args: ['--upstream-protocol', value] } },
    ]);
    let next = 0;
    await Promise.all(
      Array.from({ length: 3 }, async () => {
        while (next < jobs.length) {
          const job = jobs[next++]!;
          const d = await daemonWith(job.opts);
          try {
            const { setting, row } = await reported(d.socket);
            expect(setting, `${job.how} ${job.value}`).toMatchObject({
              value: job.canonical,
              source: job.how,
              from: job.how === 'env' ? 'MCPX_UPSTREAM_PROTOCOL' : '--upstream-protocol',
            });
            expect(row.preference, `${job.how} ${job.value}`).toBe(job.canonical);
          } finally {
            await d.daemon.stop();
          }
        }
      }),
    );
  }, 300_000); // about 30 daemons, three at a time: room for a busy machine (95–102 s beside a second suite)

  it('bad values in the environment, a flag or the file stop the daemon with a message listing the canonical values', async () => {
    const home = join(dir.path, 'bad');
    const { mkdir } = await import('node:fs/promises');
    await mkdir(home, { recursive: true });
    const good = writeConfig(home, { plain: { fixture: 'dual-v2' } });
    const env = cleanEnv(home, { MCPX_STATE_DIR: join(home, 'state') });
    const allowed = CANONICAL_PREFERENCES.join(', ');
    const fromEnv = await mcpx(['daemon', '--config', good], { env: { ...env, MCPX_UPSTREAM_PROTOCOL: 'sideways' } });
    expect(fromEnv.code).toBe(1);
    expect(fromEnv.stderr).toMatch(/^mcpx: environment variable MCPX_UPSTREAM_PROTOCOL: "sideways" .*/);
    expect(fromEnv.stderr).toContain(allowed);
    const fromFlag = await mcpx(['daemon', '--config', good, '--upstream-protocol', 'sideways'], { env });
    expect(fromFlag.code).toBe(1);
    expect(fromFlag.stderr).toMatch(/^mcpx: flag --upstream-protocol: "sideways" /);
    const badFile = writeConfig(home, { plain: { fixture: 'dual-v2', protocol: 'sideways' } }, {}, join(home, 'bad.json'));
    const fromFile = await mcpx(['config', '--config', badFile], { env });
    expect(fromFile.code).toBe(1);
    expect(fromFile.stderr).toContain(`config ${badFile}: mcpServers.plain.protocol: "sideways"`);
    expect(fromFile.stderr).toContain(allowed);
    const good2 = await mcpxJson(['config', '--config', good], { env: { ...env, MCPX_UPSTREAM_PROTOCOL: 'Force-Legacy' } });
    expect(good2.servers[0]).toMatchObject({ server: 'plain', preference: 'force-initialize', preferenceSource: 'setting' });
  });
});
