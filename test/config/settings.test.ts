import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LOGIN_UNWATCHED_MS } from '../../src/auth/auth-manager.js';
import { McpxError, SettingValueError, UnknownSettingError } from '../../src/errors.js';
import { CANONICAL_PREFERENCES, PREFERENCE_ALIASES, type Preference } from '../../src/machines/preference.js';
import {
  SETTINGS,
  SETTING_PATHS,
  Settings,
  envNameFor,
  findSetting,
  flagNameFor,
  loopbackHost,
  parseSettingValue,
  protocolCodec,
  settingForFlag,
  type SettingChange,
  type SettingEntry,
} from '../../src/config/settings.js';
import { packageRoot } from '../../src/package-info.js';
import { FIRST_REQUEST_TIMEOUT_MS, REQUEST_RECEIVE_TIMEOUT_MS } from '../../src/api/connection-limit.js';

/** A fixed environment, so the machine running the tests cannot leak in. */
const HOME = '/users/tester';
const BASE_ENV: NodeJS.ProcessEnv = { HOME };
const make = (sources: ConstructorParameters<typeof Settings>[0] = {}): Settings => new Settings({ env: BASE_ENV, ...sources });

function caught(fn: () => unknown): McpxError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(McpxError);
    return err as McpxError;
  }
  throw new Error('expected a throw');
}

const PROTOCOL_LIST = 'use one of: prefer-discover, prefer-initialize, force-discover, force-initialize, follow';

/** the README: the names each setting derives. Written out so a change to the derivation shows here. */
const NAMES: Record<string, { env: string; flag: string; envAliases?: string[]; flagAliases?: string[] }> = {
  'upstream.protocol': { env: 'MCPX_UPSTREAM_PROTOCOL', flag: '--upstream-protocol' },
  'upstream.eraCache': { env: 'MCPX_UPSTREAM_ERA_CACHE', flag: '--upstream-era-cache' },
  'upstream.eraCacheMaxAge': { env: 'MCPX_UPSTREAM_ERA_CACHE_MAX_AGE', flag: '--upstream-era-cache-max-age' },
  'upstream.probeTimeout': { env: 'MCPX_UPSTREAM_PROBE_TIMEOUT', flag: '--upstream-probe-timeout' },
  'upstream.startTimeout': { env: 'MCPX_UPSTREAM_START_TIMEOUT', flag: '--upstream-start-timeout' },
  'upstream.requestTimeout': { env: 'MCPX_UPSTREAM_REQUEST_TIMEOUT', flag: '--upstream-request-timeout' },
  'upstream.inheritEnv': { env: 'MCPX_UPSTREAM_INHERIT_ENV', flag: '--upstream-inherit-env' },
  'pool.scope': { env: 'MCPX_POOL_SCOPE', flag: '--pool-scope' },
  'pool.max': { env: 'MCPX_POOL_MAX', flag: '--pool-max' },
  'pool.sharing': { env: 'MCPX_POOL_SHARING', flag: '--pool-sharing' },
  'pool.idleTimeout': { env: 'MCPX_POOL_IDLE_TIMEOUT', flag: '--pool-idle-timeout' },
  'serve.questionTtl': { env: 'MCPX_SERVE_QUESTION_TTL', flag: '--serve-question-ttl' },
  'serve.maxSessions': { env: 'MCPX_SERVE_MAX_SESSIONS', flag: '--serve-max-sessions' },
  'serve.sessionIdleTimeout': { env: 'MCPX_SERVE_SESSION_IDLE_TIMEOUT', flag: '--serve-session-idle-timeout' },
  'serve.maxAsks': { env: 'MCPX_SERVE_MAX_ASKS', flag: '--serve-max-asks' },
  'serve.maxAsksPerCaller': { env: 'MCPX_SERVE_MAX_ASKS_PER_CALLER', flag: '--serve-max-asks-per-caller' },
  'serve.maxInFlight': { env: 'MCPX_SERVE_MAX_IN_FLIGHT', flag: '--serve-max-in-flight' },
  'catalog.pinTools': { env: 'MCPX_CATALOG_PIN_TOOLS', flag: '--catalog-pin-tools' },
  'paths.state': { env: 'MCPX_PATHS_STATE', flag: '--paths-state', envAliases: ['MCPX_STATE_DIR'], flagAliases: ['--state-dir'] },
  'daemon.socket': { env: 'MCPX_DAEMON_SOCKET', flag: '--daemon-socket' },
  'daemon.port': { env: 'MCPX_DAEMON_PORT', flag: '--daemon-port' },
  'daemon.host': { env: 'MCPX_DAEMON_HOST', flag: '--daemon-host' },
  'daemon.auth': { env: 'MCPX_DAEMON_AUTH', flag: '--daemon-auth' },
  'daemon.maxConnections': { env: 'MCPX_DAEMON_MAX_CONNECTIONS', flag: '--daemon-max-connections' },
  'daemon.configIdleTimeout': { env: 'MCPX_DAEMON_CONFIG_IDLE_TIMEOUT', flag: '--daemon-config-idle-timeout' },
  'daemon.firstRequestTimeout': { env: 'MCPX_DAEMON_FIRST_REQUEST_TIMEOUT', flag: '--daemon-first-request-timeout' },
  'daemon.requestReceiveTimeout': { env: 'MCPX_DAEMON_REQUEST_RECEIVE_TIMEOUT', flag: '--daemon-request-receive-timeout' },
  'oauth.requestTimeout': { env: 'MCPX_OAUTH_REQUEST_TIMEOUT', flag: '--oauth-request-timeout' },
  'oauth.maxResponseBytes': { env: 'MCPX_OAUTH_MAX_RESPONSE_BYTES', flag: '--oauth-max-response-bytes' },
  'oauth.refreshBackoffMax': { env: 'MCPX_OAUTH_REFRESH_BACKOFF_MAX', flag: '--oauth-refresh-backoff-max' },
  'oauth.loginUnwatchedTimeout': { env: 'MCPX_OAUTH_LOGIN_UNWATCHED_TIMEOUT', flag: '--oauth-login-unwatched-timeout' },
  'daemon.maxUnreadBytes': { env: 'MCPX_DAEMON_MAX_UNREAD_BYTES', flag: '--daemon-max-unread-bytes' },
  'daemon.unreadTimeout': { env: 'MCPX_DAEMON_UNREAD_TIMEOUT', flag: '--daemon-unread-timeout' },
  'log.level': { env: 'MCPX_LOG_LEVEL', flag: '--log-level' },
};

