/**
 * The config file (the README): the `mcpServers` JSON that Claude Desktop, Claude Code,
 * Cursor and VS Code use, so an existing file works unchanged, plus mcpx's own keys.
 *
 * - JSON with comments and trailing commas is accepted (jsonc-parser); a syntax error names the line and column.
 * - Servers live under `mcpServers` (Claude Desktop, Claude Code, Cursor) or `servers` (VS Code's `mcp.json`);
 *   a file with both is an error.
 * - A server has `command` (stdio) or `url` (Streamable HTTP), exactly one. `type`/`transport` as other tools
 *   write them (`stdio`, `http`, `streamable-http`, `sse`) are accepted and must agree with it.
 * - `${VAR}`, `${VAR:-default}` (Claude Code), `${env:VAR}`, `${workspaceFolder}`, `${userHome}` (VS Code,
 *   Cursor) are expanded in command, args, env, cwd, url and headers, as those tools do.
 * - Unknown keys at the top level and in a server entry are ignored with a warning (the file may be another
 *   client's too), naming the nearest known key; a few keys other clients write are accepted silently
 *   (FOREIGN_*). An unknown key inside mcpx's own blocks (a setting block, a server's `mcpx`) is an error.
 * - Every error names the file, the server and the key, and all of them are collected.
 */
import { parseOAuthSettings } from '../upstream/oauth-settings.js';
import { REDACTED, redactUrl } from '../redaction.js';
import { closeSync, constants, fstatSync, openSync, readFile as readFileCb, type Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Socket } from 'node:net';
import { basename, dirname, join, resolve as resolvePath, sep, isAbsolute } from 'node:path';
import { findNodeAtLocation, parse as parseJsonc, parseTree, printParseErrorCode, type Node, type ParseError } from 'jsonc-parser';
import { ConfigError, type ConfigProblem } from '../errors.js';
import { canonicalPreference, preferenceRefusal, type Preference } from '../machines/preference.js';
import type { PoolLimits, PoolServerConfig, Scope, Sharing } from '../pool/types.js';
import type { HttpDefinition, ServerDefinition, StdioDefinition } from '../upstream/definition.js';
import { checkSettingsFile, didYouMean, findSetting, homeFolder, SETTING_BLOCKS, showValue, type SettingPath } from './settings.js';
import { isObject } from '../is-object.js';
import { capabilitiesOf, DEFAULT_URL_WIRE, WIRES, type UrlWire, type WireTransport } from '../transports/capabilities.js';

/** How the file was found: `--config`, `MCPX_CONFIG`, walking up from the working directory, or the user config. */
export type ConfigVia = 'flag' | 'env' | 'project' | 'user';

export interface ConfigLocation {
  file: string;
  via: ConfigVia;
}

/** A server's `mcpx.tools`: globs on its tools' own names (src/catalog/tool-policy.ts reads them). */
export interface ToolFilter {
  allow?: string[];
  deny?: string[];
}

/** Per-server timeouts from the `mcpx` block (over `upstream.*`). */
export interface ServerTimeouts {
  probeTimeoutMs?: number;
  startTimeoutMs?: number;
  requestTimeoutMs?: number;
}

/** One configured server, checked and normalised; the effective values come from `resolvePoolConfigs`. */
export interface ResolvedServer {
  name: string;
  transport: 'stdio' | 'http';
  /** Stdio: command, args, env, cwd (absolute: the config file's folder unless the entry says otherwise). HTTP: url, headers. */
  definition: ServerDefinition;
  /** The server's own `protocol` (canonical), or undefined: `upstream.protocol` applies. */
  preference?: Preference;
  /** From the `mcpx` block: only the keys it gives. */
  limits: Partial<PoolLimits>;
  timeouts: ServerTimeouts;
  /** From the `mcpx` block (stdio only): inherit the daemon's whole environment; absent: `upstream.inheritEnv`. */
  inheritEnv?: boolean;
  /** From the `mcpx` block: the folders mcpx answers this server's `roots/list` with (absolute), when given. */
  roots?: string[];
  /** From the `mcpx` block: which of its tools are served (globs on its own names; docs/serving.md). */
  tools?: ToolFilter;
  /** From the `mcpx` block: tools that stay in every listing (`true`: all). */
  pin?: true | string[];
  /** From the `mcpx` block: hold a tool whose definition changed since first seen; absent: `catalog.pinTools`. */
  pinTools?: boolean;
  disabled: boolean;
  /**
   * What `${VAR}` / `${env:VAR}` expansions put into this server's strings (command, args, cwd, url, …):
   * secrets like `env` values (docs/contract.md), never shown; the views and the scrubber blank them.
   */
  expanded?: string[];
}

export interface LoadedConfig {
  /** A config file was found and read (false with no errors: run the bundled demo). */
  found: boolean;
  file?: string;
  via?: ConfigVia;
  /** Which key held the servers. */
  serversKey?: 'mcpServers' | 'servers';
  /** The servers that passed every check, in file order. */
  servers: ResolvedServer[];
  /** The setting blocks of the top level (`upstream`, `pool`, `paths`, `daemon`, `log`) for `Settings.resolve({ file })`. */
  settingsFile: Record<string, unknown>;
  /** Every problem found; empty when the file is good. A non-empty list means do not run this config. */
  errors: ConfigProblem[];
  /** Things that work but may not do what the user meant (an ignored key that looks like a typo, `type: "sse"`, …). */
  warnings: ConfigProblem[];
}

export interface LoadConfigOptions {
  /** `--config FILE`; relative to `cwd`. */
  configFlag?: string;
  /** Default `process.env`: MCPX_CONFIG, XDG_CONFIG_HOME, HOME and `${VAR}` expansion read it. */
  env?: NodeJS.ProcessEnv;
  /** Where the walk up starts; default `process.cwd()`. */
  cwd?: string;
}

export const PROJECT_CONFIG_NAMES = ['.mcpx.json', '.mcp.json'] as const;

/** `$XDG_CONFIG_HOME/mcpx/config.json` (absolute XDG_CONFIG_HOME only), else `~/.config/mcpx/config.json`. */
export function userConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env['XDG_CONFIG_HOME'];
  return xdg !== undefined && isAbsolute(xdg) ? join(xdg, 'mcpx', 'config.json') : join(homeFolder(env), '.config', 'mcpx', 'config.json');
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/**
 * Which file to read: `--config` or `MCPX_CONFIG` (that file alone, whether or not it exists); else the
 * nearest `.mcpx.json` or `.mcp.json` walking up from `cwd` (`.mcpx.json` first in each folder); else the
 * user config. Undefined when none exists.
 */
