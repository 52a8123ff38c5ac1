/**
 * Processes and folders a benchmark starts, and their end: every child is tracked and ended (SIGTERM,
 * then SIGKILL) when its section finishes or the run is interrupted; every temp folder is removed.
 * Everything listens on a Unix socket in a temp folder or on 127.0.0.1.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { MCPX, ROOT } from './knobs.js';

const children = new Set<ChildProcess>();
const folders = new Set<string>();

export function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

export function tempFolder(prefix = 'mcpx-bench-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  folders.add(dir);
  return dir;
}

export function removeFolder(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  folders.delete(dir);
}

export async function stopChild(child: ChildProcess, ms = 5_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), ms);
  await exited;
  clearTimeout(timer);
}

/** Ends everything still running and removes every folder (also on SIGINT and on exit). */
export async function cleanupAll(): Promise<void> {
  await Promise.all([...children].map((c) => stopChild(c)));
  for (const d of [...folders]) removeFolder(d);
}

process.once('exit', () => {
  for (const c of children) c.kill('SIGKILL');
  for (const d of folders) rmSync(d, { recursive: true, force: true });
});
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    void cleanupAll().finally(() => process.exit(130));
  });
}

/** An environment without the caller's mcpx settings: HOME and XDG folders in `home`. */
export function cleanEnv(home: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('MCPX_') && !k.startsWith('XDG_') && k !== 'NODE_OPTIONS') env[k] = v;
  return { ...env, HOME: home, XDG_CONFIG_HOME: join(home, '.config'), XDG_STATE_HOME: join(home, '.state'), ...extra };
}

/** GET /v1/health over the socket answered 200. */
export function healthy(socket: string, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ socketPath: socket, path: '/v1/health', method: 'GET', timeout: timeoutMs }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode === 200));
    });
    req.once('error', () => resolve(false));
    req.once('timeout', () => {
      req.destroy();
      resolve(false);
    });
    req.end();
  });
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A free loopback TCP port (bound on 127.0.0.1, then released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const a = srv.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** The bundled demo's dual-era server (official SDK v2): the warm fixture every stdio call-path row calls. */
export const DUAL = join(ROOT, 'examples', 'servers', 'dual.mjs');

/** The HTTP fixture servers of the test suite (each prints `LISTENING <port>` and serves on 127.0.0.1). */
export const HTTP_FIXTURES = join(ROOT, 'test', 'fixtures', 'http');

/**
 * Start an HTTP fixture server (`file` in HTTP_FIXTURES); resolves with its origin once it listens.
 * Without MCPX_FIXTURE_LOG: the fixture's request log is a synchronous file write per request.
 * Its stdin is a pipe kept open: the fixture stops when stdin ends.
 */
export async function startHttpServer(file: string): Promise<{ origin: string; child: ChildProcess }> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env['MCPX_FIXTURE_LOG'];
  const child = track(spawn(process.execPath, [join(HTTP_FIXTURES, file)], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] }));
  let out = '';
  let err = '';
  child.stderr?.on('data', (c: Buffer) => (err = (err + c.toString()).slice(-2000)));
  try {
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${file} did not listen within 15 s: ${err.trim()}`)), 15_000);
      child.stdout?.on('data', (c: Buffer) => {
        out += c.toString();
        const m = /^LISTENING (\d+)$/m.exec(out);
        if (!m) return;
        clearTimeout(timer);
        resolve(Number(m[1]));
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${file} exited (${code}) before listening: ${err.trim()}`));
      });
    });
    return { origin: `http://127.0.0.1:${port}`, child };
  } catch (e) {
    await stopChild(child);
    throw e;
  }
}

export interface Daemon {
  dir: string;
  state: string;
  socket: string;
  env: NodeJS.ProcessEnv;
  child: ChildProcess;
  /** ms from spawn to the socket answering. */
  readyMs: number;
  stop(): Promise<void>;
}

export interface DaemonOptions {
  /** mcpServers entries; none: no config file, so the daemon runs the bundled demo. */
  servers?: Record<string, unknown>;
  /** Extra node flags (e.g. --cpu-prof). */
  nodeArgs?: string[];
  env?: Record<string, string>;
  /** How often to poll the socket while waiting (ms). */
  pollMs?: number;
  /** The CLI to run (default: this checkout's). */
  cli?: string;
  /** A state folder to start on (an earlier daemon's: its catalogue, its era cache); default a new one. */
  stateDir?: string;
}

/** `mcpx daemon` in a temp folder, its log in the folder (as a background daemon's would be). */
export async function startDaemon(opts: DaemonOptions = {}): Promise<Daemon> {
  const dir = tempFolder('mcpx-bench-d-');
  const state = opts.stateDir ?? join(dir, 'state');
  const socket = join(state, 'daemon.sock');
  const extra: Record<string, string> = { MCPX_STATE_DIR: state, ...opts.env };
  if (opts.servers) {
    const config = join(dir, 'mcpx.json');
    writeFileSync(config, JSON.stringify({ mcpServers: opts.servers }, null, 2));
    extra['MCPX_CONFIG'] = config;
  }
  const env = cleanEnv(dir, extra);
  // Not beside the config file: the daemon watches the config's folder, and a log line written there
  // would wake that watcher on every call (a background daemon logs into its state folder, not watched).
  const logFile = join(dir, 'log', 'daemon.log');
  mkdirSync(dirname(logFile));
  const log = openSync(logFile, 'a');
  const t0 = performance.now();
  const child = track(spawn(process.execPath, [...(opts.nodeArgs ?? []), opts.cli ?? MCPX, 'daemon'], { cwd: dir, env, stdio: ['ignore', log, log] }));
  closeSync(log);
  let gone = false;
  child.once('exit', () => (gone = true));
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (gone) throw new Error(`the daemon exited at start (log: ${logFile})`);
    if (await healthy(socket, 500)) break;
    if (Date.now() > deadline) throw new Error('the daemon did not answer within 30 s');
    await sleep(opts.pollMs ?? 2);
  }
  const readyMs = performance.now() - t0;
  return {
    dir,
    state,
    socket,
    env,
    child,
    readyMs,
    stop: async () => {
      await stopChild(child, 15_000);
      removeFolder(dir);
    },
  };
}

/** A stdio server entry for the daemon's config: `node <file> [args]`. */
export function nodeServer(file: string, args: string[] = [], mcpx: Record<string, unknown> = {}): Record<string, unknown> {
  return { command: process.execPath, args: [file, ...args], mcpx };
}
