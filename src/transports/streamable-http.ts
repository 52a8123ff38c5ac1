/**
 * A Channel to an MCP server over Streamable HTTP, both eras (the MCP specification).
 *
 * Every JSON-RPC message is its own POST. The channel decides nothing about eras; it reads the era
 * of each message off the message itself and sets the headers that era requires:
 * - modern (params._meta carries io.modelcontextprotocol/protocolVersion): `MCP-Protocol-Version`
 *   (= that value), `Mcp-Method`, `Mcp-Name` for the methods that mirror a name/uri. Never a session id.
 *   Plus the headers given to send() (SEP-2243 `Mcp-Param-*`, computed by RequestClient): modern only.
 * - legacy: the channel watches the `initialize` exchange and remembers the negotiated version and the
 *   `Mcp-Session-Id` the server minted; later legacy messages carry both (`initialize` carries neither).
 *   A 404 to a message carrying the session id is reported to the owner (onSessionExpired), which opens
 *   a new session (the session chart's `renewing` state); the message is then sent once more.
 *
 * Answers arrive as `application/json` or as an SSE stream scoped to the POST. Everything that arrives
 * on a POST's response — progress, logs, and server-to-client requests — is delivered with the
 * context given to send() for that POST, which is how a question is attributed to the call that
 * provoked it. A non-2xx answer whose body is the JSON-RPC response to the request is delivered as
 * that response (a -32022 inside a 400 reaches the version retry); any other failure of a request is
 * reported through onRequestError, never thrown from send() and never as a close: HTTP has no process
 * to die, so onClose fires only from close() — and when a legacy session expired (404) and could not be
 * opened again, since the channel is then unusable.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Dispatcher } from 'undici';
import { McpxError, MessageTooLargeError, TransportClosedError, type RpcErrorObject } from '../errors.js';
import { META } from '../protocol/constants.js';
import { HTTPStatusError, HttpConnectionError, isAuthStatus, statusError, type HttpFailureInit } from './http-errors.js';
import { HttpChannelBase, PROTOCOL_HEADERS, type HttpChannelOptions } from './http-channel-base.js';
import { classifyMessage, isNotification, isRequest, isResponse, truncate } from './jsonrpc.js';
import { encodeParamValue } from './mcp-param-headers.js';
import type { Channel, CloseInfo, JsonRpcId, JsonRpcMessage, JsonRpcResponse, SendOptions } from './types.js';
import { SseDecoder } from './sse.js';
import { describeCause, discard, errorCode, headerValue, mediaType, readLimited, readPrefix, type ResponseHeaders } from './http-body.js';

/** How much of a non-2xx body is read looking for a JSON-RPC answer. */
const ERROR_BODY_READ_BYTES = 1024 * 1024;
/** close(): how long the session DELETE may take. */
const DELETE_TIMEOUT_MS = 2000;
/** SSE reconnection delay when the server gave no `retry` field. */
const DEFAULT_RETRY_MS = 1000;
/** Longest wait between reconnection attempts of the standalone GET stream (backoff cap). */
const MAX_BACKOFF_MS = 30_000;
/** The standalone GET stream is given up after this many failed attempts in a row. */
const MAX_STANDALONE_FAILURES = 5;
/** A POST's response stream is resumed (GET + Last-Event-ID) at most this many times without progress. */
const MAX_RESUME_ATTEMPTS = 5;
/**
 * After `notifications/initialized`, requests wait (at most this long) until the server has answered the
 * standalone GET. A server may drop a message meant for that stream while it is not open yet (the SDK's
 * servers do), so a request sent too early could provoke a question that never arrives.
 */
const STANDALONE_OPEN_WAIT_MS = 2000;

/** What an SSE stream left behind for a reconnection. */
interface StreamEnd {
  lastEventId: string | undefined;
  retry: number | undefined;
  /** How many events the stream carried. */
  events: number;
}

/** Let go of a response body, read or not (its abort error has nobody to go to). */
function drop(res: Dispatcher.ResponseData): void {
  if (res.body.destroyed) return;
  res.body.on('error', () => undefined);
  res.body.destroy();
}

/** Wait `ms`; false when `signal` aborted meanwhile. */
async function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  try {
    await sleep(ms, undefined, { signal });
    return true;
  } catch {
    return false;
  }
}

