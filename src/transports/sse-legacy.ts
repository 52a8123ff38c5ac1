/**
 * A Channel for the deprecated HTTP+SSE transport (2024-11-05; the MCP specification (modelcontextprotocol.io/specification)).
 *
 * start() opens a GET stream and waits for the `endpoint` event, which names where to POST. Every
 * client message is POSTed there; every server message (answers, notifications, server-to-client
 * requests) arrives as a `message` event on the GET stream. Nothing ties a server request to the
 * POST that provoked it, so messages are delivered with context `undefined`. The GET stream is the
 * connection: when it ends or fails, the channel closes with reason `connection-lost`.
 *
 * An endpoint on another origin is refused: the configured headers (tokens) must only ever go to the
 * server they were configured for.
 */
import type { Dispatcher } from 'undici';
import { McpxError, MessageTooLargeError, TransportClosedError } from '../errors.js';
import { redactUrl } from '../redaction.js';
import { HttpConnectionError, statusError } from './http-errors.js';
import { HttpChannelBase, type HttpChannelOptions } from './http-channel-base.js';
import { classifyMessage, isRequest, truncate } from './jsonrpc.js';
import { describeCause, mediaType, readPrefix } from './http-body.js';
import { SseDecoder } from './sse.js';
import type { Channel, CloseInfo, JsonRpcMessage } from './types.js';

export const DEFAULT_ENDPOINT_TIMEOUT_MS = 10_000;
const ERROR_BODY_READ_BYTES = 64 * 1024;

/** `url` is the SSE URL (the one a GET opens the stream on, e.g. http://host/sse); a message over `maxMessageBytes` closes the channel. */
export interface LegacySseChannelOptions extends HttpChannelOptions {
  /** How long start() waits for the response and its `endpoint` event. Default 10 s. */
  timeoutMs?: number;
}

export class LegacySseChannel<C = unknown> extends HttpChannelBase<C> implements Channel<C> {
  private readonly timeoutMs: number;

  private endpoint: URL | undefined;
  private startPromise: Promise<void> | undefined;
  private closePromise: Promise<void> | undefined;
  private readonly streamController = new AbortController();
  private stream: Dispatcher.ResponseData['body'] | undefined;
  private readonly posts = new Set<AbortController>();

  constructor(options: LegacySseChannelOptions) {
    super(options, 'HTTP+SSE upstream');
    this.timeoutMs = options.timeoutMs ?? DEFAULT_ENDPOINT_TIMEOUT_MS;
  }

  /** Where messages are POSTed, once start() resolved (shown without credentials or query values). */
  get endpointUrl(): string | undefined {
    return this.endpoint ? redactUrl(this.endpoint) : undefined;
  }

  start(): Promise<void> {
    this.startPromise ??= this.connect();
    return this.startPromise;
  }

  send(message: JsonRpcMessage, _context?: C): void {
    const endpoint = this.endpoint;
    if (this.isClosed || !endpoint) {
      const state = this.isClosed ? 'the HTTP+SSE channel is closed' : 'the HTTP+SSE channel is not started';
      throw new TransportClosedError(`cannot send to ${this.displayUrl}: ${state}`, { url: this.displayUrl });
    }
    void this.post(endpoint, message);
  }

  close(): Promise<void> {
    this.closePromise ??= this.shutdown();
    return this.closePromise;
  }

  // ---------------------------------------------------------------------------------- the stream

  private async connect(): Promise<void> {
    if (this.isClosed) throw new TransportClosedError(`the HTTP+SSE channel to ${this.displayUrl} was closed before it started`, { url: this.displayUrl });
    try {
      await this.openStream();
    } catch (err) {
      const error =
        this.isClosed && !this.closeFired
          ? new TransportClosedError(`the HTTP+SSE channel to ${this.displayUrl} was closed while starting`, { url: this.displayUrl })
          : err instanceof Error
            ? err
            : new Error(String(err));
      this.streamController.abort(error);
      this.stream?.destroy();
      if (!this.isClosed) {
        this.isClosed = true;
        this.log.warn({ err: error, url: this.displayUrl }, 'could not open the HTTP+SSE stream');
        this.fireClose({ reason: 'error', error });
        void this.destroyDispatcher();
      }
      throw error;
    }
  }