export async function findConfigFile(opts: LoadConfigOptions = {}): Promise<ConfigLocation | undefined> {
  const env = opts.env ?? process.env;
  const cwd = resolvePath(opts.cwd ?? process.cwd());
  if (opts.configFlag !== undefined) return { file: resolvePath(cwd, opts.configFlag), via: 'flag' };
  const fromEnv = env['MCPX_CONFIG'];
  if (fromEnv !== undefined && fromEnv.trim() !== '') return { file: resolvePath(cwd, fromEnv), via: 'env' };
  for (let dir = cwd; ; dir = dirname(dir)) {
    for (const name of PROJECT_CONFIG_NAMES) {
      const file = join(dir, name);
      if (await isFile(file)) return { file, via: 'project' };
    }
    if (dirname(dir) === dir) break;
  }
  const user = userConfigPath(env);
  return (await isFile(user)) ? { file: user, via: 'user' } : undefined;
}

/** How long, and how much, a config given as a pipe is read: `--config <(…)` from a writer that never ends. */
export const CONFIG_PIPE_TIMEOUT_MS = 5_000;
export const CONFIG_PIPE_MAX_BYTES = 16 * 1024 * 1024;
/** Pipes read by this process, by path: a pipe can be read once, so a reload of one gets what it gave. */
const pipeTexts = new Map<string, string>();
let firstRead = true;

/**
 * The config file's text. A regular file (through symlinks, as dotfiles often are) is read as it is. A
 * FIFO is read only when `--config` names it and it is the first config this process reads (`mcpx config
 * --config <(…)`, a foreground `mcpx daemon --config <(…)`), within CONFIG_PIPE_TIMEOUT_MS and
 * CONFIG_PIPE_MAX_BYTES. Anything else (a FIFO swapped in under a running daemon, a device, a socket) is
 * refused at once: opened without blocking, never read. Errors carry the reason in their message.
 */
