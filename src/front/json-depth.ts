/**
 * How deep a JSON value from a caller may nest (`/v1/call` args, `/v1/request` params). Deeper values
 * are refused with a 400 naming the field: recursive code further on (zod, the scrubber, the upstream
 * SDKs) would otherwise run out of stack ("Maximum call stack size exceeded") on a hostile body.
 */
import * as z from 'zod';
import { RPC } from '../protocol/constants.js';

/** JSON-RPC's code for a message that is not a valid request. */
const INVALID_REQUEST = -32600;

/** The outermost object or array is level 1. Real tool arguments rarely pass 10. */
export const MAX_JSON_DEPTH = 64;

/** The nesting depth of a JSON value (scalars 0, `{}` and `[]` 1), stopping once past `limit`. Iterative: never overflows. */
export function jsonDepth(value: unknown, limit = MAX_JSON_DEPTH): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, level] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (level > deepest) deepest = level;
    if (deepest > limit) return deepest;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === 'object' && child !== null) stack.push([child, level + 1]);
    }
  }
  return deepest;
}

/** A zod check for a body field: at most MAX_JSON_DEPTH levels (the field's own object counts as one). */
export function boundedDepth<T extends z.ZodType>(schema: T, field: string): T {
  return schema.refine((v) => jsonDepth(v) <= MAX_JSON_DEPTH, {
    error: `${field} nests deeper than ${MAX_JSON_DEPTH} levels (the limit for a JSON value mcpx relays)`,
    abort: true,
  }) as unknown as T;
}

/** A JSON-RPC message refused for its depth: the error to answer with, and whether it asked for an answer. */
export interface DeepRefusal {
  /** The request's id; null when it has none mcpx can read (absent, or itself too deep). */
  id: string | number | null;
  /** False for a notification (no `id` key): nothing is answered. */
  answer: boolean;
  /** -32602 for a value inside `params`, else -32600 (the message itself is not a valid request). */
  code: number;
  message: string;
}

/**
 * The MCP entries (`/mcp`, `mcpx serve`) hold a caller's JSON-RPC message to the same rule, all of it:
 * every value in `params` (tools/call `arguments`, …), in `id`, in any other key, nests at most
 * MAX_JSON_DEPTH levels; a message that is itself an array (a batch) is held as a whole the same way.
 * Returns the refusal — the field named, as /v1 names it — or undefined for a message within the limit.
 */
export function deepParamsRefusal(message: unknown): DeepRefusal | undefined {
  if (typeof message !== 'object' || message === null) return undefined;
  // The message is level 1, params level 2, and params' values may nest MAX_JSON_DEPTH levels themselves.
  if (jsonDepth(message, MAX_JSON_DEPTH + 2) <= MAX_JSON_DEPTH + 2) return undefined;
  const tooDeep = (field: string) => `${field} nests deeper than ${MAX_JSON_DEPTH} levels (the limit for a JSON value mcpx relays)`;
  if (Array.isArray(message)) return { id: null, answer: true, code: INVALID_REQUEST, message: `Invalid Request: ${tooDeep('the message (an array)')}` };
  const m = message as Record<string, unknown>;
  const id = typeof m['id'] === 'string' || typeof m['id'] === 'number' ? m['id'] : null;
  const answer = 'id' in m;
  const params = m['params'];
  if (typeof params === 'object' && params !== null && jsonDepth(params, MAX_JSON_DEPTH + 1) > MAX_JSON_DEPTH + 1) {
    const entries = Array.isArray(params) ? params.map((v, i) => [String(i), v] as const) : Object.entries(params);
    const deep = entries.find(([, v]) => jsonDepth(v) > MAX_JSON_DEPTH);
    return { id, answer, code: RPC.invalidParams, message: `Invalid params: ${tooDeep(deep ? `params.${deep[0]}` : 'params')}` };
  }
  const field = Object.keys(m).find((k) => k !== 'params' && jsonDepth(m[k]) > MAX_JSON_DEPTH);
  return field === undefined ? undefined : { id, answer, code: INVALID_REQUEST, message: `Invalid Request: ${tooDeep(field)}` };
}
