/**
 * The state files' records (the era cache, the tool catalogue) checked by plain code: they are read
 * when the daemon starts, before it listens, and zod costs more to load than these checks do to run
 * (docs/decisions.md). Each check answers the record as it is kept — only its known keys, in a fixed
 * order — or undefined for a record to drop. test/reliability/format-properties.test.ts holds them to
 * the zod schemas they replace: the same records accepted, the same output.
 */
import type { CatalogRecord, DigestRecord, EraRecord, ToolDigest, ToolDigestParts } from './records.js';
import { isObject } from '../is-object.js';
import { URL_WIRES } from '../transports/capabilities.js';

/** A date: leap days only in leap years (as zod's `z.iso.datetime`). */
const DATE = String.raw`(?:(?:\d\d[2468][048]|\d\d[13579][26]|\d\d0[48]|[02468][048]00|[13579][26]00)-02-29|\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|(?:02)-(?:0[1-9]|1\d|2[0-8])))`;
/** ISO 8601 date and time with seconds, optional fraction, and `Z` or an offset (`z.iso.datetime({ offset: true })`). */
const ISO_DATETIME = new RegExp(String.raw`^${DATE}T(?:(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?(?:Z|(?:[+-](?:[01]\d|2[0-3]):[0-5]\d)))$`);

const isIsoDateTime = (v: unknown): v is string => typeof v === 'string' && ISO_DATETIME.test(v);

const nonEmptyString = (v: unknown): v is string => typeof v === 'string' && v.length >= 1;

/** `v` is one of `values` (strings). */
const oneOf = <T extends string>(v: unknown, values: readonly T[]): v is T => typeof v === 'string' && (values as readonly string[]).includes(v);

/**
 * Copies the optional `key` when present: undefined passes (kept as undefined, as zod keeps it), anything
 * else must satisfy `ok`. False when present and refused.
 */
function optional(
  from: Record<string, unknown>,
  to: Record<string, unknown>,
  key: string,
  ok: (v: unknown) => boolean,
  map: (v: unknown) => unknown = (v) => v,
): boolean {
  if (!(key in from)) return true;
  const v = from[key];
  if (v === undefined) {
    to[key] = undefined;
    return true;
  }
  if (!ok(v)) return false;
  to[key] = map(v);
  return true;
}

// ---- the era cache (src/upstream/era-cache.ts) ----

/** An era record as kept, or undefined when `v` is not one. */
export function eraRecordOf(v: unknown): EraRecord | undefined {
  if (!isObject(v)) return undefined;
  const { era, version, at, source } = v;
  if (!oneOf(era, ['legacy', 'modern']) || !nonEmptyString(version) || !isIsoDateTime(at) || !nonEmptyString(source)) return undefined;
  const out: Record<string, unknown> = { era, version, at, source };
  if (!optional(v, out, 'transport', (t) => oneOf(t, URL_WIRES))) return undefined;
  if (!optional(v, out, 'initialize', (t) => t === 'refused')) return undefined;
  return out as unknown as EraRecord;
}

// ---- the tool catalogue (src/catalog/catalog-store.ts) ----

/** An array of plain objects each with a string `field` (the items themselves kept as they are). */
const itemsWith =
  (field: string) =>
  (v: unknown): boolean =>
    Array.isArray(v) && v.every((i) => isObject(i) && typeof i[field] === 'string');
const copyArray = (v: unknown): unknown => [...(v as unknown[])];

/** A catalogue record as kept, or undefined when `v` is not one. Items, capabilities and serverInfo pass untouched. */
export function catalogRecordOf(v: unknown): CatalogRecord | undefined {
  if (!isObject(v)) return undefined;
  if (!isIsoDateTime(v['at'])) return undefined;
  const out: Record<string, unknown> = { at: v['at'] };
  if (!optional(v, out, 'era', (e) => oneOf(e, ['legacy', 'modern']))) return undefined;
  const tools = v['tools'];
  if (!itemsWith('name')(tools)) return undefined;
  out['tools'] = copyArray(tools);
  if (!optional(v, out, 'prompts', itemsWith('name'), copyArray)) return undefined;
  if (!optional(v, out, 'resources', itemsWith('uri'), copyArray)) return undefined;
  if (!optional(v, out, 'resourceTemplates', itemsWith('uriTemplate'), copyArray)) return undefined;
  if (!optional(v, out, 'capabilities', isObject)) return undefined;
  if (!optional(v, out, 'serverInfo', isObject)) return undefined;
  if (!optional(v, out, 'instructions', (s) => typeof s === 'string')) return undefined;
  return out as unknown as CatalogRecord;
}

// ---- the tool digests (src/catalog/tool-digests.ts) ----

const SHA256_HEX = /^[0-9a-f]{64}$/;
const isDigest = (v: unknown): v is string => typeof v === 'string' && SHA256_HEX.test(v);

function partsOf(v: unknown): ToolDigestParts | undefined {
  if (!isObject(v)) return undefined;
  const { description, schema, annotations } = v;
  return isDigest(description) && isDigest(schema) && isDigest(annotations) ? { description, schema, annotations } : undefined;
}

function toolDigestOf(v: unknown): ToolDigest | undefined {
  if (!isObject(v) || !isDigest(v['digest']) || !isIsoDateTime(v['at'])) return undefined;
  const parts = partsOf(v['parts']);
  if (!parts) return undefined;
  const out: ToolDigest = { digest: v['digest'], parts, at: v['at'] };
  const changed = v['changed'];
  if (changed !== undefined) {
    if (!isObject(changed) || !isDigest(changed['digest']) || !isIsoDateTime(changed['at'])) return undefined;
    const cp = partsOf(changed['parts']);
    if (!cp) return undefined;
    out.changed = { digest: changed['digest'], parts: cp, at: changed['at'] };
  }
  return out;
}

/** A digest record as kept, or undefined when `v` is not one. A bad tool entry is dropped alone: the others keep what was approved. */
export function digestRecordOf(v: unknown): DigestRecord | undefined {
  if (!isObject(v) || !isObject(v['tools'])) return undefined;
  const tools: Array<[string, ToolDigest]> = [];
  for (const [name, entry] of Object.entries(v['tools'])) {
    const d = toolDigestOf(entry);
    if (d) tools.push([name, d]);
  }
  // fromEntries defines each key as the record's own (a tool named "__proto__" stays a tool).
  return { tools: Object.fromEntries(tools) };
}
