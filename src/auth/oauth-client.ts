/**
 * The official MCP SDK's OAuth client helpers, loaded by the first login or refresh: a daemon whose servers
 * never ask for authorization never loads them. Every request they make (protected-resource and
 * authorization-server metadata, registration, code exchange, refresh) goes through `oauthFetch`: Node's own
 * fetch, whose Response is the one the helpers test for (undici's npm fetch is not, and turns every OAuth error
 * into `server_error`), with a deadline of its own and a bounded body. Without them a token endpoint that never
 * answers holds a refresh (and every call waiting on it) for undici's 300 s, and an 80 MB answer is read whole.
 */
import { MessageTooLargeError, OAuthRequestTimeoutError, OAuthResponseTooLargeError } from '../errors.js';
import { readLimited } from '../transports/http-body.js';

export type OAuthClient = typeof import('@modelcontextprotocol/client');

let loading: Promise<OAuthClient> | undefined;
export const loadOAuthClient = (): Promise<OAuthClient> => (loading ??= import('@modelcontextprotocol/client'));

/** How long one OAuth request may take (headers and body), and how large its answer may be. */
export interface OAuthLimits {
  timeoutMs: number;
  maxBytes: number;
}

/** `oauth.requestTimeout` and `oauth.maxResponseBytes`'s defaults (src/config/settings.ts). */
export const DEFAULT_OAUTH_LIMITS: OAuthLimits = { timeoutMs: 30_000, maxBytes: 1024 * 1024 };

// One daemon per process: the daemon points this at its settings once, so a runtime change applies to the
// next request, and the login flow and every refresh share it without threading it through.
let currentLimits: () => OAuthLimits = () => DEFAULT_OAUTH_LIMITS;

/** Where every OAuth request reads its limits from (the daemon's settings). */
export function setOAuthLimits(read: () => OAuthLimits): void {
  currentLimits = read;
}

const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * The fetch the helpers use. `signal` (a refresh's, which a logout aborts) ends the request too. The body is
 * read here, within the deadline and the bound, and handed on as a global Response.
 */
export function oauthFetchWith(signal?: AbortSignal): (input: string | URL, init?: RequestInit) => Promise<Response> {
  return async (input, init) => {
    const { timeoutMs, maxBytes } = currentLimits();
    const deadline = AbortSignal.timeout(timeoutMs);
    const signals = [deadline, ...(init?.signal ? [init.signal] : []), ...(signal ? [signal] : [])];
    const where = describeEndpoint(input);
    try {
      const res = await fetch(input, { ...init, signal: AbortSignal.any(signals) });
      let body: Buffer | null = null;
      if (res.body) {
        try {
          body = await readLimited(res.body as unknown as AsyncIterable<Uint8Array>, maxBytes, res.headers.get('content-length') ?? undefined);
        } catch (err) {
          await res.body.cancel().catch(() => undefined);
          throw err;
        }
      }
      return new Response(NULL_BODY.has(res.status) ? null : body, { status: res.status, statusText: res.statusText, headers: res.headers });
    } catch (err) {
      if (err instanceof MessageTooLargeError) throw new OAuthResponseTooLargeError(where, maxBytes);
      if (deadline.aborted && !init?.signal?.aborted && !signal?.aborted) throw new OAuthRequestTimeoutError(where, timeoutMs);
      throw err;
    }
  };
}

/** The fetch of every OAuth request not tied to a refresh (discovery, registration, the code exchange). */
export const oauthFetch = oauthFetchWith();

/** The endpoint for messages: origin and path, never a query (it may carry a code or a state). */
function describeEndpoint(input: string | URL): string {
  try {
    const u = new URL(String(input));
    return `the OAuth endpoint ${u.origin}${u.pathname}`;
  } catch {
    return 'the OAuth endpoint';
  }
}

/**
 * An OAuth failure's message as mcpx shows it: the SDK quotes an answer it could not read whole ("… Raw
 * body: …"), and such a body can hold a token or a client secret, so the quote is cut.
 */
export function oauthErrorText(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.replace(/\s*Raw body:[\s\S]*$/, ' (the answer is not shown: it may hold a secret)');
}
