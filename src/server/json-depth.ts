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
