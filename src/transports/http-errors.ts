/**
 * Typed errors of the HTTP transports (Streamable HTTP and the deprecated HTTP+SSE), and the
 * redaction that keeps configured header values (tokens) out of every message, `data` and log line.
 *
 * Which error means what (the MCP specification (modelcontextprotocol.io/specification), docs/behaviour.md §4):
 * - HTTPStatusError: a non-2xx answer that carried no JSON-RPC response for the request. `status`,
 *   the body (redacted, at most 2 KB), and the JSON-RPC error object when the body held one.
 *   What a status means for the era (a bare 400/404/405 to `initialize` is an old HTTP+SSE server)
 *   is decided in src/machines/verdict.ts, not here: the transport reports the status and the method.
 * - UnauthorizedError: 401/403. Deliberately NOT an HTTPStatusError, so code that treats "some 4xx"
 *   as era evidence cannot mistake an auth failure for one: it never says anything about the era.
 * - HttpConnectionError: the connection failed or a response stream ended before the answer
 *   (code MCPX_TRANSPORT_CLOSED, like a stdio process that died).
 */
import { McpxError, TransportClosedError, type ErrorCode, type RpcErrorObject } from '../errors.js';
import { REDACTED } from '../redaction.js';
import { headerValue, type ResponseHeaders } from './http-body.js';

/** Bodies kept in errors are cut to this many bytes (UTF-8). */
export const ERROR_BODY_LIMIT_BYTES = 2048;

export interface HttpFailureInit {
  status: number;
  statusText?: string;
  /** The endpoint, already stripped of credentials (see redactUrl). */
  url: string;
  /** The JSON-RPC method of the message that failed, when there was one. */
  method?: string;
  /** The HTTP method; default POST. */
  httpMethod?: string;
  /** Response body text. Truncated to 2 KB here; redact it before (HttpRedactor.text). */
  body?: string;
  /** The JSON-RPC error object found in the body, if any (redacted). */
  rpcError?: RpcErrorObject;
  /** Extra words for the message, e.g. why a 200 still failed. */
  detail?: string;
}

/** Cut text to at most `maxBytes` UTF-8 bytes without splitting a character. */
export function truncateBytes(text: string, maxBytes = ERROR_BODY_LIMIT_BYTES): { text: string; truncated: boolean } {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= maxBytes) return { text, truncated: false };
  return {
    text: buf
      .subarray(0, maxBytes)
      .toString('utf8')
      .replace(/\uFFFD+$/, ''),
    truncated: true,
  };
}