export type StreamableHttpChannelOptions = HttpChannelOptions;

/** One POST (and, after a session renewal, its retry); `C` is the context its sender gave it. */
interface Flight<C> {
  message: JsonRpcMessage;
  /** Set for requests: the id whose answer this POST waits for. */
  id: JsonRpcId | undefined;
  method: string | undefined;
  context: C | undefined;
  /** Extra headers from send() (modern POSTs only). */
  headers?: Record<string, string>;
  controller: AbortController;
  /** Answered, failed, or given up: nothing more is reported for it. */
  settled: boolean;
  /** Cancelled by the caller (notifications/cancelled): its abort is not an error. */
  cancelled: boolean;
}

interface LegacySession {
  /** The version the server answered initialize with; sent as MCP-Protocol-Version. */
  version: string;
  /** Mcp-Session-Id minted by the server, if it minted one. */
  sessionId: string | undefined;
}

/** Methods whose `Mcp-Name` header mirrors a params field (SEP-2243; tasks/* from the tasks extension). */
const MCP_NAME_SOURCE: Readonly<Record<string, string>> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
};

/**
 * An `Mcp-Name` value per the 2026-07-28 value-encoding rule ("The same encoding rule applies to the
 * `Mcp-Name` header value"): safe visible ASCII passes through; anything else (non-ASCII, control
 * characters, surrounding white space, or text that already looks like the sentinel) becomes
 * `=?base64?<base64 of UTF-8>?=`. An empty name is sent encoded too: an empty `Mcp-Name` would read as
 * the required header missing.
 */
export function encodeMcpHeaderValue(value: string): string {
  return value === '' ? '=?base64??=' : encodeParamValue(value);
}

/** The modern protocol version a message claims in params._meta, if any. */
export function modernVersionOf(message: JsonRpcMessage): string | undefined {
  if (!('method' in message)) return undefined;
  const meta = message.params?._meta;
  if (typeof meta !== 'object' || meta === null) return undefined;
  const v = (meta as Record<string, unknown>)[META.protocolVersion];
  return typeof v === 'string' ? v : undefined;
}

// ------------------------------------------------------------------------------------ the channel

export class StreamableHttpChannel<C = unknown> extends HttpChannelBase<C> implements Channel<C> {
  private readonly inflight = new Set<Flight<C>>();
  private readonly requestsById = new Map<JsonRpcId, Flight<C>>();
  private legacy: LegacySession | undefined;
  private renewal: Promise<void> | undefined;
  private expiredHandler: (() => Promise<void>) | undefined;
  /** The legacy standalone GET stream (§4.3), for the session it belongs to. */
  private standalone: { session: LegacySession; controller: AbortController } | undefined;
  /** Set from `notifications/initialized` until the server has answered the standalone GET (or failed to). */
  private standaloneOpening: { done: Promise<void>; open: () => void } | undefined;
  private closePromise: Promise<void> | undefined;

  constructor(options: StreamableHttpChannelOptions) {
    super(options, 'Streamable HTTP upstream');
  }

  /** The legacy session the channel is tracking: negotiated version and whether a session id was minted. */
  get legacySession(): { version: string; hasSessionId: boolean } | undefined {
    return this.legacy ? { version: this.legacy.version, hasSessionId: this.legacy.sessionId !== undefined } : undefined;
  }

  /** Messages posted and not yet finished (requests waiting for an answer, notifications in transit). */
  get inflightCount(): number {
    return this.inflight.size;
  }

  /** Nothing to open: the first POST connects. */
  start(): Promise<void> {
    if (this.isClosed) return Promise.reject(new TransportClosedError(`the HTTP channel to ${this.displayUrl} is closed`, { url: this.displayUrl }));
    return Promise.resolve();
  }

