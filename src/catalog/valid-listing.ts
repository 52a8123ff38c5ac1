/**
 * What mcpx serves is valid for every client SDK, whatever one upstream lists. A client SDK parses a
 * whole `tools/list` answer at once (the official ones reject it all for one tool whose `inputSchema` has
 * no `type`), so one server's malformed item would cost a client every tool of every server.
 *
 * Each item of a listing is checked on its own against what the official SDKs (v1 and v2) require of
 * it, the stricter of the two where they differ:
 * - repaired: a tool with no `inputSchema`, or one with no `type`, gets `"type": "object"` (what such a
 *   schema means; server-gitlab 2025.4.25 lists `{"$schema": …}` alone); so does an `outputSchema` with no
 *   `type`. Calls to the tool are unchanged.
 * - left out, with its reason: anything else a client would refuse (a name that is not a non-empty
 *   string, a schema that is not an object or whose `type` is not `object`, a property schema that is
 *   not an object, a field of the wrong type), and a second item with a name (URI, URI template) already
 *   listed by the same server. The rest of the listing is served.
 */
import * as z from 'zod';
import { isObject } from '../is-object.js';
import type { LeftOut, ListName } from './left-out.js';

export type { LeftOut, ListName } from './left-out.js';

const Icon = z.object({
  src: z.string(),
  mimeType: z.string().optional(),
  sizes: z.array(z.string()).optional(),
  theme: z.enum(['light', 'dark']).optional(),
});
const Base = {
  name: z.string().min(1, 'must be a non-empty string'),
  title: z.string().optional(),
  icons: z.array(Icon).optional(),
  description: z.string().optional(),
};
const Meta = z.record(z.string(), z.unknown()).optional();
// v1 wants each property schema to be an object; v2 any JSON value: an object satisfies both.
const ObjectSchema = z.looseObject({
  type: z.literal('object'),
  properties: z.record(z.string(), z.record(z.string(), z.unknown())).optional(),
  required: z.array(z.string()).optional(),
});
const Annotations = z.object({
  audience: z.array(z.enum(['user', 'assistant'])).optional(),
  priority: z.number().min(0).max(1).optional(),
  lastModified: z.iso.datetime({ offset: true }).optional(),
});

const SCHEMAS: Record<ListName, z.ZodType> = {
  tools: z.object({
    ...Base,
    inputSchema: ObjectSchema,
    outputSchema: ObjectSchema.optional(),
    annotations: z
      .object({
        title: z.string().optional(),
        readOnlyHint: z.boolean().optional(),
        destructiveHint: z.boolean().optional(),
        idempotentHint: z.boolean().optional(),
        openWorldHint: z.boolean().optional(),
      })
      .optional(),
    execution: z.object({ taskSupport: z.enum(['required', 'optional', 'forbidden']).optional() }).optional(),
    _meta: Meta,
  }),
  prompts: z.object({
    ...Base,
    arguments: z.array(z.object({ name: z.string(), description: z.string().optional(), required: z.boolean().optional() })).optional(),
    _meta: Meta,
  }),
  resources: z.object({
    ...Base,
    name: z.string(),
    uri: z.string().min(1, 'must be a non-empty string'),
    mimeType: z.string().optional(),
    size: z.number().optional(),
    annotations: Annotations.optional(),
    _meta: Meta,
  }),
  resourceTemplates: z.object({
    ...Base,
    name: z.string(),
    uriTemplate: z.string().min(1, 'must be a non-empty string'),
    mimeType: z.string().optional(),
    annotations: Annotations.optional(),
    _meta: Meta,
  }),
};

/** What names an item within its list (two with the same are one too many). */
const KEY: Record<ListName, string> = { tools: 'name', prompts: 'name', resources: 'uri', resourceTemplates: 'uriTemplate' };

/** A JSON Schema object with no `type`: an object schema is what it means to a tool. */
function withObjectType(schema: unknown): unknown {
  return isObject(schema) && !('type' in schema) ? { type: 'object', ...schema } : schema;
}

function repaired(list: ListName, item: Record<string, unknown>): Record<string, unknown> {
  if (list !== 'tools') return item;
  const out: Record<string, unknown> = { ...item, inputSchema: item['inputSchema'] === undefined ? { type: 'object' } : withObjectType(item['inputSchema']) };
  if (item['outputSchema'] !== undefined) out['outputSchema'] = withObjectType(item['outputSchema']);
  return out;
}

function reasonOf(error: z.ZodError): string {
  const issue = error.issues[0]!;
  return issue.path.length > 0 ? `${issue.path.map(String).join('.')}: ${issue.message}` : issue.message;
}

/** The items of one list a client can take, repaired where they can be, and those left out with why. */
export function validItems(list: ListName, items: readonly unknown[]): { items: Array<Record<string, unknown>>; leftOut: LeftOut[] } {
  const kept: Array<Record<string, unknown>> = [];
  const leftOut: LeftOut[] = [];
  const seen = new Set<string>();
  items.forEach((raw, i) => {
    const key = isObject(raw) && typeof raw[KEY[list]] === 'string' && raw[KEY[list]] !== '' ? (raw[KEY[list]] as string) : `#${i}`;
    if (!isObject(raw)) return leftOut.push({ list, name: key, reason: 'not an object' });
    const item = repaired(list, raw);
    const checked = SCHEMAS[list].safeParse(item);
    if (!checked.success) return leftOut.push({ list, name: key, reason: reasonOf(checked.error) });
    if (seen.has(key)) return leftOut.push({ list, name: key, reason: `a second ${list === 'tools' ? 'tool' : 'item'} with this ${KEY[list]}` });
    seen.add(key);
    kept.push(item);
  });
  return { items: kept, leftOut };
}

/** Every list of a server's listing made valid; `leftOut` names what was not served. */
export function validListing<T extends Partial<Record<ListName, readonly unknown[]>>>(
  listing: T,
): { [K in keyof T]: Array<Record<string, unknown>> } & { leftOut: LeftOut[] } {
  const out: Record<string, unknown> = {};
  const leftOut: LeftOut[] = [];
  for (const list of Object.keys(KEY) as ListName[]) {
    const items = listing[list];
    if (items === undefined) continue;
    const v = validItems(list, items);
    out[list] = v.items;
    leftOut.push(...v.leftOut);
  }
  return { ...out, leftOut } as never;
}
