/**
 * Every error mcpx raises on purpose is an McpxError with a stable string `code`.
 * Scripts match on `code`, never on the message. Codes are grouped by area.
 *
 * instanceof works across duplicate copies of this module (tests load src/ and dist/)
 * because the check uses a global Symbol brand, as undici and the MCP SDK do.
 */
const BRAND = Symbol.for('mcpx.error');

export type ErrorCode =
  // configuration and settings
  | 'MCPX_BAD_PROTOCOL_VALUE'
  | 'MCPX_BAD_CONFIG'
  | 'MCPX_BAD_SETTING'
  // transports
  | 'MCPX_SPAWN_FAILED'
  | 'MCPX_TRANSPORT_CLOSED'
  | 'MCPX_MESSAGE_TOO_LARGE'
  | 'MCPX_REQUEST_TIMEOUT'
  | 'MCPX_REQUEST_CANCELLED'
  | 'MCPX_HTTP_STATUS'
  /** The upstream refused mcpx (HTTP 401/403): check the server's configured credentials. */
  | 'MCPX_UPSTREAM_UNAUTHORIZED'
  /** A connection that must deliver something first (the HTTP+SSE endpoint event) did not in time. */
  | 'MCPX_CONNECT_TIMEOUT'
  /** The upstream broke its transport's rules (not an HTTP+SSE endpoint, an endpoint event that is not a URL). */
  | 'MCPX_BAD_UPSTREAM'
  // the era probe
  | 'MCPX_ERA_MISMATCH'
  | 'MCPX_NO_COMMON_VERSION'
  | 'MCPX_MODERN_PROTOCOL_ERROR'
  | 'MCPX_UNSUPPORTED_LEGACY_VERSION'
  | 'MCPX_PROBE_REFUSED'
  | 'MCPX_START_TIMEOUT'
  | 'MCPX_UPSTREAM_UNAVAILABLE'
  | 'MCPX_SESSION_CLOSED'
  // upstream answers after connecting
  | 'MCPX_UPSTREAM_ERROR'
  | 'MCPX_BAD_RESULT'
  // the era cache
  | 'MCPX_CACHE_IO'
  // settings (src/config)
  | 'MCPX_UNKNOWN_SETTING'
  // the pool (src/pool): a call without the scope key its server needs, a server name not configured,
  // a pool stopped (or being stopped) under a call
  | 'MCPX_BAD_REQUEST'
  /** The CLI was typed wrong (an unknown option, bad arguments): exit 2; under --json, the error's code. */
  | 'MCPX_USAGE'
  | 'MCPX_UNKNOWN_SERVER'
  | 'MCPX_POOL_STOPPED'
  // the daemon (src/daemon, src/core) and its /v1 API (src/api), the CLI (src/cli)
  | 'MCPX_TOOL_ERROR'
  | 'MCPX_NOT_FOUND'
  | 'MCPX_NOT_IMPLEMENTED'
  /** This client lacks the daemon's token (or the page's login). */
  | 'MCPX_UNAUTHORIZED'
  | 'MCPX_FORBIDDEN'
  /** daemon.socket is taken by something that is not a stale mcpx socket. */
  | 'MCPX_SOCKET_CONFLICT'
  /** The daemon socket, its folder or the state folder is another user's, or writable by others: not spoken to. */
  | 'MCPX_UNSAFE_SOCKET'
  | 'MCPX_SHUTTING_DOWN'
  | 'MCPX_DAEMON_RUNNING'
  | 'MCPX_DAEMON_UNAVAILABLE'
  | 'MCPX_INTERNAL'
  // /v1/ask (src/asks/ask-store.ts): too many asks running; an answer to a question the ask does not have, or
  // to one answered already or closed (refused, timed out, the ask over); a question mcpx refused on the
  // caller's behalf (a modern round then ends the call); an ask that outlived its maximum age
  | 'MCPX_TOO_MANY_ASKS'
  | 'MCPX_UNKNOWN_QUESTION'
  | 'MCPX_ALREADY_ANSWERED'
  | 'MCPX_QUESTION_CLOSED'
  | 'MCPX_QUESTION_REFUSED'
  | 'MCPX_ASK_EXPIRED'
  // a tool the upstream listed but mcpx will not call: on 2026-07-28 Streamable HTTP, its x-mcp-header
  // annotations are invalid (SEP-2243), so it is excluded from listTools() and callTool() refuses it
  | 'MCPX_BAD_TOOL'
  // a server's tool mcpx does not serve (docs/serving.md): its config's `mcpx.tools` filter leaves it out;
  // its definition changed since it was first seen and `pinTools` holds it until `mcpx tools --accept`
  | 'MCPX_TOOL_DENIED'
  | 'MCPX_TOOL_HELD'
  // mcpx install / uninstall (src/install): an unknown client; a client file that does not parse (line:column),
  // is read-only, is locked by another mcpx, changed under the edit, or is laid out so that mcpx cannot edit
  // it alone; a server name already taken in mcpx's config; a file that could not be read or written; a
  // symbolic link another user made where the file should be
  | 'MCPX_UNKNOWN_CLIENT'
  | 'MCPX_INSTALL_PARSE'
  | 'MCPX_INSTALL_READ_ONLY'
  | 'MCPX_INSTALL_LOCKED'
  | 'MCPX_INSTALL_RACE'
  | 'MCPX_INSTALL_LAYOUT'
  | 'MCPX_INSTALL_COLLISION'
  | 'MCPX_INSTALL_IO'
  | 'MCPX_INSTALL_UNSAFE'
  // OAuth (src/auth): the authorization flow failed (discovery, a metadata or issuer that is not this
  // server's, the authorization server's refusal, a state or iss that does not match); the login's fixed
  // callback port is taken; no login of that id; the login did not finish in time
  | 'MCPX_OAUTH_FAILED'
  | 'MCPX_OAUTH_PORT_TAKEN'
  | 'MCPX_OAUTH_TIMEOUT';

