/**
 * SEP-2243 custom headers for 2026-07-28 Streamable HTTP: `Mcp-Param-{Name}` headers mirrored from
 * `tools/call` arguments, driven by the `x-mcp-header` annotation on properties of a tool's `inputSchema`.
 * Pure functions, no I/O. The rules, all from docs/specification/2026-07-28/basic/transports/
 * streamable-http.mdx § "Custom Headers from Tool Parameters" (and server/tools.mdx § x-mcp-header):
 *
 * Validity of a tool definition (`paramHeaderSpec`). An `x-mcp-header` value:
 * - "MUST NOT be empty"
 * - "MUST match HTTP field-name token syntax (`1*tchar`, RFC 9110 Section 5.1)"
 * - "MUST NOT contain control characters, including carriage return (CR) or line feed (LF)"
 * - "MUST be case-insensitively unique among all `x-mcp-header` values in the `inputSchema`"
 * - "MUST only be applied to parameters with primitive types (integer, string, boolean). Parameters with
 *   type `number` are not permitted."
 * - "MUST only be applied to properties that are statically reachable from the schema root: reachable via
 *   a chain consisting solely of `properties` keys. The chain MUST NOT pass through `items` (or any other
 *   array keyword), composition keywords (`oneOf`, `anyOf`, `allOf`, `not`), conditional keywords
 *   (`if`/`then`/`else`), or `$ref`. Nested object properties are permitted […]. An `x-mcp-header`
 *   annotation anywhere else makes the annotation — and thus the tool definition — invalid."
 * "Clients using the Streamable HTTP transport MUST reject tool definitions where any `x-mcp-header` value
 * violates these constraints" — what a rejected tool means for the session is UpstreamSession's business.
 *
 * Header values (`paramHeaders`):
 * - "Header extraction is defined as reading the instance value at the exact property path of the annotated
 *   property […]. If no value is present at that path in the call arguments, the header is omitted." A
 *   `null` value is omitted too ("Parameter value is `null` | Client MUST omit the header").
 * - "`string`: Use the value as-is; `integer`: Convert to decimal string representation; `boolean`: Convert
 *   to lowercase "true" or "false"". "Integer values MUST be within the safe range for JavaScript".
 * - Values that "cannot be safely represented as a plain ASCII header value (e.g., it contains non-ASCII
 *   characters, control characters, or has leading/trailing whitespace)" become `=?base64?{Base64}?=` of the
 *   UTF-8 bytes, and so does "any plain-ASCII value that matches the sentinel pattern".
 */
import { McpxError } from '../errors.js';
import { isObject } from '../is-object.js';

/** The schema extension keyword. */
export const X_MCP_HEADER = 'x-mcp-header';
/** Every mirrored header is `Mcp-Param-{x-mcp-header value}`. */
export const MCP_PARAM_HEADER_PREFIX = 'Mcp-Param-';

const BASE64_PREFIX = '=?base64?';
const BASE64_SUFFIX = '?=';

/** RFC 9110 §5.6.2 `token = 1*tchar`; tchar is ASCII only and has no control characters, space or `:`. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** "MUST only be applied to parameters with primitive types (integer, string, boolean)". */
const PRIMITIVE_TYPES: ReadonlySet<string> = new Set(['string', 'integer', 'boolean']);

/**
 * JSON Schema keywords (2020-12, plus the draft-07 spellings) whose values are subschemas. The
 * `properties` chain is the only way to reach a mirrored property; an annotation found by descending
 * through any of these makes the tool invalid. Data keywords (`const`, `enum`, `default`, `examples`)
 * are never walked: an `"x-mcp-header"` key inside a default value is data, not an annotation.
 */
const SUBSCHEMA_KEYWORDS = [
  'items',
  'prefixItems',
  'additionalItems',
  'unevaluatedItems',
  'contains',
  'additionalProperties',
  'unevaluatedProperties',
  'propertyNames',
  'allOf',
  'anyOf',
  'oneOf',
  'not',
  'if',
  'then',
  'else',
  'contentSchema',
] as const;
/** Keywords whose value maps names to subschemas. */
const SUBSCHEMA_MAP_KEYWORDS = ['patternProperties', 'dependentSchemas', 'dependencies', '$defs', 'definitions'] as const;

/** One mirrored argument: where it sits in `arguments`, and the header it goes out as. */
export interface ParamHeader {
  /** The chain of `properties` keys from the arguments root to the value, e.g. `['target', 'tenant']`. */
  property: string[];
  /** The whole header name as annotated, e.g. `Mcp-Param-TenantId`. */
  header: string;
}

export type ParamHeaderSpec = { ok: true; params: ParamHeader[] } | { ok: false; reason: string };

