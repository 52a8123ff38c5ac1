/**
 * What the two HTTP channels (Streamable HTTP and the deprecated HTTP+SSE) share: the configured endpoint
 * (URL, headers, user info as Basic auth), the redaction of its secrets, the dispatcher and its
 * requests, the message limit.
 */
import type { Dispatcher } from 'undici';
import { McpxError } from '../errors.js';
import { redactUrl } from '../redaction.js';
import { ChannelBase } from './channel-base.js';
import { HttpRedactor, isAuthStatus } from './http-errors.js';
import { headerValue } from './http-body.js';
import { silentLogger, type TransportLogger } from './jsonrpc.js';
import type { RequestAuthorizer } from './request-authorizer.js';

/**
 * undici, loaded by the first HTTP request: it takes about as long to load as node itself, and a daemon
 * whose upstreams are all stdio never needs it.
 *
 * Through `default`: undici is CommonJS, and a lazily imported CommonJS package is a chunk of the bundle
 * whose only export is `default` (its module.exports). Node's own import of it has `default` too, so this
 * one reads the same in tsc's output and in the binary; named exports exist only in the former.
 */
type Undici = typeof import('undici').default;
let undici: Promise<Undici> | undefined;
const loadUndici = (): Promise<Undici> => (undici ??= import('undici').then((m) => m.default));

/** Largest accepted JSON body or SSE event, unless configured. */
export const DEFAULT_HTTP_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

/** Headers the channel owns; a configured header of the same name is dropped. */
export const PROTOCOL_HEADERS = new Set([
  'content-type',
  'accept',
  'content-length',
  'transfer-encoding',
  'connection',
  'host',
  'mcp-protocol-version',
  'mcp-method',
  'mcp-name',
  'mcp-session-id',
  'last-event-id',
]);

/** Lower-cased configured headers, minus the ones the channel owns; CR/LF/NUL in a value is refused. */
export function normalizeConfiguredHeaders(headers: Record<string, string> | undefined, where: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    const key = name.trim().toLowerCase();
    if (!/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(key)) {
      throw new McpxError('MCPX_BAD_CONFIG', `${where}: ${JSON.stringify(name)} is not a valid HTTP header name`);
    }
    if (typeof value !== 'string' || /[\r\n\0]/.test(value)) {
      // The value is never echoed: it may be a token.
      throw new McpxError('MCPX_BAD_CONFIG', `${where}: the value of header ${JSON.stringify(name)} must be a string without line breaks`);
    }
    if (PROTOCOL_HEADERS.has(key)) continue;
    out[key] = value;
  }
  return out;
}

/** Parse a configured endpoint URL: http(s) only; user info becomes Basic auth (unless configured). */
export function parseHttpUrl(raw: string, headers: Record<string, string>, what: string): { url: URL; display: string } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new McpxError('MCPX_BAD_CONFIG', `${what}: the URL is not valid`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new McpxError('MCPX_BAD_CONFIG', `${what}: only http: and https: URLs are supported, got ${url.protocol}`, { data: { protocol: url.protocol } });
  }
  if (url.username !== '' || url.password !== '') {
    if (headers.authorization === undefined) {
      const user = decodeURIComponent(url.username);
      const pass = decodeURIComponent(url.password);
      headers.authorization = `Basic ${Buffer.from(`${user}:${pass}`, 'utf8').toString('base64')}`;
    }
  }
  const display = redactUrl(url);
  url.hash = '';
  return { url, display };
}

export interface HttpChannelOptions {
  url: string;
  /** Sent on every request (e.g. Authorization). Values never appear in errors or logs. */
  headers?: Record<string, string>;
  logger?: TransportLogger;
  /** Largest accepted JSON body or SSE event. Default 64 MiB. */
  maxMessageBytes?: number;
  /** undici dispatcher to use; default: a private Agent, destroyed by close(). */
  dispatcher?: Dispatcher;
  /** Per-request credentials (OAuth): asked for headers before every request, told of every 401/403. */
  authorizer?: RequestAuthorizer;
}