  send(message: JsonRpcMessage, context?: C, options?: SendOptions): void {
    if (this.isClosed) {
      throw new TransportClosedError(`cannot send to ${this.displayUrl}: the HTTP channel is closed`, { url: this.displayUrl });
    }
    if (isNotification(message) && message.method === 'notifications/cancelled' && this.cancel(message.params?.requestId)) return;

    const id = isRequest(message) ? message.id : undefined;
    const flight: Flight<C> = {
      message,
      id,
      method: 'method' in message ? message.method : undefined,
      context,
      ...(options?.headers === undefined ? {} : { headers: options.headers }),
      controller: new AbortController(),
      settled: false,
      cancelled: false,
    };
    this.inflight.add(flight);
    if (id !== undefined) this.requestsById.set(id, flight);
    void this.run(flight);
  }

  /** Closes the channel; with `error`, requests still waiting fail with it (why the owner closed it). */
  close(error?: Error): Promise<void> {
    this.closePromise ??= this.shutdown(error ? { reason: 'connection-lost', error } : { reason: 'stopped' });
    return this.closePromise;
  }

  // ---------------------------------------------------------------------------------- sending

  /**
   * A caller cancelled a request. Modern: closing the response stream is the cancellation (there is
   * no notifications/cancelled on 2026-07-28 HTTP), so the POST is aborted and nothing is sent.
   * Legacy: disconnecting is not cancelling, so the notification is posted (returns false) and the
   * now unwanted response stream is closed.
   */
  private cancel(requestId: unknown): boolean {
    if (typeof requestId !== 'string' && typeof requestId !== 'number') return false;
    const flight = this.requestsById.get(requestId);
    if (!flight || flight.settled) return false;
    flight.cancelled = true;
    const modern = modernVersionOf(flight.message) !== undefined;
    if (modern) {
      flight.controller.abort(new Error('cancelled'));
      return true;
    }
    // Let the notification go out first (it is queued behind this call), then drop the stream.
    setImmediate(() => flight.controller.abort(new Error('cancelled')));
    return false;
  }

  private async run(flight: Flight<C>): Promise<void> {
    const initialized = flight.method === 'notifications/initialized' && !isRequest(flight.message);
    // Before the first await: send() runs this synchronously, so requests sent after it find the gate.
    if (initialized) this.expectStandalone();
    let getting = false;
    try {
      if (this.standaloneOpening && !initialized && flight.method !== 'initialize') await this.standaloneOpening.done;
      await this.exchange(flight, true);
      // The session is initialized: open its standalone GET stream (a 405 means there is none).
      if (initialized) getting = this.openStandalone();
    } catch (err) {
      this.failFlight(flight, err instanceof Error ? err : new Error(String(err)));
    } finally {
      if (initialized && !getting) this.standaloneOpened();
      this.inflight.delete(flight);
      if (flight.id !== undefined && this.requestsById.get(flight.id) === flight) this.requestsById.delete(flight.id);
    }
  }

  private failFlight(flight: Flight<C>, error: Error): void {
    if (flight.settled || flight.cancelled || this.isClosed) {
      this.log.debug({ err: error, method: flight.method, id: flight.id }, 'ignoring the failure of a finished or cancelled HTTP message');
      return;
    }
    flight.settled = true;
    if (flight.id === undefined) {
      this.log.warn({ err: error, method: flight.method, url: this.displayUrl }, 'could not deliver a message to the upstream');
      return;
    }
    this.log.debug({ err: error, method: flight.method, id: flight.id, url: this.displayUrl }, 'an HTTP request failed');
    this.reportRequestError(flight.id, error);
  }

  /** The headers for one message, and the session id it carries (if any). `extra`: send()'s, modern only. */
  private headersFor(message: JsonRpcMessage, extra?: Record<string, string>): { headers: Record<string, string>; sessionId: string | undefined } {
    const headers: Record<string, string> = {
      ...this.headers,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };
    const version = modernVersionOf(message);
    if (version !== undefined && 'method' in message) {
      headers['mcp-protocol-version'] = version;
      headers['mcp-method'] = message.method;
      const field = Object.hasOwn(MCP_NAME_SOURCE, message.method) ? MCP_NAME_SOURCE[message.method] : undefined;
      const name = field !== undefined ? message.params?.[field] : undefined;
      if (typeof name === 'string') headers['mcp-name'] = encodeMcpHeaderValue(name);
      for (const [key, value] of Object.entries(extra ?? {})) {
        const lower = key.toLowerCase();
        if (!PROTOCOL_HEADERS.has(lower)) headers[lower] = value;
      }
      return { headers, sessionId: undefined };
    }
    if ('method' in message && message.method === 'initialize') return { headers, sessionId: undefined };
    const session = this.legacy;
    if (!session) return { headers, sessionId: undefined };
    headers['mcp-protocol-version'] = session.version;
    if (session.sessionId !== undefined) headers['mcp-session-id'] = session.sessionId;
    return { headers, sessionId: session.sessionId };
  }

