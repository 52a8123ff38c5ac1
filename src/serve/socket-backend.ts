/**
 * The front's backend in `mcpx serve`: the daemon, over its Unix socket.
 *
 * - The daemon is found through the state folder like every client command, and started when none
 *   answers — also later, when it went away between two requests (checked again once a connection to
 *   it closed, not before every request).
 * - Requests go over a pool of keep-alive connections (node:http's Agent, not undici: loading undici
 *   took about a fifth of serve's start), one request per connection at a time, so concurrent calls
 *   (and long ask polls) never queue behind one another.
 * - Every request carries the caller's revision (`X-Mcpx-Caller-Protocol`) and session, so the pool
 *   picks the lane and the scope key. A request whose caller wants progress streams
 *   (`Accept: text/event-stream`) so progress reaches the caller while the upstream works; the others
 *   get one JSON answer. A cancelled caller request aborts the HTTP request, which cancels the
 *   upstream one.
 * - A request in flight when the daemon dies fails with MCPX_DAEMON_UNAVAILABLE and is never retried
 *   (a tool may have side effects); listings are safe to repeat and are retried once on a fresh daemon.
 * - Catalogue changes arrive on `GET /v1/events?type=catalog.changed`.
 */
import { EventEmitter } from 'node:events';
import { Agent, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { silentLogger, type Logger } from '../log.js';
import { DaemonClient, isNotRunning, readText, send, startDaemonInBackground, type Target } from '../cli/client.js';
import { CALLER_PROTOCOL_HEADER, SESSION_HEADER } from '../server/headers.js';
import { SseDecoder } from '../transports/sse.js';
import {
  RelayError,
  type AskBackend,
  type AskView,
  type CatalogChange,
  type CatalogView,
  type FrontBackend,
  type RelayContext,
  type RelayedMethod,
} from './backend.js';

export interface SocketBackendOptions {
  target: Target;
  /** The CLI entry that runs `daemon` when one must be started. */
  entry: string;
  logger?: Logger;
}

const GONE = 'the mcpx daemon went away';

export class SocketBackend implements FrontBackend {
  private readonly opts: SocketBackendOptions;
  private readonly log: Logger;
  private readonly events = new EventEmitter();
  private http: Agent | undefined;
  private readonly watched = new WeakSet<Socket>();
  private following: { stop: () => void } | undefined;
  private starting: Promise<void> | undefined;
  /**
   * A daemon answered and no connection to it has closed since: requests go straight to it. Any
   * connection closing (the daemon went away, or an idle connection timed out) clears it, so the next
   * request checks again (and starts a daemon when none answers) before it is sent.
   */
  private connected = false;
  private closed = false;
  /** Requests that must reach the daemon even while serve closes (abandons). */
  private readonly pending = new Set<Promise<void>>();

  constructor(opts: SocketBackendOptions) {
    this.opts = opts;
    this.log = (opts.logger ?? silentLogger).child({ component: 'serve' });
    this.events.setMaxListeners(0);
  }

  /** Finds the daemon, or starts one; follows its catalogue changes. */
  connect(): Promise<void> {
    return this.ensure();
  }

  /** A daemon that answers: the one there, or a new one started in the background. */
  private ensure(): Promise<void> {
    if (this.connected) return Promise.resolve();
    this.starting ??= (async () => {
      const probe = new DaemonClient(this.opts.target.socket);
      if (!(await probe.alive())) {
        // A follower of a daemon that went away between two requests has ended: follow the new one.
        this.following?.stop();
        this.following = undefined;
        this.log.info({ socket: this.opts.target.socket }, 'starting the mcpx daemon');
        await startDaemonInBackground(this.opts.target, { entry: this.opts.entry });
        this.changed({ lists: ['tools', 'prompts', 'resources'] });
      }
      this.follow();
      this.connected = true;
    })().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  /**
   * One pool of keep-alive connections: a connection carries one request at a time (no pipelining), so
   * a slow call never holds up the calls behind it, and concurrent calls each get a connection.
   */
  private client(): Agent {
    this.http ??= new Agent({ keepAlive: true });
    return this.http;
  }

  /** One request to the daemon on `agent`; resolves when the answer's head is in. */
  private send(
    agent: Agent,
    opts: { path: string; method: 'GET' | 'POST'; headers: Record<string, string>; body?: string; signal?: AbortSignal },
  ): Promise<IncomingMessage> {
    return send(this.opts.target.socket, {
      ...opts,
      agent,
      onSocket: (socket) => {
        if (this.watched.has(socket)) return;
        this.watched.add(socket);
        socket.once('close', () => {
          if (this.http === agent) this.connected = false;
        });
      },
    });
  }

  private headers(ctx: RelayContext): Record<string, string> {
    return {
      ...(ctx.callerProtocol ? { [CALLER_PROTOCOL_HEADER]: ctx.callerProtocol } : {}),
      ...(ctx.session ? { [SESSION_HEADER]: ctx.session } : {}),
    };
  }

  async catalog(ctx: RelayContext): Promise<CatalogView> {
    for (let attempt = 0; ; attempt++) {
      await this.ensure();
      const http = this.client();
      try {
        const res = await this.send(http, {
          path: '/v1/catalog',
          method: 'GET',
          headers: { accept: ctx.onProgress ? 'text/event-stream' : 'application/json', ...this.headers(ctx) },
          ...(ctx.signal ? { signal: ctx.signal } : {}),
        });
        let body: (CatalogView & { ok?: false; error?: { code: string; message: string } }) | undefined;
        if (isStream(res)) body = (await readStream(res, ctx)) as typeof body;
        else body = (await readJson(res)) as typeof body;
        if (!body) throw new RelayError('MCPX_DAEMON_UNAVAILABLE', `${GONE} before answering`);
        if (res.statusCode !== 200 || body.ok === false)
          throw new RelayError(body.error?.code ?? 'MCPX_INTERNAL', body.error?.message ?? `the daemon answered ${res.statusCode}`);
        return body;
      } catch (err) {
        // A listing is safe to repeat: once, on a fresh daemon.
        if (attempt === 0 && isNotRunning(err)) {
          this.reset(http);
          continue;
        }
        throw this.relayError(err);
      }
    }
  }

  async request(server: string, method: RelayedMethod, params: Record<string, unknown>, ctx: RelayContext): Promise<Record<string, unknown>> {
    await this.ensure();
    const http = this.client();
    let outcome: Outcome | undefined;
    try {
      const res = await this.send(http, {
        path: '/v1/request',
        method: 'POST',
        // Streamed only when the caller wants progress: an upstream told of no progress token behaves as for a direct caller.
        headers: { accept: ctx.onProgress ? 'text/event-stream' : 'application/json', 'content-type': 'application/json', ...this.headers(ctx) },
        body: JSON.stringify({
          server,
          method,
          params,
          ...(ctx.session ? { session: ctx.session } : {}),
          ...(ctx.timeoutMs === undefined ? {} : { timeoutMs: ctx.timeoutMs }),
        }),
        ...(ctx.signal ? { signal: ctx.signal } : {}),
      });
      if (isStream(res)) outcome = await readStream(res, ctx);
      else {
        const body = (await readJson(res)) as Outcome;
        if (res.statusCode === 200 && typeof body.ok === 'boolean') outcome = body;
        else throw new RelayError(body.error?.code ?? 'MCPX_INTERNAL', body.error?.message ?? `the daemon answered ${res.statusCode}`, body.error?.data);
      }
    } catch (err) {
      if (isNotRunning(err) || isSocketError(err)) {
        this.reset(http);
        throw new RelayError(
          'MCPX_DAEMON_UNAVAILABLE',
          `${GONE} during this request; it was not retried, since a tool may have side effects (the next request starts a new daemon)`,
        );
      }
      throw this.relayError(err);
    }
    if (!outcome) {
      this.reset(http);
      throw new RelayError('MCPX_DAEMON_UNAVAILABLE', `${GONE} before answering; the request was not retried, since a tool may have side effects`);
    }
    if (outcome.ok && outcome.result) return outcome.result;
    const e = outcome.error ?? { code: 'MCPX_INTERNAL', message: 'the daemon gave no result' };
    throw new RelayError(e.code, e.message, e.data);
  }

  /** `/v1/ask`: the call is held by the daemon between rounds, so a question survives a slow caller. */
  readonly asks: AskBackend = {
    ask: async (server, tool, args, ctx) => {
      await this.ensure();
      const body = {
        server,
        tool,
        args,
        capabilities: ctx.capabilities,
        ...(ctx.method === undefined ? {} : { method: ctx.method }),
        ...(ctx.params === undefined ? {} : { params: ctx.params }),
        ...(ctx.questionTimeoutMs === undefined ? {} : { questionTimeoutMs: ctx.questionTimeoutMs }),
        ...(ctx.session ? { session: ctx.session } : {}),
      };
      return this.json<{ id: string }>('POST', '/v1/ask', body, ctx);
    },
    askPoll: (id, waitMs, ctx) => this.json<AskView>('GET', `/v1/ask/${encodeURIComponent(id)}?waitMs=${waitMs}`, undefined, ctx),
    askAnswer: async (id, answers) => {
      await this.json('POST', `/v1/ask/${encodeURIComponent(id)}/answers`, { answers }, {});
    },
    askAbandon: async (id) => {
      // Kept until sent, so a serve that is closing (its client left) still tells the daemon.
      const sent = this.json('POST', `/v1/ask/${encodeURIComponent(id)}/abandon`, {}, {}).then(() => undefined);
      this.pending.add(sent);
      void sent.catch(() => undefined).finally(() => this.pending.delete(sent));
      await sent;
    },
  };

  /** One JSON request to the daemon; a non-2xx answer is a RelayError with the daemon's code. */
  private async json<T>(method: 'GET' | 'POST', path: string, body: unknown, ctx: RelayContext): Promise<T> {
    const http = this.client();
    try {
      const res = await this.send(http, {
        path,
        method,
        headers: {
          accept: ctx.onProgress ? 'text/event-stream' : 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...this.headers(ctx),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        ...(ctx.signal ? { signal: ctx.signal } : {}),
      });
      const streamed = isStream(res);
      const parsed = (streamed ? await readStream(res, ctx) : await readJson(res)) as T & {
        ok?: false;
        error?: { code: string; message: string; data?: Record<string, unknown> };
      };
      if (parsed === undefined) throw new RelayError('MCPX_DAEMON_UNAVAILABLE', `${GONE} before answering`);
      if (streamed && parsed.ok === false)
        throw new RelayError(parsed.error?.code ?? 'MCPX_INTERNAL', parsed.error?.message ?? 'the daemon gave no answer', parsed.error?.data);
      if ((res.statusCode ?? 500) >= 400)
        throw new RelayError(parsed.error?.code ?? 'MCPX_INTERNAL', parsed.error?.message ?? `the daemon answered ${res.statusCode}`, parsed.error?.data);
      return parsed;
    } catch (err) {
      if (isNotRunning(err) || isSocketError(err)) {
        this.reset(http);
        throw new RelayError(
          'MCPX_DAEMON_UNAVAILABLE',
          `${GONE} during this call; it was not retried, since a tool may have side effects (the next request starts a new daemon)`,
        );
      }
      throw this.relayError(err);
    }
  }

  onChange(listener: (change: CatalogChange) => void): () => void {
    this.events.on('change', listener);
    return () => this.events.off('change', listener);
  }

  private changed(change: CatalogChange): void {
    this.events.emit('change', change);
  }

  /** Follows the daemon's catalogue changes until it goes away. */
  private follow(): void {
    if (this.following || this.closed) return;
    const client = new DaemonClient(this.opts.target.socket);
    const f = client.follow('?type=catalog.changed', (type, data) => {
      if (type !== 'catalog.changed') return;
      const d = data as { server?: string; lists?: CatalogChange['lists'] };
      this.changed({ ...(d.server === undefined ? {} : { server: d.server }), lists: d.lists ?? ['tools', 'prompts', 'resources'] });
    });
    this.following = f;
  }

  /**
   * The daemon went away: forget the connections (the next request finds or starts a daemon). `failed`
   * is the pool the failing request used: when it was already replaced (another request in flight
   * failed first), there is nothing more to forget.
   */
  private reset(failed: Agent): void {
    if (failed !== this.http) return;
    this.connected = false;
    this.following?.stop();
    this.following = undefined;
    const http = this.http;
    this.http = undefined;
    http?.destroy();
  }

  private relayError(err: unknown): RelayError {
    if (err instanceof RelayError) return err;
    const e = err as { name?: string; code?: string; message?: string; data?: Record<string, unknown> };
    if (e.name === 'AbortError' || e.code === 'ABORT_ERR') return new RelayError('MCPX_REQUEST_CANCELLED', 'the caller cancelled the request');
    return new RelayError(typeof e.code === 'string' && e.code.startsWith('MCPX_') ? e.code : 'MCPX_INTERNAL', e.message ?? String(err), e.data);
  }

  async close(): Promise<void> {
    this.closed = true;
    // Let abandons already under way reach the daemon (bounded: a gone daemon must not hold serve open).
    await Promise.race([Promise.allSettled([...this.pending]), new Promise((r) => setTimeout(r, 2_000).unref())]);
    this.following?.stop();
    this.following = undefined;
    this.http?.destroy();
    this.http = undefined;
  }
}

interface Outcome {
  ok: boolean;
  result?: Record<string, unknown>;
  error?: { code: string; message: string; data?: Record<string, unknown> };
}

const isStream = (res: IncomingMessage) => (res.headers['content-type'] ?? '').startsWith('text/event-stream');

/** A JSON answer, whole (a connection cut off mid-answer throws, like any socket error). */
async function readJson(res: IncomingMessage): Promise<unknown> {
  return JSON.parse(await readText(res));
}

/** A streamed /v1/request or /v1/catalog: progress frames to the caller, then the outcome (none: the stream broke off). */
async function readStream(body: AsyncIterable<unknown>, ctx: RelayContext): Promise<Outcome | undefined> {
  let outcome: Outcome | undefined;
  const decoder = new SseDecoder({
    onEvent: (e) => {
      if (e.event === 'progress') {
        try {
          ctx.onProgress?.(JSON.parse(e.data));
        } catch {
          // a progress frame we cannot read is only progress
        }
      } else if (e.event === 'result') {
        outcome = JSON.parse(e.data) as Outcome;
      }
    },
  });
  for await (const chunk of body) decoder.push(chunk as Buffer);
  decoder.end();
  return outcome;
}

function isSocketError(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  // ECONNRESET also covers a request cut off because another one found the daemon gone (the agent was destroyed).
  return code === 'ECONNRESET' || code === 'EPIPE' || code === 'ERR_STREAM_PREMATURE_CLOSE';
}
