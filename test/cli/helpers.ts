/**
 * End-to-end helpers: run the BUILT binary (`node dist/src/cli/main.js …`, built by `npm test`) in a
 * temp home and state folder, start daemons in the foreground, talk to them over their socket, and
 * make sure every process a test starts is gone when it ends.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Client } from 'undici';
import { packageRoot } from '../../src/package-info.js';
import { isGone } from '../server/helpers.js';

/**
 * The binary under test: the build's (package.json `bin`), or MCPX_TEST_BIN — an installed package's
 * `mcpx` (.ci/run points it at the one `npm pack` made and `npm install -g` put in a temp prefix).
 */
export const MCPX = process.env['MCPX_TEST_BIN'] ? realpathSync(process.env['MCPX_TEST_BIN']) : join(packageRoot(), 'dist', 'src', 'cli', 'main.js');

if (!existsSync(MCPX)) throw new Error(`${MCPX} is missing: run npm run build first (npm test does)`);

/** A clean environment: no MCPX_* from outside, home and XDG folders in `home`. */
export function cleanEnv(home: string, extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env))
    if (!k.startsWith('MCPX_') && !k.startsWith('XDG_') && !k.startsWith('VITEST') && k !== 'NODE_OPTIONS') env[k] = v;
  Object.assign(env, { HOME: home, XDG_CONFIG_HOME: join(home, '.config'), XDG_STATE_HOME: join(home, '.state') });
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `mcpx …` to completion. */
export function mcpx(args: string[], opts: { env: NodeJS.ProcessEnv; cwd?: string; input?: string; timeoutMs?: number }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MCPX, ...args], { env: opts.env, cwd: opts.cwd ?? opts.env['HOME'], stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`mcpx ${args.join(' ')} did not finish within ${opts.timeoutMs ?? 30_000} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, opts.timeoutMs ?? 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(opts.input ?? '');
  });
}

/** `mcpx … --json`, parsed; fails with the output when the command fails. */
export async function mcpxJson<T = any>(args: string[], opts: { env: NodeJS.ProcessEnv; cwd?: string }): Promise<T> {
  const r = await mcpx([...args, '--json'], opts);
  if (r.code !== 0) throw new Error(`mcpx ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

/** Talks to a daemon over its Unix socket. */
export async function api(
  socket: string,
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any; text: string }> {
  const client = new Client('http://localhost', { socketPath: socket });
  try {
    const res = await client.request({
      path,
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    const text = await res.body.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
    return { status: res.statusCode, body: parsed, text };
  } finally {
    await client.close();
  }
}

export async function healthy(socket: string): Promise<boolean> {
  try {
    return (await api(socket, 'GET', '/v1/health')).status === 200;
  } catch {
    return false;
  }
}

export async function until(check: () => boolean | Promise<boolean>, ms = 10_000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const running = new Set<ChildProcess>();
const extraPids = new Set<number>();

/** A daemon run in the foreground (`mcpx daemon …`), its stdout and stderr kept. */
export class ForegroundDaemon {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(args: string[], opts: { env: NodeJS.ProcessEnv; cwd?: string }) {
    this.child = spawn(process.execPath, [MCPX, 'daemon', ...args], { env: opts.env, cwd: opts.cwd ?? opts.env['HOME'], stdio: ['ignore', 'pipe', 'pipe'] });
    running.add(this.child);
    this.child.stdout!.on('data', (c: Buffer) => (this.stdout += c.toString()));
    this.child.stderr!.on('data', (c: Buffer) => (this.stderr += c.toString()));
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        running.delete(this.child);
        resolve({ code, signal });
      });
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Starts a daemon and waits until it answers on `socket` (or exits). */
  static async start(socket: string, args: string[], opts: { env: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number }): Promise<ForegroundDaemon> {
    const d = new ForegroundDaemon(args, opts);
    let gone = false;
    void d.exited.then(() => (gone = true));
    await until(async () => gone || (await healthy(socket)), opts.timeoutMs ?? 20_000, `the daemon on ${socket}`);
    if (gone) throw new Error(`the daemon exited at start: ${d.stderr}\n${d.stdout}`);
    return d;
  }

  /** Sends a signal and waits for the exit. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', ms = 20_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return this.exited;
    this.child.kill(signal);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), ms);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Remember a process started behind our back (an auto-started daemon) so cleanup can end it. */
export function trackPid(pid: number | undefined): void {
  if (pid) extraPids.add(pid);
}

/** Ends every daemon this file started (a test that failed half-way leaves nothing behind). */
export async function killAll(): Promise<void> {
  for (const child of running) child.kill('SIGTERM');
  for (const pid of extraPids) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // gone
    }
  }
  const end = Date.now() + 10_000;
  while (Date.now() < end && ([...running].length > 0 || [...extraPids].some((p) => !isGone(p)))) await new Promise((r) => setTimeout(r, 25));
  for (const child of running) child.kill('SIGKILL');
  for (const pid of extraPids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

export function readJson(file: string): any {
  return JSON.parse(readFileSync(file, 'utf8'));
}

export async function mkdirs(...dirs: string[]): Promise<void> {
  for (const d of dirs) await mkdir(d, { recursive: true });
}