  private async post(body: string, headers: Record<string, string>, signal: AbortSignal, what: string): Promise<Dispatcher.ResponseData> {
    try {
      return await this.request(this.url, {
        method: 'POST',
        headers,
        body,
        signal,
        headersTimeout: 0,
        bodyTimeout: 0,
      });
    } catch (err) {
      throw this.connectionError(what, err);
    }
  }

  private connectionError(what: string, cause: unknown, during = 'sending'): HttpConnectionError {
    const why = this.redactor.text(describeCause(cause));
    return new HttpConnectionError(
      `the connection to ${this.displayUrl} failed while ${during} ${what}: ${why}`,
      { url: this.displayUrl, method: what, ...(errorCode(cause) ? { cause: errorCode(cause) } : {}) },
      cause,
    );
  }

  /** POST one message and process the answer; throws what the flight should fail with. */
  private async exchange(flight: Flight<C>, mayRenew: boolean): Promise<void> {
    const what = flight.method ?? 'a response';
    const { headers, sessionId } = this.headersFor(flight.message, flight.headers);
    const res = await this.post(JSON.stringify(flight.message), headers, flight.controller.signal, what);
    const status = res.statusCode;
    try {
      if (status === 404 && sessionId !== undefined && mayRenew && !isResponse(flight.message)) {
        await discard(res.body);
        await this.renewSession(sessionId);
        if (flight.settled || flight.cancelled || this.isClosed) return;
        await this.exchange(flight, false);
        return;
      }
      if (status >= 200 && status < 300) {
        const end = await this.readSuccess(flight, res, what);
        // SEP-1699: a legacy response stream that ends early after giving event ids is resumed with GET.
        if (
          end?.lastEventId !== undefined &&
          flight.id !== undefined &&
          !flight.settled &&
          !flight.cancelled &&
          !this.isClosed &&
          modernVersionOf(flight.message) === undefined &&
          this.legacy !== undefined
        ) {
          drop(res);
          await this.resume(flight, end, what);
        }
        if (flight.id !== undefined && !flight.settled && !flight.cancelled && !this.isClosed) {
          throw new HttpConnectionError(`${this.displayUrl} ended the response to ${what} (HTTP ${status}) without answering it`, {
            url: this.displayUrl,
            method: what,
            status,
          });
        }
        return;
      }
      await this.readFailure(flight, res, what);
    } finally {
      if (!res.body.destroyed) res.body.destroy();
    }
  }

