/**
 * `mcpx doctor`'s checks of the configured servers: can each one start? A stdio server's command is
 * looked up on the PATH the daemon gives it (the running daemon's own environment, else this shell's,
 * which a daemon started from here inherits), in the environment the upstream gets (the allowlist, or
 * everything under `inheritEnv`, plus the server's `env`); an `npx` package is looked for in the
 * project's node_modules, then asked of the registry npm is configured with there (`npm view`), and
 * when the registry does not answer, looked for in npx's and npm's local caches; a `uvx` package is
 * asked of its package index; a URL must answer HTTP at all. Duplicate definitions are named: a server
 * named twice in the file (the last one wins, silently) and two names for the same server.
 *
 * Every result is what was actually found: nothing here guesses a success it did not see.
 */
import { execFile } from 'node:child_process';
import { constants, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { access } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import type { ResolvedServer } from '../config/config-file.js';

export interface ServerCheck {
  check: string;
  ok: boolean;
  detail: string;
}

/** The environment a server's process is started with, and where its PATH came from. */
export interface DaemonEnvironment {
  env: NodeJS.ProcessEnv;
  /** "the running daemon (pid N)" or "this shell (a daemon started from here inherits it)". */
  from: string;
}

const NPM_TIMEOUT_MS = 30_000;
const HTTP_TIMEOUT_MS = 8_000;

/** The environment of the running daemon (Linux: /proc/PID/environ), else this process's. */
export function daemonEnvironment(stateDir: string, running: boolean): DaemonEnvironment {
  if (running) {
    try {
      const pid = (JSON.parse(readFileSync(join(stateDir, 'daemon.json'), 'utf8')) as { pid?: unknown }).pid;
      if (typeof pid === 'number') {
        const env: NodeJS.ProcessEnv = {};
        for (const pair of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
          const eq = pair.indexOf('=');
          if (eq > 0) env[pair.slice(0, eq)] = pair.slice(eq + 1);
        }
        return { env, from: `the running daemon's (pid ${pid})` };
      }
    } catch {
      // not Linux, or not readable: this shell's, said as such
    }
    return { env: process.env, from: "this shell's (the running daemon's could not be read)" };
  }
  return { env: process.env, from: "this shell's (a daemon started from here inherits it)" };
}

/** Where `command` resolves: a path (relative to `cwd`) or the first executable file of that name on `path`. */
export async function findCommand(command: string, path: string | undefined, cwd: string): Promise<string | undefined> {
  const candidates = command.includes('/')
    ? [resolve(cwd, command)]
    : (path ?? '')
        .split(delimiter)
        .filter((d) => d !== '')
        .map((d) => join(resolve(cwd, d), command));
  for (const file of candidates) {
    try {
      if (!statSync(file).isFile()) continue;
      await access(file, constants.X_OK);
      return file;
    } catch {
      // not there, or not executable
    }
  }
  return undefined;
}

const NPX_VALUE_FLAGS = new Set(['-p', '--package', '-c', '--call', '--node-options', '--registry', '--cache', '--userconfig']);

/** The package an `npx` command line runs: `--package X`, else its first argument that is not an option. */
export function npxPackage(args: readonly string[]): string | undefined {
  for (let i = 0; i < args.length; i += 1) {
    const a = args[i]!;
    if (a === '--') return args[i + 1];
    if (a === '-p' || a === '--package') return args[i + 1];
    if (a.startsWith('--package=')) return a.slice('--package='.length);
    if (a.startsWith('-')) {
      if (NPX_VALUE_FLAGS.has(a)) i += 1;
      continue;
    }
    return a;
  }
  return undefined;
}

/** A registry package's name in `spec` (`@scope/name@1.2` → `@scope/name`); undefined for a path, URL or git spec. */
export function registryName(spec: string): string | undefined {
  if (/^(?:\.{0,2}\/|~|file:|git[+:]|https?:|github:|[a-z]+:\/\/)/i.test(spec)) return undefined;
  const m = /^(@[a-z0-9][\w.-]*\/[a-z0-9][\w.-]*|[a-z0-9][\w.-]*)(?:@.*)?$/i.exec(spec);
  return m?.[1];
}

/** `node_modules/<name>` in `cwd` or a folder above it (npx runs a project's own install first). */
function installedLocally(name: string, cwd: string): string | undefined {
  for (let dir = cwd; ; dir = dirname(dir)) {
    const file = join(dir, 'node_modules', name, 'package.json');
    if (existsSync(file)) return dirname(file);
    if (dirname(dir) === dir) return undefined;
  }
}

/** npm's cache folder for this environment. */
function npmCacheDir(env: NodeJS.ProcessEnv): string {
  return env['npm_config_cache'] ?? env['NPM_CONFIG_CACHE'] ?? join(env['HOME'] ?? homedir(), '.npm');
}

/** A copy of the package npx already installed (`<cache>/_npx/<hash>/node_modules/<name>`). */
function inNpxCache(name: string, env: NodeJS.ProcessEnv): string | undefined {
  const root = join(npmCacheDir(env), '_npx');
  let dirs: string[];
  try {
    dirs = readdirSync(root);
  } catch {
    return undefined;
  }
  for (const d of dirs) {
    const at = join(root, d, 'node_modules', name);
    if (existsSync(join(at, 'package.json'))) return at;
  }
  return undefined;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  error?: NodeJS.ErrnoException & { killed?: boolean };
}

function run(file: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<Run> {
  return new Promise((done) => {
    execFile(file, args, { env, cwd, timeout: NPM_TIMEOUT_MS, maxBuffer: 4 * 1024 * 1024, windowsHide: true }, (err, stdout, stderr) => {
      const e = err as (NodeJS.ErrnoException & { killed?: boolean }) | null;
      done({ code: e ? (typeof e.code === 'number' ? e.code : null) : 0, stdout: String(stdout), stderr: String(stderr), ...(e ? { error: e } : {}) });
    });
  });
}

/** npm's error object from `npm view --json` (stdout), else its `npm error code X` stderr line. */
function npmErrorCode(r: Run): { code?: string; summary?: string } {
  try {
    const body = JSON.parse(r.stdout) as { error?: { code?: string; summary?: string } };
    if (body.error) return body.error;
  } catch {
    // not JSON
  }
  const code = /npm (?:error|ERR!) code (\S+)/.exec(r.stderr)?.[1];
  return code === undefined ? {} : { code };
}

/** Does the registry npm uses there know the package? Offline: is it in a local cache? */
async function checkNpxPackage(spec: string, npx: string, env: NodeJS.ProcessEnv, cwd: string): Promise<{ ok: boolean; detail: string }> {
  const name = registryName(spec);
  if (name === undefined) return { ok: true, detail: `npx runs ${spec} (not a registry package: not checked)` };
  const local = spec === name ? installedLocally(name, cwd) : undefined;
  if (local) return { ok: true, detail: `npx runs ${name}, installed in ${local}` };
  // npm beside the npx the daemon finds (they ship together), with the same environment and folder, so the same .npmrc and registry.
  const npm = join(dirname(npx), process.platform === 'win32' ? 'npm.cmd' : 'npm');
  const r = await run(existsSync(npm) ? npm : 'npm', ['view', spec, 'name', '--json', '--fetch-retries=0'], env, cwd);
  const registry = env['npm_config_registry'] ?? env['NPM_CONFIG_REGISTRY'];
  if (r.code === 0) return { ok: true, detail: `npx runs ${spec}, which the registry${registry ? ` ${registry}` : ''} has` };
  const e = npmErrorCode(r);
  if (e.code === 'E404') return { ok: false, detail: `npx cannot start it: the npm registry has no package ${spec} (${e.summary ?? '404 Not Found'})` };
  // No answer from the registry (offline, a proxy): what npx could still run from a cache.
  const cached = inNpxCache(name, env);
  const why =
    e.summary ?? e.code ?? (r.error?.killed ? `no answer within ${NPM_TIMEOUT_MS / 1000} s` : (r.stderr.trim().split('\n').pop() ?? `exit ${r.code}`));
  if (cached) return { ok: true, detail: `npx runs ${name} from its cache (${cached}); the registry could not be asked (${why})` };
  const offline = await run(existsSync(npm) ? npm : 'npm', ['view', spec, 'name', '--json', '--offline'], env, cwd);
  if (offline.code === 0) return { ok: true, detail: `npx runs ${spec}, known to npm's cache; the registry could not be asked (${why})` };
  return { ok: false, detail: `npx cannot start it now: the registry could not be asked about ${spec} (${why}) and it is in no local cache` };
}

const UVX_VALUE_FLAGS = new Set(['--from', '--with', '--python', '-p', '--index', '--index-url', '--default-index', '--extra-index-url', '-w']);

/** The package a `uvx` command line runs: `--from X`, else its first argument that is not an option. */
export function uvxPackage(args: readonly string[]): string | undefined {
  for (let i = 0; i < args.length; i += 1) {
    const a = args[i]!;
    if (a === '--from') return args[i + 1];
    if (a.startsWith('--from=')) return a.slice('--from='.length);
    if (a.startsWith('-')) {
      if (UVX_VALUE_FLAGS.has(a)) i += 1;
      continue;
    }
    return a;
  }
  return undefined;
}

/** Is the package on the index uv uses (the simple API: 404 for a name it does not have)? */
async function checkUvxPackage(spec: string, env: NodeJS.ProcessEnv): Promise<{ ok: boolean; detail: string }> {
  const name = /^([A-Za-z0-9][A-Za-z0-9._-]*)/.exec(spec)?.[1];
  if (name === undefined || /^(?:\.|\/|git\+|https?:)/.test(spec)) return { ok: true, detail: `uvx runs ${spec} (not an index package: not checked)` };
  const index = (env['UV_DEFAULT_INDEX'] ?? env['UV_INDEX_URL'] ?? env['PIP_INDEX_URL'] ?? 'https://pypi.org/simple').replace(/\/+$/, '');
  const url = `${index}/${name.toLowerCase().replace(/[-_.]+/g, '-')}/`;
  const r = await answer(url, { accept: 'application/vnd.pypi.simple.v1+json, text/html;q=0.1' });
  if (r.status === 404) return { ok: false, detail: `uvx cannot start it: the package index ${index} has no package ${name} (404 Not Found)` };
  if (r.status !== undefined && r.status < 400) return { ok: true, detail: `uvx runs ${name}, which ${index} has` };
  return {
    ok: false,
    detail: `uvx may not start it: the package index ${index} could not be asked about ${name} (${r.status === undefined ? r.error : `HTTP ${r.status}`})`,
  };
}

/** One GET: its status, or why nothing answered (node's own client: no port is off limits, as for the daemon). */
async function answer(url: string, headers: Record<string, string>): Promise<{ status?: number; error?: string }> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return { error: 'not a URL' };
  }
  const { request } = await import(target.protocol === 'https:' ? 'node:https' : 'node:http');
  return new Promise((done) => {
    const req = request(target, { method: 'GET', headers, timeout: HTTP_TIMEOUT_MS }, (res: import('node:http').IncomingMessage) => {
      res.resume();
      req.destroy();
      done({ status: res.statusCode ?? 0 });
    });
    req.once('timeout', () => req.destroy(Object.assign(new Error(`no answer within ${HTTP_TIMEOUT_MS / 1000} s`), { code: 'ETIMEDOUT' })));
    req.once('error', (err: NodeJS.ErrnoException) => done({ error: err.message }));
    req.end();
  });
}

