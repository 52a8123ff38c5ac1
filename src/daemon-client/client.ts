/**
 * How the CLI reaches the daemon: through the state folder (`<state>/daemon.sock`), over HTTP on the
 * Unix socket with node:http (a CLI command starts a process per run: an HTTP client loaded from
 * node's own modules costs nothing to load). When nothing answers there, client commands start a daemon in the
 * background (`<node> <this CLI> daemon`, detached, same state folder, config, environment and
 * working directory, its log appended to `<state>/daemon.log`) and wait for its socket, bounded.
 */
import { closeSync, constants, existsSync, fchmodSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { Agent, request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { McpxError } from '../errors.js';
import { checkSocketTrust, fileKind } from '../state/safe-files.js';
import type { Target } from './target.js';
import { CONFIG_HEADER } from '../front/headers.js';
import { sseFrameReader } from './sse-frames.js';

export { resolveTarget, type ClientOptions, type Target } from './target.js';
export { isNotRunning } from './not-running.js';

export interface ApiResponse<T = unknown> {
  status: number;
  body: T;
}

export interface SendOptions {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
  agent?: Agent | false;
  signal?: AbortSignal;
  /** No answer (headers) within this long: the request fails with code ETIMEDOUT. */
  timeoutMs?: number;
  /** Told of the connection the request goes out on (a kept-alive one, or a new one). */
  onSocket?: (socket: Socket) => void;
}

/**
 * A Unix socket has no server name. Without saying so, node's agent tests the host against its IP
 * patterns, and compiling the IPv6 one costs 6–9 ms of the first request of every CLI command.
 */
const NO_SERVER_NAME = { servername: '' } as const;

/**
 * One HTTP request on the Unix socket; resolves with the response once its headers arrived. Nothing is
 * sent on a socket another user could have planted (checkSocketTrust: MCPX_UNSAFE_SOCKET).
 */
export function send(socket: string, o: SendOptions): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    checkSocketTrust(socket);
    const req = httpRequest(
      {
        socketPath: socket,
        path: o.path,
        method: o.method,
        headers: { host: 'localhost', ...(o.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(o.body)) }), ...o.headers },
        agent: o.agent ?? false,
        ...NO_SERVER_NAME,
      },
      resolve,
    );
    req.once('error', reject);
    if (o.signal) abortOn(o.signal, req);
    if (o.onSocket) req.on('socket', o.onSocket);
    if (o.timeoutMs !== undefined) {
      req.setTimeout(o.timeoutMs, () => req.destroy(Object.assign(new Error(`no answer within ${o.timeoutMs} ms`), { code: 'ETIMEDOUT' })));
    }
    req.end(o.body);
  });
}

/**
 * The request ends when the signal aborts, with an AbortError (as node's own `signal` option ends it). One
 * listener, removed when the request closes: node's option adds a stream watcher and several listeners per
 * request, a few per cent of `mcpx serve`'s CPU per call.
 */
function abortOn(signal: AbortSignal, req: ClientRequest): void {
  const abort = () => req.destroy(Object.assign(new Error('The operation was aborted', { cause: signal.reason }), { name: 'AbortError', code: 'ABORT_ERR' }));
  if (signal.aborted) {
    abort();
    return;
  }
  signal.addEventListener('abort', abort, { once: true });
  req.once('close', () => signal.removeEventListener('abort', abort));
}

/**
 * A response's whole body as text. A connection cut off mid-answer rejects, like any socket error: with
 * the response's error, else ERR_STREAM_PREMATURE_CLOSE. Events, not `for await`: the async iterator
 * costs a few per cent of `mcpx serve`'s CPU per call.
 */