  private async readSuccess(flight: Flight<C>, res: Dispatcher.ResponseData, what: string): Promise<StreamEnd | undefined> {
    if (mediaType(res.headers) === 'text/event-stream') {
      return this.readEventStream(flight, res, what);
    }
    let buf: Buffer;
    try {
      buf = await readLimited(res.body, this.maxMessageBytes, headerValue(res.headers, 'content-length'));
    } catch (err) {
      if (err instanceof MessageTooLargeError) throw err;
      if (flight.controller.signal.aborted) return;
      throw this.connectionError(what, err, 'reading the answer to');
    }
    const text = buf.toString('utf8');
    if (text.trim() === '') return undefined;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new HTTPStatusError(this.failureInit(res, what, text, undefined, 'the body is not JSON'));
    }
    for (const item of Array.isArray(value) ? value : [value]) this.deliverValue(flight, item, res.headers);
    return undefined;
  }

  private readEventStream(flight: Flight<C>, res: Dispatcher.ResponseData, what: string): Promise<StreamEnd> {
    return new Promise<StreamEnd>((resolve, reject) => {
      let done = false;
      let events = 0;
      const finish = (err?: Error): void => {
        if (done) return;
        done = true;
        if (err) reject(err);
        else resolve({ lastEventId: decoder.lastEventId, retry: decoder.retry, events });
      };
      const decoder = new SseDecoder({
        maxEventBytes: this.maxMessageBytes,
        onEvent: (event) => {
          events++;
          if (event.data === '') return; // a priming event: an id (and maybe a retry), nothing to deliver
          if (event.event !== 'message') {
            this.log.debug({ event: event.event, url: this.displayUrl }, 'ignoring an SSE event that is not a message');
            return;
          }
          let value: unknown;
          try {
            value = JSON.parse(event.data);
          } catch {
            this.log.warn({ url: this.displayUrl, data: truncate(this.redactor.text(event.data), 200) }, 'ignoring an SSE message that is not JSON');
            return;
          }
          for (const item of Array.isArray(value) ? value : [value]) this.deliverValue(flight, item, res.headers);
          // Answered: the stream has nothing more for this request (a resumed GET stream may stay open).
          if (flight.id !== undefined && flight.settled) {
            finish();
            res.body.destroy();
          }
        },
        onOverflow: () => {
          res.body.destroy();
          finish(new MessageTooLargeError(this.maxMessageBytes));
        },
      });
      res.body.on('data', (chunk: Buffer) => {
        try {
          decoder.push(chunk);
        } catch (err) {
          this.log.error({ err }, 'SSE decoding failed');
        }
      });
      res.body.on('end', () => {
        decoder.end();
        finish();
      });
      res.body.on('error', (err) => {
        if (flight.controller.signal.aborted || this.isClosed) finish();
        else finish(this.connectionError(what, err, 'reading the answer to'));
      });
      res.body.on('close', () => {
        if (!done && (flight.controller.signal.aborted || this.isClosed)) finish();
      });
    });
  }

  private async readFailure(flight: Flight<C>, res: Dispatcher.ResponseData, what: string): Promise<void> {
    const status = res.statusCode;
    const prefix = await readPrefix(res.body, ERROR_BODY_READ_BYTES);
    const messages = prefix.complete ? this.parseBody(prefix.text, mediaType(res.headers)) : [];
    const responses = messages.filter(isResponse);
    const rpcError = responses.find((m): m is JsonRpcResponse & { error: RpcErrorObject } => 'error' in m)?.error;

    // Auth first: a 401/403 is never delivered as a JSON-RPC answer, so it can never be read as era evidence.
    if (isAuthStatus(status)) throw statusError(this.failureInit(res, what, prefix.text, rpcError), res.headers, this.redactor, this.authHint(status));
    if (flight.id !== undefined) {
      // `id: null` is how legacy servers answer a request they could not attribute (400 "Server not
      // initialized"); it is that request's answer. A 5xx with `id: null` is a server fault, not an answer.
      const answer = responses.find((m) => m.id === flight.id) ?? (status < 500 ? responses.find((m) => m.id === null) : undefined);
      if (answer) {
        this.log.debug({ status, method: what, url: this.displayUrl }, 'delivering a JSON-RPC answer that came with a non-2xx status');
        this.deliver(flight, { ...answer, id: flight.id } as JsonRpcResponse, res.headers);
        return;
      }
    }
    throw new HTTPStatusError(this.failureInit(res, what, prefix.text, rpcError));
  }

  private failureInit(res: Dispatcher.ResponseData, what: string, body: string, rpcError: RpcErrorObject | undefined, detail?: string): HttpFailureInit {
    return {
      status: res.statusCode,
      ...(res.statusText ? { statusText: res.statusText } : {}),
      url: this.displayUrl,
      method: what,
      body: this.redactor.text(body),
      ...(rpcError !== undefined ? { rpcError: this.redactor.value(rpcError) } : {}),
      ...(detail !== undefined ? { detail } : {}),
    };
  }

  /** JSON-RPC messages in an error body (JSON, or SSE message events). */
  private parseBody(text: string, type: string): JsonRpcMessage[] {
    const values: unknown[] = [];
    const take = (raw: string): void => {
      try {
        const v: unknown = JSON.parse(raw);
        values.push(...(Array.isArray(v) ? v : [v]));
      } catch {
        // not JSON
      }
    };
    if (type === 'text/event-stream') {
      const decoder = new SseDecoder({ onEvent: (e) => e.event === 'message' && take(e.data) });
      decoder.push(Buffer.from(text, 'utf8'));
      decoder.end();
    } else if (text.trim() !== '') {
      take(text);
    }
    const out: JsonRpcMessage[] = [];
    for (const v of values) {
      const c = classifyMessage(v);
      if (c.ok) out.push(c.message);
    }
    return out;
  }

  private deliverValue(flight: Flight<C>, value: unknown, headers: ResponseHeaders): void {
    const c = classifyMessage(value);
    if (!c.ok) {
      this.log.warn({ url: this.displayUrl, reason: c.reason }, 'ignoring a body that is not a JSON-RPC message');
      return;
    }
    this.deliver(flight, c.message, headers);
  }

  private deliver(flight: Flight<C>, message: JsonRpcMessage, headers: ResponseHeaders): void {
    if (this.isClosed) return;
    if (isResponse(message) && flight.id !== undefined && message.id === flight.id) {
      if (flight.settled) return;
      flight.settled = true;
      // Remember the session before anyone hears of it: a listener may send notifications/initialized at once.
      if (flight.method === 'initialize' && 'result' in message) this.noteInitialize(message.result, headers);
    }
    this.deliverMessage(message, flight.context);
  }

  /** An initialize result with a protocolVersion opens (or replaces) the legacy session. */
  private noteInitialize(result: unknown, headers: ResponseHeaders): boolean {
    const version = (result as { protocolVersion?: unknown } | null)?.protocolVersion;
    if (typeof version !== 'string') return false;
    let sessionId = headerValue(headers, 'mcp-session-id');
    if (sessionId !== undefined && !/^[\x21-\x7e]+$/.test(sessionId)) {
      this.log.warn({ url: this.displayUrl }, 'ignoring an Mcp-Session-Id that is not visible ASCII');
      sessionId = undefined;
    }
    this.legacy = { version, sessionId };
    this.log.debug({ url: this.displayUrl, version, sessionMinted: sessionId !== undefined }, 'legacy session opened');
    return true;
  }

  // ------------------------------------------------------------------ GET streams (legacy, §4.3)

  /** A GET for an SSE stream of the legacy session, resuming after `lastEventId` if given. */
  private async get(session: LegacySession, lastEventId: string | undefined, signal: AbortSignal, what: string): Promise<Dispatcher.ResponseData> {
    const headers: Record<string, string> = { ...this.headers, accept: 'text/event-stream', 'mcp-protocol-version': session.version };
    if (session.sessionId !== undefined) headers['mcp-session-id'] = session.sessionId;
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
    try {
      return await this.request(this.url, { method: 'GET', headers, signal, headersTimeout: 0, bodyTimeout: 0 });
    } catch (err) {
      throw this.connectionError(what, err, 'opening');
    }
  }

  /**
   * SEP-1699: the server closed a request's response stream before answering, after giving event ids.
   * Wait `retry` ms (or the default), then GET with `Last-Event-ID`; whatever arrives belongs to the
   * request. Repeated while the streams make progress, bounded.
   */
  private async resume(flight: Flight<C>, end: StreamEnd, what: string): Promise<void> {
    let { lastEventId, retry } = end;
    let attempts = 0;
    while (lastEventId !== undefined && attempts < MAX_RESUME_ATTEMPTS) {
      attempts++;
      if (!(await pause(retry ?? DEFAULT_RETRY_MS, flight.controller.signal))) return;
      const session = this.legacy;
      if (flight.settled || flight.cancelled || this.isClosed || !session) return;
      this.log.debug({ url: this.displayUrl, method: what, attempt: attempts }, 'resuming a response stream with Last-Event-ID');
      const res = await this.get(session, lastEventId, flight.controller.signal, what);
      try {
        if (res.statusCode < 200 || res.statusCode >= 300 || mediaType(res.headers) !== 'text/event-stream') {
          await discard(res.body);
          throw new HTTPStatusError(this.failureInit(res, what, '', undefined, 'resuming the response stream with GET + Last-Event-ID failed'));
        }
        const next = await this.readEventStream(flight, res, what);
        if (next.lastEventId !== undefined && next.lastEventId !== lastEventId) attempts = 0;
        lastEventId = next.lastEventId ?? lastEventId;
        retry = next.retry ?? retry;
      } finally {
        drop(res);
      }
      if (flight.settled || flight.cancelled || this.isClosed) return;
    }
  }

  /** Hold requests back until the standalone GET about to be opened has been answered (bounded). */
  private expectStandalone(): void {
    if (this.standaloneOpening) return;
    let open!: () => void;
    const done = new Promise<void>((resolve) => (open = resolve));
    const timer = setTimeout(() => this.standaloneOpened(), STANDALONE_OPEN_WAIT_MS);
    timer.unref();
    this.standaloneOpening = {
      done,
      open: () => {
        clearTimeout(timer);
        open();
      },
    };
  }

  /** The standalone GET was answered, failed, or was never opened: requests go ahead. */
  private standaloneOpened(): void {
    const opening = this.standaloneOpening;
    this.standaloneOpening = undefined;
    opening?.open();
  }

  /** Open the standalone GET stream of the current legacy session (once per session); false if no GET was started. */
  private openStandalone(): boolean {
    const session = this.legacy;
    if (!session || this.isClosed || this.standalone?.session === session) return false;
    this.standalone?.controller.abort(new Error('session replaced'));
    const stream = { session, controller: new AbortController() };
    this.standalone = stream;
    void this.runStandalone(stream).finally(() => {
      if (this.standalone === stream) this.standalone = undefined;
    });
    return true;
  }

  /**
   * The standalone GET stream: server-to-client requests and notifications unrelated to any request,
   * delivered with no context. Reconnected when it ends (with Last-Event-ID when the server gave ids;
   * after `retry` ms if given, else with backoff), until the session changes, the channel closes, the
   * server says 405 (no such stream), or MAX_STANDALONE_FAILURES attempts in a row failed.
   */
  private async runStandalone(stream: { session: LegacySession; controller: AbortController }): Promise<void> {
    const what = 'the standalone GET stream';
    const signal = stream.controller.signal;
    const flight: Flight<C> = {
      message: { jsonrpc: '2.0', method: 'GET' },
      id: undefined,
      method: undefined,
      context: undefined,
      controller: stream.controller,
      settled: false,
      cancelled: false,
    };
    const live = (): boolean => !this.isClosed && !signal.aborted && this.legacy === stream.session;
    let lastEventId: string | undefined;
    let retry: number | undefined;
    let failures = 0;
    while (live()) {
      let ok = false;
      try {
        const res = await this.get(stream.session, lastEventId, signal, what).finally(() => this.standaloneOpened());
        try {
          if (res.statusCode === 405) {
            this.log.debug({ url: this.displayUrl }, 'the server offers no standalone GET stream (HTTP 405)');
            return;
          }
          if (res.statusCode === 404) {
            // The session is gone; the next POST renews it, and the renewal opens a new stream.
            this.log.debug({ url: this.displayUrl }, 'the standalone GET stream got HTTP 404');
            return;
          }
          if (res.statusCode >= 200 && res.statusCode < 300 && mediaType(res.headers) === 'text/event-stream') {
            this.log.debug({ url: this.displayUrl, resumed: lastEventId !== undefined }, 'standalone GET stream open');
            const end = await this.readEventStream(flight, res, what);
            lastEventId = end.lastEventId ?? lastEventId;
            retry = end.retry ?? retry;
            ok = end.events > 0;
          } else {
            this.log.debug({ url: this.displayUrl, status: res.statusCode }, 'the standalone GET stream was refused');
          }
        } finally {
          drop(res);
        }
      } catch (err) {
        if (!live()) return;
        this.log.debug({ url: this.displayUrl, err: this.redactor.text(describeCause(err)) }, 'the standalone GET stream failed');
      }
      if (!live()) return;
      failures = ok ? 0 : failures + 1;
      if (failures >= MAX_STANDALONE_FAILURES) {
        this.log.warn({ url: this.displayUrl, failures }, 'giving up on the standalone GET stream');
        return;
      }
      const backoff = Math.min(DEFAULT_RETRY_MS * 2 ** Math.max(0, failures - 1), MAX_BACKOFF_MS);
      if (!(await pause(retry === undefined ? backoff : Math.max(retry, failures > 0 ? backoff : 0), signal))) return;
    }
  }

  // ---------------------------------------------------------------------------- session renewal

  /**
   * Who opens an expired legacy session again: the session chart decides that, through its adapter (a fresh
   * initialize sent like any request, whose answer this channel notes as the new session). The requests that
   * met the 404 wait here and are sent once more when the handler resolves. With no handler, or when it
   * rejects, the channel closes: it has no session any more.
   */
  onSessionExpired(handler: () => Promise<void>): void {
    this.expiredHandler = handler;
  }

  /** The session `staleId` got a 404: the owner opens a new one (once, however many messages noticed). */
  private async renewSession(staleId: string): Promise<void> {
    if (this.renewal) {
      await this.renewal;
      return;
    }
    const old = this.legacy;
    if (!old || old.sessionId !== staleId) return; // renewed meanwhile
    this.log.info({ url: this.displayUrl, version: old.version }, 'the legacy session is gone (HTTP 404)');
    const handler = this.expiredHandler;
    this.renewal = (async () => {
      if (!handler)
        throw new McpxError('MCPX_SESSION_CLOSED', `the legacy session at ${this.displayUrl} is gone (HTTP 404), and nothing here opens it again`, {
          data: { url: this.displayUrl },
        });
      await handler();
      if (this.legacy === old)
        throw new McpxError('MCPX_SESSION_CLOSED', `the legacy session at ${this.displayUrl} is gone (HTTP 404) and no new one was opened`, {
          data: { url: this.displayUrl },
        });
      this.log.info({ url: this.displayUrl, version: this.legacy?.version }, 'legacy session opened again');
    })()
      .catch((err: unknown) => {
        const error =
          err instanceof McpxError
            ? err
            : new McpxError('MCPX_SESSION_CLOSED', `the legacy session at ${this.displayUrl} is gone (HTTP 404): ${describeCause(err)}`, {
                cause: err,
                data: { url: this.displayUrl },
              });
        // The connection is no longer usable: report it closed, so its owner stops using it.
        this.closePromise ??= this.shutdown({ reason: 'connection-lost', error });
        throw error;
      })
      .finally(() => {
        this.renewal = undefined;
      });
    await this.renewal;
  }

  // ---------------------------------------------------------------------------------- closing

  private async shutdown(info: CloseInfo): Promise<void> {
    this.isClosed = true;
    this.standalone?.controller.abort(new Error('channel closed'));
    this.standalone = undefined;
    this.standaloneOpened();
    const flights = [...this.inflight];
    for (const flight of flights) {
      const report = !flight.settled && !flight.cancelled && flight.id !== undefined;
      flight.settled = true;
      if (report) {
        // The reason the channel is closing (an expired session that could not be renewed) says more than "closed".
        const error =
          info.error instanceof McpxError
            ? info.error
            : new TransportClosedError(`the HTTP channel to ${this.displayUrl} was closed while waiting for ${flight.method ?? 'an answer'}`, {
                url: this.displayUrl,
                method: flight.method,
                reason: info.reason,
              });
        this.reportRequestError(flight.id!, error);
      }
      flight.controller.abort(new Error('channel closed'));
    }
    await this.deleteSession();
    await this.destroyDispatcher();
    this.fireClose(info);
  }

  /** End a minted legacy session (HTTP DELETE). A 405 or any failure is fine. */
  private async deleteSession(): Promise<void> {
    const session = this.legacy;
    if (session?.sessionId === undefined) return;
    try {
      const res = await this.request(this.url, {
        method: 'DELETE',
        headers: { ...this.headers, 'mcp-session-id': session.sessionId, 'mcp-protocol-version': session.version },
        signal: AbortSignal.timeout(DELETE_TIMEOUT_MS),
        headersTimeout: DELETE_TIMEOUT_MS,
        bodyTimeout: DELETE_TIMEOUT_MS,
      });
      await discard(res.body);
      this.log.debug({ url: this.displayUrl, status: res.statusCode }, 'legacy session deleted');
    } catch (err) {
      this.log.debug({ url: this.displayUrl, err: this.redactor.text(describeCause(err)) }, 'could not delete the legacy session');
    }
  }

  private fireClose(info: CloseInfo): void {
    this.reportClose(info);
  }
}