/** The environment a stdio server's process gets (what mcpx's stdio transport gives it). */
async function upstreamEnv(server: ResolvedServer, daemon: DaemonEnvironment, inheritAll: boolean): Promise<NodeJS.ProcessEnv> {
  const { inheritedEnvironment } = await import('../transports/stdio.js');
  const def = server.definition as { env?: Record<string, string> };
  return { ...inheritedEnvironment(daemon.env, server.inheritEnv ?? inheritAll), ...def.env };
}

/** Whether one server can start, in words. */
async function checkServer(server: ResolvedServer, daemon: DaemonEnvironment, inheritAll: boolean, configDir: string): Promise<ServerCheck> {
  const check = `server ${server.name}`;
  if (server.disabled) return { check, ok: true, detail: 'disabled (not checked)' };
  const def = server.definition as { command?: string; args?: string[]; cwd?: string; url?: string };
  if (def.url !== undefined) {
    const r = await answer(def.url, { accept: 'application/json, text/event-stream' });
    if (r.status !== undefined) return { check, ok: true, detail: `${def.url} answers (HTTP ${r.status})` };
    return { check, ok: false, detail: `cannot start it: ${def.url} does not answer (${r.error})` };
  }
  const command = def.command ?? '';
  const cwd = def.cwd ?? configDir;
  const env = await upstreamEnv(server, daemon, inheritAll);
  const found = await findCommand(command, env['PATH'], cwd);
  if (found === undefined) {
    const where = command.includes('/')
      ? `no executable file ${resolve(cwd, command)}`
      : `not on the PATH the daemon gives it, ${daemon.from}: ${env['PATH'] ?? '(none)'}`;
    return { check, ok: false, detail: `cannot start it: command not found: ${command} (${where})` };
  }
  const base = (isAbsolute(command) ? command : found)
    .split(/[\\/]/)
    .pop()!
    .replace(/\.(?:cmd|exe)$/i, '');
  if (base === 'npx') {
    const spec = npxPackage(def.args ?? []);
    if (spec === undefined) return { check, ok: false, detail: `cannot start it: ${command} is given no package to run` };
    return { check, ...(await checkNpxPackage(spec, found, env, cwd)) };
  }
  if (base === 'uvx') {
    const spec = uvxPackage(def.args ?? []);
    if (spec === undefined) return { check, ok: false, detail: `cannot start it: ${command} is given no package to run` };
    return { check, ...(await checkUvxPackage(spec, env)) };
  }
  return { check, ok: true, detail: `${command} is ${found}` };
}