export class McpxError extends Error {
  readonly code: ErrorCode;
  readonly data: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown; data?: Record<string, unknown> }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.data = options?.data;
    this.name = new.target.name;
    Object.defineProperty(this, BRAND, { value: true });
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    // `this` is McpxError itself when its parent is Error. (Not `this === McpxError`: a class that names
    // itself is bundled as `class _McpxError`, and that would become its name, and its errors'.)
    return (
      typeof value === 'object' &&
      value !== null &&
      (value as Record<symbol, unknown>)[BRAND] === true &&
      (Object.getPrototypeOf(this) === Error || Function.prototype[Symbol.hasInstance].call(this, value))
    );
  }

  toJSON(): { code: ErrorCode; message: string; data?: Record<string, unknown> } {
    return this.data === undefined ? { code: this.code, message: this.message } : { code: this.code, message: this.message, data: this.data };
  }
}

/** A JSON-RPC error object as it travels on the wire. */
export interface RpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

/** The upstream answered a request with a JSON-RPC error (after the session was established). */
export class UpstreamRpcError extends McpxError {
  readonly rpc: RpcErrorObject;
  constructor(method: string, rpc: RpcErrorObject) {
    super('MCPX_UPSTREAM_ERROR', `upstream answered ${method} with error ${rpc.code}: ${rpc.message}`, {
      data: { rpcCode: rpc.code, rpcMessage: rpc.message, ...(rpc.data === undefined ? {} : { rpcData: rpc.data }) },
    });
    this.rpc = rpc;
  }
}

/** The upstream's own JSON-RPC error an mcpx error carries (UpstreamRpcError's `data`), when it answered with one. */
export function upstreamRpcOf(e: { message: string; data?: Record<string, unknown> | undefined }): RpcErrorObject | undefined {
  const code = e.data?.['rpcCode'];
  if (typeof code !== 'number') return undefined;
  const message = typeof e.data?.['rpcMessage'] === 'string' ? (e.data['rpcMessage'] as string) : e.message;
  return { code, message, ...(e.data?.['rpcData'] === undefined ? {} : { data: e.data['rpcData'] }) };
}

/** The transport (process or connection) closed while something was waiting on it. */
export class TransportClosedError extends McpxError {
  constructor(message: string, data?: Record<string, unknown>) {
    super('MCPX_TRANSPORT_CLOSED', message, data === undefined ? undefined : { data });
  }
}

export class RequestTimeoutError extends McpxError {
  constructor(method: string, ms: number) {
    super('MCPX_REQUEST_TIMEOUT', `${method} got no answer within ${ms} ms`, { data: { method, timeoutMs: ms } });
  }
}

export class SpawnError extends McpxError {
  /** `message`: the whole of what to say, when it is plainer than "could not start X: <node's error>". */
  constructor(command: string, cause: unknown, message?: string) {
    const why = cause instanceof Error ? cause.message : String(cause);
    super('MCPX_SPAWN_FAILED', message ?? `could not start ${JSON.stringify(command)}: ${why}`, { cause, data: { command } });
  }
}

/** "64 MiB (67108864 bytes)", or just the bytes for a limit that is not a whole number of MiB. */
function limitText(bytes: number): string {
  const mib = bytes / (1024 * 1024);
  return Number.isInteger(mib) ? `${mib} MiB (${bytes} bytes)` : `${bytes} bytes`;
}

