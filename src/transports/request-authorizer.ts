/**
 * The HTTP transports' one place for per-request credentials (OAuth's bearer token). Modelled on undici's
 * dispatcher interceptors: the channel asks for headers before each request and reports an auth challenge
 * after it; what a credential is, and how it is renewed, is the authorizer's business, never the channel's.
 */

/** What a 401/403 answer said, for the authorizer to act on. */
export interface AuthChallenge {
  status: number;
  /** The raw `WWW-Authenticate` header, when the server sent one. */
  wwwAuthenticate: string | undefined;
  /** The headers the authorizer added to the refused request (which credential was refused). */
  sent: Readonly<Record<string, string>>;
}

export interface RequestAuthorizer {
  /** Headers to add to one request (e.g. `authorization`); may renew the credential first. */
  headers(): Promise<Record<string, string>>;
  /**
   * A request came back 401 or 403. Resolves true when the request should be sent once more (a newer
   * credential is ready); a request is retried at most once.
   */
  challenged(challenge: AuthChallenge): Promise<boolean>;
  /** A request with these headers was not refused (the credential works). */
  accepted?(sent: Readonly<Record<string, string>>): void;
  /** What a refused caller should do, for the error message (e.g. "run `mcpx login NAME`"). */
  hint?(status: number): string | undefined;
  /** Credential values to keep out of every error text. */
  secrets?(): readonly string[];
}