async function readConfigText(file: string, via: ConfigVia): Promise<string> {
  const first = firstRead;
  firstRead = false;
  const fd = openSync(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  let s: Stats;
  try {
    s = fstatSync(fd);
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  if (s.isFile()) {
    return new Promise((resolve, reject) => {
      readFileCb(fd, 'utf8', (err, text) => {
        closeSync(fd);
        if (err) reject(err);
        else resolve(text);
      });
    });
  }
  if (s.isDirectory()) {
    closeSync(fd);
    throw Object.assign(new Error('is a folder, not a file'), { code: 'EISDIR' });
  }
  const kept = s.isFIFO() ? pipeTexts.get(file) : undefined;
  if (kept !== undefined) {
    closeSync(fd);
    return kept;
  }
  if (!s.isFIFO() || via !== 'flag' || !first) {
    closeSync(fd);
    const kind = s.isFIFO()
      ? 'a FIFO (named pipe)'
      : s.isSocket()
        ? 'a socket'
        : s.isCharacterDevice()
          ? 'a character device'
          : s.isBlockDevice()
            ? 'a block device'
            : 'not a regular file';
    throw new Error(`is ${kind}, not a regular file; mcpx reads only regular files (a pipe only when --config names it at the start)`);
  }
  const text = await readPipe(fd);
  pipeTexts.set(file, text);
  return text;
}

/** All a pipe gives until its end, bounded in time and size; `fd` is closed either way. */
function readPipe(fd: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = new Socket({ fd, readable: true, writable: false });
    const chunks: Buffer[] = [];
    let size = 0;
    const fail = (message: string) => {
      clearTimeout(timer);
      sock.destroy();
      reject(new Error(message));
    };
    const timer = setTimeout(() => fail(`is a pipe that did not end within ${CONFIG_PIPE_TIMEOUT_MS / 1000} s`), CONFIG_PIPE_TIMEOUT_MS);
    sock.on('data', (c: Buffer) => {
      size += c.length;
      if (size > CONFIG_PIPE_MAX_BYTES) fail(`is a pipe that gave more than ${CONFIG_PIPE_MAX_BYTES} bytes`);
      else chunks.push(c);
    });
    sock.once('end', () => {
      clearTimeout(timer);
      sock.destroy();
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
    sock.once('error', (err) => fail(err.message));
  });
}

/** Finds and reads the config. Never throws for what a file contains: problems come back in `errors`. */
export async function loadConfig(opts: LoadConfigOptions = {}): Promise<LoadedConfig> {
  const env = opts.env ?? process.env;
  const location = await findConfigFile(opts);
  if (location === undefined) return { found: false, servers: [], settingsFile: {}, errors: [], warnings: [] };
  const { file, via } = location;
  let text: string;
  try {
    text = await readConfigText(file, via);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const named = via === 'flag' ? ' (named by --config)' : via === 'env' ? ' (named by MCPX_CONFIG)' : '';
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a folder, not a file' : (err as Error).message;
    return {
      found: false,
      file,
      via,
      servers: [],
      settingsFile: {},
      errors: [{ source: 'file', file, message: `config ${file}${named}: ${why}` }],
      warnings: [],
    };
  }
  return { ...parseConfigText(text, file, { env }), via };
}

/** Throws ConfigError (MCPX_BAD_CONFIG, every problem in `problems`) when `config` has errors. */
export function assertConfigOk(config: LoadedConfig): void {
  if (config.errors.length > 0) throw new ConfigError(config.errors, config.file);
}

// ---------------------------------------------------------------------------------------------
// Parsing

const SYNTAX_TEXT: Record<string, string> = {
  InvalidSymbol: 'unexpected character',
  InvalidNumberFormat: 'malformed number',
  PropertyNameExpected: 'property name expected',
  ValueExpected: 'value expected',
  ColonExpected: '":" expected',
  CommaExpected: '"," expected',
  CloseBraceExpected: '"}" expected',
  CloseBracketExpected: '"]" expected',
  EndOfFileExpected: 'end of file expected (something follows the top-level value)',
  InvalidCommentToken: 'malformed comment',
  UnexpectedEndOfComment: 'unterminated comment',
  UnexpectedEndOfString: 'unterminated string',
  UnexpectedEndOfNumber: 'unterminated number',
  InvalidUnicode: 'malformed \\u escape',
  InvalidEscapeCharacter: 'malformed escape',
  InvalidCharacter: 'control character in a string',
};

function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i += 1) {
    if (text.charCodeAt(i) === 10) {
      line += 1;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

type KeyPath = (string | number)[];

const PLAIN_KEY = /^[A-Za-z_$][\w$-]*$/;

/** `['mcpServers', 'remote', 'mcpx', 'idleTimeout']` → `mcpServers.remote.mcpx.idleTimeout`; odd names in brackets. */
export function dottedKey(path: KeyPath): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (PLAIN_KEY.test(seg)) out += out === '' ? seg : `.${seg}`;
    else out += `[${JSON.stringify(seg)}]`;
  }
  return out;
}

/** The keys of a server entry mcpx reads; anything else is another tool's business. */
const SERVER_KEYS = ['command', 'args', 'env', 'cwd', 'url', 'headers', 'oauth', 'type', 'transport', 'protocol', 'disabled', 'mcpx'] as const;

/** Top-level keys other clients write in these files (JSON schema, VS Code's prompted inputs, Claude Desktop's app settings): accepted silently. */
const FOREIGN_TOP_KEYS = new Set(['$schema', 'inputs', 'globalShortcut', 'preferences']);

/**
 * Server keys other clients write that change nothing in how a server runs (the client's own approval of
 * calls, a label): accepted silently.
 */
const FOREIGN_SERVER_KEYS = new Set(['alwaysAllow', 'autoApprove', 'trust', 'description']);

/** Server keys other clients write for something mcpx does its own way: ignored, with a word on mcpx's way. */
const FOREIGN_SERVER_HINTS: Readonly<Record<string, string>> = {
  timeout: 'for mcpx\'s request timeout write "mcpx": {"requestTimeout": "60s"}',
  enabled: 'mcpx reads "disabled": true',
  serverUrl: 'mcpx reads "url"',
  httpUrl: 'mcpx reads "url"',
  transportType: 'mcpx reads "type"',
  envFile: 'mcpx reads no env file; put the variables in "env"',
  disabledTools: 'to leave tools out write "mcpx": {"tools": {"deny": ["name", "prefix_*"]}}',
  includeTools: 'to serve only some tools write "mcpx": {"tools": {"allow": ["name", "prefix_*"]}}',
  excludeTools: 'to leave tools out write "mcpx": {"tools": {"deny": ["name", "prefix_*"]}}',
};

/** The `mcpx` block's keys and the settings they override. */
export const MCPX_BLOCK_KEYS = {
  scope: 'pool.scope',
  max: 'pool.max',
  sharing: 'pool.sharing',
  idleTimeout: 'pool.idleTimeout',
  probeTimeout: 'upstream.probeTimeout',
  startTimeout: 'upstream.startTimeout',
  requestTimeout: 'upstream.requestTimeout',
  inheritEnv: 'upstream.inheritEnv',
} as const satisfies Record<string, SettingPath>;

/** `type`/`transport` spellings: each wire's own name (src/transports/capabilities.ts), and what other tools write for Streamable HTTP. */
const TRANSPORT_NAMES: Readonly<Record<string, WireTransport>> = {
  ...Object.fromEntries(WIRES.map((w) => [w, w])),
  http: 'streamable-http',
  streamablehttp: 'streamable-http',
  streamable_http: 'streamable-http',
};
/** The names a config error suggests. */
const TRANSPORT_HINT = ((names: string[]) => `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`)(['stdio', 'http', ...WIRES.filter((w) => w !== 'stdio')]);

interface ExpandContext {
  env: NodeJS.ProcessEnv;
  home: string;
  workspaceFolder: string;
}

type Expanded = { ok: true; value: string; missingEnv: string[]; fromEnv: string[] } | { ok: false; message: string };

const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A variable's value; never something inherited from Object.prototype (`${constructor}`). */
const envValue = (env: NodeJS.ProcessEnv, name: string): string | undefined => {
  const v = Object.hasOwn(env, name) ? env[name] : undefined;
  return typeof v === 'string' ? v : undefined;
};

/**
 * Expands the variables other tools expand in these files. `${NAME}` with NAME unset is an error (as in
 * Claude Code); `${env:NAME}` unset is empty (as in VS Code, and reported as a warning); `${input:…}`
 * needs a prompt mcpx cannot show. Anything else in `${…}` is left as written.
 */
export function expandVariables(text: string, ctx: ExpandContext): Expanded {
  const missingEnv: string[] = [];
  // Values read from the environment: secrets wherever they land (a `:-default` written in the file is not).
  const fromEnv: string[] = [];
  const taken = (v: string): string => {
    if (v !== '') fromEnv.push(v);
    return v;
  };
  let error: string | undefined;
  const value = text.replace(/\$\{([^}]*)\}/g, (whole, inner: string) => {
    const v = inner.trim();
    if (v === 'workspaceFolder') return ctx.workspaceFolder;
    if (v === 'workspaceFolderBasename') return basename(ctx.workspaceFolder);
    if (v === 'userHome') return ctx.home;
    if (v === 'pathSeparator' || v === '/') return sep;
    if (v.startsWith('env:')) {
      const name = v.slice(4);
      const got = envValue(ctx.env, name);
      if (got === undefined) missingEnv.push(name);
      return taken(got ?? '');
    }
    if (v.startsWith('input:')) {
      error ??= `${whole} asks the editor to prompt for a value, which mcpx cannot do; put the value in an environment variable and write \${env:NAME}`;
      return whole;
    }
    const dash = v.indexOf(':-');
    const name = dash === -1 ? v : v.slice(0, dash);
    if (!VAR_NAME.test(name)) return whole;
    const got = envValue(ctx.env, name);
    if (dash !== -1) return got === undefined || got === '' ? v.slice(dash + 2) : taken(got);
    if (got === undefined) {
      error ??= `${whole} is not set in the environment (write \${${name}:-default} to give a fallback)`;
      return whole;
    }
    return taken(got);
  });
  return error === undefined ? { ok: true, value, missingEnv, fromEnv } : { ok: false, message: error };
}

export interface ParseConfigOptions {
  env?: NodeJS.ProcessEnv;
}

/** How deep a config file may nest; the outermost object is level 1. */
export const MAX_CONFIG_DEPTH = 64;

/**
 * The offset of the first `{` or `[` past `limit` levels of JSONC text (strings and comments skipped), or
 * undefined. One pass, no recursion.
 */