/** JSON Pointer escaping (RFC 6901), for locations in messages. */
const pointerToken = (s: string): string => s.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * Read a tool's `inputSchema` for `x-mcp-header` annotations. Valid: the headers to mirror (possibly none).
 * Invalid: every violated constraint, joined, each naming where in the schema it is.
 */
export function paramHeaderSpec(inputSchema: unknown): ParamHeaderSpec {
  const params: ParamHeader[] = [];
  const problems: string[] = [];
  /** lower-cased name → where it was first declared */
  const seen = new Map<string, string>();
  /** The objects on the current walk path: guards against cycles (possible in objects built in code, never in JSON). */
  const ancestors = new Set<object>();

  const checkAnnotation = (schema: Record<string, unknown>, property: string[], where: string): void => {
    const name = schema[X_MCP_HEADER];
    if (typeof name !== 'string') {
      problems.push(`${where}: x-mcp-header must be a string, got ${name === null ? 'null' : typeof name}`);
      return;
    }
    if (name === '') {
      problems.push(`${where}: x-mcp-header is empty`);
      return;
    }
    if (!TOKEN.test(name)) {
      const control = /[\x00-\x1f\x7f]/.test(name) ? ' (it contains a control character)' : '';
      problems.push(`${where}: x-mcp-header ${JSON.stringify(name)} is not an HTTP field-name token${control}`);
      return;
    }
    const typeProblem = primitiveTypeProblem(schema.type);
    if (typeProblem !== undefined) {
      problems.push(`${where}: x-mcp-header ${JSON.stringify(name)} is on a property ${typeProblem}`);
      return;
    }
    const first = seen.get(name.toLowerCase());
    if (first !== undefined) {
      problems.push(`${where}: x-mcp-header ${JSON.stringify(name)} repeats the one at ${first} (names are compared case-insensitively)`);
      return;
    }
    seen.set(name.toLowerCase(), where);
    params.push({ property, header: `${MCP_PARAM_HEADER_PREFIX}${name}` });
  };

  /** `property` is the `properties` chain while the walk is still on it, undefined once it left it. */
  const visit = (node: unknown, property: string[] | undefined, where: string): void => {
    if (typeof node !== 'object' || node === null || ancestors.has(node)) return;
    ancestors.add(node);
    if (Array.isArray(node)) node.forEach((item, i) => visit(item, undefined, `${where}/${i}`));
    else visitSchema(node as Record<string, unknown>, property, where);
    ancestors.delete(node);
  };

  const visitSchema = (node: Record<string, unknown>, property: string[] | undefined, where: string): void => {
    const at = where === '' ? '/' : where;
    if (Object.hasOwn(node, X_MCP_HEADER)) {
      if (property === undefined) {
        problems.push(`${at}: x-mcp-header is not on a property statically reachable from the schema root through \`properties\` alone`);
      } else if (property.length === 0) {
        problems.push(`${at}: x-mcp-header is on the schema root, not on a property`);
      } else {
        checkAnnotation(node, property, at);
      }
    }
    const properties = node.properties;
    if (isObject(properties)) {
      for (const [key, child] of Object.entries(properties)) {
        visit(child, property === undefined ? undefined : [...property, key], `${where}/properties/${pointerToken(key)}`);
      }
    }
    for (const keyword of SUBSCHEMA_KEYWORDS) {
      if (Object.hasOwn(node, keyword)) visit(node[keyword], undefined, `${where}/${keyword}`);
    }
    for (const keyword of SUBSCHEMA_MAP_KEYWORDS) {
      const map = node[keyword];
      if (!Object.hasOwn(node, keyword) || !isObject(map)) continue;
      for (const [key, child] of Object.entries(map)) visit(child, undefined, `${where}/${keyword}/${pointerToken(key)}`);
    }
  };

  visit(inputSchema, [], '');
  return problems.length === 0 ? { ok: true, params } : { ok: false, reason: problems.join('; ') };
}

/**
 * Why `type` is not a primitive type the annotation may sit on, or undefined when it is. A nullable
 * primitive (`["string", "null"]`) is accepted: the spec defines what a `null` value does (the header is
 * omitted), which only means something for parameters that can be null.
 */
function primitiveTypeProblem(type: unknown): string | undefined {
  if (typeof type === 'string') {
    if (PRIMITIVE_TYPES.has(type)) return undefined;
    if (type === 'number') return 'of type number (type number is not permitted, only integer)';
    return `of type ${type} (only integer, string and boolean are permitted)`;
  }
  if (Array.isArray(type) && type.length > 0 && type.every((t) => typeof t === 'string')) {
    const members = type as string[];
    const bad = members.filter((t) => t !== 'null' && !PRIMITIVE_TYPES.has(t));
    if (bad.length === 0 && members.some((t) => t !== 'null')) return undefined;
    return `of type ${JSON.stringify(type)} (only integer, string and boolean are permitted)`;
  }
  if (type === undefined) return 'without a type (it must be integer, string or boolean)';
  return `with type ${JSON.stringify(type)} (only integer, string and boolean are permitted)`;
}