export class MessageTooLargeError extends McpxError {
  constructor(limit: number) {
    super('MCPX_MESSAGE_TOO_LARGE', `the upstream sent a message larger than mcpx's limit of ${limitText(limit)}`, { data: { limitBytes: limit } });
  }
}

/** An upstream that does not read what mcpx sends it (while sending requests of its own): mcpx closes it. */
export class UpstreamBacklogError extends McpxError {
  constructor(queued: number, limit: number) {
    super(
      'MCPX_BAD_UPSTREAM',
      `the upstream does not read what mcpx sends it: ${queued} bytes were queued for it, past the limit of ${limitText(limit)}; mcpx closed it`,
      { data: { queuedBytes: queued, limitBytes: limit } },
    );
  }
}

export class ProtocolValueError extends McpxError {
  constructor(value: unknown, canonical: readonly string[], where?: string) {
    super('MCPX_BAD_PROTOCOL_VALUE', `${where ? `${where}: ` : ''}${JSON.stringify(value)} is not a protocol preference; use one of: ${canonical.join(', ')}`, {
      data: { value, allowed: [...canonical] },
    });
  }
}

/** A state file (the era cache, the tool catalogue) could not be written (or its lock taken). Reading problems never raise: a bad file reads as empty. */
export class CacheIoError extends McpxError {
  readonly file: string;
  constructor(file: string, message: string, cause?: unknown) {
    super('MCPX_CACHE_IO', `${file}: ${message}`, { data: { file }, ...(cause === undefined ? {} : { cause }) });
    this.file = file;
  }
}

/** One value refused by the settings or the config file, with where it came from. */
export interface ConfigProblem {
  /** The whole line shown to the user: it names the source (file, variable, flag), the key, and what is wrong. */
  message: string;
  /** `file`, `env`, `flag`, `runtime` for settings; `file` for everything in a config file. */
  source: 'file' | 'env' | 'flag' | 'runtime';
  /** The config file, when the problem is in one. */
  file?: string;
  /** The dotted key inside the file (`mcpServers.remote.mcpx.idleTimeout`), or the setting path. */
  key?: string;
  /** The server the key belongs to. */
  server?: string;
  /** 1-based position in the file, when known (syntax errors, and values the parser could locate). */
  line?: number;
  column?: number;
}

/** A setting path that does not exist (`GET/PUT /v1/settings/:path`, `mcpx settings`, a flag). */
export class UnknownSettingError extends McpxError {
  readonly path: string;
  constructor(path: string, known: readonly string[], suggestion?: string) {
    super(
      'MCPX_UNKNOWN_SETTING',
      `${JSON.stringify(path)} is not a setting${suggestion ? ` (did you mean ${suggestion}?)` : ''}; settings: ${known.join(', ')}`,
      { data: { path, known: [...known], ...(suggestion ? { suggestion } : {}) } },
    );
    this.path = path;
  }
}

/** One or more setting values were refused (MCPX_BAD_SETTING); `problems` lists each, the message joins them. */
export class SettingValueError extends McpxError {
  readonly problems: ConfigProblem[];
  constructor(problems: ConfigProblem[], data?: Record<string, unknown>) {
    super('MCPX_BAD_SETTING', problems.map((p) => p.message).join('\n'), { data: { ...data, problems } });
    this.problems = problems;
  }
}

/** The config file could not be used (MCPX_BAD_CONFIG); `problems` lists every error found, the message joins them. */
export class ConfigError extends McpxError {
  readonly problems: ConfigProblem[];
  constructor(problems: ConfigProblem[], file?: string) {
    super('MCPX_BAD_CONFIG', problems.map((p) => p.message).join('\n'), { data: { ...(file === undefined ? {} : { file }), problems } });
    this.problems = problems;
  }
}

/** An OAuth request (metadata, registration, token, refresh) that took longer than `oauth.requestTimeout`. */
export class OAuthRequestTimeoutError extends McpxError {
  constructor(where: string, ms: number) {
    super('MCPX_OAUTH_FAILED', `${where} did not answer within ${ms % 1000 === 0 ? ms / 1000 : (ms / 1000).toFixed(1)} s (oauth.requestTimeout)`, {
      data: { timeoutMs: ms },
    });
  }
}

/** An OAuth answer larger than `oauth.maxResponseBytes`: dropped unread. */
export class OAuthResponseTooLargeError extends McpxError {
  constructor(where: string, limit: number) {
    super('MCPX_OAUTH_FAILED', `${where} answered more than ${limitText(limit)} (oauth.maxResponseBytes); the answer was dropped`, {
      data: { limitBytes: limit },
    });
  }
}
