/**
 * mcpx settings (the README): one declaration per setting in `SETTINGS`, from which come
 * its config key, environment variable, CLI flag, `/v1/settings` entry, validation and display.
 *
 * Precedence, lowest first: default < config file < environment < flag < runtime (`PUT /v1/settings`).
 * Every value a source gives is checked, even one a higher source overrides, and every refusal names
 * its source: `config /x/.mcpx.json: pool.max: …`, `environment variable MCPX_POOL_MAX: …`,
 * `flag --pool-max: …`, `setting pool.max: …`.
 *
 * Values from the environment and flags are text: booleans (true/false, 1/0, yes/no, on/off),
 * whole numbers and durations are read from it. The config file is JSON, so there a boolean must be
 * a boolean and a number a number (durations may be either `"2s"` or milliseconds). Runtime values
 * (the API, `mcpx settings set`) may be either.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve as resolvePath } from 'node:path';
import { SettingValueError, UnknownSettingError, type ConfigProblem } from '../errors.js';
import { CANONICAL_PREFERENCES, canonicalPreference, DEFAULT_PREFERENCE, preferenceRefusal, type Preference } from '../machines/preference.js';
import type { Scope, Sharing } from '../pool/types.js';
import { closest } from '../did-you-mean.js';

export { closest, didYouMean } from '../did-you-mean.js';
import { formatDuration, tryParseDuration } from './duration.js';
import { showValue } from './show-value.js';

// ---------------------------------------------------------------------------------------------
// Value kinds

export type SettingSource = 'default' | 'file' | 'env' | 'flag' | 'runtime';
export type SettingType = 'protocol' | 'enum' | 'boolean' | 'integer' | 'duration' | 'port' | 'host' | 'path';

export interface ParseContext {
  /** The value arrived as text (environment, flag, `mcpx settings set`): read booleans and numbers from strings. */
  text: boolean;
  /** Relative paths resolve against this folder (the config file's folder, else the working directory). */
  baseDir: string;
  /** `~` in a path means this folder. */
  home: string;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

/** How one kind of value is read, checked, normalised and shown. */
export interface Codec<T> {
  type: SettingType;
  parse(input: unknown, ctx: ParseContext): Parsed<T>;
  /** The human form: `2s`, `true`, `off`, … */
  display(value: T): string;
  /** For enums: the canonical values, listed in refusals and in `list()`. */
  allowed?: readonly string[];
}

export { showValue } from './show-value.js';

const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
const fail = (message: string): Parsed<never> => ({ ok: false, message });

export function enumCodec<const V extends string>(values: readonly V[]): Codec<V> {
  return {
    type: 'enum',
    allowed: values,
    parse(input) {
      if (typeof input === 'string') {
        const v = input.trim().toLowerCase();
        if ((values as readonly string[]).includes(v)) return ok(v as V);
      }
      return fail(`${showValue(input)} is not one of: ${values.join(', ')}`);
    },
    display: (v) => v,
  };
}

/** `upstream.protocol`: every alias in, the canonical name out (docs/behaviour.md §1). */
export const protocolCodec: Codec<Preference> = {
  type: 'protocol',
  allowed: CANONICAL_PREFERENCES,
  parse(input) {
    const found = canonicalPreference(input);
    return found === undefined ? fail(preferenceRefusal(input)) : ok(found);
  },
  display: (v) => v,
};

const TRUE_WORDS = ['true', '1', 'yes', 'on'];
const FALSE_WORDS = ['false', '0', 'no', 'off'];

export const booleanCodec: Codec<boolean> = {
  type: 'boolean',
  parse(input, ctx) {
    if (typeof input === 'boolean') return ok(input);
    if (ctx.text && typeof input === 'string') {
      const v = input.trim().toLowerCase();
      if (TRUE_WORDS.includes(v)) return ok(true);
      if (FALSE_WORDS.includes(v)) return ok(false);
    }
    return fail(`${showValue(input)} is not a boolean (use true or false${ctx.text ? '; also 1/0, yes/no, on/off' : ''})`);
  },
  display: (v) => String(v),
};

const WHOLE = /^\s*\+?\d+\s*$/;

export function integerCodec(min: number, max = Number.MAX_SAFE_INTEGER): Codec<number> {
  const range = max === Number.MAX_SAFE_INTEGER ? `≥ ${min}` : `from ${min} to ${max}`;
  return {
    type: 'integer',
    parse(input, ctx) {
      let n: unknown = input;
      if (ctx.text && typeof input === 'string' && WHOLE.test(input)) n = Number(input);
      if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < min || n > max) return fail(`${showValue(input)} is not a whole number ${range}`);
      return ok(n);
    },
    display: (v) => String(v),
  };
}