/** A text value that is valid for each setting and differs from its default, and what it resolves to. */
const SAMPLE: Record<string, [string, unknown]> = {
  'upstream.protocol': ['follow', 'follow'],
  'upstream.eraCache': ['off', false],
  'upstream.eraCacheMaxAge': ['2d', 172_800_000],
  'upstream.probeTimeout': ['750ms', 750],
  'upstream.startTimeout': ['3m', 180_000],
  'upstream.requestTimeout': ['45s', 45_000],
  'upstream.inheritEnv': ['yes', true],
  'pool.scope': ['Session', 'session'],
  'pool.max': ['9', 9],
  'pool.sharing': ['exclusive', 'exclusive'],
  'pool.idleTimeout': ['1m30s', 90_000],
  'serve.questionTtl': ['2m', 120_000],
  'serve.maxSessions': ['16', 16],
  'serve.sessionIdleTimeout': ['10m', 600_000],
  'serve.maxAsks': ['64', 64],
  'serve.maxAsksPerCaller': ['8', 8],
  'serve.maxInFlight': ['16', 16],
  'catalog.pinTools': ['yes', true],
  'paths.state': ['/srv/mcpx-state', '/srv/mcpx-state'],
  'daemon.socket': ['/srv/mcpx.sock', '/srv/mcpx.sock'],
  'daemon.port': ['8377', 8377],
  'daemon.host': ['::1', '::1'],
  'daemon.auth': ['none', 'none'],
  'daemon.maxConnections': ['64', 64],
  'daemon.configIdleTimeout': ['2m', 120_000],
  'daemon.firstRequestTimeout': ['3s', 3_000],
  'daemon.requestReceiveTimeout': ['1m', 60_000],
  'oauth.requestTimeout': ['2s', 2_000],
  'oauth.maxResponseBytes': ['65536', 65_536],
  'oauth.refreshBackoffMax': ['1m', 60_000],
  'oauth.loginUnwatchedTimeout': ['5s', 5_000],
  'daemon.maxUnreadBytes': ['1048576', 1_048_576],
  'daemon.unreadTimeout': ['90s', 90_000],
  'log.level': ['DEBUG', 'debug'],
};