  private async openStream(): Promise<void> {
    const signal = this.streamController.signal;
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        timedOut = true;
        reject(
          new McpxError('MCPX_CONNECT_TIMEOUT', `${this.displayUrl} sent no endpoint event within ${this.timeoutMs} ms`, {
            data: { url: this.displayUrl, timeoutMs: this.timeoutMs },
          }),
        );
      }, this.timeoutMs);
    });
    try {
      await Promise.race([timeout, this.handshake(signal, () => timedOut)]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** GET the stream, check it, and wait for the endpoint event. Messages after it flow to listeners. */
  private async handshake(signal: AbortSignal, timedOut: () => boolean): Promise<void> {
    let res: Dispatcher.ResponseData;
    try {
      res = await this.request(this.url, {
        method: 'GET',
        headers: { ...this.headers, accept: 'text/event-stream', 'cache-control': 'no-cache' },
        signal,
        headersTimeout: 0,
        bodyTimeout: 0,
      });
    } catch (err) {
      throw new HttpConnectionError(
        `could not open the HTTP+SSE stream at ${this.displayUrl}: ${this.redactor.text(describeCause(err))}`,
        { url: this.displayUrl },
        err,
      );
    }
    this.stream = res.body;
    if (timedOut() || this.isClosed) {
      res.body.destroy();
      if (timedOut()) return; // start() already rejected
      throw new TransportClosedError(`the HTTP+SSE channel to ${this.displayUrl} was closed while starting`, { url: this.displayUrl });
    }
    const status = res.statusCode;
    if (status < 200 || status >= 300) {
      const body = this.redactor.text((await readPrefix(res.body, ERROR_BODY_READ_BYTES)).text);
      const init = { status, url: this.displayUrl, httpMethod: 'GET', body, ...(res.statusText ? { statusText: res.statusText } : {}) };
      throw statusError(init, res.headers, this.redactor, this.authHint(init.status));
    }
    const type = mediaType(res.headers);
    if (type !== 'text/event-stream') {
      res.body.destroy();
      throw new McpxError(
        'MCPX_BAD_UPSTREAM',
        `${this.displayUrl} is not an HTTP+SSE endpoint: GET answered HTTP ${status} with content-type ${JSON.stringify(type || '(none)')}`,
        {
          data: { url: this.displayUrl, status, contentType: type },
        },
      );
    }

    await new Promise<void>((resolve, reject) => {
      let settled = false;
      const settle = (err?: Error): void => {
        if (settled) return;
        settled = true;
        if (err) reject(err);
        else resolve();
      };
      const decoder = new SseDecoder({
        maxEventBytes: this.maxMessageBytes,
        onEvent: (event) => {
          if (!this.endpoint) {
            if (event.event !== 'endpoint') {
              this.log.warn({ url: this.displayUrl, event: event.event }, 'ignoring an SSE event before the endpoint event');
              return;
            }
            try {
              this.endpoint = this.resolveEndpoint(event.data);
            } catch (err) {
              settle(err as Error);
              return;
            }
            this.log.debug({ url: this.displayUrl, endpoint: redactUrl(this.endpoint) }, 'HTTP+SSE endpoint received');
            settle();
            return;
          }
          if (event.event === 'endpoint') {
            this.log.warn({ url: this.displayUrl }, 'ignoring a second endpoint event');
            return;
          }
          if (event.event !== 'message') return;
          this.handleData(event.data);
        },
        onOverflow: () => this.fail(new MessageTooLargeError(this.maxMessageBytes)),
      });
      res.body.on('data', (chunk: Buffer) => {
        try {
          decoder.push(chunk);
        } catch (err) {
          this.log.error({ err }, 'SSE decoding failed');
        }
      });
      const lost = (err?: Error): void => {
        if (!settled) {
          settle(
            new HttpConnectionError(
              `the HTTP+SSE stream at ${this.displayUrl} ended before its endpoint event${err ? `: ${this.redactor.text(describeCause(err))}` : ''}`,
              { url: this.displayUrl },
              err,
            ),
          );
          return;
        }
        if (this.isClosed) return;
        this.isClosed = true;
        const why = err ? this.redactor.text(describeCause(err)) : 'the server ended the stream';
        this.log.warn({ url: this.displayUrl, why }, 'the HTTP+SSE stream was lost');
        const error = new HttpConnectionError(`the HTTP+SSE stream at ${this.displayUrl} was lost: ${why}`, { url: this.displayUrl }, err);
        this.abortPosts();
        this.fireClose({ reason: 'connection-lost', error });
        void this.destroyDispatcher();
      };
      res.body.on('end', () => {
        decoder.end();
        lost();
      });
      res.body.on('error', (err) => lost(err));
      res.body.on('close', () => {
        if (!this.isClosed) lost(new Error('the stream closed'));
      });
    });
  }

  private resolveEndpoint(data: string): URL {
    let endpoint: URL;
    try {
      endpoint = new URL(data.trim(), this.url);
    } catch {
      throw new McpxError('MCPX_BAD_UPSTREAM', `${this.displayUrl} sent an endpoint event that is not a URL`, { data: { url: this.displayUrl } });
    }
    if (endpoint.origin !== this.url.origin) {
      throw new McpxError(
        'MCPX_BAD_UPSTREAM',
        `${this.displayUrl} named an endpoint on another origin (${endpoint.origin}, the server is ${this.url.origin}); refusing to send messages there`,
        { data: { url: this.displayUrl, origin: this.url.origin, endpointOrigin: endpoint.origin } },
      );
    }
    return endpoint;
  }

  private handleData(data: string): void {
    let value: unknown;
    try {
      value = JSON.parse(data);
    } catch {
      this.log.warn({ url: this.displayUrl, data: truncate(this.redactor.text(data), 200) }, 'ignoring an SSE message that is not JSON');
      return;
    }
    for (const item of Array.isArray(value) ? value : [value]) {
      const c = classifyMessage(item);
      if (!c.ok) {
        this.log.warn({ url: this.displayUrl, reason: c.reason }, 'ignoring an SSE message that is not JSON-RPC');
        continue;
      }
      this.deliverMessage(c.message, undefined);
    }
  }

  // ---------------------------------------------------------------------------------- posting

  private async post(endpoint: URL, message: JsonRpcMessage): Promise<void> {
    const what = 'method' in message ? message.method : 'a response';
    const controller = new AbortController();
    this.posts.add(controller);
    let error: Error | undefined;
    try {
      const res = await this.request(endpoint, {
        method: 'POST',
        headers: { ...this.headers, 'content-type': 'application/json' },
        body: JSON.stringify(message),
        signal: controller.signal,
        headersTimeout: 0,
        bodyTimeout: 0,
      });
      const status = res.statusCode;
      if (status >= 200 && status < 300) {
        await res.body.dump().catch(() => undefined);
        return;
      }
      const body = this.redactor.text((await readPrefix(res.body, ERROR_BODY_READ_BYTES)).text);
      const init = { status, url: redactUrl(endpoint), method: what, body, ...(res.statusText ? { statusText: res.statusText } : {}) };
      error = statusError(init, res.headers, this.redactor, this.authHint(init.status));
    } catch (err) {
      if (this.isClosed || controller.signal.aborted) return;
      error = new HttpConnectionError(
        `the connection to ${redactUrl(endpoint)} failed while sending ${what}: ${this.redactor.text(describeCause(err))}`,
        { url: redactUrl(endpoint), method: what },
        err,
      );
    } finally {
      this.posts.delete(controller);
    }
    if (!error || this.isClosed) return;
    if (!isRequest(message)) {
      this.log.warn({ err: error, method: what, url: this.displayUrl }, 'could not deliver a message to the upstream');
      return;
    }
    this.reportRequestError(message.id, error);
  }

  // ---------------------------------------------------------------------------------- closing

  /** A fault on our side (an oversized event): close now. */
  private fail(error: Error): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.log.error({ err: error, url: this.displayUrl }, 'closing the HTTP+SSE channel');
    this.streamController.abort(error);
    this.stream?.destroy();
    this.abortPosts();
    this.fireClose({ reason: 'error', error });
    void this.destroyDispatcher();
  }

  private abortPosts(): void {
    for (const c of this.posts) c.abort(new Error('channel closed'));
    this.posts.clear();
  }

  private async shutdown(): Promise<void> {
    this.isClosed = true;
    this.streamController.abort(new Error('channel closed'));
    this.stream?.destroy();
    this.abortPosts();
    if (this.startPromise) await this.startPromise.catch(() => undefined);
    await this.destroyDispatcher();
    this.fireClose({ reason: 'stopped' }); // a no-op when the stream was lost (or never opened) before
  }

  private fireClose(info: CloseInfo): void {
    this.reportClose(info);
  }
}