export function durationCodec(minMs = 0): Codec<number> {
  return {
    type: 'duration',
    parse(input) {
      const r = tryParseDuration(input);
      if (!r.ok) return fail(r.message);
      if (r.ms < minMs) return fail(`${showValue(input)} is too short: at least ${formatDuration(minMs)}`);
      return ok(r.ms);
    },
    display: (v) => formatDuration(v),
  };
}

const PORT_OFF = ['off', 'none', 'false', 'no', '0'];

/** A TCP port, or `null` for off (`null`, `0`, `false`, `"off"`). */
export const portCodec: Codec<number | null> = {
  type: 'port',
  parse(input, ctx) {
    if (input === null || input === 0 || input === false) return ok(null);
    if (typeof input === 'string' && PORT_OFF.includes(input.trim().toLowerCase())) return ok(null);
    let n: unknown = input;
    if (ctx.text && typeof input === 'string' && WHOLE.test(input)) n = Number(input);
    if (typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= 65535) return ok(n);
    return fail(`${showValue(input)} is not a port (use 1-65535, or off/0/null to turn TCP off)`);
  },
  display: (v) => (v === null ? 'off' : String(v)),
};

/** Normalises a loopback host (`localhost`, 127.0.0.0/8, ::1 in any spelling); anything else is undefined. */
export function loopbackHost(text: string): string | undefined {
  let h = text.trim().toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h === 'localhost') return h;
  if (isIPv4(h)) return h.split('.')[0] === '127' ? h : undefined;
  if (isIPv6(h)) {
    try {
      return new URL(`http://[${h}]/`).hostname === '[::1]' ? '::1' : undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** `daemon.host`: mcpx only listens on loopback, so only loopback addresses are accepted. */
export const hostCodec: Codec<string> = {
  type: 'host',
  parse(input) {
    const h = typeof input === 'string' ? loopbackHost(input) : undefined;
    if (h === undefined) return fail(`${showValue(input)} is not a loopback address; mcpx listens on loopback only (127.0.0.0/8, ::1 or localhost)`);
    return ok(h);
  },
  display: (v) => v,
};

/** A folder or file path: `~` expands to the home folder, a relative path resolves against `ctx.baseDir`. */
export const pathCodec: Codec<string> = {
  type: 'path',
  parse(input, ctx) {
    if (typeof input !== 'string' || input.trim() === '' || input.includes('\0')) return fail(`${showValue(input)} is not a path`);
    const p = input.trim();
    if (p === '~') return ok(ctx.home);
    if (p.startsWith('~/')) return ok(join(ctx.home, p.slice(2)));
    return ok(resolvePath(ctx.baseDir, p));
  },
  display: (v) => v,
};

// ---------------------------------------------------------------------------------------------
// The declarations

export interface DefaultContext {
  env: NodeJS.ProcessEnv;
  home: string;
  /** The resolved value of a setting declared earlier in `SETTINGS`. */
  get(path: string): unknown;
}

export interface SettingDeclaration<P extends string, T> {
  path: P;
  codec: Codec<T>;
  /** A value, or a function of the environment and earlier settings (paths.state, daemon.socket). */
  default: T | ((ctx: DefaultContext) => T);
  /** How the default reads in help text when it is computed (e.g. `$XDG_STATE_HOME/mcpx or ~/.local/state/mcpx`). */
  defaultText?: string;
  description: string;
  /** Further environment variables, below the derived one in precedence. */
  envAliases?: readonly string[];
  /** Further flags naming the same setting. */
  flagAliases?: readonly string[];
  /** The daemon reads this at start-up only; a runtime change takes effect on its next start. */
  restart?: boolean;
}

export interface SettingDef<P extends string = string, T = unknown> extends SettingDeclaration<P, T> {
  /** `MCPX_` + path upper-cased, dots to `_`, camelCase split. */
  env: string;
  /** `--` + path with dots to `-`, camelCase split. */
  flag: string;
  envAliases: readonly string[];
  flagAliases: readonly string[];
  /** The nested key in the config file: `['upstream', 'eraCache']`. */
  key: readonly string[];
  restart: boolean;
}

const words = (segment: string): string[] =>
  segment
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(' ');

/** `upstream.eraCache` → `MCPX_UPSTREAM_ERA_CACHE`. */
export function envNameFor(path: string): string {
  return `MCPX_${path.split('.').flatMap(words).join('_').toUpperCase()}`;
}

/** `upstream.eraCache` → `--upstream-era-cache`. */
export function flagNameFor(path: string): string {
  return `--${path.split('.').flatMap(words).join('-')}`;
}

/** `$HOME` when it is absolute, else `os.homedir()`. */
export function homeFolder(env: NodeJS.ProcessEnv = process.env): string {
  const h = env['HOME'];
  return h !== undefined && isAbsolute(h) ? h : homedir();
}

/** `$XDG_STATE_HOME/mcpx` (an absolute XDG_STATE_HOME only, as the XDG spec says), else `~/.local/state/mcpx`. */
export function defaultStateDir(env: NodeJS.ProcessEnv = process.env, home = homeFolder(env)): string {
  const xdg = env['XDG_STATE_HOME'];
  return xdg !== undefined && isAbsolute(xdg) ? join(xdg, 'mcpx') : join(home, '.local', 'state', 'mcpx');
}

function setting<const P extends string, T>(d: SettingDeclaration<P, T>): SettingDef<P, T> {
  return Object.freeze({
    ...d,
    env: envNameFor(d.path),
    flag: flagNameFor(d.path),
    envAliases: d.envAliases ?? [],
    flagAliases: d.flagAliases ?? [],
    key: d.path.split('.'),
    restart: d.restart ?? false,
  });
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const SCOPES = ['global', 'session', 'call'] as const satisfies readonly Scope[];
export const SHARINGS = ['shared', 'exclusive'] as const satisfies readonly Sharing[];
export const AUTH_MODES = ['token', 'none'] as const;

/** Every setting, in the order they are listed and resolved (a computed default may read earlier ones). */
export const SETTINGS = [
  setting({
    path: 'upstream.protocol',
    codec: protocolCodec,
    default: DEFAULT_PREFERENCE,
    description:
      "The first request mcpx sends an upstream, and its fallback (docs/behaviour.md §1); a server's own `protocol` overrides it. Aliases are accepted and stored as the canonical name.",
  }),
  setting({
    path: 'upstream.eraCache',
    codec: booleanCodec,
    default: true,
    description: "Remember each upstream's era in <state>/upstream-eras.json so later starts try it first.",
  }),
  setting({
    path: 'upstream.eraCacheMaxAge',
    codec: durationCodec(0),
    default: 7 * 24 * 60 * 60 * 1000,
    description: 'A cached era older than this gets the normal probe again (and is rewritten), so a server upgraded under the same command is noticed.',
  }),
  setting({
    path: 'upstream.probeTimeout',
    codec: durationCodec(0),
    default: 2_000,
    description: 'How long a stdio upstream may leave server/discover unanswered before initialize is sent alongside (stdio only).',
  }),
  setting({
    path: 'upstream.startTimeout',
    codec: durationCodec(1),
    default: 120_000,
    description: 'How long an upstream may take to come up and finish connecting (e.g. an npx download) before the start fails.',
  }),
  setting({
    path: 'upstream.requestTimeout',
    codec: durationCodec(1),
    default: 300_000,
    description: 'How long one request to an upstream may go unanswered.',
  }),
  setting({
    path: 'upstream.inheritEnv',
    codec: booleanCodec,
    default: false,
    description:
      "Give stdio upstreams the daemon's whole environment. Off: only HOME, LOGNAME, PATH, SHELL, TERM and USER (their equivalents on Windows), plus the server's own `env`; a server's `mcpx.inheritEnv` overrides it.",
  }),
  setting({
    path: 'pool.scope',
    codec: enumCodec(SCOPES),
    default: 'global' as Scope,
    description: 'Who shares an upstream instance: global (everyone), session (one per caller session), call (one per call).',
  }),
  setting({
    path: 'pool.max',
    codec: integerCodec(1),
    default: 4,
    description: 'Instances per lane; a global scope holds one whatever this says.',
  }),
  setting({
    path: 'pool.sharing',
    codec: enumCodec(SHARINGS),
    default: 'shared' as Sharing,
    description: 'shared: concurrent calls on one instance; exclusive: callers queue for an instance of their own.',
  }),
  setting({
    path: 'pool.idleTimeout',
    codec: durationCodec(0),
    default: 300_000,
    description: 'Idle instances above the floor are stopped after this long.',
  }),
  setting({
    path: 'serve.questionTtl',
    codec: durationCodec(1_000),
    default: 600_000,
    restart: true,
    description: 'How long a 2026-07-28 caller of mcpx serve or /mcp has to answer a question round: the signed requestState expires after this.',
  }),
  setting({
    path: 'serve.maxSessions',
    codec: integerCodec(1),
    default: 256,
    restart: true,
    description:
      'Legacy (2025-era) sessions /mcp keeps open at most. Past it a new one gets 503 with Retry-After, unless an idle session can be closed to make room; a session in use is never closed for another.',
  }),
  setting({
    path: 'serve.sessionIdleTimeout',
    codec: durationCodec(1_000),
    default: 30 * 60_000,
    restart: true,
    description:
      'A legacy /mcp session with nothing in flight and unused this long is closed; past serve.maxSessions, one unused a tenth of this (at most a minute) may be closed to make room.',
  }),
  setting({
    path: 'serve.maxAsks',
    codec: integerCodec(1),
    default: 256,
    restart: true,
    description:
      'Calls (/v1/ask, /mcp, mcpx serve, mcpx call) that have asked their callers questions, running at once; a call that asks nothing is never counted. The next to ask reclaims the ask left unattended longest (unpolled for 2 s or more), else its question is refused (MCPX_TOO_MANY_ASKS).',
  }),
  setting({
    path: 'serve.maxAsksPerCaller',
    codec: integerCodec(1),
    default: 32,
    restart: true,
    description:
      'Of those, how many one caller (its session, else its connection; the stateless 2026-07-28 callers of /mcp count as one) may have running: its next to ask reclaims its oldest ask waiting unanswered, else its question is refused (MCPX_TOO_MANY_ASKS).',
  }),
  setting({
    path: 'serve.maxInFlight',
    codec: integerCodec(1),
    default: 64,
    description:
      'Requests one mcpx serve stream may have in flight in the daemon; at the bound the daemon reads no more of that stream until one is answered (its client waits to write), so a client that sends faster than it reads answers cannot pile work up.',
  }),
  setting({
    path: 'catalog.pinTools',
    codec: booleanCodec,
    default: false,
    description:
      "Hold a tool whose definition (description, schemas, annotations) changed since mcpx first saw it: left out of every listing and refused on call until `mcpx tools --accept`. A server's `mcpx.pinTools` overrides it. Off: the change is only reported.",
  }),
  setting({
    path: 'paths.state',
    codec: pathCodec,
    default: ({ env, home }) => defaultStateDir(env, home),
    defaultText: '$XDG_STATE_HOME/mcpx or ~/.local/state/mcpx',
    envAliases: ['MCPX_STATE_DIR'],
    flagAliases: ['--state-dir'],
    restart: true,
    description: 'The state folder (mode 0700): daemon socket, daemon.json, era cache.',
  }),
  setting({
    path: 'daemon.socket',
    codec: pathCodec,
    default: ({ get }) => join(String(get('paths.state')), 'daemon.sock'),
    defaultText: '<state>/daemon.sock',
    restart: true,
    description: "The daemon's Unix socket (mode 0600).",
  }),
  setting({
    path: 'daemon.port',
    codec: portCodec,
    default: null,
    defaultText: 'off',
    restart: true,
    description: 'Loopback TCP port for the /v1 API and /mcp; off unless set (0 or off turns it off).',
  }),
  setting({
    path: 'daemon.host',
    codec: hostCodec,
    default: '127.0.0.1',
    restart: true,
    description: 'The address TCP binds; loopback only (127.0.0.0/8, ::1, localhost).',
  }),
  setting({
    path: 'daemon.auth',
    codec: enumCodec(AUTH_MODES),
    default: 'token' as (typeof AUTH_MODES)[number],
    description: 'token: TCP requests need the bearer token from <state>/daemon.json; none drops it (the Origin/Host check stays).',
  }),
  setting({
    path: 'daemon.maxConnections',
    codec: integerCodec(1),
    default: 1024,
    restart: true,
    description:
      "Connections each loopback TCP listener (daemon.port, the page's) holds at once, further capped at half the process's descriptor limit; more are closed as soon as they are accepted. The Unix socket is not bounded.",
  }),
  setting({
    path: 'daemon.configIdleTimeout',
    codec: durationCodec(1_000),
    default: 600_000,
    restart: false,
    description:
      "How long a config a caller named (not the daemon's own) stays loaded with no caller attached (a serve stream, an /mcp session) and no request; then it is unloaded and its servers that no other config uses stop.",
  }),
  setting({
    path: 'daemon.firstRequestTimeout',
    codec: durationCodec(1_000),
    default: 10_000,
    restart: true,
    description:
      'How long a new connection (any listener, the Unix socket too) has to send a whole request head; one that sends none in time is closed. Once a request has come, it does not bound the answer or a stream.',
  }),
  setting({
    path: 'daemon.requestReceiveTimeout',
    codec: durationCodec(1_000),
    default: 30_000,
    restart: true,
    description:
      'How long a request may take to arrive whole, headers and body (any listener); past it the daemon answers 408 and closes the connection. It does not bound the answer or a stream.',
  }),
  setting({
    path: 'oauth.requestTimeout',
    codec: durationCodec(1),
    default: 30_000,
    description:
      'How long one OAuth request (metadata, registration, token, refresh) may take, answer included; past it the request fails and a refresh is tried again later.',
  }),
  setting({
    path: 'oauth.maxResponseBytes',
    codec: integerCodec(1024),
    default: 1024 * 1024,
    description: 'The largest answer mcpx reads from an OAuth endpoint (metadata, registration, token); a larger one fails the request unread.',
  }),
  setting({
    path: 'oauth.refreshBackoffMax',
    codec: durationCodec(1),
    default: 5 * 60_000,
    description:
      'After a failed refresh a credential waits before the next one: 1 s, then twice as long after each failure in a row, at most this. Calls in the wait fail at once with the last failure.',
  }),
  setting({
    path: 'oauth.loginUnwatchedTimeout',
    codec: durationCodec(1_000),
    default: 15_000,
    restart: true,
    description:
      'How long a login nobody waits for (started through the API and never looked at, or its mcpx login killed between two polls) stays open before it is cancelled.',
  }),
  setting({
    path: 'daemon.maxUnreadBytes',
    codec: integerCodec(64 * 1024),
    default: 64 * 1024 * 1024,
    description:
      'Bytes that may wait for one caller that does not read them (an mcpx serve stream, a /mcp or /v1 answer or event stream); past it that caller alone is cut off, with a log line.',
  }),
  setting({
    path: 'daemon.unreadTimeout',
    codec: durationCodec(1_000),
    default: 60_000,
    description:
      'How long one caller may leave what waits for it unread (its socket full, nothing taken) before it alone is cut off, with a log line. A caller that reads, however slowly, is never cut off by it.',
  }),
  setting({
    path: 'log.level',
    codec: enumCodec(LOG_LEVELS),
    default: 'info' as LogLevel,
    description: "The daemon's log level.",
  }),
] as const;

type AnySetting = (typeof SETTINGS)[number];
export type SettingPath = AnySetting['path'];
/** The resolved type of every setting, by path. */
export type SettingValues = { [D in AnySetting as D['path']]: D extends SettingDef<string, infer T> ? T : never };

export const SETTING_PATHS: readonly SettingPath[] = SETTINGS.map((d) => d.path);
/** The top-level config-file blocks that hold settings (`upstream`, `pool`, `paths`, `daemon`, `log`). */
export const SETTING_BLOCKS: readonly string[] = [...new Set(SETTINGS.map((d) => d.key[0] as string))];

const BY_PATH = new Map<string, SettingDef>(SETTINGS.map((d) => [d.path, d as unknown as SettingDef]));

/** Lower-case, punctuation-free: `--pool-max`, `pool-max`, `pool.max`, `poolMax` all give `poolmax`. */
const flagKey = (s: string): string => s.replace(/^-+/, '').replace(/[-._]/g, '').toLowerCase();
const BY_FLAG = new Map<string, SettingDef>();
for (const d of BY_PATH.values()) for (const f of [d.flag, ...d.flagAliases, d.path]) BY_FLAG.set(flagKey(f), d);

/**
 * The declaration of `path` (exact, else case-insensitive).
 * @throws UnknownSettingError (MCPX_UNKNOWN_SETTING) suggesting the nearest path.
 */
export function findSetting(path: string): SettingDef {
  const d = BY_PATH.get(path) ?? SETTINGS.find((s) => s.path.toLowerCase() === path.trim().toLowerCase());
  if (d === undefined) throw new UnknownSettingError(path, SETTING_PATHS, closest(path, SETTING_PATHS));
  return d as unknown as SettingDef;
}

/**
 * The declaration a CLI flag names, in any of the forms a parser hands over: `--pool-max`, `pool-max`,
 * `poolMax` (commander's attribute name), or the path itself; aliases such as `--state-dir` too.
 * @throws UnknownSettingError
 */
export function settingForFlag(flag: string): SettingDef {
  const d = BY_FLAG.get(flagKey(flag));
  if (d === undefined) {
    const flags = SETTINGS.flatMap((s) => [s.flag, ...s.flagAliases]);
    throw new UnknownSettingError(flag, flags, closest(flag.startsWith('--') ? flag : `--${flag}`, flags));
  }
  return d;
}

// ---------------------------------------------------------------------------------------------
// Resolution

export interface SettingsSources {
  /** The config file's top level without `mcpServers` (only the setting blocks are read). */
  file?: Record<string, unknown>;
  /** The config file, named in errors; relative paths in the file resolve against its folder. */
  filePath?: string;
  env?: NodeJS.ProcessEnv;
  /** Flag values by flag name (`--pool-max`, `pool-max`, `poolMax` or the path). `undefined` means not given. */
  flags?: Record<string, string | number | boolean | undefined>;
  /** Runtime overrides by path. Omitted in a later `resolve()`: the current runtime overrides are kept. */
  runtime?: Record<string, unknown>;
  /** Relative paths from the environment, flags and runtime resolve against this; default `process.cwd()`. */
  cwd?: string;
}

interface Given {
  source: Exclude<SettingSource, 'default'>;
  /** The variable, flag or file that gave it. */
  from: string;
  value: unknown;
}

/** One row of `list()` and of `GET /v1/settings`. JSON-serialisable. */
export interface SettingEntry {
  path: string;
  /** Machine form: durations in milliseconds, `daemon.port` a number or null (off), paths absolute. */
  value: unknown;
  /** Human form: `2s`, `true`, `off`, … (what `mcpx settings` prints). */
  display: string;
  default: unknown;
  defaultDisplay: string;
  source: SettingSource;
  /** What set it, when not the default: the environment variable, the flag, or the config file. */
  from?: string;
  type: SettingType;
  /** The canonical values of an enum. */
  allowed?: string[];
  env: string;
  envAliases: string[];
  flag: string;
  flagAliases: string[];
  /** The nested key in the config file, dotted (same as `path`). */
  key: string;
  description: string;
  /** Read at start-up only: a runtime change takes effect when the daemon restarts. */
  restart: boolean;
}

export interface SettingChange {
  path: SettingPath;
  value: unknown;
  previous: unknown;
  source: SettingSource;
}

interface Resolved {
  value: unknown;
  default: unknown;
  source: SettingSource;
  from?: string;
}

function fileWhere(filePath: string | undefined, key: string): string {
  return `config ${filePath ?? 'file'}: ${key}`;
}

/**
 * Reads the setting blocks of a config file's top level.
 * Unknown keys inside a block, and blocks that are not objects, are problems; other top-level keys are ignored.
 */
function readFileSource(file: Record<string, unknown> | undefined, filePath: string | undefined): { given: Map<string, Given>; problems: ConfigProblem[] } {
  const given = new Map<string, Given>();
  const problems: ConfigProblem[] = [];
  if (file === undefined) return { given, problems };
  const problem = (key: string, message: string): void => {
    problems.push({ source: 'file', ...(filePath === undefined ? {} : { file: filePath }), key, message: `${fileWhere(filePath, key)}: ${message}` });
  };
  for (const block of SETTING_BLOCKS) {
    if (!Object.hasOwn(file, block)) continue;
    const raw = file[block];
    const known = SETTINGS.filter((d) => d.key[0] === block).map((d) => d.key[1] as string);
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      problem(block, `must be an object with the keys ${known.join(', ')}`);
      continue;
    }
    for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
      const d = BY_PATH.get(`${block}.${k}`);
      if (d === undefined) {
        const near = closest(k, known);
        problem(`${block}.${k}`, `not a setting${near ? ` (did you mean ${block}.${near}?)` : ''}; ${block} takes ${known.join(', ')}`);
        continue;
      }
      if (v === undefined) continue;
      given.set(d.path, { source: 'file', from: filePath ?? 'config file', value: v });
    }
  }
  return { given, problems };
}

/** Checks the setting blocks of a config file; `loadConfig` reports these with the server problems. */
export function checkSettingsFile(file: Record<string, unknown>, filePath?: string, env: NodeJS.ProcessEnv = process.env): ConfigProblem[] {
  const { given, problems } = readFileSource(file, filePath);
  const home = homeFolder(env);
  const baseDir = filePath === undefined ? process.cwd() : resolvePath(filePath, '..');
  for (const [path, g] of given) {
    const r = (BY_PATH.get(path) as SettingDef).codec.parse(g.value, { text: false, baseDir, home });
    if (!r.ok)
      problems.push({
        source: 'file',
        ...(filePath === undefined ? {} : { file: filePath }),
        key: path,
        message: `${fileWhere(filePath, path)}: ${r.message}`,
      });
  }
  return problems;
}

/**
 * Checks one value for one setting, as it would arrive from `source`, without changing anything.
 * @throws UnknownSettingError for an unknown path; SettingValueError (MCPX_BAD_SETTING) for a bad value.
 */
export function parseSettingValue<P extends SettingPath>(
  path: P,
  value: unknown,
  opts: { text?: boolean; baseDir?: string; home?: string; where?: string } = {},
): SettingValues[P] {
  const d = findSetting(path);
  const r = d.codec.parse(value, { text: opts.text ?? typeof value === 'string', baseDir: opts.baseDir ?? process.cwd(), home: opts.home ?? homedir() });
  if (!r.ok) {
    throw new SettingValueError([{ source: 'runtime', key: d.path, message: `${opts.where ?? `setting ${d.path}`}: ${r.message}` }], {
      path: d.path,
      ...(d.codec.allowed ? { allowed: [...d.codec.allowed] } : {}),
    });
  }
  return r.value as SettingValues[P];
}

/**
 * The live settings of one daemon. `resolve()` reads the sources, checks every value they give, and
 * either replaces the current values or, on any refusal, throws and keeps them.
 */
export class Settings {
  private file: Map<string, Given> = new Map();
  private env: Map<string, Given> = new Map();
  private flags: Map<string, Given> = new Map();
  private runtime: Map<string, Given> = new Map();
  private envVars: NodeJS.ProcessEnv = {};
  private cwd = process.cwd();
  private fileDir: string | undefined;
  private values = new Map<string, Resolved>();
  private readonly listeners = new Set<(change: SettingChange) => void>();

  constructor(sources: SettingsSources = {}) {
    this.resolve(sources);
  }

  /**
   * Reads every source. Bad values from any source are all collected into one SettingValueError
   * (MCPX_BAD_SETTING; `problems` has one entry each, each message naming its source).
   * @throws UnknownSettingError for a flag or runtime key that names no setting.
   */
  resolve(sources: SettingsSources = {}): this {
    const env = sources.env ?? process.env;
    const cwd = sources.cwd ?? process.cwd();
    const home = homeFolder(env);
    const fileDir = sources.filePath === undefined ? undefined : resolvePath(cwd, sources.filePath, '..');

    const fromFile = readFileSource(sources.file, sources.filePath);
    const problems = [...fromFile.problems];

    const fromEnv = new Map<string, Given>();
    for (const d of BY_PATH.values()) {
      for (const name of [d.env, ...d.envAliases]) {
        const v = env[name];
        if (v === undefined || v.trim() === '') continue; // an empty variable counts as unset
        fromEnv.set(d.path, { source: 'env', from: name, value: v });
        break; // the derived name wins over aliases
      }
    }

    const fromFlags = new Map<string, Given>();
    for (const [name, v] of Object.entries(sources.flags ?? {})) {
      if (v === undefined) continue;
      const d = settingForFlag(name);
      const spelled = [d.flag, ...d.flagAliases].find((f) => flagKey(f) === flagKey(name)) ?? d.flag;
      fromFlags.set(d.path, { source: 'flag', from: spelled, value: typeof v === 'string' ? v : String(v) });
    }

    let fromRuntime = this.runtime;
    if (sources.runtime !== undefined) {
      fromRuntime = new Map();
      for (const [path, v] of Object.entries(sources.runtime)) {
        const d = findSetting(path);
        fromRuntime.set(d.path, { source: 'runtime', from: 'runtime', value: v });
      }
    }

    const next = this.compute({ file: fromFile.given, env: fromEnv, flags: fromFlags, runtime: fromRuntime }, { env, home, cwd, fileDir }, problems);
    if (problems.length > 0) throw new SettingValueError(problems);

    this.file = fromFile.given;
    this.env = fromEnv;
    this.flags = fromFlags;
    this.runtime = fromRuntime;
    this.envVars = env;
    this.cwd = cwd;
    this.fileDir = fileDir;
    this.commit(next);
    return this;
  }

  /** The resolved value. @throws UnknownSettingError */
  get<P extends SettingPath>(path: P): SettingValues[P];
  get(path: string): unknown;
  get(path: string): unknown {
    return (this.values.get(findSetting(path).path) as Resolved).value;
  }

  /** Every resolved value by path. */
  snapshot(): SettingValues {
    return Object.fromEntries([...this.values].map(([p, r]) => [p, r.value])) as SettingValues;
  }

  /** One setting's row. @throws UnknownSettingError */
  entry(path: string): SettingEntry {
    const d = findSetting(path);
    const r = this.values.get(d.path) as Resolved;
    const display = d.codec.display as (v: unknown) => string;
    return {
      path: d.path,
      value: r.value,
      display: display(r.value),
      default: r.default,
      defaultDisplay: display(r.default),
      source: r.source,
      ...(r.from === undefined ? {} : { from: r.from }),
      type: d.codec.type,
      ...(d.codec.allowed ? { allowed: [...d.codec.allowed] } : {}),
      env: d.env,
      envAliases: [...d.envAliases],
      flag: d.flag,
      flagAliases: [...d.flagAliases],
      key: d.path,
      description: d.description,
      restart: d.restart,
    };
  }

  /** Every setting's row, in declaration order. */
  list(): SettingEntry[] {
    return SETTINGS.map((d) => this.entry(d.path));
  }

  /**
   * Sets a runtime override (the highest source). Strings are read as text (`"8"`, `"yes"`, `"90s"`);
   * `upstream.protocol` takes every alias and stores the canonical name.
   * @throws UnknownSettingError; SettingValueError (MCPX_BAD_SETTING) naming the path and, for an enum, the allowed values.
   */
  setRuntime(path: string, value: unknown): SettingEntry {
    const d = findSetting(path);
    if (value === undefined) {
      throw new SettingValueError(
        [{ source: 'runtime', key: d.path, message: `setting ${d.path}: a value is needed (unset it to go back to the lower sources)` }],
        { path: d.path },
      );
    }
    const parsed = parseSettingValue(d.path as SettingPath, value, { baseDir: this.cwd, home: homeFolder(this.envVars) });
    const runtime = new Map(this.runtime);
    runtime.set(d.path, { source: 'runtime', from: 'runtime', value: parsed });
    this.recomputeWith(runtime);
    return this.entry(d.path);
  }

  /** Removes a runtime override; the value falls back to flag, environment, file or default. @throws UnknownSettingError */
  unsetRuntime(path: string): SettingEntry {
    const d = findSetting(path);
    if (this.runtime.has(d.path)) {
      const runtime = new Map(this.runtime);
      runtime.delete(d.path);
      this.recomputeWith(runtime);
    }
    return this.entry(d.path);
  }

  /** The runtime overrides by path (to carry them over a restart or a reload). */
  runtimeOverrides(): Record<string, unknown> {
    return Object.fromEntries([...this.runtime].map(([p, g]) => [p, g.value]));
  }

  /** Calls `listener` for every value that changes, after it changed. Returns the unsubscribe function. */
  onChange(listener: (change: SettingChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private recomputeWith(runtime: Map<string, Given>): void {
    const problems: ConfigProblem[] = [];
    const next = this.compute(
      { file: this.file, env: this.env, flags: this.flags, runtime },
      { env: this.envVars, home: homeFolder(this.envVars), cwd: this.cwd, fileDir: this.fileDir },
      problems,
    );
    if (problems.length > 0) throw new SettingValueError(problems);
    this.runtime = runtime;
    this.commit(next);
  }

  private compute(
    given: Record<'file' | 'env' | 'flags' | 'runtime', Map<string, Given>>,
    ctx: { env: NodeJS.ProcessEnv; home: string; cwd: string; fileDir: string | undefined },
    problems: ConfigProblem[],
  ): Map<string, Resolved> {
    const out = new Map<string, Resolved>();
    const get = (path: string): unknown => out.get(path)?.value;
    for (const d of BY_PATH.values()) {
      const def = typeof d.default === 'function' ? (d.default as (c: DefaultContext) => unknown)({ env: ctx.env, home: ctx.home, get }) : d.default;
      let chosen: Resolved = { value: def, default: def, source: 'default' };
      // lowest first, so the last valid one wins
      for (const g of [given.file.get(d.path), given.env.get(d.path), given.flags.get(d.path), given.runtime.get(d.path)]) {
        if (g === undefined) continue;
        const baseDir = g.source === 'file' ? (ctx.fileDir ?? ctx.cwd) : ctx.cwd;
        const r = d.codec.parse(g.value, { text: g.source !== 'file', baseDir, home: ctx.home });
        if (!r.ok) {
          problems.push(problemFor(d, g, r.message));
          continue;
        }
        chosen = { value: r.value, default: def, source: g.source, from: g.from };
      }
      out.set(d.path, chosen);
    }
    return out;
  }

  private commit(next: Map<string, Resolved>): void {
    const before = this.values;
    this.values = next;
    if (before.size === 0) return;
    for (const [path, r] of next) {
      const prev = before.get(path)?.value;
      if (!Object.is(prev, r.value)) {
        for (const l of this.listeners) l({ path: path as SettingPath, value: r.value, previous: prev, source: r.source });
      }
    }
  }
}

function problemFor(d: SettingDef, g: Given, message: string): ConfigProblem {
  switch (g.source) {
    case 'file':
      return {
        source: 'file',
        ...(g.from === 'config file' ? {} : { file: g.from }),
        key: d.path,
        message: `${fileWhere(g.from === 'config file' ? undefined : g.from, d.path)}: ${message}`,
      };
    case 'env':
      return { source: 'env', key: d.path, message: `environment variable ${g.from}: ${message}` };
    case 'flag':
      return { source: 'flag', key: d.path, message: `flag ${g.from}: ${message}` };
    case 'runtime':
      return { source: 'runtime', key: d.path, message: `setting ${d.path}: ${message}` };
  }
}