/** Server names given twice in the config file's servers object (JSON keeps the last, silently). */
async function namedTwice(file: string | undefined): Promise<ServerCheck[]> {
  if (file === undefined) return [];
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const { parseTree } = await import('jsonc-parser');
  const tree = parseTree(text, [], { allowTrailingComma: true, disallowComments: false });
  const block = tree?.children?.find((p) => p.children?.[0]?.value === 'mcpServers' || p.children?.[0]?.value === 'servers')?.children?.[1];
  const lines = new Map<string, number[]>();
  for (const prop of block?.children ?? []) {
    const key = prop.children?.[0];
    if (typeof key?.value !== 'string') continue;
    const line = text.slice(0, key.offset).split('\n').length;
    lines.set(key.value, [...(lines.get(key.value) ?? []), line]);
  }
  return [...lines]
    .filter(([, at]) => at.length > 1)
    .map(([name, at]) => ({
      check: `server ${name}`,
      ok: false,
      detail: `defined ${at.length} times in ${file} (lines ${at.join(', ')}): only the last one is used; remove the others`,
    }));
}

/** Two names for one server: the same command, arguments, folder and env, or the same URL and headers. */
function sameServer(servers: readonly ResolvedServer[]): ServerCheck[] {
  const first = new Map<string, string>();
  const checks: ServerCheck[] = [];
  for (const s of servers) {
    if (s.disabled) continue;
    const key = JSON.stringify([s.definition, s.preference ?? null, s.limits, s.inheritEnv ?? null]);
    const earlier = first.get(key);
    if (earlier === undefined) first.set(key, s.name);
    else
      checks.push({
        check: `server ${s.name}`,
        ok: false,
        detail: `the same server as ${JSON.stringify(earlier)} (same ${'url' in s.definition ? 'URL and headers' : 'command, arguments, folder and env'}): each name starts its own; keep one`,
      });
  }
  return checks;
}

/** Every server check, in config order: duplicates first, then whether each can start. */
export async function checkServers(
  servers: readonly ResolvedServer[],
  opts: { file: string | undefined; daemon: DaemonEnvironment; inheritAll: boolean },
): Promise<ServerCheck[]> {
  const configDir = opts.file ? dirname(opts.file) : process.cwd();
  const starts = await Promise.all(servers.map((s) => checkServer(s, opts.daemon, opts.inheritAll, configDir)));
  return [...(await namedTwice(opts.file)), ...sameServer(servers), ...starts];
}