/**
 * A header value per "Value Encoding": visible ASCII and interior spaces pass as they are (the empty string
 * too: SEP-2243's edge-case table sends `""` as an empty value); non-ASCII, any control character (tab
 * included), a leading or trailing space, or text that itself looks like the sentinel become
 * `=?base64?<base64 of the UTF-8 bytes>?=`.
 */
export function encodeParamValue(value: string): string {
  const unsafe =
    /[^\x20-\x7e]/.test(value) || value.startsWith(' ') || value.endsWith(' ') || (value.startsWith(BASE64_PREFIX) && value.endsWith(BASE64_SUFFIX));
  return unsafe ? `${BASE64_PREFIX}${Buffer.from(value, 'utf8').toString('base64')}${BASE64_SUFFIX}` : value;
}

/** The value at a `properties` chain; undefined when any step is missing or not an object. */
function valueAt(args: unknown, path: readonly string[]): unknown {
  let node: unknown = args;
  for (const key of path) {
    if (!isObject(node) || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

/**
 * The `Mcp-Param-*` headers (name → encoded value) for one `tools/call` with `args`. Absent and `null`
 * arguments send no header. A value the type-conversion rules have no text for — an object, an array, a
 * number that is not an integer in ±(2^53−1) — cannot be mirrored, and omitting its header would make the
 * request one the server "MUST reject" ("Client omits header but value is in body"): the call is refused
 * with MCPX_BAD_REQUEST instead, naming the argument.
 */
export function paramHeaders(spec: { params: readonly ParamHeader[] }, args: unknown, tool?: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const { property, header } of spec.params) {
    const value = valueAt(args, property);
    if (value === undefined || value === null) continue;
    let text: string;
    if (typeof value === 'string') text = value;
    else if (typeof value === 'boolean') text = value ? 'true' : 'false';
    else if (typeof value === 'number' && Number.isSafeInteger(value)) text = String(value);
    else {
      const what =
        typeof value === 'number'
          ? Number.isInteger(value)
            ? `the integer ${value} is outside the safe range ±(2^53−1)`
            : `${value} is not an integer`
          : `a ${Array.isArray(value) ? 'array' : typeof value} has no header form (only strings, integers and booleans do)`;
      const arg = property.join('.');
      throw new McpxError('MCPX_BAD_REQUEST', `${tool === undefined ? '' : `${tool}: `}argument ${JSON.stringify(arg)} cannot be sent as ${header}: ${what}`, {
        data: { ...(tool === undefined ? {} : { tool }), argument: arg, header },
      });
    }
    out[header] = encodeParamValue(text);
  }
  return out;
}

/** The text a header carries for an argument value, or undefined when the value has none. */
function headerText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  return undefined;
}

/**
 * The server side of SEP-2243 (mcpx serving 2026-07-28 callers over HTTP): whether the `Mcp-Param-*`
 * headers of one `tools/call` agree with its arguments. Returns what is wrong (the caller gets 400 with
 * HeaderMismatch), or undefined. A value is compared after trimming optional white space and decoding
 * `=?base64?…?=`; a raw value outside visible ASCII, a header for an absent argument, a missing header for
 * a present one, or a different value are each refused.
 */
export function paramHeaderProblem(
  spec: { params: readonly ParamHeader[] },
  args: unknown,
  get: (header: string) => string | null | undefined,
): string | undefined {
  for (const { property, header } of spec.params) {
    const arg = property.join('.');
    const value = valueAt(args, property);
    const raw = get(header);
    if (value === undefined || value === null) {
      if (raw !== null && raw !== undefined) return `${header} is sent, but the argument ${JSON.stringify(arg)} is absent`;
      continue;
    }
    if (raw === null || raw === undefined) return `${header} is missing, but the argument ${JSON.stringify(arg)} is in the body`;
    const trimmed = raw.trim();
    if (/[^\x20-\x7e]/.test(trimmed)) return `${header} carries characters a header value may not (encode them as ${BASE64_PREFIX}…${BASE64_SUFFIX})`;
    let received = trimmed;
    if (trimmed.startsWith(BASE64_PREFIX) && trimmed.endsWith(BASE64_SUFFIX)) {
      const b64 = trimmed.slice(BASE64_PREFIX.length, trimmed.length - BASE64_SUFFIX.length);
      // Strict RFC 4648: whole quanta, with the padding a short last quantum needs.
      if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(b64)) return `${header} is not valid base64`;
      received = Buffer.from(b64, 'base64').toString('utf8');
    }
    if (received !== headerText(value)) return `${header} does not match the argument ${JSON.stringify(arg)}`;
  }
  return undefined;
}
