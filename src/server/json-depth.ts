/**
 * How deep a JSON value from a caller may nest (`/v1/call` args, `/v1/request` params). Deeper values
 * are refused with a 400 naming the field: recursive code further on (zod, the scrubber, the upstream
 * SDKs) would otherwise run out of stack ("Maximum call stack size exceeded") on a hostile body.
 */
import * as z from 'zod';

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

/**
 * The MCP entries (`/mcp`, `mcpx serve`) hold a caller's JSON-RPC request to the same rule: every value in
 * `params` (tools/call `arguments`, prompts/get `arguments`, …) nests at most MAX_JSON_DEPTH levels.
 * Returns the refusal — the field named, as /v1 names it — or undefined for a message within the limit.
 */
export function deepParamsRefusal(message: unknown): { id: string | number | null; message: string } | undefined {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return undefined;
  const m = message as { id?: unknown; params?: unknown };
  if (typeof m.params !== 'object' || m.params === null) return undefined;
  // params itself is one level more than the values it holds.
  if (jsonDepth(m.params, MAX_JSON_DEPTH + 1) <= MAX_JSON_DEPTH + 1) return undefined;
  const entries = Array.isArray(m.params) ? m.params.map((v, i) => [String(i), v] as const) : Object.entries(m.params);
  const deep = entries.find(([, v]) => jsonDepth(v) > MAX_JSON_DEPTH);
  const field = deep ? `params.${deep[0]}` : 'params';
  const id = typeof m.id === 'string' || typeof m.id === 'number' ? m.id : null;
  return { id, message: `Invalid params: ${field} nests deeper than ${MAX_JSON_DEPTH} levels (the limit for a JSON value mcpx relays)` };
}