export function tooDeep(text: string, limit: number): number | undefined {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // a string: skip to its closing quote
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c) i++;
    } else if (c === 0x2f && text.charCodeAt(i + 1) === 0x2f) {
      const nl = text.indexOf('\n', i);
      i = nl === -1 ? text.length : nl;
    } else if (c === 0x2f && text.charCodeAt(i + 1) === 0x2a) {
      const end = text.indexOf('*/', i + 2);
      i = end === -1 ? text.length : end + 1;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) return i;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return undefined;
}

/**
 * Checks and normalises the text of a config file (already read). `file` is named in every message and
 * anchors relative `cwd` values and `${workspaceFolder}`.
 */
export function parseConfigText(rawText: string, file: string, opts: ParseConfigOptions = {}): LoadedConfig {
  const env = opts.env ?? process.env;
  const errors: ConfigProblem[] = [];
  const warnings: ConfigProblem[] = [];
  const base: LoadedConfig = { found: true, file, servers: [], settingsFile: {}, errors, warnings };
  const text = rawText.charCodeAt(0) === 0xfeff ? rawText.slice(1) : rawText;

  if (text.trim() === '') {
    errors.push({ source: 'file', file, line: 1, column: 1, message: `config ${file}: the file is empty (expected a JSON object such as {"mcpServers": {}})` });
    return base;
  }
  // jsonc-parser recurses once per level: a hostile depth would overflow the stack, naming no file.
  const deep = tooDeep(text, MAX_CONFIG_DEPTH);
  if (deep !== undefined) {
    const { line, column } = lineColumn(text, deep);
    errors.push({
      source: 'file',
      file,
      line,
      column,
      message: `config ${file}: line ${line}, column ${column}: nests deeper than ${MAX_CONFIG_DEPTH} levels (objects and arrays inside each other); a config file needs a handful`,
    });
    return base;
  }
  const syntax: ParseError[] = [];
  const doc: unknown = parseJsonc(text, syntax, { allowTrailingComma: true, disallowComments: false, allowEmptyContent: false });
  if (syntax.length > 0) {
    for (const e of syntax.slice(0, 10)) {
      const { line, column } = lineColumn(text, e.offset);
      const what = SYNTAX_TEXT[printParseErrorCode(e.error)] ?? printParseErrorCode(e.error);
      errors.push({ source: 'file', file, line, column, message: `config ${file}: line ${line}, column ${column}: ${what}` });
    }
    return base;
  }
  if (!isObject(doc)) {
    errors.push({
      source: 'file',
      file,
      message: `config ${file}: the top level must be a JSON object (found ${Array.isArray(doc) ? 'an array' : showValue(doc)})`,
    });
    return base;
  }

  const tree = parseTree(text, [], { allowTrailingComma: true, disallowComments: false });
  const locate = (path: KeyPath): { line?: number; column?: number } => {
    if (tree === undefined) return {};
    for (let p = path; p.length > 0; p = p.slice(0, -1)) {
      const node: Node | undefined = findNodeAtLocation(tree, p);
      if (node !== undefined) return lineColumn(text, node.parent?.type === 'property' ? node.parent.offset : node.offset);
    }
    return {};
  };
  const problemAt = (list: ConfigProblem[], path: KeyPath, message: string, server?: string): void => {
    list.push({
      source: 'file',
      file,
      key: dottedKey(path),
      ...(server === undefined ? {} : { server }),
      ...locate(path),
      message: `config ${file}: ${dottedKey(path)}: ${message}`,
    });
  };

  // `__proto__` as a key: the parser made it the object's prototype, so it would vanish without a word
  // (a server, an env variable, a header). Refused wherever it is, as any other bad key is.
  for (const path of protoKeyPaths(tree)) {
    const server = (path[0] === 'mcpServers' || path[0] === 'servers') && typeof path[1] === 'string' ? path[1] : undefined;
    problemAt(errors, path, `"__proto__" cannot be used as a name here (JavaScript reserves it); rename it`, server);
  }

  // the setting blocks
  const settingsFile: Record<string, unknown> = {};
  for (const block of SETTING_BLOCKS) if (Object.hasOwn(doc, block)) settingsFile[block] = doc[block];
  base.settingsFile = settingsFile;
  for (const p of checkSettingsFile(settingsFile, file, env)) errors.push({ ...p, ...(p.key === undefined ? {} : locate(p.key.split('.'))) });

  // other top-level keys: another client's, or a typo of one of mcpx's (`upstrem`)
  const topKeys = ['mcpServers', 'servers', ...SETTING_BLOCKS];
  for (const k of Object.keys(doc)) {
    if (topKeys.includes(k) || FOREIGN_TOP_KEYS.has(k)) continue;
    problemAt(warnings, [k], `is not a key mcpx reads and is ignored${didYouMean(k, topKeys)}`);
  }

  // the servers
  const hasMcp = Object.hasOwn(doc, 'mcpServers');
  const hasVs = Object.hasOwn(doc, 'servers');
  if (hasMcp && hasVs) {
    problemAt(
      errors,
      ['servers'],
      'the file has both "mcpServers" and "servers"; keep one (mcpServers as Claude Desktop writes it, or servers as VS Code does)',
    );
    return base;
  }
  if (!hasMcp && !hasVs) return base;
  const serversKey = hasMcp ? 'mcpServers' : 'servers';
  base.serversKey = serversKey;
  const servers = doc[serversKey];
  if (!isObject(servers)) {
    problemAt(
      errors,
      [serversKey],
      `must be an object of servers by name, e.g. {"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}}`,
    );
    return base;
  }

  const fileDir = dirname(file);
  const home = homeFolder(env);
  const ctx: ExpandContext = {
    env,
    home,
    workspaceFolder: ['.vscode', '.cursor'].includes(basename(fileDir)) ? dirname(fileDir) : fileDir,
  };

  // a name given twice: JSON keeps the last one, which is rarely what the author meant
  const serversNode = tree === undefined ? undefined : findNodeAtLocation(tree, [serversKey]);
  const seen = new Set<string>();
  for (const prop of serversNode?.type === 'object' ? (serversNode.children ?? []) : []) {
    const key = prop.children?.[0]?.value;
    if (typeof key !== 'string') continue;
    if (seen.has(key)) {
      const { line, column } = lineColumn(text, prop.offset);
      warnings.push({
        source: 'file',
        file,
        key: dottedKey([serversKey, key]),
        server: key,
        line,
        column,
        message: `config ${file}: ${dottedKey([serversKey, key])}: is defined more than once; the last definition is used`,
      });
    }
    seen.add(key);
  }

  for (const [name, entry] of Object.entries(servers)) {
    const server = checkServer(name, entry, [serversKey, name], {
      fileDir,
      home,
      expand: ctx,
      problem: (path, message) => problemAt(errors, path, message, name),
      warn: (path, message) => problemAt(warnings, path, message, name),
    });
    if (server !== undefined) base.servers.push(server);
  }
  return base;
}

