/**
 * Classifying one decoded line as a JSON-RPC 2.0 message.
 *
 * Strict where it matters for correlation (`"jsonrpc": "2.0"`, id types, exactly one of
 * result/error), lenient where real servers are sloppy: extra fields are kept, an error response
 * may carry `id: null` (the spec's answer to an unparseable request), and `params: null` is read
 * as "no params". Batches (arrays) are not part of MCP since 2025-06-18 and are rejected.
 */
import * as z from 'zod';
import type { JsonRpcFailure, JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, JsonRpcSuccess } from './types.js';
import { isObject } from '../is-object.js';

/** The logging surface the transports use; a pino Logger fits it. */
export interface TransportLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export const silentLogger: TransportLogger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
};

const JsonRpcVersion = z.literal('2.0');
export const JsonRpcIdSchema = z.union([z.string(), z.number()]);

/** An object (not an array, not null). Checked without copying, so big params stay untouched. */
const ParamsSchema = z.custom<Record<string, unknown>>(isObject, {
  message: 'params must be an object',
});

export const RpcErrorObjectSchema = z.looseObject({
  code: z.number(),
  message: z.string(),
  data: z.unknown().optional(),
});

export const JsonRpcRequestSchema = z.looseObject({
  jsonrpc: JsonRpcVersion,
  id: JsonRpcIdSchema,
  method: z.string(),
  params: ParamsSchema.optional(),
});

export const JsonRpcNotificationSchema = z.looseObject({
  jsonrpc: JsonRpcVersion,
  method: z.string(),
  params: ParamsSchema.optional(),
});

export const JsonRpcSuccessSchema = z.looseObject({
  jsonrpc: JsonRpcVersion,
  id: JsonRpcIdSchema,
  result: z.unknown(),
});

export const JsonRpcFailureSchema = z.looseObject({
  jsonrpc: JsonRpcVersion,
  id: JsonRpcIdSchema.nullable(),
  error: RpcErrorObjectSchema,
});

export type ClassifyResult =
  | { ok: true; kind: 'request'; message: JsonRpcRequest }
  | { ok: true; kind: 'notification'; message: JsonRpcNotification }
  | { ok: true; kind: 'success'; message: JsonRpcSuccess }
  | { ok: true; kind: 'failure'; message: JsonRpcFailure }
  | { ok: false; reason: string };

/** What parseMessage returns; `kind` narrows `message`. */
export type ParseResult = ClassifyResult;

function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((i) => (i.path.length > 0 ? `${i.path.join('.')}: ${i.message}` : i.message))
    .join('; ');
}

/**
 * Classify an already parsed JSON value. On success the returned message is the input object
 * itself (zod only validates; nothing is copied); a `params: null` is deleted from it.
 */
export function classifyMessage(value: unknown): ClassifyResult {
  if (Array.isArray(value)) return { ok: false, reason: 'JSON-RPC batches are not supported' };
  if (typeof value !== 'object' || value === null) return { ok: false, reason: `not a JSON object (${value === null ? 'null' : typeof value})` };
  const obj = value as Record<string, unknown>;
  if (obj.jsonrpc !== '2.0') return { ok: false, reason: `missing or wrong "jsonrpc" member (${JSON.stringify(obj.jsonrpc) ?? 'absent'}), expected "2.0"` };
  if (obj.params === null) delete obj.params;

  if ('method' in obj) {
    const hasId = 'id' in obj && obj.id !== undefined;
    if (hasId && obj.id === null) return { ok: false, reason: 'a request must not have a null id' };
    const r = hasId ? JsonRpcRequestSchema.safeParse(obj) : JsonRpcNotificationSchema.safeParse(obj);
    if (!r.success) return { ok: false, reason: `invalid ${hasId ? 'request' : 'notification'}: ${describeIssues(r.error)}` };
    return hasId
      ? { ok: true, kind: 'request', message: obj as unknown as JsonRpcRequest }
      : { ok: true, kind: 'notification', message: obj as unknown as JsonRpcNotification };
  }

  const hasResult = 'result' in obj;
  const hasError = 'error' in obj;
  if (hasResult && hasError) return { ok: false, reason: 'a response must not carry both "result" and "error"' };
  if (hasResult) {
    const r = JsonRpcSuccessSchema.safeParse(obj);
    if (!r.success) return { ok: false, reason: `invalid response: ${describeIssues(r.error)}` };
    return { ok: true, kind: 'success', message: obj as unknown as JsonRpcSuccess };
  }
  if (hasError) {
    const r = JsonRpcFailureSchema.safeParse(obj);
    if (!r.success) return { ok: false, reason: `invalid error response: ${describeIssues(r.error)}` };
    return { ok: true, kind: 'failure', message: obj as unknown as JsonRpcFailure };
  }
  return { ok: false, reason: 'neither a request, a notification nor a response (no "method", "result" or "error")' };
}

/** Parse one NDJSON line into a JSON-RPC message, or say why it is not one. */
export function parseMessage(line: string): ParseResult {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (e) {
    return { ok: false, reason: `not JSON: ${e instanceof Error ? e.message : String(e)}` };
  }
  return classifyMessage(value);
}

export function isRequest(m: JsonRpcMessage): m is JsonRpcRequest {
  return 'method' in m && 'id' in m && m.id !== undefined;
}

export function isNotification(m: JsonRpcMessage): m is JsonRpcNotification {
  return 'method' in m && !('id' in m && m.id !== undefined);
}

export function isResponse(m: JsonRpcMessage): m is JsonRpcSuccess | JsonRpcFailure {
  return !('method' in m) && ('result' in m || 'error' in m);
}

/** Shorten text for a log line. */
export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length} chars)`;
}
