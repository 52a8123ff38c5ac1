/**
 * `mcpx serve`'s way into the daemon: one stream on its Unix socket (`GET /v1/mcp-stream`, upgraded;
 * src/api/serve-upgrade.ts), started when no daemon answers. node:net and a hand-written request
 * head: what serve loads is paid by every MCP client at each start, and the stream needs no HTTP client
 * once it is open.
 */
import { connect, type Socket } from 'node:net';
import { McpxError, type ErrorCode } from '../errors.js';
import { isNotRunning } from '../daemon-client/not-running.js';
import type { Target } from '../daemon-client/target.js';
import { MCP_STREAM_PATH, MCP_STREAM_UPGRADE } from '../front/headers.js';
import { setEntryTools, type EntryTools } from '../front/tool-strategy.js';
import { checkSocketTrust } from '../state/safe-files.js';

export interface DaemonStreamOptions {
  target: Target;
  /** The CLI entry that runs `daemon` when one must be started. */
  entry: string;
  passthrough?: string;
  servers?: readonly string[];
  /** How tools are offered and which are shown (`--tools`, `--allow-tools`, `--deny-tools`). */
  tools?: EntryTools;
  /** serve's session: the scope key of servers pooled per session. */
  session: string;
}

export interface DaemonStream {
  socket: Socket;
  /** What arrived after the daemon's `101`, already the stream's. */
  head: Buffer;
}

/** How long the daemon has to answer the upgrade (its first stream loads the MCP SDK's server side). */
const ANSWER_MS = 10_000;
/** How long a stopping daemon is waited for before another is started. */
const STOPPING_MS = 20_000;

/**
 * A stream to the daemon: the one that answers, else one started in the background (once). Rejects with
 * an McpxError: the daemon's refusal (`MCPX_UNKNOWN_SERVER` naming the servers), or why none could be reached.
 */
export async function openDaemonStream(o: DaemonStreamOptions): Promise<DaemonStream> {
  const query = new URLSearchParams({ session: o.session });
  if (o.passthrough !== undefined) query.set('passthrough', o.passthrough);
  // The config this serve means (what its client's entry names): the daemon serves its servers, whatever config it started with.
  if (o.target.configFile !== undefined) query.set('config', o.target.configFile);
  if (o.servers !== undefined) query.set('servers', o.servers.join(','));
  if (o.tools !== undefined) setEntryTools(query, o.tools);
  const path = `${MCP_STREAM_PATH}?${query.toString()}`;
  let started = false;
  const deadline = Date.now() + STOPPING_MS;
  for (;;) {
    try {
      return await upgrade(o.target.socket, path);
    } catch (err) {
      // A daemon that is stopping still holds the socket: the next one can start once it is gone.
      if (err instanceof McpxError && err.code === 'MCPX_SHUTTING_DOWN' && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      if (started || !isNotRunning(err)) throw err instanceof McpxError ? err : new McpxError('MCPX_DAEMON_UNAVAILABLE', String((err as Error).message ?? err));
      // The CLI's HTTP client (node:http) loads only here: serve speaks none once a daemon answers.
      const { startDaemonInBackground } = await import('../daemon-client/client.js');
      await startDaemonInBackground(o.target, { entry: o.entry });
      started = true;
    }
  }
}

/** One upgrade request on the socket: the stream on 101, else the daemon's error as an McpxError. */
function upgrade(socketPath: string, path: string): Promise<DaemonStream> {
  checkSocketTrust(socketPath); // nothing is sent on a socket another user could have planted
  return new Promise((resolve, reject) => {
    const socket = connect({ path: socketPath });
    let buf: Buffer = Buffer.alloc(0);
    let done = false;
    const fail = (err: Error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      reject(err);
    };
    const timer = setTimeout(
      () => fail(new McpxError('MCPX_DAEMON_UNAVAILABLE', `the daemon on ${socketPath} did not answer within ${ANSWER_MS / 1000} s`)),
      ANSWER_MS,
    );
    const onData = (chunk: Buffer) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      const end = buf.indexOf('\r\n\r\n');
      if (end === -1) {
        if (buf.length > 64 * 1024) fail(new McpxError('MCPX_DAEMON_UNAVAILABLE', `the daemon on ${socketPath} answered no HTTP`));
        return;
      }
      const head = buf.subarray(0, end).toString('latin1');
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
      if (status === 101) {
        done = true;
        clearTimeout(timer);
        socket.off('data', onData);
        socket.off('error', fail);
        socket.off('end', onEnd);
        resolve({ socket, head: buf.subarray(end + 4) });
        return;
      }
      const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? NaN);
      const body = buf.subarray(end + 4);
      if (!Number.isFinite(length) || body.length >= length) fail(refusal(status, body.subarray(0, Number.isFinite(length) ? length : body.length)));
    };
    const onEnd = () => {
      const end = buf.indexOf('\r\n\r\n');
      if (end === -1) fail(Object.assign(new Error('the daemon closed the connection before answering'), { code: 'ECONNRESET' }));
      else fail(refusal(Number(/^HTTP\/1\.[01] (\d{3})/.exec(buf.toString('latin1'))?.[1] ?? 0), buf.subarray(end + 4)));
    };
    socket.on('data', onData);
    socket.once('error', fail);
    socket.once('end', onEnd);
    socket.once('connect', () => {
      socket.setNoDelay(true);
      socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: ${MCP_STREAM_UPGRADE}\r\n\r\n`);
    });
  });
}

/** The daemon's answer other than 101, as the error its body names. */
function refusal(status: number, body: Buffer): McpxError {
  let error: { code?: string; message?: string } | undefined;
  try {
    error = (JSON.parse(body.toString('utf8')) as { error?: { code?: string; message?: string } }).error;
  } catch {
    error = undefined;
  }
  const code = (typeof error?.code === 'string' && error.code.startsWith('MCPX_') ? error.code : 'MCPX_DAEMON_UNAVAILABLE') as ErrorCode;
  return new McpxError(code, error?.message ?? `the daemon answered ${status} to mcpx serve's stream`);
}