export function readText(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    res.setEncoding('utf8');
    let text = '';
    res.on('data', (chunk: string) => (text += chunk));
    res.once('end', () => resolve(text));
    res.once('error', reject);
    res.once('close', () => {
      if (!res.complete) reject(Object.assign(new Error('the connection closed before the answer was complete'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
    });
  });
}

export class DaemonClient {
  readonly socket: string;
  /** The config this command means: sent with every request (X-Mcpx-Config), so the daemon answers for it. */
  readonly config: string | undefined;
  /** Keeps the connection between a command's requests (a call's ask, then its polls). */
  private agent: Agent | undefined;

  constructor(socket: string, config?: string) {
    this.socket = socket;
    this.config = config;
  }

  /** The header naming this command's config (none without one). */
  configHeaders(): Record<string, string> {
    return this.config === undefined ? {} : { [CONFIG_HEADER]: this.config };
  }

  async request<T = unknown>(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<ApiResponse<T>> {
    this.agent ??= new Agent({ keepAlive: true, maxSockets: 4 });
    const res = await send(this.socket, {
      method,
      path,
      agent: this.agent,
      headers: { accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...this.configHeaders(), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await readText(res);
    let parsed: unknown = text;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      parsed = text;
    }
    return { status: res.statusCode ?? 0, body: parsed as T };
  }

  /** Whether a daemon answers on the socket. */
  async alive(timeoutMs = 2_000): Promise<boolean> {
    try {
      const res = await send(this.socket, { method: 'GET', path: '/v1/health', timeoutMs });
      await readText(res);
      return res.statusCode === 200;
    } catch (err) {
      if (err instanceof McpxError && err.code === 'MCPX_UNSAFE_SOCKET') throw err; // not "not running": starting another would not help
      return false;
    }
  }

  /**
   * Follows `GET /v1/events` (server-sent events); `onEvent` gets each event's parsed data.
   * `ready` settles once the stream is open (or failed to open); `stop` stops following.
   */
  follow(query: string, onEvent: (type: string, data: unknown) => void): { ready: Promise<void>; stop: () => void } {
    const ac = new AbortController();
    let markReady!: () => void;
    const ready = new Promise<void>((r) => (markReady = r));
    void (async () => {
      try {
        const res = await send(this.socket, { method: 'GET', path: `/v1/events${query}`, signal: ac.signal, headers: this.configHeaders() });
        res.setEncoding('utf8');
        const read = sseFrameReader((type, value) => {
          try {
            onEvent(type, value);
          } catch {
            // an event the listener cannot use: skip it
          }
        });
        for await (const chunk of res) {
          markReady();
          read(chunk as string);
        }
      } catch {
        // stopped, or the daemon went away: progress is best effort
      } finally {
        markReady();
      }
    })();
    return {
      ready,
      stop: () => ac.abort(),
    };
  }

  async close(): Promise<void> {
    this.agent?.destroy();
    this.agent = undefined;
  }
}

export interface StartOptions {
  /** The CLI entry to run with `daemon`. */
  entry: string;
  /** How long to wait for the socket; default 20 s (MCPX_DAEMON_START_TIMEOUT, ms). */
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

function lastError(logFile: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(logFile, 'utf8');
  } catch {
    return undefined;
  }
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0)
    .slice(-40);
  for (let i = lines.length - 1; i >= 0; i -= 1) {
    const line = lines[i]!;
    if (line.startsWith('mcpx: ')) {
      // A bad config's problems come one a line: all of the last run of them.
      let first = i;
      while (first > 0 && lines[first - 1]!.startsWith('mcpx: ')) first -= 1;
      return lines
        .slice(first, i + 1)
        .map((l) => l.slice(6))
        .join('\n');
    }
    try {
      const rec = JSON.parse(line) as { level?: number; msg?: string };
      if ((rec.level ?? 0) >= 50 && rec.msg) return rec.msg;
    } catch {
      // not JSON
    }
  }
  return undefined;
}

/**
 * `<state>/daemon.log` for appending, 0600: never through a symlink (its target's mode would be changed
 * and the log written wherever it points), never a FIFO or device (opened without blocking, then refused).
 */
function openDaemonLog(logFile: string): number {
  let fd: number;
  try {
    fd = openSync(logFile, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0), 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const kind = code === 'ELOOP' || code === 'EMLINK' ? 'a symbolic link' : code === 'ENXIO' ? 'a FIFO with no reader, or a socket' : undefined;
    if (kind === undefined) throw err;
    throw new McpxError('MCPX_DAEMON_UNAVAILABLE', `the daemon log ${logFile} is ${kind}, not a regular file; mcpx does not write through it: remove it`, {
      data: { log: logFile },
    });
  }
  const s = fstatSync(fd);
  if (!s.isFile()) {
    closeSync(fd);
    throw new McpxError('MCPX_DAEMON_UNAVAILABLE', `the daemon log ${logFile} is ${fileKind(s)}, not a regular file; mcpx does not write to it: remove it`, {
      data: { log: logFile },
    });
  }
  fchmodSync(fd, 0o600);
  return fd;
}

/** Starts a daemon in the background for `target` and waits until it answers. */
export async function startDaemonInBackground(target: Target, opts: StartOptions): Promise<{ pid: number | undefined }> {
  const env = opts.env ?? process.env;
  const timeoutMs = opts.timeoutMs ?? (Number(env['MCPX_DAEMON_START_TIMEOUT']) || 20_000);
  // The state folder's rules and child_process load only here: a command that finds its daemon running never needs them.
  const [{ checkSocketPath, DAEMON_JSON, DAEMON_LOG, ensureStateDir }, { spawn }] = await Promise.all([
    import('../daemon/state-dir.js'),
    import('node:child_process'),
  ]);
  checkSocketPath(target.socket); // the daemon would refuse it too; say so before starting one
  await ensureStateDir(target.stateDir);
  const logFile = join(target.stateDir, DAEMON_LOG);
  const fd = openDaemonLog(logFile);
  const args = [
    opts.entry,
    'daemon',
    ...(target.stateDirFlag ? ['--state-dir', target.stateDirFlag] : []),
    ...(target.configFlag ? ['--config', target.configFlag] : []),
  ];
  let exited: { code: number | null; signal: string | null; at: number } | undefined;
  let child;
  try {
    child = spawn(process.execPath, args, { detached: true, stdio: ['ignore', fd, fd], env, cwd: opts.cwd ?? process.cwd() });
  } finally {
    closeSync(fd);
  }
  child.on('exit', (code, signal) => {
    exited = { code, signal, at: Date.now() };
  });
  child.on('error', () => {
    exited ??= { code: null, signal: null, at: Date.now() };
  });
  const client = new DaemonClient(target.socket);
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await client.alive(1_000)) {
      // The daemon writes daemon.json (its pid, the TCP port and token) just after its socket answers:
      // a command that returns once the daemon is started leaves it there for whoever reads it next.
      const file = join(target.stateDir, DAEMON_JSON);
      const until = Date.now() + 2_000;
      while (!existsSync(file) && Date.now() < until && !exited) await new Promise((r) => setTimeout(r, 10));
      child.unref();
      return { pid: child.pid };
    }
    // Our daemon gave up; another client's daemon may still be coming up on the same socket.
    if (exited && Date.now() - exited.at > 1_500) {
      const why = lastError(logFile) ?? `it exited with ${exited.signal ? `signal ${exited.signal}` : `code ${exited.code}`}`;
      // Several lines (a bad config's problems): printed one a line (main.ts), as `mcpx daemon` prints them.
      const problems = why.includes('\n') ? { problems: why.split('\n') } : {};
      throw new McpxError('MCPX_DAEMON_UNAVAILABLE', `the daemon did not start: ${why} (log: ${logFile})`, { data: { log: logFile, ...problems } });
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  child.unref();
  throw new McpxError('MCPX_DAEMON_UNAVAILABLE', `the daemon did not answer on ${target.socket} within ${Math.round(timeoutMs / 1000)} s (log: ${logFile})`, {
    data: { log: logFile },
  });
}