/** The key paths of every `__proto__` property in the document (iterative: a deep file cannot overflow the stack). */
function protoKeyPaths(tree: Node | undefined): KeyPath[] {
  const found: KeyPath[] = [];
  const stack: Array<[Node, KeyPath]> = tree === undefined ? [] : [[tree, []]];
  while (stack.length > 0) {
    const [node, path] = stack.pop()!;
    if (node.type === 'object') {
      for (const prop of node.children ?? []) {
        const key = prop.children?.[0]?.value;
        const value = prop.children?.[1];
        if (typeof key !== 'string') continue;
        if (key === '__proto__') found.push([...path, key]);
        if (value !== undefined) stack.push([value, [...path, key]]);
      }
    } else if (node.type === 'array') {
      (node.children ?? []).forEach((child, i) => stack.push([child, [...path, i]]));
    }
  }
  return found.sort((a, b) => dottedKey(a).localeCompare(dottedKey(b)));
}

interface ServerCheckContext {
  fileDir: string;
  home: string;
  expand: ExpandContext;
  problem(path: KeyPath, message: string): void;
  warn(path: KeyPath, message: string): void;
}

/** Numbers and booleans become strings (as a shell would pass them); anything else is refused. */
function asText(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if ((typeof v === 'number' && Number.isFinite(v)) || typeof v === 'boolean') return String(v);
  return undefined;
}

/**
 * One server entry being checked. Every step reports through `problem` (the server is then left out) or
 * `warn`, naming the key path; parseConfigText adds the file, the server and the line.
 */
interface EntryCheck {
  entry: Record<string, unknown>;
  at: KeyPath;
  c: ServerCheckContext;
  problem(path: KeyPath, message: string): void;
  warn(path: KeyPath, message: string): void;
  /** Expands the variables in `value`; `secret: false` for a value public by its nature (kept out of `expanded`). */
  expand(path: KeyPath, value: string, secret?: boolean): string;
  /** A problem was reported. */
  readonly bad: boolean;
  /** The values expanded from the environment (blanked wherever the server's config is shown). */
  readonly expanded: ReadonlySet<string>;
}

function checkServer(name: string, entry: unknown, at: KeyPath, c: ServerCheckContext): ResolvedServer | undefined {
  if (!isObject(entry)) {
    c.problem(at, `must be an object with "command" (stdio) or "url" (Streamable HTTP)`);
    return undefined;
  }
  const ck = entryCheck(entry, at, c);
  checkName(ck, name);
  warnUnknownKeys(ck);
  const declared = declaredTransport(ck);
  const transport = checkCommandOrUrl(ck, declared);
  const definition = transport === 'stdio' ? stdioDefinition(ck) : httpDefinition(ck, declared);
  const preference = protocolPreference(ck);
  const disabled = disabledFlag(ck);
  const { limits, timeouts, inheritEnv, roots, tools, pin, pinTools } = mcpxBlock(ck, transport);
  if (ck.bad) return undefined;
  return {
    name,
    transport,
    definition,
    ...(preference === undefined ? {} : { preference }),
    limits,
    timeouts,
    ...(inheritEnv === undefined ? {} : { inheritEnv }),
    ...(roots === undefined ? {} : { roots }),
    ...(tools === undefined ? {} : { tools }),
    ...(pin === undefined ? {} : { pin }),
    ...(pinTools === undefined ? {} : { pinTools }),
    disabled,
    ...(ck.expanded.size === 0 ? {} : { expanded: [...ck.expanded] }),
  };
}

function entryCheck(entry: Record<string, unknown>, at: KeyPath, c: ServerCheckContext): EntryCheck {
  let bad = false;
  const expanded = new Set<string>();
  const problem = (path: KeyPath, message: string): void => {
    bad = true;
    c.problem(path, message);
  };
  return {
    entry,
    at,
    c,
    problem,
    warn: (path, message) => c.warn(path, message),
    // `secret: false`: a value public by its nature (an OAuth client id travels in the browser's address), never blanked.
    expand: (path, value, secret = true) => {
      const r = expandVariables(value, c.expand);
      if (!r.ok) {
        problem(path, r.message);
        return value;
      }
      if (secret) for (const v of r.fromEnv) expanded.add(v);
      for (const v of r.missingEnv) c.warn(path, `\${env:${v}} is not set in the environment; it expands to an empty string`);
      return r.value;
    },
    get bad() {
      return bad;
    },
    expanded,
  };
}

function checkName(ck: EntryCheck, name: string): void {
  if (name.trim() === '') ck.problem(ck.at, 'a server needs a name');
  if (name.includes('__'))
    ck.warn(ck.at, `the name contains "__", which also separates server and tool in "<server>__<tool>" names; a rename avoids ambiguity`);
}

/** Keys mcpx does not read: ignored (other tools add their own), each with a warning but the few FOREIGN_SERVER_KEYS. */
function warnUnknownKeys({ entry, at, warn }: EntryCheck): void {
  for (const k of Object.keys(entry)) {
    if ((SERVER_KEYS as readonly string[]).includes(k) || FOREIGN_SERVER_KEYS.has(k)) continue;
    const hint = Object.hasOwn(FOREIGN_SERVER_HINTS, k) ? FOREIGN_SERVER_HINTS[k] : undefined;
    if (hint !== undefined) warn([...at, k], `is another client's key, ignored by mcpx: ${hint}`);
    else warn([...at, k], `is not a key mcpx reads and is ignored${didYouMean(k, SERVER_KEYS)}`);
  }
}

