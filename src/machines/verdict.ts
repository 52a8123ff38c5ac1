/**
 * The verdict table: what one answer from an upstream means for its era (docs/behaviour.md §3, §4).
 * Pure functions, no I/O and no state: each probe answer is read once (session.machine.ts `answered`), and
 * test/machines/verdict.test.ts checks them row by row. Nothing else in mcpx decides eras. The -32022
 * rule (versionRefusal) is here too, because ordinary modern requests follow the same rule as the probe.
 */
import type { ErrorCode, RpcErrorObject } from '../errors.js';
import { isLegacyVersion, LEGACY_VERSIONS, META, RPC } from './versions.js';
import { isObject } from '../is-object.js';

/**
 * How an HTTP request failed without a JSON-RPC answer (a non-2xx status whose body is not a JSON-RPC
 * response to the request, or no response at all). Statuses with a JSON-RPC body arrive as `error`.
 */
export interface HttpFailure {
  kind: 'unauthorized' | 'status' | 'connection';
  status?: number;
  message: string;
  /** unauthorized: what to do about it, when the channel's credential knows (e.g. "run `mcpx login NAME`"). */
  hint?: string;
}

/** One answer to a request: a JSON-RPC result, a JSON-RPC error, or (HTTP) a failed request. */
export type Answer = { result: unknown } | { error: RpcErrorObject } | { failure: HttpFailure };

export interface ServerIdentity {
  serverInfo?: { name?: string; version?: string; [k: string]: unknown };
  capabilities?: Record<string, unknown>;
  instructions?: string;
}

/**
 * A verdict that ends the probe carries how it fails the session: the error code and the headline of the
 * message. The session chart has one row for every such verdict, so a new failing kind is added here only.
 */
export interface Fails {
  fails: { code: ErrorCode; headline: string };
}

export type DiscoverVerdict =
  /** A DiscoverResult naming a version mcpx offers: speak modern at `version`. */
  | ({ kind: 'modern'; version: string; supported: string[]; why: string } & ServerIdentity)
  /** -32022 naming a version mcpx offers, and this discover is not the retry yet: ask again, once, with `version`. */
  | { kind: 'retry'; version: string; supported: string[]; why: string }
  /** Not a modern server (or one whose modern side offers nothing usable): fall back to initialize. */
  | { kind: 'legacy'; why: string; legacyVersions: string[] }
  /** A modern server that refused us with a modern error: never fall back. */
  | ({ kind: 'modern-error'; code: number; why: string } & Fails)
  /** A modern server with no version in common with mcpx, or one that refused the one -32022 retry too. */
  | ({ kind: 'no-common'; supported: string[]; why: string } & Fails)
  /** HTTP 401/403: an auth problem, never era evidence. */
  | ({ kind: 'unauthorized'; why: string } & Fails)
  /** HTTP 5xx or no connection: nothing can be concluded (and nothing is cached). */
  | ({ kind: 'unavailable'; why: string } & Fails);

export type InitializeVerdict =
  | ({ kind: 'legacy'; version: string; why: string } & ServerIdentity)
  /** The server answered with a revision mcpx does not speak. */
  | ({ kind: 'bad-version'; version: string; why: string } & Fails)
  /** A success that is not an InitializeResult. */
  | ({ kind: 'malformed'; why: string } & Fails)
  /** initialize was refused: a modern-only server, or one that refuses this session (discover decides). */
  | { kind: 'refused'; code: number; why: string }
  /** HTTP: initialize refused with a bare 400/404/405 and no JSON-RPC body — an old HTTP+SSE server. */
  | { kind: 'http-refused'; status: number; why: string }
  | ({ kind: 'unauthorized'; why: string } & Fails)
  | ({ kind: 'unavailable'; why: string } & Fails);

const UNAUTHORIZED = {
  code: 'MCPX_UPSTREAM_UNAUTHORIZED',
  headline: 'the server refused mcpx as unauthorized (not evidence of an era; nothing cached)',
} as const;
const UNAVAILABLE = { code: 'MCPX_UPSTREAM_UNAVAILABLE', headline: 'the server is unavailable (nothing concluded, nothing cached)' } as const;
const MODERN_ERROR = {
  code: 'MCPX_MODERN_PROTOCOL_ERROR',
  headline: 'the modern server refused server/discover; mcpx never falls back to initialize after a modern error',
} as const;
const NO_COMMON = { code: 'MCPX_NO_COMMON_VERSION', headline: 'no protocol revision in common' } as const;
const UNSPOKEN_LEGACY = { code: 'MCPX_UNSUPPORTED_LEGACY_VERSION', headline: 'initialize answered with a revision mcpx does not speak' } as const;