function oneLine(text: string, max = 200): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max)}…`;
}

function describeFailure(init: HttpFailureInit): string {
  const what = init.method ?? (init.httpMethod && init.httpMethod !== 'POST' ? init.httpMethod : 'the request');
  const status = `HTTP ${init.status}${init.statusText ? ` ${init.statusText}` : ''}`;
  let tail = '';
  if (init.detail) tail = `: ${init.detail}`;
  else if (init.rpcError) tail = `: JSON-RPC error ${init.rpcError.code}: ${oneLine(init.rpcError.message)}`;
  else if (init.body && init.body.trim() !== '') tail = `: ${oneLine(init.body)}`;
  return `${init.url} answered ${what} with ${status}${tail}`;
}

function failureData(init: HttpFailureInit): Record<string, unknown> {
  const body = truncateBytes(init.body ?? '');
  return {
    status: init.status,
    url: init.url,
    httpMethod: init.httpMethod ?? 'POST',
    ...(init.method !== undefined ? { method: init.method } : {}),
    body: body.text,
    ...(body.truncated ? { bodyTruncated: true } : {}),
    ...(init.rpcError !== undefined ? { rpcError: init.rpcError } : {}),
  };
}

/** A non-2xx HTTP answer that was not a JSON-RPC response to the request. */
export class HTTPStatusError extends McpxError {
  readonly status: number;
  /** The response body, redacted, at most 2 KB. */
  readonly body: string;
  /** The JSON-RPC error object the body carried (e.g. `id: null` errors of legacy servers), if any. */
  readonly rpcError: RpcErrorObject | undefined;
  /** The JSON-RPC method of the failed message. */
  readonly method: string | undefined;
  readonly url: string;

  constructor(init: HttpFailureInit, code: ErrorCode = 'MCPX_HTTP_STATUS', message = describeFailure(init)) {
    super(code, message, { data: failureData(init) });
    this.status = init.status;
    this.body = truncateBytes(init.body ?? '').text;
    this.rpcError = init.rpcError;
    this.method = init.method;
    this.url = init.url;
  }
}

/** 401/403. Never era evidence; the message always starts "unauthorized (HTTP <status>)". */
export class UnauthorizedError extends McpxError {
  readonly status: number;
  readonly url: string;
  readonly method: string | undefined;
  /** The server's WWW-Authenticate challenge (redacted), for a later auth flow. */
  readonly wwwAuthenticate: string | undefined;
  /** What the refused caller should do, from the channel's authorizer (e.g. "run `mcpx login NAME`"). */
  readonly hint: string | undefined;

  constructor(init: HttpFailureInit & { wwwAuthenticate?: string; hint?: string }) {
    const what = init.method ?? (init.httpMethod && init.httpMethod !== 'POST' ? init.httpMethod : 'the request');
    super(
      'MCPX_UPSTREAM_UNAUTHORIZED',
      `unauthorized (HTTP ${init.status}): ${init.url} refused ${what}; ${init.hint ?? 'check the credentials configured for this server'}`,
      {
        data: { ...failureData(init), ...(init.wwwAuthenticate !== undefined ? { wwwAuthenticate: init.wwwAuthenticate } : {}) },
      },
    );
    this.status = init.status;
    this.url = init.url;
    this.method = init.method;
    this.wwwAuthenticate = init.wwwAuthenticate;
    this.hint = init.hint;
  }
}

/** 401 and 403: auth problems, never era evidence. */
export const isAuthStatus = (status: number): boolean => status === 401 || status === 403;

/**
 * The typed error of a non-2xx answer that carried no JSON-RPC answer: UnauthorizedError (with the server's
 * WWW-Authenticate challenge, redacted) for 401/403, HTTPStatusError for any other status.
 */
export function statusError(init: HttpFailureInit, headers: ResponseHeaders, redactor: HttpRedactor, hint?: string): UnauthorizedError | HTTPStatusError {
  if (!isAuthStatus(init.status)) return new HTTPStatusError(init);
  const challenge = headerValue(headers, 'www-authenticate');
  return new UnauthorizedError({
    ...init,
    ...(challenge !== undefined ? { wwwAuthenticate: redactor.text(challenge) } : {}),
    ...(hint !== undefined ? { hint } : {}),
  });
}

/**
 * The connection failed (refused, reset, DNS) or a response stream ended before the answer arrived.
 * Code MCPX_TRANSPORT_CLOSED; `cause` is the underlying error.
 */
export class HttpConnectionError extends TransportClosedError {
  constructor(message: string, data: Record<string, unknown>, cause?: unknown) {
    super(message, data);
    if (cause !== undefined) Object.defineProperty(this, 'cause', { value: cause, configurable: true, writable: true, enumerable: false });
  }
}

// ------------------------------------------------------------------------------------- redaction

/**
 * Knows the secrets of one channel (configured header values, URL credentials and query values)
 * and removes them from any text or JSON value before it goes into an error or a log line.
 */
export class HttpRedactor {
  private readonly secrets: string[];
  /** Credentials that change while the channel lives (OAuth tokens), read at each use. */
  private extra: (() => readonly string[]) | undefined;

  constructor(headers: Record<string, string>, url?: URL) {
    const found = new Set<string>();
    const add = (s: string | undefined, min: number): void => {
      const v = s?.trim();
      if (v && v.length >= min) found.add(v);
    };
    for (const value of Object.values(headers)) {
      add(value, 4);
      // "Bearer abc", "Basic abc": the credential alone may be echoed too.
      const space = value.trim().indexOf(' ');
      if (space > 0) add(value.trim().slice(space + 1), 4);
    }
    if (url) {
      // `https://TOKEN@host`: the user name is as much a credential as the password.
      for (const part of [url.username, url.password]) {
        add(decodeURIComponent(part), 4);
        add(part, 4);
      }
      for (const [, v] of url.searchParams) add(v, 6);
    }
    // Longest first, so a value that contains another is removed whole.
    this.secrets = [...found].sort((a, b) => b.length - a.length);
  }

  /** Also remove what `source` names at each use (longest first, like the fixed ones). */
  dynamic(source: () => readonly string[]): void {
    this.extra = source;
  }

  private all(): readonly string[] {
    const more = this.extra?.().filter((v) => v.length >= 4);
    if (!more || more.length === 0) return this.secrets;
    return [...this.secrets, ...more].sort((a, b) => b.length - a.length);
  }

  text(text: string): string {
    let out = text;
    for (const s of this.all()) if (out.includes(s)) out = out.split(s).join(REDACTED);
    return out;
  }

  /** A JSON value with every secret removed from its strings (keys included). */
  value<T>(value: T): T {
    if (this.all().length === 0 || value === undefined) return value;
    const json = JSON.stringify(value);
    if (json === undefined) return value;
    const clean = this.text(json);
    if (clean === json) return value;
    try {
      return JSON.parse(clean) as T;
    } catch {
      return REDACTED as unknown as T;
    }
  }
}