/** The transport `type`/`transport` name (both, when given, must agree). */
function declaredTransport({ entry, at, problem }: EntryCheck): WireTransport | undefined {
  let declared: WireTransport | undefined;
  for (const key of ['type', 'transport'] as const) {
    if (!Object.hasOwn(entry, key)) continue;
    const raw = entry[key];
    const spelled = typeof raw === 'string' ? raw.trim().toLowerCase() : undefined;
    const t = spelled !== undefined && Object.hasOwn(TRANSPORT_NAMES, spelled) ? TRANSPORT_NAMES[spelled] : undefined; // not "constructor"'s
    if (t === undefined) {
      problem([...at, key], `${showValue(raw)} is not a transport mcpx knows (use ${TRANSPORT_HINT})`);
      continue;
    }
    if (declared !== undefined && declared !== t) problem([...at, key], `${showValue(raw)} disagrees with "type" ${showValue(entry['type'])}`);
    declared ??= t;
  }
  return declared;
}

/** Exactly one of `command` and `url`, agreeing with the declared transport; the transport the entry has. */
function checkCommandOrUrl({ entry, at, problem }: EntryCheck, declared: WireTransport | undefined): 'stdio' | 'http' {
  // A process-bound wire is spawned from a command; every other one is reached at a url.
  const needsCommand = declared === undefined ? undefined : capabilitiesOf(declared).processBound;
  const hasCommand = Object.hasOwn(entry, 'command') && entry['command'] !== undefined;
  const hasUrl = Object.hasOwn(entry, 'url') && entry['url'] !== undefined;
  if (hasCommand && hasUrl) {
    problem(at, 'has both "command" and "url"; give one: "command" for a stdio server, "url" for a Streamable HTTP server');
  } else if (!hasCommand && !hasUrl) {
    problem(
      at,
      needsCommand !== false
        ? `needs "command" (a stdio server) or "url" (a Streamable HTTP server)`
        : `is type ${showValue(entry['type'] ?? entry['transport'])} and needs a "url"`,
    );
  } else if (needsCommand === true && hasUrl) {
    problem(
      [...at, Object.hasOwn(entry, 'type') ? 'type' : 'transport'],
      `${showValue(entry['type'] ?? entry['transport'])} needs "command", but this server has a "url"`,
    );
  } else if (needsCommand === false && hasCommand) {
    problem(
      [...at, Object.hasOwn(entry, 'type') ? 'type' : 'transport'],
      `${showValue(entry['type'] ?? entry['transport'])} needs "url", but this server has a "command"`,
    );
  }
  return hasUrl && !hasCommand ? 'http' : 'stdio';
}

/** A stdio server: command, args, env and cwd (absolute: the config file's folder by default). */
function stdioDefinition(ck: EntryCheck): StdioDefinition {
  const { entry, at, warn } = ck;
  const def: StdioDefinition = { command: stdioCommand(ck) };
  const args = stdioArgs(ck);
  if (args !== undefined) def.args = args;
  def.env = stringMap(entry, 'env', at, ck.problem, ck.expand) ?? {};
  const cwd = stdioCwd(ck);
  if (cwd !== undefined) def.cwd = cwd;
  if (Object.hasOwn(entry, 'headers')) warn([...at, 'headers'], 'is for HTTP servers and is ignored on a stdio server');
  if (Object.hasOwn(entry, 'oauth')) warn([...at, 'oauth'], 'is for HTTP servers and is ignored on a stdio server');
  return def;
}

function stdioCommand({ entry, at, problem, expand }: EntryCheck): string {
  const cmd = entry['command'];
  if (typeof cmd === 'string' && cmd.trim() !== '') return expand([...at, 'command'], cmd);
  if (Object.hasOwn(entry, 'command') && cmd !== undefined) problem([...at, 'command'], `${showValue(cmd)} is not a command (a non-empty string, e.g. "npx")`);
  return '';
}

/** `args`: an array of strings (see asText); none: no arguments. */
function stdioArgs({ entry, at, problem, expand }: EntryCheck): string[] | undefined {
  if (!Object.hasOwn(entry, 'args')) return [];
  const args = entry['args'];
  if (!Array.isArray(args)) {
    problem([...at, 'args'], `must be an array of strings`);
    return undefined;
  }
  return args.map((a, i) => {
    const s = asText(a);
    if (s === undefined) {
      problem([...at, 'args', i], `${showValue(a)} is not a string`);
      return '';
    }
    return expand([...at, 'args', i], s);
  });
}

function stdioCwd(ck: EntryCheck): string | undefined {
  const { entry, at, problem, expand, c } = ck;
  const cwd = entry['cwd'];
  if (cwd === undefined) return c.fileDir;
  if (typeof cwd !== 'string' || cwd.trim() === '') {
    problem([...at, 'cwd'], `${showValue(cwd)} is not a folder path`);
    return undefined;
  }
  return folderPath(c, expand([...at, 'cwd'], cwd.trim()));
}

/** `~`, `~/…` in the home folder; anything else relative to the config file's folder. */
function folderPath(c: ServerCheckContext, p: string): string {
  return p === '~' ? c.home : p.startsWith('~/') ? join(c.home, p.slice(2)) : resolvePath(c.fileDir, p);
}

/** An HTTP server: url, headers, oauth. */
function httpDefinition(ck: EntryCheck, declared: WireTransport | undefined): HttpDefinition {
  const { entry, at, warn } = ck;
  // The wire declared, else the default one (a declared process wire with a url was refused already: checkCommandOrUrl).
  const wire: UrlWire = declared === undefined || capabilitiesOf(declared).processBound ? DEFAULT_URL_WIRE : (declared as UrlWire);
  const def: HttpDefinition = { url: httpUrl(ck, wire) };
  def.headers = stringMap(entry, 'headers', at, ck.problem, ck.expand) ?? {};
  const oauth = parseOAuthSettings(entry['oauth'], [...at, 'oauth'], ck.problem, warn, ck.expand);
  if (oauth !== undefined) def.oauth = oauth;
  // A declared wire other than the default (`type: "sse"`: the deprecated HTTP+SSE transport) is the one
  // used, directly; the default keeps its fallback.
  if (wire !== DEFAULT_URL_WIRE) def.transport = wire;
  for (const k of ['args', 'env', 'cwd'] as const) {
    if (Object.hasOwn(entry, k)) warn([...at, k], 'is for stdio servers and is ignored on an HTTP server');
  }
  return def;
}