/** Whether a verdict ends the probe (and how: `verdict.fails`). */
export function isFatal<V extends DiscoverVerdict | InitializeVerdict>(verdict: V): verdict is Extract<V, Fails> {
  return 'fails' in verdict;
}

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

function describeError(e: RpcErrorObject): string {
  return `error ${e.code} (${JSON.stringify(String(e.message ?? '').slice(0, 120))})`;
}

/** Pick the newest of `offered` (newest first) that `supported` names. */
function newestMutual(offered: readonly string[], supported: readonly string[]): string | undefined {
  return offered.find((v) => supported.includes(v));
}

/** Legacy revisions a list names, newest first, restricted to the ones mcpx speaks. */
function legacyOf(list: readonly string[]): string[] {
  return LEGACY_VERSIONS.filter((v) => list.includes(v));
}

function identityFromDiscover(result: Record<string, unknown>): ServerIdentity {
  const meta = isObject(result._meta) ? result._meta : {};
  // The final spec puts serverInfo in _meta; early servers put it top-level (the MCP specification). Accept both.
  const serverInfo = isObject(meta[META.serverInfo]) ? meta[META.serverInfo] : isObject(result.serverInfo) ? result.serverInfo : undefined;
  const out: ServerIdentity = {};
  if (serverInfo) out.serverInfo = serverInfo as ServerIdentity['serverInfo'];
  if (isObject(result.capabilities)) out.capabilities = result.capabilities;
  if (typeof result.instructions === 'string') out.instructions = result.instructions;
  return out;
}

/** What an HTTP failure means for either probe request; null when it is era evidence (a plain 4xx). */
function httpFailureVerdict(method: string, f: HttpFailure): ({ kind: 'unauthorized' | 'unavailable'; why: string } & Fails) | null {
  if (f.kind === 'unauthorized')
    return {
      kind: 'unauthorized',
      why: `${method} was refused as unauthorized (HTTP ${f.status ?? '401'}); ${f.hint ?? "check the server's headers"}`,
      fails: UNAUTHORIZED,
    };
  if (f.kind === 'connection') return { kind: 'unavailable', why: `${method} got no response: ${f.message}`, fails: UNAVAILABLE };
  if (f.status !== undefined && f.status >= 500)
    return { kind: 'unavailable', why: `${method} got HTTP ${f.status} (a server error says nothing about its era)`, fails: UNAVAILABLE };
  return null;
}

/**
 * What a -32022 (UnsupportedProtocolVersion) means for the modern request it answered. The one rule for
 * every 2026-07-28 request — the probe's `server/discover` and ordinary requests alike (UpstreamSession):
 * retry **once**, at the newest version mcpx offers that `data.supported` names, even when that is the
 * version just sent (the spec: "select a mutually supported version from the supported list and retry";
 * a server may list the very version it refused, as the official conformance scenario `request-metadata`
 * does). A second -32022 for the same request is final, so a server that keeps refusing cannot loop us.
 */
export type VersionRefusal =
  /** Send the same request again, once, at `version`. */
  | { kind: 'retry'; version: string; supported: string[]; why: string }
  /** `supported` names only legacy revisions mcpx speaks (newest first): nothing to retry in the modern era. */
  | { kind: 'legacy-only'; legacyVersions: string[]; supported: string[]; why: string }
  /** Final: `supported` names nothing mcpx speaks, or this was the retry and it was refused too. */
  | { kind: 'final'; supported: string[]; why: string }
  /** No `supported` list: a modern error with nothing to retry with. */
  | { kind: 'malformed'; why: string };

/**
 * @param method the refused request's method, for the explanation
 * @param offered modern versions mcpx speaks, newest first
 * @param retried whether the refused request was already the one retry
 */
export function versionRefusal(method: string, error: RpcErrorObject, offered: readonly string[], retried: boolean): VersionRefusal {
  const data = isObject(error.data) ? error.data : {};
  if (!Array.isArray(data.supported)) return { kind: 'malformed', why: `${method} got ${describeError(error)} without a supported list` };
  const supported = strings(data.supported);
  const listed = supported.join(', ') || 'no listed revision';
  const requested = typeof data.requested === 'string' ? ` at ${data.requested}` : '';
  const next = newestMutual(offered, supported);
  if (next && !retried)
    return { kind: 'retry', version: next, supported, why: `${method}${requested} got -32022; retrying once with ${next} (server supports ${listed})` };
  if (next) {
    return {
      kind: 'final',
      supported,
      why: `${method}${requested} got -32022 again after its one retry (server supports ${listed}); a second -32022 for the same request is final`,
    };
  }
  const legacy = legacyOf(supported);
  if (legacy.length > 0)
    return { kind: 'legacy-only', legacyVersions: legacy, supported, why: `${method} got -32022 naming only legacy revisions (${listed})` };
  return {
    kind: 'final',
    supported,
    why: `${method}${requested} got -32022: the server supports ${listed}; mcpx speaks ${[...offered, ...LEGACY_VERSIONS].join(', ')}`,
  };
}