export abstract class HttpChannelBase<C = unknown> extends ChannelBase<C> {
  readonly url: URL;
  /** The URL as it may appear in errors and logs (secrets redacted). */
  readonly displayUrl: string;
  protected readonly headers: Record<string, string>;
  protected readonly redactor: HttpRedactor;
  protected readonly log: TransportLogger;
  protected readonly maxMessageBytes: number;
  /** The dispatcher given, or the private Agent once the first request made it. */
  private dispatcher: Dispatcher | undefined;
  private readonly ownsDispatcher: boolean;
  private dispatcherDestroyed = false;
  protected readonly authorizer: RequestAuthorizer | undefined;
  protected isClosed = false;

  /** @param what names the endpoint in config errors, e.g. "Streamable HTTP upstream". */
  constructor(options: HttpChannelOptions, what: string) {
    super();
    const headers = normalizeConfiguredHeaders(options.headers, what);
    const { url, display } = parseHttpUrl(options.url, headers, what);
    this.url = url;
    this.displayUrl = display;
    this.headers = headers;
    this.redactor = new HttpRedactor({ ...headers, ...options.headers }, url);
    this.log = options.logger ?? silentLogger;
    this.maxMessageBytes = options.maxMessageBytes ?? DEFAULT_HTTP_MAX_MESSAGE_BYTES;
    if (!(this.maxMessageBytes > 0)) throw new RangeError(`maxMessageBytes must be positive, got ${String(options.maxMessageBytes)}`);
    this.ownsDispatcher = options.dispatcher === undefined;
    this.dispatcher = options.dispatcher;
    this.authorizer = options.authorizer;
    if (this.authorizer?.secrets) this.redactor.dynamic(() => this.authorizer?.secrets?.() ?? []);
  }

  /**
   * One request on this channel's dispatcher (a private Agent, made on the first request, unless one was
   * given), with the authorizer's headers. A 401 the authorizer can answer with a newer credential is sent
   * once more; a body that is not a string cannot be replayed, so its request is not.
   */
  protected async request(
    url: string | URL,
    options: Omit<Dispatcher.RequestOptions, 'origin' | 'path' | 'method' | 'dispatcher' | 'headers'> & {
      method: Dispatcher.HttpMethod;
      headers?: Record<string, string>;
    },
  ): Promise<Dispatcher.ResponseData> {
    const { Agent, request } = await loadUndici();
    if (!this.dispatcher) {
      this.dispatcher = new Agent({ headersTimeout: 0, bodyTimeout: 0 });
      // Destroyed before its first request: it fails as a request on a destroyed Agent always did.
      if (this.dispatcherDestroyed) await this.dispatcher.destroy();
    }
    const auth = this.authorizer;
    if (!auth) return request(url, { ...options, dispatcher: this.dispatcher });
    const replayable = options.body === undefined || options.body === null || typeof options.body === 'string';
    for (let attempt = 0; ; attempt++) {
      const sent = await auth.headers();
      const res = await request(url, { ...options, headers: { ...options.headers, ...sent }, dispatcher: this.dispatcher });
      if (!isAuthStatus(res.statusCode)) {
        auth.accepted?.(sent);
        return res;
      }
      const retry = await auth.challenged({ status: res.statusCode, wwwAuthenticate: headerValue(res.headers, 'www-authenticate'), sent });
      if (!retry || attempt > 0 || !replayable || this.isClosed) return res;
      await res.body.dump().catch(() => undefined);
    }
  }

  /** What a refused caller should do, from the authorizer, for UnauthorizedError's message. */
  protected authHint(status: number): string | undefined {
    return this.authorizer?.hint?.(status);
  }

  /** Ends the private Agent (a given dispatcher is its owner's); failures are ignored. */
  protected async destroyDispatcher(): Promise<void> {
    if (!this.ownsDispatcher) return;
    this.dispatcherDestroyed = true;
    await this.dispatcher?.destroy().catch(() => undefined);
  }

  /** HTTP has no process. */
  get pid(): undefined {
    return undefined;
  }

  get closed(): boolean {
    return this.isClosed;
  }
}