/** A URL with one of the wire's schemes (quoted in a problem with its credentials redacted). */
function httpUrl({ entry, at, problem, expand }: EntryCheck, wire: UrlWire): string {
  const schemes = capabilitiesOf(wire).urlSchemes;
  const raw = entry['url'];
  if (typeof raw !== 'string') {
    problem([...at, 'url'], `${showValue(raw)} is not a URL`);
    return '';
  }
  const u = expand([...at, 'url'], raw.trim());
  let parsed: URL | undefined;
  try {
    parsed = new URL(u);
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined || !schemes.includes(parsed.protocol)) {
    problem([...at, 'url'], `${JSON.stringify(redactUrl(u))} is not an ${schemes.map((x) => `${x}//`).join(' or ')} URL`);
    return '';
  }
  return u;
}

/** `protocol`: the server's own `upstream.protocol`. */
function protocolPreference({ entry, at, problem }: EntryCheck): Preference | undefined {
  if (!Object.hasOwn(entry, 'protocol') || entry['protocol'] === undefined) return undefined;
  const preference = canonicalPreference(entry['protocol']);
  if (preference === undefined) problem([...at, 'protocol'], preferenceRefusal(entry['protocol']));
  return preference;
}

function disabledFlag({ entry, at, problem }: EntryCheck): boolean {
  if (!Object.hasOwn(entry, 'disabled') || entry['disabled'] === undefined) return false;
  if (typeof entry['disabled'] === 'boolean') return entry['disabled'];
  problem([...at, 'disabled'], `${showValue(entry['disabled'])} is not a boolean (use true or false)`);
  return false;
}

/** What the `mcpx` block says: the pool's limits, the timeouts, inheritEnv (stdio only), the roots, and which tools are served, pinned and held. */
interface McpxBlock {
  limits: Partial<PoolLimits>;
  timeouts: ServerTimeouts;
  inheritEnv?: boolean;
  roots?: string[];
  tools?: ToolFilter;
  pin?: true | string[];
  pinTools?: boolean;
}

/** The `mcpx` keys that are the server's own, not a setting's value. */
const OWN_BLOCK_KEYS = ['roots', 'tools', 'pin', 'pinTools'] as const;

/** The `mcpx` block: each key a setting's value for this server (checked by the setting's own codec), and `roots`. */
function mcpxBlock(ck: EntryCheck, transport: 'stdio' | 'http'): McpxBlock {
  const { entry, at, problem } = ck;
  const out: McpxBlock = { limits: {}, timeouts: {} };
  if (!Object.hasOwn(entry, 'mcpx') || entry['mcpx'] === undefined) return out;
  const block = entry['mcpx'];
  const known = [...Object.keys(MCPX_BLOCK_KEYS), ...OWN_BLOCK_KEYS];
  if (!isObject(block)) {
    problem([...at, 'mcpx'], `must be an object with the keys ${known.join(', ')}`);
    return out;
  }
  for (const [k, v] of Object.entries(block)) {
    if (k === 'roots') {
      const roots = rootFolders(ck, v);
      if (roots !== undefined) out.roots = roots;
      continue;
    }
    if (k === 'tools') {
      const tools = toolFilter(ck, v);
      if (tools !== undefined) out.tools = tools;
      continue;
    }
    if (k === 'pin') {
      const pin = v === true ? true : v === undefined ? undefined : globList(ck, ['pin'], v, 'true (every tool) or a list of tool names or globs');
      if (pin !== undefined) out.pin = pin;
      continue;
    }
    if (k === 'pinTools') {
      if (typeof v === 'boolean') out.pinTools = v;
      else if (v !== undefined) problem([...at, 'mcpx', k], `${showValue(v)} is not a boolean (use true or false)`);
      continue;
    }
    if (!Object.hasOwn(MCPX_BLOCK_KEYS, k)) {
      problem([...at, 'mcpx', k], `is not an mcpx key${didYouMean(k, known)}; use ${known.join(', ')}`);
      continue;
    }
    if (v === undefined) continue;
    blockSetting(ck, out, k as keyof typeof MCPX_BLOCK_KEYS, v, transport);
  }
  return out;
}

/** `mcpx.tools`: `{allow?, deny?}`, each a list of tool names or globs (`*`, `?`). */
function toolFilter(ck: EntryCheck, v: unknown): ToolFilter | undefined {
  const { at, problem } = ck;
  if (v === undefined) return undefined;
  if (!isObject(v)) {
    problem([...at, 'mcpx', 'tools'], `${showValue(v)} is not an object like {"allow": ["read_*"], "deny": ["delete_*"]}`);
    return undefined;
  }
  const out: ToolFilter = {};
  for (const [k, x] of Object.entries(v)) {
    if (k !== 'allow' && k !== 'deny') {
      problem([...at, 'mcpx', 'tools', k], `is not a key of mcpx.tools${didYouMean(k, ['allow', 'deny'])}; use allow, deny`);
      continue;
    }
    if (x === undefined) continue;
    const globs = globList(ck, ['tools', k], x, 'a list of tool names or globs (e.g. ["read_*", "search"])');
    if (globs !== undefined) out[k] = globs;
  }
  return out;
}

/** A list of tool names or globs: non-empty strings. */
function globList(ck: EntryCheck, key: string[], v: unknown, what: string): string[] | undefined {
  const { at, problem } = ck;
  if (!Array.isArray(v)) {
    problem([...at, 'mcpx', ...key], `${showValue(v)} is not ${what}`);
    return undefined;
  }
  const globs: string[] = [];
  let bad = false;
  v.forEach((g, i) => {
    if (typeof g === 'string' && g.trim() !== '') globs.push(g.trim());
    else {
      bad = true;
      problem([...at, 'mcpx', ...key, i], `${showValue(g)} is not a tool name or glob (a non-empty string; * matches any run of characters, ? one)`);
    }
  });
  return bad ? undefined : globs;
}

/** `mcpx.roots`: not a setting, the folders are this server's own (see docs/serving.md, questions no call provoked). */
function rootFolders(ck: EntryCheck, v: unknown): string[] | undefined {
  const { at, problem, expand, c } = ck;
  if (v === undefined) return undefined;
  if (!Array.isArray(v)) {
    problem([...at, 'mcpx', 'roots'], `${showValue(v)} is not a list of folder paths (e.g. ["~/src", "./data"])`);
    return undefined;
  }
  const folders: string[] = [];
  v.forEach((f, i) => {
    if (typeof f !== 'string' || f.trim() === '') return problem([...at, 'mcpx', 'roots', i], `${showValue(f)} is not a folder path`);
    folders.push(folderPath(c, expand([...at, 'mcpx', 'roots', i], f.trim())));
  });
  return folders;
}

/** One setting key of the `mcpx` block, parsed by its setting's codec into the limits, the timeouts or inheritEnv. */
function blockSetting(ck: EntryCheck, out: McpxBlock, k: keyof typeof MCPX_BLOCK_KEYS, v: unknown, transport: 'stdio' | 'http'): void {
  const { at, problem, warn, c } = ck;
  const r = findSetting(MCPX_BLOCK_KEYS[k]).codec.parse(v, { text: false, baseDir: c.fileDir, home: c.home });
  if (!r.ok) {
    problem([...at, 'mcpx', k], r.message);
    return;
  }
  switch (k) {
    case 'scope':
      out.limits.scope = r.value as Scope;
      break;
    case 'max':
      out.limits.max = r.value as number;
      break;
    case 'sharing':
      out.limits.sharing = r.value as Sharing;
      break;
    case 'idleTimeout':
      out.limits.idleTimeoutMs = r.value as number;
      break;
    case 'probeTimeout':
      out.timeouts.probeTimeoutMs = r.value as number;
      break;
    case 'startTimeout':
      out.timeouts.startTimeoutMs = r.value as number;
      break;
    case 'requestTimeout':
      out.timeouts.requestTimeoutMs = r.value as number;
      break;
    case 'inheritEnv':
      if (transport === 'stdio') out.inheritEnv = r.value as boolean;
      else warn([...at, 'mcpx', k], 'is for stdio servers and is ignored on an HTTP server');
      break;
  }
}

/** `env` or `headers`: an object of strings. Values are never quoted in messages (they are often secrets). */
function stringMap(
  entry: Record<string, unknown>,
  key: 'env' | 'headers',
  at: KeyPath,
  problem: (path: KeyPath, message: string) => void,
  expand: (path: KeyPath, value: string) => string,
): Record<string, string> | undefined {
  if (!Object.hasOwn(entry, key) || entry[key] === undefined) return undefined;
  const raw = entry[key];
  if (!isObject(raw)) {
    problem([...at, key], `must be an object of ${key === 'env' ? 'variable names' : 'header names'} to string values`);
    return undefined;
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw)) {
    const s = asText(v);
    if (s === undefined) {
      problem([...at, key, k], `must be a string (found ${v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v})`);
      continue;
    }
    out[k] = expand([...at, key, k], s);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Effective per-server config

/** What `resolvePoolConfigs` reads from the settings (a `Settings` instance fits). */
export interface SettingsReader {
  get(path: string): unknown;
}

/**
 * One `PoolServerConfig` per enabled server: the server's `mcpx` block over `pool.*` and `upstream.*`,
 * and its own `protocol` over `upstream.protocol`.
 */
export function resolvePoolConfigs(config: Pick<LoadedConfig, 'servers'>, settings: SettingsReader): PoolServerConfig[] {
  return config.servers
    .filter((s) => !s.disabled)
    .map((s) => ({
      name: s.name,
      definition: withInheritEnv(s, settings),
      preference: s.preference ?? (settings.get('upstream.protocol') as Preference),
      limits: {
        scope: s.limits.scope ?? (settings.get('pool.scope') as Scope),
        max: s.limits.max ?? (settings.get('pool.max') as number),
        sharing: s.limits.sharing ?? (settings.get('pool.sharing') as Sharing),
        idleTimeoutMs: s.limits.idleTimeoutMs ?? (settings.get('pool.idleTimeout') as number),
      },
      probeTimeoutMs: s.timeouts.probeTimeoutMs ?? (settings.get('upstream.probeTimeout') as number),
      startTimeoutMs: s.timeouts.startTimeoutMs ?? (settings.get('upstream.startTimeout') as number),
      requestTimeoutMs: s.timeouts.requestTimeoutMs ?? (settings.get('upstream.requestTimeout') as number),
      // Only what the config names: a server given roots it was not meant to have (its cwd, say) drops the
      // folders of its own command line for them (server-filesystem does).
      ...(s.roots === undefined ? {} : { roots: s.roots }),
    }));
}

/** A stdio definition carries `inheritEnv: true` when the server's block or `upstream.inheritEnv` says so (absent otherwise). */
function withInheritEnv(s: ResolvedServer, settings: SettingsReader): ServerDefinition {
  if (s.transport !== 'stdio') return s.definition;
  const inherit = s.inheritEnv ?? settings.get('upstream.inheritEnv') === true;
  return inherit ? { ...s.definition, inheritEnv: true } : s.definition;
}

// ---------------------------------------------------------------------------------------------
// Secrets

export { REDACTED, redactUrl };

// Secrets in URLs and the redaction mark: src/redaction.ts (one rule for config, transports and the daemon).

/**
 * A deep copy for display (`mcpx config`): every value of every `env` and `headers` object becomes
 * `<redacted>` (keys kept), every `url` string goes through `redactUrl`, and any of `secrets` (values
 * `${VAR}` expansions put in, `ResolvedServer.expanded`) is blanked inside every other string. Works on a
 * `LoadedConfig` and on a raw config file object alike; an `expanded` list itself is never copied.
 */
export function redactConfig<T>(config: T, secrets: readonly string[] = expandedIn(config)): T {
  const known = [...new Set(secrets)].filter((x) => x !== '').sort((a, b) => b.length - a.length);
  const blank = (text: string): string => {
    let out = text;
    for (const x of known) if (out.includes(x)) out = out.split(x).join(REDACTED);
    return out;
  };
  const walk = (v: unknown, key: string | undefined): unknown => {
    if (Array.isArray(v)) return v.map((x) => walk(x, undefined));
    if (isObject(v)) {
      if (key === 'env' || key === 'headers') return Object.fromEntries(Object.keys(v).map((k) => [k, REDACTED]));
      return Object.fromEntries(
        Object.entries(v)
          .filter(([k]) => k !== 'expanded')
          .map(([k, x]) => [k, walk(x, k)]),
      );
    }
    if (key === 'url' && typeof v === 'string') return blank(redactUrl(v));
    if (key === 'clientSecret' && typeof v === 'string') return REDACTED;
    return typeof v === 'string' ? blank(v) : v;
  };
  return walk(config, undefined) as T;
}

/** Every `expanded` list a config holds (a LoadedConfig's servers). */
function expandedIn(config: unknown): string[] {
  const out: string[] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (isObject(v)) {
      for (const [k, x] of Object.entries(v)) {
        if (k === 'expanded' && Array.isArray(x)) out.push(...x.filter((e): e is string => typeof e === 'string'));
        else walk(x);
      }
    }
  };
  walk(config);
  return out;
}
