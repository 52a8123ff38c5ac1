/**
 * How /v1 answers an error: the body `{"ok":false,"error":{code,message,path?,in?,allowed?,data?}}`, the
 * HTTP status of each error code, and a zod failure as a 400 naming the field.
 */
import type { FastifyError, FastifyReply } from 'fastify';
import type { z } from 'zod';
import { McpxError, SettingValueError, UnknownSettingError, type ErrorCode } from '../errors.js';

export interface ApiError {
  code: string;
  message: string;
  path?: Array<string | number>;
  in?: 'body' | 'query' | 'params' | 'headers';
  allowed?: string[];
  data?: Record<string, unknown>;
}

/**
 * The HTTP status of each error code on /v1. A Record over every ErrorCode, so a new code does not compile
 * until it is given a status here. Upstream and session failures are 500: the request reached mcpx and
 * mcpx could not do it; 4xx codes are the caller's.
 */
const STATUS: Record<ErrorCode, number> = {
  MCPX_BAD_REQUEST: 400,
  MCPX_BAD_SETTING: 400,
  MCPX_BAD_PROTOCOL_VALUE: 400,
  MCPX_UNKNOWN_QUESTION: 400,
  MCPX_UNAUTHORIZED: 401,
  MCPX_FORBIDDEN: 403,
  // a call's refusals come as ok:false at 200 (/v1/call, /v1/request); a status because every code has one
  MCPX_TOOL_DENIED: 403,
  MCPX_UNKNOWN_SERVER: 404,
  MCPX_UNKNOWN_SETTING: 404,
  MCPX_NOT_FOUND: 404,
  MCPX_ALREADY_ANSWERED: 409,
  MCPX_QUESTION_CLOSED: 409,
  MCPX_TOOL_HELD: 409,
  MCPX_TOO_MANY_ASKS: 429,
  MCPX_NOT_IMPLEMENTED: 501,
  MCPX_SHUTTING_DOWN: 503,
  // configuration (a reload that failed), the daemon itself
  MCPX_BAD_CONFIG: 500,
  MCPX_SOCKET_CONFLICT: 500,
  MCPX_UNSAFE_SOCKET: 500,
  MCPX_DAEMON_RUNNING: 500,
  MCPX_DAEMON_UNAVAILABLE: 500,
  MCPX_CACHE_IO: 500,
  MCPX_INTERNAL: 500,
  // upstreams, their transports and the era probe
  MCPX_SPAWN_FAILED: 500,
  MCPX_TRANSPORT_CLOSED: 500,
  MCPX_MESSAGE_TOO_LARGE: 500,
  MCPX_REQUEST_TIMEOUT: 500,
  MCPX_REQUEST_CANCELLED: 500,
  MCPX_HTTP_STATUS: 500,
  MCPX_UPSTREAM_UNAUTHORIZED: 500,
  MCPX_CONNECT_TIMEOUT: 500,
  MCPX_BAD_UPSTREAM: 500,
  MCPX_ERA_MISMATCH: 500,
  MCPX_NO_COMMON_VERSION: 500,
  MCPX_MODERN_PROTOCOL_ERROR: 500,
  MCPX_UNSUPPORTED_LEGACY_VERSION: 500,
  MCPX_PROBE_REFUSED: 500,
  MCPX_START_TIMEOUT: 500,
  MCPX_UPSTREAM_UNAVAILABLE: 500,
  MCPX_SESSION_CLOSED: 500,
  MCPX_UPSTREAM_ERROR: 500,
  MCPX_BAD_RESULT: 500,
  MCPX_BAD_TOOL: 500,
  MCPX_POOL_STOPPED: 500,
  MCPX_TOOL_ERROR: 500,
  MCPX_QUESTION_REFUSED: 500,
  MCPX_ASK_EXPIRED: 500,
  // the CLI's install commands (never raised on /v1; a status because every code has one)
  MCPX_UNKNOWN_CLIENT: 400,
  MCPX_USAGE: 400,
  MCPX_INSTALL_PARSE: 500,
  MCPX_INSTALL_READ_ONLY: 500,
  MCPX_INSTALL_LOCKED: 500,
  MCPX_INSTALL_RACE: 500,
  MCPX_INSTALL_LAYOUT: 500,
  MCPX_INSTALL_COLLISION: 500,
  MCPX_INSTALL_IO: 500,
  MCPX_INSTALL_UNSAFE: 500,
  MCPX_OAUTH_FAILED: 500,
  MCPX_OAUTH_PORT_TAKEN: 500,
  MCPX_OAUTH_TIMEOUT: 500,
};

export function statusFor(code: string): number {
  return Object.hasOwn(STATUS, code) ? STATUS[code as ErrorCode]! : 500;
}

export function send(reply: FastifyReply, status: number, error: ApiError): FastifyReply {
  return reply.code(status).type('application/json; charset=utf-8').send({ ok: false, error });
}

/** The first zod issue as an API error naming the field. */
export function badRequest(where: 'body' | 'query' | 'params' | 'headers', err: z.ZodError): ApiError {
  const issue = err.issues[0]!;
  let path: Array<string | number> = issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p));
  if (issue.code === 'unrecognized_keys' && issue.keys.length > 0) path = [...path, issue.keys[0]!];
  const field = path.length > 0 ? `${where} field ${path.join('.')}` : where;
  const allowed = (issue as { values?: unknown[] }).values;
  return {
    code: 'MCPX_BAD_REQUEST',
    message: `${field}: ${issue.message}`,
    path,
    in: where,
    ...(Array.isArray(allowed) ? { allowed: allowed.map(String) } : {}),
    ...(err.issues.length > 1 ? { data: { issues: err.issues.map((i) => ({ path: i.path.map(String), message: i.message })) } } : {}),
  };
}

/** An error thrown by a handler (or fastify itself) as status + API error. */
export function toApiError(err: unknown): { status: number; error: ApiError } {
  if (err instanceof UnknownSettingError) return { status: 404, error: { ...err.toJSON(), path: ['path'], in: 'params' } };
  if (err instanceof SettingValueError) {
    const allowed = err.data?.['allowed'];
    return { status: 400, error: { ...err.toJSON(), path: ['value'], in: 'body', ...(Array.isArray(allowed) ? { allowed: allowed.map(String) } : {}) } };
  }
  if (err instanceof McpxError) {
    const e: ApiError = err.toJSON();
    if (err.code === 'MCPX_BAD_REQUEST' && typeof err.data?.['field'] === 'string') {
      e.path = [err.data['field']];
      e.in = 'body';
    }
    return { status: statusFor(err.code), error: e };
  }
  const fe = err as Partial<FastifyError> & { statusCode?: number };
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return { status: fe.statusCode, error: { code: 'MCPX_BAD_REQUEST', message: `body: ${fe.message ?? 'bad request'}`, path: [], in: 'body' } };
  }
  return { status: 500, error: { code: 'MCPX_INTERNAL', message: err instanceof Error ? err.message : String(err) } };
}
