/**
 * Issue 10 #3: upstreams get a short allowlist of the daemon's environment (the official SDK's:
 * HOME, LOGNAME, PATH, SHELL, TERM, USER) plus their configured `env`; `upstream.inheritEnv` (config
 * key, MCPX_UPSTREAM_INHERIT_ENV, --upstream-inherit-env, /v1/settings) and a server's
 * `mcpx.inheritEnv` give them everything. Proven from each process's own /proc/<pid>/environ.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText, resolvePoolConfigs } from '../../src/config/config-file.js';
import { findSetting, Settings } from '../../src/config/settings.js';
import { poolFingerprint } from '../../src/pool/pool-registry.js';
import { RpcPeer } from '../../src/transports/rpc-peer.js';
import { SPAWN_TAG, SPAWN_TAG_VAR } from '../../src/transports/spawn-tag.js';
import { INHERITED_ENV_VARS, inheritedEnvironment, StdioChannel } from '../../src/transports/stdio.js';
import { eraCacheKey } from '../../src/upstream/process-key.js';
import { harness, textOf, type Harness } from '../server/helpers.js';
import { tempDir } from '../support/real.js';
import { environOf, faultyEntry, pidOf } from './helpers.js';

const CHILD = fileURLToPath(new URL('../transports/helpers/child.mjs', import.meta.url));
const LEAKY = 'AWS_SECRET_ACCESS_KEY';
const LEAKY_VALUE = 'shell-secret-Wq3v9Lr';

// The shell that started the daemon (here: the test process) holds a credential.
const before = process.env[LEAKY];
beforeAll(() => {
  process.env[LEAKY] = LEAKY_VALUE;
});
afterAll(() => {
  if (before === undefined) delete process.env[LEAKY];
  else process.env[LEAKY] = before;
});

describe('the stdio channel', () => {
  const open: StdioChannel[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.close()));
  });
  const envOf = async (opts: { env?: Record<string, string>; inheritEnv?: boolean }, name: string) => {
    const ch = new StdioChannel({ command: process.execPath, args: [CHILD, 'echo'], stopGraceMs: 500, ...opts });
    open.push(ch);
    const peer = new RpcPeer(ch);
    await ch.start();
    return (await peer.request('env', { name }, { timeoutMs: 10_000 })) as { value: string | null; hasPath: boolean };
  };

  it('by default passes only the allowlist and the configured env', async () => {
    expect(INHERITED_ENV_VARS).toEqual(['HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER']);
    expect(await envOf({}, LEAKY)).toEqual(expect.objectContaining({ value: null, hasPath: true }));
    expect((await envOf({ env: { [LEAKY]: 'configured' } }, LEAKY)).value).toBe('configured');
    expect((await envOf({}, SPAWN_TAG_VAR)).value).toBe(SPAWN_TAG);
  });

  it('leaves out shell functions, as the SDK does', () => {
    expect(inheritedEnvironment({ PATH: '/bin', TERM: '() { evil; }', OTHER: 'x' })).toEqual({ PATH: '/bin' });
    expect(inheritedEnvironment({ PATH: '/bin', OTHER: 'x' }, true)).toEqual({ PATH: '/bin', OTHER: 'x' });
  });

  it('inheritEnv: everything', async () => {
    expect((await envOf({ inheritEnv: true }, LEAKY)).value).toBe(LEAKY_VALUE);
    expect((await envOf({ inheritEnv: true, env: { [LEAKY]: 'configured' } }, LEAKY)).value).toBe('configured');
  });
});

describe('the setting and the per-server key', () => {
  it('upstream.inheritEnv is declared once: config key, env, flag, API', () => {
    const d = findSetting('upstream.inheritEnv');
    expect(d).toMatchObject({ env: 'MCPX_UPSTREAM_INHERIT_ENV', flag: '--upstream-inherit-env', key: ['upstream', 'inheritEnv'], default: false });
    expect(new Settings({ env: { MCPX_UPSTREAM_INHERIT_ENV: 'yes' } }).entry('upstream.inheritEnv')).toMatchObject({ value: true, source: 'env' });
    expect(new Settings({ flags: { '--upstream-inherit-env': 'true' } }).entry('upstream.inheritEnv')).toMatchObject({ value: true, source: 'flag' });
    expect(new Settings({ file: { upstream: { inheritEnv: true } }, filePath: '/x/mcpx.json' }).get('upstream.inheritEnv')).toBe(true);
  });

  it('mcpx.inheritEnv over the setting; stdio only; not in the era-cache key, but in the pool fingerprint', () => {
    const parsed = parseConfigText(
      JSON.stringify({
        mcpServers: {
          a: { command: 'node' },
          b: { command: 'node', mcpx: { inheritEnv: true } },
          c: { command: 'node', mcpx: { inheritEnv: false } },
          d: { url: 'http://127.0.0.1:9/mcp', mcpx: { inheritEnv: true } },
          e: { command: 'node', mcpx: { inheritEnv: 'sometimes' } },
        },
      }),
      '/x/mcpx.json',
    );
    expect(parsed.errors.map((e) => e.key)).toEqual(['mcpServers.e.mcpx.inheritEnv']);
    expect(parsed.warnings.map((e) => e.key)).toContain('mcpServers.d.mcpx.inheritEnv');
    const inherit = (on: boolean) =>
      Object.fromEntries(
        resolvePoolConfigs(parsed, new Settings({ env: on ? { MCPX_UPSTREAM_INHERIT_ENV: '1' } : {} })).map((c) => [
          c.name,
          (c.definition as { inheritEnv?: boolean }).inheritEnv ?? false,
        ]),
      );
    expect(inherit(false)).toEqual({ a: false, b: true, c: false, d: false });
    expect(inherit(true)).toEqual({ a: true, b: true, c: false, d: false });
    const plain = { command: 'node', args: ['s.mjs'] };
    expect(eraCacheKey({ ...plain, inheritEnv: true })).toBe(eraCacheKey(plain));
    const cfg = {
      name: 'x',
      preference: 'prefer-discover' as const,
      limits: { scope: 'global' as const, max: 1, sharing: 'shared' as const, idleTimeoutMs: 1000 },
      probeTimeoutMs: 1000,
    };
    expect(poolFingerprint({ ...cfg, definition: { ...plain, inheritEnv: true } })).not.toBe(poolFingerprint({ ...cfg, definition: plain }));
  });
});

describe('end to end: the environ of each upstream process', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let h: Harness;
  let h2: Harness | undefined;
  beforeAll(async () => {
    dir = await tempDir('mcpx-env-');
  });
  afterAll(async () => {
    await h?.close();
    await h2?.close();
    await dir?.remove();
  });

  const whoamiPid = async (hh: Harness, server: string) => {
    const r = await hh.app.inject({ method: 'POST', url: '/v1/call', payload: { server, tool: 'whoami', args: {} } });
    return pidOf(textOf(r.json()));
  };

  it('default off: no daemon secrets; a server opting in gets them; the configured env always', async () => {
    h = await harness(dir.path, {
      plain: faultyEntry('plain', { env: { CONFIGURED: 'yes' } }),
      opted: faultyEntry('plain', { mcpx: { inheritEnv: true, probeTimeout: '10s', startTimeout: '20s' } }),
    });
    const plain = environOf(await whoamiPid(h, 'plain'));
    expect(plain[LEAKY]).toBeUndefined();
    expect(plain['CONFIGURED']).toBe('yes');
    expect(plain['PATH']).toBe(process.env['PATH']);
    expect(Object.keys(plain).sort()).toEqual([...INHERITED_ENV_VARS.filter((k) => process.env[k] !== undefined), 'CONFIGURED', SPAWN_TAG_VAR].sort());
    expect(environOf(await whoamiPid(h, 'opted'))[LEAKY]).toBe(LEAKY_VALUE);
    const setting = (await h.app.inject({ method: 'GET', url: '/v1/settings/upstream.inheritEnv' })).json();
    expect(setting).toMatchObject({ path: 'upstream.inheritEnv', value: false, source: 'default', env: 'MCPX_UPSTREAM_INHERIT_ENV' });
  });

  it('MCPX_UPSTREAM_INHERIT_ENV=true: every server inherits, unless its mcpx block says false', async () => {
    const sub = await tempDir('mcpx-env2-');
    try {
      h2 = await harness(
        sub.path,
        {
          plain: faultyEntry('plain'),
          optedOut: faultyEntry('plain', { mcpx: { inheritEnv: false, probeTimeout: '10s', startTimeout: '20s' } }),
        },
        { sources: { env: { MCPX_UPSTREAM_INHERIT_ENV: 'true' } } },
      );
      expect(environOf(await whoamiPid(h2, 'plain'))[LEAKY]).toBe(LEAKY_VALUE);
      expect(environOf(await whoamiPid(h2, 'optedOut'))[LEAKY]).toBeUndefined();
    } finally {
      await h2?.close();
      h2 = undefined;
      await sub.remove();
    }
  });
});