/**
 * What an answer to `server/discover` means.
 * @param offered modern versions mcpx speaks, newest first
 * @param retried whether this discover was already the one -32022 retry (versionRefusal)
 */
export function discoverVerdict(answer: Answer, offered: readonly string[], retried: boolean): DiscoverVerdict {
  if ('failure' in answer) {
    const f = answer.failure;
    // Any other 4xx without a recognised modern JSON-RPC error falls back to initialize (docs/behaviour.md §4).
    return (
      httpFailureVerdict('server/discover', f) ?? {
        kind: 'legacy',
        legacyVersions: [],
        why: `server/discover got HTTP ${f.status ?? '4xx'} without a modern JSON-RPC error`,
      }
    );
  }
  if ('error' in answer) {
    const e = answer.error;
    if (e.code === RPC.unsupportedProtocolVersion) {
      const v = versionRefusal('server/discover', e, offered, retried);
      if (v.kind === 'malformed') return { kind: 'modern-error', code: e.code, why: v.why, fails: MODERN_ERROR };
      if (v.kind === 'legacy-only') return { kind: 'legacy', legacyVersions: v.legacyVersions, why: v.why };
      if (v.kind === 'final') return { kind: 'no-common', supported: v.supported, why: v.why, fails: NO_COMMON };
      return v;
    }
    if (e.code === RPC.headerMismatch || e.code === RPC.missingClientCapability) {
      return { kind: 'modern-error', code: e.code, why: `server/discover got modern ${describeError(e)}`, fails: MODERN_ERROR };
    }
    return { kind: 'legacy', legacyVersions: [], why: `server/discover got ${describeError(e)}` };
  }

  const result = answer.result;
  if (!isObject(result) || !Array.isArray(result.supportedVersions)) {
    return { kind: 'legacy', legacyVersions: [], why: 'server/discover got a success that is not a DiscoverResult (no supportedVersions array)' };
  }
  const supported = strings(result.supportedVersions);
  const version = newestMutual(offered, supported);
  if (version)
    return { kind: 'modern', version, supported, why: `server/discover answered; supported ${supported.join(', ')}`, ...identityFromDiscover(result) };
  const legacy = legacyOf(supported);
  if (legacy.length > 0) {
    return { kind: 'legacy', legacyVersions: legacy, why: `server/discover listed only legacy revisions (${supported.join(', ')})` };
  }
  return {
    kind: 'no-common',
    supported,
    why: `server supports ${supported.join(', ') || 'nothing'}; mcpx speaks ${[...offered, ...LEGACY_VERSIONS].join(', ')}`,
    fails: NO_COMMON,
  };
}

/** What an answer to `initialize` means. */
export function initializeVerdict(answer: Answer): InitializeVerdict {
  if ('failure' in answer) {
    const f = answer.failure;
    const fatal = httpFailureVerdict('initialize', f);
    if (fatal) return fatal;
    // A bare 400/404/405 to initialize: not a Streamable HTTP endpoint (an old HTTP+SSE server, docs/behaviour.md §4).
    if (f.status !== undefined && [400, 404, 405].includes(f.status)) {
      return {
        kind: 'http-refused',
        status: f.status ?? 400,
        why: `initialize got a bare HTTP ${f.status ?? 400} (no JSON-RPC body): not a Streamable HTTP endpoint`,
      };
    }
    return { kind: 'refused', code: 0, why: `initialize got HTTP ${f.status ?? '4xx'}` };
  }
  if ('error' in answer) {
    const e = answer.error;
    return { kind: 'refused', code: e.code, why: `initialize got ${describeError(e)}` };
  }
  const result = answer.result;
  if (!isObject(result) || typeof result.protocolVersion !== 'string') {
    return { kind: 'malformed', why: 'initialize got a success without a protocolVersion', fails: UNSPOKEN_LEGACY };
  }
  const version = result.protocolVersion;
  if (!isLegacyVersion(version)) {
    return {
      kind: 'bad-version',
      version,
      why: `initialize answered protocolVersion ${JSON.stringify(version)}, which mcpx does not speak (it speaks ${LEGACY_VERSIONS.join(', ')})`,
      fails: UNSPOKEN_LEGACY,
    };
  }
  const out: InitializeVerdict = { kind: 'legacy', version, why: `initialize answered ${version}` };
  if (isObject(result.serverInfo)) out.serverInfo = result.serverInfo as ServerIdentity['serverInfo'];
  if (isObject(result.capabilities)) out.capabilities = result.capabilities;
  if (typeof result.instructions === 'string') out.instructions = result.instructions;
  return out;
}