describe('declarations', () => {
  it('cover every setting the README and the brief name, each once', () => {
    expect([...SETTING_PATHS].sort()).toEqual(Object.keys(NAMES).sort());
    expect(new Set(SETTING_PATHS).size).toBe(SETTING_PATHS.length);
  });

  for (const [path, names] of Object.entries(NAMES)) {
    it(`${path}: ${names.env}, ${names.flag}, config key ${path}`, () => {
      const d = findSetting(path);
      expect(d.env).toBe(names.env);
      expect(envNameFor(path)).toBe(names.env);
      expect(d.flag).toBe(names.flag);
      expect(flagNameFor(path)).toBe(names.flag);
      expect([...d.envAliases]).toEqual(names.envAliases ?? []);
      expect([...d.flagAliases]).toEqual(names.flagAliases ?? []);
      expect([...d.key]).toEqual(path.split('.'));
      for (const f of [names.flag, ...(names.flagAliases ?? [])]) expect(settingForFlag(f).path).toBe(path);
    });

    it(`${path} is read from ${names.env} and ${names.flag}`, () => {
      const [text, value] = SAMPLE[path] as [string, unknown];
      const viaEnv = make({ env: { ...BASE_ENV, [names.env]: text } }).entry(path);
      expect(viaEnv).toMatchObject({ value, source: 'env', from: names.env });
      const viaFlag = make({ flags: { [names.flag]: text } }).entry(path);
      expect(viaFlag).toMatchObject({ value, source: 'flag', from: names.flag });
    });
  }

  it('derivation rules: MCPX_ + path upper-cased, dots to _, camelCase split; flags the same in kebab case', () => {
    expect(envNameFor('a.bigCamelCase.x2Y')).toBe('MCPX_A_BIG_CAMEL_CASE_X2_Y');
    expect(flagNameFor('a.bigCamelCase.x2Y')).toBe('--a-big-camel-case-x2-y');
  });

  it('flags are found in every spelling a CLI parser hands over', () => {
    for (const spelling of ['--upstream-era-cache', 'upstream-era-cache', 'upstreamEraCache', 'upstream.eraCache']) {
      expect(settingForFlag(spelling).path).toBe('upstream.eraCache');
    }
    expect(settingForFlag('stateDir').path).toBe('paths.state');
  });

  it('defaults are those of the README', () => {
    const s = make();
    expect(s.snapshot()).toEqual({
      'upstream.protocol': 'prefer-discover',
      'upstream.eraCache': true,
      'upstream.eraCacheMaxAge': 604_800_000,
      'upstream.probeTimeout': 2_000,
      'upstream.startTimeout': 120_000,
      'upstream.requestTimeout': 300_000,
      'upstream.inheritEnv': false,
      'pool.scope': 'global',
      'pool.max': 4,
      'pool.sharing': 'shared',
      'pool.idleTimeout': 300_000,
      'serve.questionTtl': 600_000,
      'serve.maxSessions': 256,
      'serve.sessionIdleTimeout': 1_800_000,
      'serve.maxAsks': 256,
      'serve.maxAsksPerCaller': 32,
      'serve.maxInFlight': 64,
      'catalog.pinTools': false,
      'paths.state': join(HOME, '.local/state/mcpx'),
      'daemon.socket': join(HOME, '.local/state/mcpx/daemon.sock'),
      'daemon.port': null,
      'daemon.host': '127.0.0.1',
      'daemon.auth': 'token',
      'daemon.maxConnections': 1024,
      'daemon.configIdleTimeout': 600_000,
      'daemon.firstRequestTimeout': 10_000,
      'daemon.requestReceiveTimeout': 30_000,
      'oauth.requestTimeout': 30_000,
      'oauth.maxResponseBytes': 1_048_576,
      'oauth.refreshBackoffMax': 300_000,
      'oauth.loginUnwatchedTimeout': 15_000,
      'daemon.maxUnreadBytes': 67_108_864,
      'daemon.unreadTimeout': 60_000,
      'log.level': 'info',
    });
    for (const e of s.list()) expect(e.source).toBe('default');
  });

  it("docs/contract.md's settings table names each setting's default as the declaration has it", () => {
    const rows = new Map(
      readFileSync(join(packageRoot(), 'docs', 'contract.md'), 'utf8')
        .split('\n')
        .flatMap((l) => {
          const m = /^\| `([a-z]+\.[A-Za-z]+)` \| `([^`]+)`/.exec(l);
          return m ? [[m[1] as string, m[2] as string] as const] : [];
        }),
    );
    for (const e of make().list())
      if (e.path !== 'paths.state' && e.path !== 'daemon.socket') expect([e.path, rows.get(e.path)]).toEqual([e.path, e.defaultDisplay]);
    // Tests shorten these (silent-connections, login-safety); the daemon's own constants are the documented defaults.
    expect(findSetting('daemon.firstRequestTimeout').default).toBe(FIRST_REQUEST_TIMEOUT_MS);
    expect(findSetting('daemon.requestReceiveTimeout').default).toBe(REQUEST_RECEIVE_TIMEOUT_MS);
    expect(findSetting('oauth.loginUnwatchedTimeout').default).toBe(LOGIN_UNWATCHED_MS);
    expect([FIRST_REQUEST_TIMEOUT_MS, REQUEST_RECEIVE_TIMEOUT_MS, LOGIN_UNWATCHED_MS]).toEqual([10_000, 30_000, 15_000]);
  });

  it('get() is typed by path', () => {
    const s = make();
    const protocol: Preference = s.get('upstream.protocol');
    const eraCache: boolean = s.get('upstream.eraCache');
    const port: number | null = s.get('daemon.port');
    const max: number = s.get('pool.max');
    expect([protocol, eraCache, port, max]).toEqual(['prefer-discover', true, null, 4]);
  });
});

describe('list()', () => {
  it('is JSON-serialisable and reports value, display, default, source, env, flag, description for each', () => {
    const s = make({ env: { ...BASE_ENV, MCPX_UPSTREAM_PROBE_TIMEOUT: '1500' } });
    const list = s.list();
    expect(JSON.parse(JSON.stringify(list))).toEqual(list);
    expect(list.map((e) => e.path)).toEqual([...SETTING_PATHS]);
    const probe = list.find((e) => e.path === 'upstream.probeTimeout') as SettingEntry;
    expect(probe).toEqual({
      path: 'upstream.probeTimeout',
      value: 1_500,
      display: '1500ms',
      default: 2_000,
      defaultDisplay: '2s',
      source: 'env',
      from: 'MCPX_UPSTREAM_PROBE_TIMEOUT',
      type: 'duration',
      env: 'MCPX_UPSTREAM_PROBE_TIMEOUT',
      envAliases: [],
      flag: '--upstream-probe-timeout',
      flagAliases: [],
      key: 'upstream.probeTimeout',
      description: expect.stringContaining('stdio only') as unknown as string,
      restart: false,
    });
    for (const e of list) {
      expect(e.description.length).toBeGreaterThan(10);
      expect(typeof e.display).toBe('string');
    }
  });

  it('enums list their canonical values; the port shows "off"', () => {
    const s = make();
    expect(s.entry('upstream.protocol').allowed).toEqual([...CANONICAL_PREFERENCES]);
    expect(s.entry('pool.scope').allowed).toEqual(['global', 'session', 'call']);
    expect(s.entry('log.level').allowed).toEqual(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);
    expect(s.entry('daemon.port')).toMatchObject({ value: null, display: 'off', defaultDisplay: 'off', type: 'port' });
    expect(s.entry('pool.idleTimeout')).toMatchObject({ value: 300_000, display: '5m' });
    expect(s.entry('upstream.startTimeout')).toMatchObject({ value: 120_000, display: '2m' });
  });
});

describe('precedence: default < file < env < flag < runtime', () => {
  it('each higher source wins and is reported, and unsetting the runtime value falls back to the flag', () => {
    const file = { pool: { max: 2 } };
    expect(make().entry('pool.max')).toMatchObject({ value: 4, source: 'default' });
    expect(make({ file, filePath: '/p/.mcpx.json' }).entry('pool.max')).toMatchObject({ value: 2, source: 'file', from: '/p/.mcpx.json' });
    const env = { ...BASE_ENV, MCPX_POOL_MAX: '3' };
    expect(make({ file, env }).entry('pool.max')).toMatchObject({ value: 3, source: 'env', from: 'MCPX_POOL_MAX' });
    const flags = { '--pool-max': '5' };
    const s = make({ file, env, flags });
    expect(s.entry('pool.max')).toMatchObject({ value: 5, source: 'flag', from: '--pool-max' });
    expect(s.setRuntime('pool.max', 7)).toMatchObject({ value: 7, source: 'runtime', default: 4 });
    expect(s.get('pool.max')).toBe(7);
    expect(s.unsetRuntime('pool.max')).toMatchObject({ value: 5, source: 'flag' });
    // the others never moved
    expect(s.entry('pool.scope')).toMatchObject({ value: 'global', source: 'default' });
  });

  it('runtime overrides survive a re-resolve that omits them (a reload), and are replaced when given', () => {
    const s = make();
    s.setRuntime('log.level', 'debug');
    s.resolve({ env: BASE_ENV, file: { log: { level: 'warn' } } });
    expect(s.entry('log.level')).toMatchObject({ value: 'debug', source: 'runtime' });
    expect(s.runtimeOverrides()).toEqual({ 'log.level': 'debug' });
    s.resolve({ env: BASE_ENV, file: { log: { level: 'warn' } }, runtime: {} });
    expect(s.entry('log.level')).toMatchObject({ value: 'warn', source: 'file' });
  });

  it('a refused resolve keeps the previous values', () => {
    const s = make({ env: { ...BASE_ENV, MCPX_POOL_MAX: '6' } });
    expect(() => s.resolve({ env: { ...BASE_ENV, MCPX_POOL_MAX: 'six' } })).toThrow(SettingValueError);
    expect(s.entry('pool.max')).toMatchObject({ value: 6, source: 'env' });
  });

  it('an empty environment variable counts as unset', () => {
    expect(make({ env: { ...BASE_ENV, MCPX_POOL_MAX: '' } }).entry('pool.max')).toMatchObject({ value: 4, source: 'default' });
  });

  it('onChange reports each value that changed, after it changed', () => {
    const s = make();
    const seen: SettingChange[] = [];
    const off = s.onChange((c) => seen.push(c));
    s.setRuntime('upstream.protocol', 'legacy');
    s.setRuntime('upstream.protocol', 'prefer-legacy'); // same canonical value: no change
    s.unsetRuntime('upstream.protocol');
    off();
    s.setRuntime('pool.max', 9);
    expect(seen).toEqual([
      { path: 'upstream.protocol', value: 'prefer-initialize', previous: 'prefer-discover', source: 'runtime' },
      { path: 'upstream.protocol', value: 'prefer-discover', previous: 'prefer-initialize', source: 'default' },
    ]);
  });
});

describe('upstream.protocol: every alias from every source reports the canonical name', () => {
  const names: [string, Preference][] = [...CANONICAL_PREFERENCES.map((c): [string, Preference] => [c, c]), ...Object.entries(PREFERENCE_ALIASES)];

  it('the alias table is the spec one (12 older names)', () => {
    expect(Object.keys(PREFERENCE_ALIASES)).toHaveLength(12);
  });

  for (const [name, canonical] of names) {
    const spelled = [name, `  ${name.toUpperCase()} `];
    it(`${name} → ${canonical} through file, env, flag and runtime`, () => {
      for (const v of spelled) {
        const file = make({ file: { upstream: { protocol: v } } }).entry('upstream.protocol');
        expect(file).toMatchObject({ value: canonical, display: canonical, source: 'file' });
        const env = make({ env: { ...BASE_ENV, MCPX_UPSTREAM_PROTOCOL: v } }).entry('upstream.protocol');
        expect(env).toMatchObject({ value: canonical, source: 'env' });
        const flag = make({ flags: { '--upstream-protocol': v } }).entry('upstream.protocol');
        expect(flag).toMatchObject({ value: canonical, source: 'flag' });
        const s = make();
        expect(s.setRuntime('upstream.protocol', v)).toMatchObject({ value: canonical, source: 'runtime' });
        expect(s.get('upstream.protocol')).toBe(canonical);
        expect(parseSettingValue('upstream.protocol', v)).toBe(canonical);
      }
    });
  }
});

describe('bad values name their source', () => {
  it('environment variable', () => {
    const err = caught(() => make({ env: { ...BASE_ENV, MCPX_UPSTREAM_PROTOCOL: 'sideways' } }));
    expect(err.code).toBe('MCPX_BAD_SETTING');
    expect(err.message).toBe(`environment variable MCPX_UPSTREAM_PROTOCOL: "sideways" is not a protocol preference; ${PROTOCOL_LIST}`);
  });

  it('environment alias', () => {
    const err = caught(() => make({ env: { ...BASE_ENV, MCPX_STATE_DIR: '\u0000' } }));
    expect(err.message).toMatch(/^environment variable MCPX_STATE_DIR: /);
  });

  it('config file, with its path and the key', () => {
    const err = caught(() => make({ file: { upstream: { probeTimeout: '5 minutes' } }, filePath: '/x/.mcpx.json' }));
    expect(err.code).toBe('MCPX_BAD_SETTING');
    expect(err.message).toBe(
      'config /x/.mcpx.json: upstream.probeTimeout: "5 minutes" is not a duration (use e.g. 500ms, 2s, 5m, 1h, 1m30s, or a number of milliseconds)',
    );
  });

  it('config file: unknown keys in a block and blocks that are not objects', () => {
    const err = caught(() => make({ file: { upstream: { protocl: 'follow' }, pool: 'big' }, filePath: '/x/.mcpx.json' })) as SettingValueError;
    expect(err.problems.map((p) => p.message)).toEqual([
      'config /x/.mcpx.json: upstream.protocl: not a setting (did you mean upstream.protocol?); upstream takes protocol, eraCache, eraCacheMaxAge, probeTimeout, startTimeout, requestTimeout, inheritEnv',
      'config /x/.mcpx.json: pool: must be an object with the keys scope, max, sharing, idleTimeout',
    ]);
  });

  it('config file values are JSON: a quoted number or boolean is refused there', () => {
    const err = caught(() => make({ file: { pool: { max: '4' }, upstream: { eraCache: 'yes' } }, filePath: '/c.json' })) as SettingValueError;
    expect(err.problems.map((p) => p.message)).toEqual([
      'config /c.json: upstream.eraCache: "yes" is not a boolean (use true or false)',
      'config /c.json: pool.max: "4" is not a whole number ≥ 1',
    ]);
  });

  it('flag', () => {
    const err = caught(() => make({ flags: { '--pool-max': '0' } }));
    expect(err.message).toBe('flag --pool-max: "0" is not a whole number ≥ 1');
    const err2 = caught(() => make({ flags: { poolScope: 'planet' } }));
    expect(err2.message).toBe('flag --pool-scope: "planet" is not one of: global, session, call');
  });

  it('runtime: names the path and lists the allowed values', () => {
    const s = make();
    const err = caught(() => s.setRuntime('upstream.protocol', 'sideways'));
    expect(err).toBeInstanceOf(SettingValueError);
    expect(err.code).toBe('MCPX_BAD_SETTING');
    expect(err.message).toBe(`setting upstream.protocol: "sideways" is not a protocol preference; ${PROTOCOL_LIST}`);
    expect(err.data).toMatchObject({ path: 'upstream.protocol', allowed: [...CANONICAL_PREFERENCES] });
    expect(caught(() => s.setRuntime('pool.sharing', 'mine')).message).toBe('setting pool.sharing: "mine" is not one of: shared, exclusive');
    expect(caught(() => s.setRuntime('pool.sharing', undefined)).message).toMatch(/^setting pool\.sharing: a value is needed/);
    expect(s.get('upstream.protocol')).toBe('prefer-discover');
    expect(s.get('pool.sharing')).toBe('shared');
  });

  it('every refusal of one resolve is collected, lowest source first', () => {
    const err = caught(() =>
      make({
        file: { daemon: { port: 'eighty' } },
        filePath: '/f.json',
        env: { ...BASE_ENV, MCPX_DAEMON_HOST: '0.0.0.0', MCPX_UPSTREAM_ERA_CACHE: 'maybe' },
        flags: { '--pool-idle-timeout': 'later' },
        runtime: { 'log.level': 'loud' },
      }),
    ) as SettingValueError;
    expect(err.problems.map((p) => [p.source, p.key])).toEqual([
      ['env', 'upstream.eraCache'],
      ['flag', 'pool.idleTimeout'],
      ['file', 'daemon.port'],
      ['env', 'daemon.host'],
      ['runtime', 'log.level'],
    ]);
    expect(err.message.split('\n')).toEqual(err.problems.map((p) => p.message));
    expect(err.message).toContain('environment variable MCPX_UPSTREAM_ERA_CACHE: "maybe" is not a boolean (use true or false; also 1/0, yes/no, on/off)');
    expect(err.message).toContain('environment variable MCPX_DAEMON_HOST: "0.0.0.0" is not a loopback address');
  });

  it('a bad value is refused even when a higher source overrides it', () => {
    expect(() => make({ env: { ...BASE_ENV, MCPX_POOL_MAX: 'lots' }, flags: { '--pool-max': '2' } })).toThrow(/environment variable MCPX_POOL_MAX/);
  });
});

describe('unknown paths', () => {
  it('get, setRuntime, unsetRuntime, entry, flags and runtime keys throw MCPX_UNKNOWN_SETTING with a suggestion', () => {
    const s = make();
    for (const fn of [
      () => s.get('pool.maxx'),
      () => s.setRuntime('pool.maxx', 1),
      () => s.unsetRuntime('pool.maxx'),
      () => s.entry('pool.maxx'),
      () => s.resolve({ runtime: { 'pool.maxx': 1 } }),
    ]) {
      const err = caught(fn);
      expect(err).toBeInstanceOf(UnknownSettingError);
      expect(err.code).toBe('MCPX_UNKNOWN_SETTING');
      expect(err.message).toMatch(/^"pool\.maxx" is not a setting \(did you mean pool\.max\?\); settings: upstream\.protocol, /);
    }
    const flagErr = caught(() => make({ flags: { '--pool-maks': '1' } }));
    expect(flagErr.code).toBe('MCPX_UNKNOWN_SETTING');
    expect(flagErr.message).toContain('did you mean --pool-max?');
  });

  it('a path in another case is the same setting', () => {
    expect(make().setRuntime('UPSTREAM.ERACACHE', 'no')).toMatchObject({ path: 'upstream.eraCache', value: false });
  });
});

describe('value kinds', () => {
  it('booleans from text: true/false, 1/0, yes/no, on/off in any case', () => {
    for (const [text, value] of [
      ['true', true],
      ['1', true],
      ['YES', true],
      ['On', true],
      ['false', false],
      ['0', false],
      ['no', false],
      [' OFF ', false],
    ] as const) {
      expect(make({ env: { ...BASE_ENV, MCPX_UPSTREAM_ERA_CACHE: text } }).get('upstream.eraCache')).toBe(value);
      expect(make({ flags: { '--upstream-era-cache': text } }).get('upstream.eraCache')).toBe(value);
    }
    expect(make({ flags: { '--upstream-era-cache': true } }).get('upstream.eraCache')).toBe(true); // a bare flag
    expect(make({ file: { upstream: { eraCache: false } } }).get('upstream.eraCache')).toBe(false);
  });

  it('integers: whole numbers ≥ 1 only', () => {
    for (const bad of ['0', '-1', '1.5', '1e3', '0x10', 'four', '']) {
      if (bad === '') continue; // empty env counts as unset
      expect(() => make({ env: { ...BASE_ENV, MCPX_POOL_MAX: bad } })).toThrow(
        `environment variable MCPX_POOL_MAX: ${JSON.stringify(bad)} is not a whole number ≥ 1`,
      );
    }
    expect(make({ env: { ...BASE_ENV, MCPX_POOL_MAX: ' 12 ' } }).get('pool.max')).toBe(12);
    expect(() => make().setRuntime('pool.max', 2.5)).toThrow('setting pool.max: 2.5 is not a whole number ≥ 1');
    expect(make().setRuntime('pool.max', '3').value).toBe(3);
  });

  it('durations from every source, shown in the human form', () => {
    expect(make({ env: { ...BASE_ENV, MCPX_POOL_IDLE_TIMEOUT: '90s' } }).entry('pool.idleTimeout')).toMatchObject({ value: 90_000, display: '90s' });
    expect(make({ file: { pool: { idleTimeout: 60_000 } } }).entry('pool.idleTimeout')).toMatchObject({ value: 60_000, display: '1m' });
    expect(make().setRuntime('upstream.requestTimeout', '1h').display).toBe('1h');
    expect(() => make().setRuntime('upstream.requestTimeout', 0)).toThrow('setting upstream.requestTimeout: 0 is too short: at least 1ms');
    expect(make().setRuntime('upstream.probeTimeout', 0).value).toBe(0);
  });

  it('daemon.port: off by default; null, 0, "off" turn it off; 1-65535 otherwise', () => {
    for (const off of ['0', 'off', 'OFF', 'none', 'false']) expect(make({ env: { ...BASE_ENV, MCPX_DAEMON_PORT: off } }).get('daemon.port')).toBeNull();
    expect(make({ env: { ...BASE_ENV, MCPX_DAEMON_PORT: '8080' } }).entry('daemon.port')).toMatchObject({ value: 8080, display: '8080', source: 'env' });
    expect(make({ file: { daemon: { port: null } } }).entry('daemon.port')).toMatchObject({ value: null, source: 'file' });
    expect(make({ file: { daemon: { port: 0 } } }).get('daemon.port')).toBeNull();
    for (const bad of ['65536', '-1', '80.5', 'http']) {
      expect(() => make({ env: { ...BASE_ENV, MCPX_DAEMON_PORT: bad } })).toThrow(
        `environment variable MCPX_DAEMON_PORT: ${JSON.stringify(bad)} is not a port (use 1-65535, or off/0/null to turn TCP off)`,
      );
    }
  });

  it('daemon.host: loopback only, normalised', () => {
    const good: [string, string][] = [
      ['127.0.0.1', '127.0.0.1'],
      ['127.8.9.10', '127.8.9.10'],
      ['::1', '::1'],
      ['[::1]', '::1'],
      ['0:0:0:0:0:0:0:1', '::1'],
      ['LocalHost', 'localhost'],
    ];
    for (const [input, out] of good) {
      expect(loopbackHost(input)).toBe(out);
      expect(make({ flags: { '--daemon-host': input } }).get('daemon.host')).toBe(out);
    }
    for (const bad of ['0.0.0.0', '::', '192.168.1.5', '128.0.0.1', '10.0.0.1', 'example.com', 'localhost.evil.com', '127.1', '::2', '']) {
      expect(loopbackHost(bad)).toBeUndefined();
      expect(() => make().setRuntime('daemon.host', bad)).toThrow(
        `setting daemon.host: ${JSON.stringify(bad)} is not a loopback address; mcpx listens on loopback only (127.0.0.0/8, ::1 or localhost)`,
      );
    }
  });

  it('enums are case-insensitive and stored in lower case', () => {
    expect(make({ env: { ...BASE_ENV, MCPX_POOL_SCOPE: ' CALL ' } }).get('pool.scope')).toBe('call');
    expect(make({ env: { ...BASE_ENV, MCPX_DAEMON_AUTH: 'None' } }).get('daemon.auth')).toBe('none');
    expect(() => make({ env: { ...BASE_ENV, MCPX_LOG_LEVEL: 'verbose' } })).toThrow(
      'environment variable MCPX_LOG_LEVEL: "verbose" is not one of: fatal, error, warn, info, debug, trace, silent',
    );
  });
});

describe('paths', () => {
  it('paths.state defaults to $XDG_STATE_HOME/mcpx, or ~/.local/state/mcpx when XDG_STATE_HOME is unset or relative', () => {
    expect(make({ env: { HOME, XDG_STATE_HOME: '/xdg/state' } }).get('paths.state')).toBe('/xdg/state/mcpx');
    expect(make({ env: { HOME, XDG_STATE_HOME: 'relative/state' } }).get('paths.state')).toBe(join(HOME, '.local/state/mcpx'));
    expect(make({ env: { HOME } }).entry('paths.state')).toMatchObject({ value: join(HOME, '.local/state/mcpx'), source: 'default' });
  });

  it('MCPX_STATE_DIR sets paths.state; MCPX_PATHS_STATE wins when both are set', () => {
    expect(make({ env: { HOME, MCPX_STATE_DIR: '/s1' } }).entry('paths.state')).toMatchObject({ value: '/s1', source: 'env', from: 'MCPX_STATE_DIR' });
    expect(make({ env: { HOME, MCPX_STATE_DIR: '/s1', MCPX_PATHS_STATE: '/s2' } }).entry('paths.state')).toMatchObject({
      value: '/s2',
      from: 'MCPX_PATHS_STATE',
    });
    expect(make({ flags: { '--state-dir': '/s3' } }).entry('paths.state')).toMatchObject({ value: '/s3', source: 'flag', from: '--state-dir' });
  });

  it('daemon.socket follows paths.state unless set itself', () => {
    const s = make({ env: { HOME, MCPX_STATE_DIR: '/s1' } });
    expect(s.entry('daemon.socket')).toMatchObject({ value: '/s1/daemon.sock', default: '/s1/daemon.sock', source: 'default' });
    s.setRuntime('paths.state', '/s9');
    expect(s.get('daemon.socket')).toBe('/s9/daemon.sock');
    expect(make({ env: { HOME, MCPX_STATE_DIR: '/s1', MCPX_DAEMON_SOCKET: '/run/m.sock' } }).get('daemon.socket')).toBe('/run/m.sock');
  });

  it('relative paths: against the config file folder in the file, against cwd elsewhere; ~ is the home folder', () => {
    expect(make({ file: { paths: { state: 'state' } }, filePath: '/proj/.mcpx.json', cwd: '/elsewhere' }).get('paths.state')).toBe('/proj/state');
    expect(make({ env: { HOME, MCPX_STATE_DIR: 'st' }, cwd: '/srv/proj' }).get('paths.state')).toBe('/srv/proj/st');
    expect(make({ flags: { '--paths-state': '~/mystate' } }).get('paths.state')).toBe(join(HOME, 'mystate'));
  });
});

describe('codecs', () => {
  it('each declaration reads typed values with its codec (upstream.protocol: protocolCodec)', () => {
    const byPath = Object.fromEntries(SETTINGS.map((d) => [d.path, d.codec]));
    const typed = { text: false, baseDir: process.cwd(), home: HOME };
    expect(byPath['upstream.protocol']).toBe(protocolCodec as unknown);
    expect(byPath['upstream.protocol']?.parse('Force-Legacy', typed)).toEqual({ ok: true, value: 'force-initialize' });
    expect(byPath['pool.idleTimeout']?.parse('2m', typed)).toEqual({ ok: true, value: 120_000 });
    expect(byPath['pool.max']?.parse(0, typed)).toMatchObject({ ok: false, message: '0 is not a whole number ≥ 1' });
    expect(byPath['pool.scope']?.parse('x', typed).ok).toBe(false);
    expect(byPath['pool.scope']?.allowed).toEqual(['global', 'session', 'call']);
  });
});
