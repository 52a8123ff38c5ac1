/**
 * SEP-2243 `Mcp-Param-*` headers (2026-07-28 Streamable HTTP). Each rule is quoted from
 * docs/specification/2026-07-28/basic/transports/streamable-http.mdx § "Custom Headers from Tool
 * Parameters" (marked SPEC) or, for the edge cases the spec leaves to examples, from the SEP's
 * test-case tables, docs/seps/2243-http-standardization.mdx (marked SEP).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { McpxError } from '../../src/errors.js';
import { requestParams } from '../../src/transports/mcp-messages.js';
import { encodeParamValue, paramHeaderProblem, paramHeaderSpec, paramHeaders, type ParamHeader } from '../../src/transports/mcp-param-headers.js';
import { RpcPeer } from '../../src/transports/rpc-peer.js';
import { StreamableHttpChannel, encodeMcpHeaderValue } from '../../src/transports/streamable-http.js';
import type { Channel, CloseInfo, JsonRpcMessage, SendOptions } from '../../src/transports/types.js';
import { startHttpFixture, type HttpFixture } from '../fixtures/http/index.js';
import { httpRequests } from '../fixtures/http/log.js';

const schema = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ type: 'object', properties, ...extra });
const str = (header: string) => ({ type: 'string', 'x-mcp-header': header });

function params(inputSchema: unknown): ParamHeader[] {
  const spec = paramHeaderSpec(inputSchema);
  if (!spec.ok) throw new Error(`expected a valid schema, got: ${spec.reason}`);
  return spec.params;
}

function reason(inputSchema: unknown): string {
  const spec = paramHeaderSpec(inputSchema);
  if (spec.ok) throw new Error(`expected an invalid schema, got ${JSON.stringify(spec.params)}`);
  return spec.reason;
}

const b64 = (s: string) => `=?base64?${Buffer.from(s, 'utf8').toString('base64')}?=`;

describe('paramHeaderSpec: which tool definitions are valid', () => {
  it('SPEC example: "region" with "x-mcp-header": "Region" is mirrored as Mcp-Param-Region; "query" is not', () => {
    const execSql = {
      type: 'object',
      properties: {
        region: { type: 'string', description: 'The region to execute the query in', 'x-mcp-header': 'Region' },
        query: { type: 'string', description: 'The SQL query to execute' },
      },
      required: ['region', 'query'],
    };
    expect(params(execSql)).toEqual([{ property: ['region'], header: 'Mcp-Param-Region' }]);
  });

  it('a schema without annotations (or none at all) is valid and mirrors nothing', () => {
    expect(params(schema({ q: { type: 'string' } }))).toEqual([]);
    expect(params({ type: 'object' })).toEqual([]);
    expect(params(undefined)).toEqual([]);
    expect(params('not a schema')).toEqual([]);
  });

  it('SPEC "The x-mcp-header property specifies the name portion used to construct the header name Mcp-Param-{name}" (case kept)', () => {
    expect(params(schema({ t: str('TenantId') }))).toEqual([{ property: ['t'], header: 'Mcp-Param-TenantId' }]);
  });

  it('SPEC "MUST NOT be empty"', () => {
    expect(reason(schema({ value: str('') }))).toMatch(/\/properties\/value: x-mcp-header is empty/);
  });

  it('an x-mcp-header that is not a string is invalid', () => {
    for (const value of [42, null, true, ['Region'], { name: 'Region' }]) {
      expect(reason(schema({ value: { type: 'string', 'x-mcp-header': value } }))).toMatch(/must be a string/);
    }
  });

  it('SPEC "MUST match HTTP field-name token syntax (1*tchar, RFC 9110 Section 5.1)": space, colon, non-ASCII are refused', () => {
    // SEP: "Contains space | My Region", "Contains colon | Region:Primary", "Contains non-ASCII | Région" → MUST reject
    for (const name of ['My Region', 'Region:Primary', 'Région', 'a/b', 'a(b)', 'a"b', 'a,b', 'a;b', 'a=b', 'a?b', 'a@b', 'a[b]', 'a{b}', 'a\\b']) {
      expect(reason(schema({ value: str(name) })), name).toMatch(/is not an HTTP field-name token/);
    }
  });

  it('every tchar is accepted: "!" / "#" / "$" / "%" / "&" / "\'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA', () => {
    const name = "Az09!#$%&'*+-.^_`|~";
    expect(params(schema({ value: str(name) }))).toEqual([{ property: ['value'], header: `Mcp-Param-${name}` }]);
  });

  it('SPEC "MUST NOT contain control characters, including carriage return (CR, \\r) or line feed (LF, \\n)"', () => {
    // SEP: "Contains control character | Region\t1" → MUST reject
    for (const name of ['Region\t1', 'Region\r\nX-Evil: 1', 'Region\n', 'Re\u0000gion', 'Region\u007f']) {
      expect(reason(schema({ value: str(name) })), JSON.stringify(name)).toMatch(/not an HTTP field-name token \(it contains a control character\)/);
    }
  });

  it('SPEC "MUST be case-insensitively unique among all x-mcp-header values in the inputSchema"', () => {
    expect(reason(schema({ field1: str('Region'), field2: str('Region') }))).toMatch(
      /\/properties\/field2: x-mcp-header "Region" repeats the one at \/properties\/field1/,
    );
    expect(reason(schema({ field1: str('MyField'), field2: str('myfield') }))).toMatch(/"myfield" repeats/);
    // Across nesting levels too: uniqueness is over the whole inputSchema.
    expect(reason(schema({ a: str('Region'), b: { type: 'object', properties: { c: str('REGION') } } }))).toMatch(/\/properties\/b\/properties\/c: .* repeats/);
  });

  it('SEP "Header name matches standard header | x-mcp-header: Method | Allowed (produces Mcp-Param-Method, not Mcp-Method)"', () => {
    expect(params(schema({ m: str('Method'), n: str('Name') }))).toEqual([
      { property: ['m'], header: 'Mcp-Param-Method' },
      { property: ['n'], header: 'Mcp-Param-Name' },
    ]);
  });

  it('SPEC "MUST only be applied to parameters with primitive types (integer, string, boolean)"', () => {
    expect(
      params(schema({ s: str('S'), i: { type: 'integer', 'x-mcp-header': 'I' }, b: { type: 'boolean', 'x-mcp-header': 'B' } })).map((p) => p.header),
    ).toEqual(['Mcp-Param-S', 'Mcp-Param-I', 'Mcp-Param-B']);
    for (const type of ['object', 'array', 'null']) {
      expect(reason(schema({ v: { type, 'x-mcp-header': 'V' } })), type).toMatch(
        new RegExp(`of type ${type} \\(only integer, string and boolean are permitted\\)`),
      );
    }
    expect(reason(schema({ v: { 'x-mcp-header': 'V' } }))).toMatch(/without a type/);
    expect(reason(schema({ v: { type: 7, 'x-mcp-header': 'V' } }))).toMatch(/with type 7/);
  });

  it('SPEC "Parameters with type number are not permitted."', () => {
    expect(reason(schema({ score: { type: 'number', 'x-mcp-header': 'Score' } }))).toMatch(/type number is not permitted/);
  });

  it('a nullable primitive (["string", "null"]) is accepted — SPEC "Parameter value is null | Client MUST omit the header" gives null a meaning; other unions are not', () => {
    expect(params(schema({ v: { type: ['string', 'null'], 'x-mcp-header': 'V' } }))).toHaveLength(1);
    expect(params(schema({ v: { type: ['integer', 'boolean'], 'x-mcp-header': 'V' } }))).toHaveLength(1);
    for (const type of [['string', 'number'], ['null'], ['object', 'null'], []]) {
      expect(reason(schema({ v: { type, 'x-mcp-header': 'V' } })), JSON.stringify(type)).toMatch(/only integer, string and boolean/);
    }
  });

  it('SPEC "Nested object properties are permitted as long as every step in the chain is a properties key"', () => {
    const nested = schema({ target: { type: 'object', properties: { tenant: { type: 'object', properties: { id: str('TenantId') } } } } });
    expect(params(nested)).toEqual([{ property: ['target', 'tenant', 'id'], header: 'Mcp-Param-TenantId' }]);
  });

  it('SPEC "The chain MUST NOT pass through items (or any other array keyword), composition keywords (oneOf, anyOf, allOf, not), conditional keywords (if/then/else), or $ref"', () => {
    const annotated = { type: 'object', properties: { v: str('V') } };
    const cases: Array<[string, Record<string, unknown>]> = [
      ['items', schema({ list: { type: 'array', items: { type: 'string', 'x-mcp-header': 'V' } } })],
      ['items (of objects)', schema({ list: { type: 'array', items: annotated } })],
      ['prefixItems', schema({ list: { type: 'array', prefixItems: [str('V')] } })],
      ['contains', schema({ list: { type: 'array', contains: str('V') } })],
      ['oneOf', { type: 'object', oneOf: [annotated] }],
      ['anyOf', { type: 'object', anyOf: [annotated] }],
      ['allOf', { type: 'object', allOf: [annotated] }],
      ['not', { type: 'object', not: annotated }],
      ['if', { type: 'object', if: annotated }],
      ['then', { type: 'object', then: annotated }],
      ['else', { type: 'object', else: annotated }],
      ['additionalProperties', { type: 'object', additionalProperties: str('V') }],
      ['patternProperties', { type: 'object', patternProperties: { '^x': str('V') } }],
      ['dependentSchemas', { type: 'object', dependentSchemas: { a: annotated } }],
      ['$ref into $defs', { type: 'object', properties: { v: { $ref: '#/$defs/v' } }, $defs: { v: str('V') } }],
      ['$ref into definitions', { type: 'object', properties: { v: { $ref: '#/definitions/v' } }, definitions: { v: str('V') } }],
      ['properties under anyOf', schema({ a: { anyOf: [{ type: 'object', properties: { b: str('V') } }] } })],
    ];
    for (const [what, s] of cases) {
      expect(reason(s), what).toMatch(/x-mcp-header is not on a property statically reachable from the schema root/);
    }
  });

  it('SPEC "An x-mcp-header annotation anywhere else makes the annotation — and thus the tool definition — invalid": also on the root itself', () => {
    expect(reason({ type: 'object', 'x-mcp-header': 'Root', properties: {} })).toMatch(/^\/: x-mcp-header is on the schema root/);
  });

  it('a property ref-typed at a reachable position must still declare a primitive type itself', () => {
    expect(reason({ type: 'object', properties: { v: { $ref: '#/$defs/s', 'x-mcp-header': 'V' } }, $defs: { s: { type: 'string' } } })).toMatch(
      /without a type/,
    );
  });

  it('data is not an annotation: an "x-mcp-header" key inside default/const/enum/examples, or a property named "x-mcp-header"', () => {
    const s = schema({
      opts: { type: 'object', default: { 'x-mcp-header': 'Nope' }, examples: [{ 'x-mcp-header': 'Nope' }] },
      c: { const: { 'x-mcp-header': '' }, enum: [{ 'x-mcp-header': '' }] },
      'x-mcp-header': { type: 'string' },
    });
    expect(params(s)).toEqual([]);
  });

  it('the reason names every violation and where it is (for the warning the spec asks for)', () => {
    const r = reason(schema({ a: str(''), b: { type: 'number', 'x-mcp-header': 'B' }, 'c/d': { type: 'array', items: str('C') } }));
    expect(r.split('; ')).toEqual([
      '/properties/a: x-mcp-header is empty',
      '/properties/b: x-mcp-header "B" is on a property of type number (type number is not permitted, only integer)',
      '/properties/c~1d/items: x-mcp-header is not on a property statically reachable from the schema root through `properties` alone',
    ]);
  });

  it('a cyclic object (possible in code, never in JSON) does not hang the walk', () => {
    const s: Record<string, unknown> = { type: 'object', properties: { v: str('V') } };
    (s.properties as Record<string, unknown>).self = s;
    s.allOf = [s];
    expect(params(s)).toEqual([{ property: ['v'], header: 'Mcp-Param-V' }]);
  });
});

describe('encodeParamValue: SPEC "Value Encoding"', () => {
  it('SPEC encoding examples table', () => {
    expect(encodeParamValue('us-west1')).toBe('us-west1'); // Plain ASCII
    expect(encodeParamValue('Hello, 世界')).toBe('=?base64?SGVsbG8sIOS4lueVjA==?='); // Contains non-ASCII
    expect(encodeParamValue(' padded ')).toBe('=?base64?IHBhZGRlZCA=?='); // Leading/trailing spaces
    expect(encodeParamValue('line1\nline2')).toBe('=?base64?bGluZTEKbGluZTI=?='); // Contains newline
    expect(encodeParamValue('=?base64?literal?=')).toBe('=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?='); // Matches sentinel pattern
  });

  it('SEP "Value Encoding Edge Cases" table', () => {
    expect(encodeParamValue(' us-west1')).toBe('=?base64?IHVzLXdlc3Qx?=');
    expect(encodeParamValue('us-west1 ')).toBe('=?base64?dXMtd2VzdDEg?=');
    expect(encodeParamValue(' us-west1 ')).toBe('=?base64?IHVzLXdlc3QxIA==?=');
    expect(encodeParamValue('us west 1')).toBe('us west 1'); // internal spaces only
    expect(encodeParamValue('日本語')).toBe('=?base64?5pel5pys6Kqe?=');
    expect(encodeParamValue('line1\r\nline2')).toBe('=?base64?bGluZTENCmxpbmUy?=');
    expect(encodeParamValue('\tindented')).toBe('=?base64?CWluZGVudGVk?=');
    expect(encodeParamValue('')).toBe(''); // "Empty string | "" | Mcp-Param-Name: (empty value)"
  });

  it('SPEC "when a value cannot be safely represented … (e.g., it contains … control characters …) clients MUST use Base64": interior tab and DEL too', () => {
    expect(encodeParamValue('a\tb')).toBe(b64('a\tb'));
    expect(encodeParamValue('a\u007fb')).toBe(b64('a\u007fb'));
    expect(encodeParamValue('a\u0000b')).toBe(b64('a\u0000b'));
  });

  it('every visible ASCII character passes as it is', () => {
    let all = '';
    for (let c = 0x21; c <= 0x7e; c++) all += String.fromCharCode(c);
    expect(encodeParamValue(all)).toBe(all);
  });

  it('SPEC "clients MUST also Base64-encode any plain-ASCII value that matches the sentinel pattern (i.e., starts with =?base64? and ends with ?=)" — overlapping ends included', () => {
    expect(encodeParamValue('=?base64?=')).toBe(b64('=?base64?='));
    expect(encodeParamValue('=?base64?abc')).toBe('=?base64?abc');
    expect(encodeParamValue('=?BASE64?abc?=')).toBe('=?BASE64?abc?=');
  });
});

describe('encodeMcpHeaderValue: SPEC "The same encoding rule applies to the Mcp-Name header value"', () => {
  it('uses the Mcp-Param rule (an interior tab is a control character too), except that an empty name is sent encoded', () => {
    expect(encodeMcpHeaderValue('my-hyphenated-tool')).toBe('my-hyphenated-tool');
    expect(encodeMcpHeaderValue('https://example.com/resource?id=123')).toBe('https://example.com/resource?id=123');
    expect(encodeMcpHeaderValue('a\tb')).toBe(b64('a\tb'));
    expect(encodeMcpHeaderValue('')).toBe('=?base64??=');
  });
});

describe('paramHeaders: the headers for one call', () => {
  const spec = paramHeaderSpec(
    schema({
      region: str('Region'),
      priority: { type: 'integer', 'x-mcp-header': 'Priority' },
      verbose: { type: ['boolean', 'null'], 'x-mcp-header': 'Verbose' },
      target: { type: 'object', properties: { tenant: str('TenantId') } },
      query: { type: 'string' },
    }),
  );
  if (!spec.ok) throw new Error(spec.reason);

  it('SPEC "Resulting HTTP request" example: Mcp-Param-Region: us-west1, and nothing for the unannotated query', () => {
    expect(paramHeaders(spec, { region: 'us-west1', query: 'SELECT * FROM users' })).toEqual({ 'Mcp-Param-Region': 'us-west1' });
  });

  it('SPEC "string: Use the value as-is; integer: Convert to decimal string representation (e.g., 42, -7); boolean: Convert to lowercase "true" or "false""', () => {
    expect(paramHeaders(spec, { region: 'r', priority: 42, verbose: true })).toEqual({
      'Mcp-Param-Region': 'r',
      'Mcp-Param-Priority': '42',
      'Mcp-Param-Verbose': 'true',
    });
    expect(paramHeaders(spec, { priority: -7, verbose: false })).toEqual({ 'Mcp-Param-Priority': '-7', 'Mcp-Param-Verbose': 'false' });
    expect(paramHeaders(spec, { priority: 2 ** 53 - 1 })).toEqual({ 'Mcp-Param-Priority': '9007199254740991' });
    expect(paramHeaders(spec, { priority: -(2 ** 53 - 1) })).toEqual({ 'Mcp-Param-Priority': '-9007199254740991' });
  });

  it('values are encoded: SPEC "Clients MUST encode parameter values before including them in HTTP headers"', () => {
    expect(paramHeaders(spec, { region: 'Hello, 世界', target: { tenant: ' acme ' } })).toEqual({
      'Mcp-Param-Region': '=?base64?SGVsbG8sIOS4lueVjA==?=',
      'Mcp-Param-TenantId': b64(' acme '),
    });
  });

  it('SPEC "Header extraction is defined as reading the instance value at the exact property path of the annotated property"', () => {
    expect(paramHeaders(spec, { target: { tenant: 'acme' } })).toEqual({ 'Mcp-Param-TenantId': 'acme' });
    // A same-named argument elsewhere is not the annotated property.
    expect(paramHeaders(spec, { tenant: 'acme', target: {} })).toEqual({});
  });

  it('SPEC "If no value is present at that path in the call arguments, the header is omitted."', () => {
    expect(paramHeaders(spec, {})).toEqual({});
    expect(paramHeaders(spec, undefined)).toEqual({});
    expect(paramHeaders(spec, { target: 'not an object' })).toEqual({});
    expect(paramHeaders(spec, { target: ['acme'] })).toEqual({});
    expect(paramHeaders(spec, { target: null })).toEqual({});
    // Inherited keys are not values present in the arguments.
    const toStringSpec = paramHeaderSpec(schema({ toString: str('T') }));
    if (!toStringSpec.ok) throw new Error(toStringSpec.reason);
    expect(paramHeaders(toStringSpec, {})).toEqual({});
  });

  it('SPEC "Parameter value is null | Client MUST omit the header"', () => {
    expect(paramHeaders(spec, { region: 'r', verbose: null, target: { tenant: null } })).toEqual({ 'Mcp-Param-Region': 'r' });
  });

  it('SEP "Empty string | "" | Mcp-Param-Name: (empty value)": an empty string is a present value', () => {
    expect(paramHeaders(spec, { region: '' })).toEqual({ 'Mcp-Param-Region': '' });
  });

  it('SPEC "Integer values MUST be within the safe range for JavaScript (−2^53+1 to 2^53−1)": outside it the call is refused, not sent without the header', () => {
    const err = (() => {
      try {
        paramHeaders(spec, { priority: 2 ** 53 }, 'svc: route');
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(McpxError);
    expect(err).toMatchObject({
      code: 'MCPX_BAD_REQUEST',
      message: 'svc: route: argument "priority" cannot be sent as Mcp-Param-Priority: the integer 9007199254740992 is outside the safe range ±(2^53−1)',
      data: { tool: 'svc: route', argument: 'priority', header: 'Mcp-Param-Priority' },
    });
  });

  it('a value with no text under the type-conversion rules (fraction, object, array) is refused: omitting it would be SPEC "Client omits header but value is in body | Non-conforming client"', () => {
    expect(() => paramHeaders(spec, { priority: 1.5 })).toThrow(/"priority" cannot be sent as Mcp-Param-Priority: 1.5 is not an integer/);
    expect(() => paramHeaders(spec, { priority: Number.NaN })).toThrow(/NaN is not an integer/);
    expect(() => paramHeaders(spec, { region: { a: 1 } })).toThrow(/a object has no header form/);
    expect(() => paramHeaders(spec, { target: { tenant: ['x'] } })).toThrow(/"target.tenant" cannot be sent as Mcp-Param-TenantId: a array has no header form/);
  });
});

describe('RpcPeer hands request headers to the channel', () => {
  class FakeChannel implements Channel {
    readonly sent: Array<{ message: JsonRpcMessage; context: unknown; options: SendOptions | undefined; args: number }> = [];
    readonly pid = undefined;
    readonly closed = false;
    start = () => Promise.resolve();
    close = () => Promise.resolve();
    send(message: JsonRpcMessage, context?: unknown, options?: SendOptions): void {
      this.sent.push({ message, context, options, args: arguments.length });
    }
    onMessage(): void {}
    onClose(_listener: (info: CloseInfo) => void): void {}
  }

  it('headers go to send() as its third argument; without headers send() gets two, as before', () => {
    const channel = new FakeChannel();
    const peer = new RpcPeer(channel);
    void peer.request('tools/call', { name: 't' }, { context: 'ctx', headers: { 'Mcp-Param-A': 'b' } }).catch(() => undefined);
    void peer.request('tools/list', {}, { context: 'ctx' }).catch(() => undefined);
    expect(channel.sent.map((s) => [s.args, s.context, s.options])).toEqual([
      [3, 'ctx', { headers: { 'Mcp-Param-A': 'b' } }],
      [2, 'ctx', undefined],
    ]);
  });
});

describe('StreamableHttpChannel puts send() headers on modern POSTs only', () => {
  let f: HttpFixture;
  const channels: StreamableHttpChannel[] = [];
  beforeAll(async () => {
    f = await startHttpFixture('raw-http', ['modern-param-headers']);
  });
  afterEach(async () => {
    await Promise.all(channels.splice(0).map((c) => c.close()));
  });
  afterAll(async () => {
    await f.stop();
  });

  function peer(): RpcPeer {
    const channel = new StreamableHttpChannel({ url: f.url });
    channels.push(channel);
    return new RpcPeer(channel);
  }

  it('a modern tools/call carries them (lower-cased); they never replace the headers the channel owns', async () => {
    const p = peer();
    const result = await p.request('tools/call', requestParams('modern', '2026-07-28', { name: 'route', arguments: { region: 'eu' } }), {
      headers: { 'Mcp-Param-Region': 'eu', 'Mcp-Method': 'prompts/get', 'MCP-Protocol-Version': '1999-01-01', 'mcp-name': 'other' },
    });
    expect(result).toMatchObject({ content: [{ text: 'routed region=eu' }] });
    const sent = httpRequests(f.log, 'tools/call').at(-1)!;
    expect(sent.headers).toEqual({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'route', 'mcp-param-region': 'eu' });
  });

  it('a legacy message (no _meta envelope) never carries them', async () => {
    const p = peer();
    await p.request('tools/list', {}, { headers: { 'Mcp-Param-Region': 'eu' } }).catch(() => undefined);
    const sent = httpRequests(f.log, 'tools/list').at(-1)!;
    expect(sent.headers['mcp-param-region']).toBeUndefined();
  });
});

describe('paramHeaderProblem (mcpx serving 2026-07-28 callers)', () => {
  const spec = {
    params: [
      { property: ['region'], header: 'Mcp-Param-Region' },
      { property: ['n'], header: 'Mcp-Param-N' },
    ],
  };
  const headers = (h: Record<string, string>) => (name: string) => h[name];

  it('accepts agreeing headers: plain, padded with white space, base64, numbers as text', () => {
    expect(paramHeaderProblem(spec, { region: 'eu-west', n: 3 }, headers({ 'Mcp-Param-Region': 'eu-west', 'Mcp-Param-N': '3' }))).toBeUndefined();
    expect(paramHeaderProblem(spec, { region: 'eu-west' }, headers({ 'Mcp-Param-Region': '  eu-west  ' }))).toBeUndefined();
    expect(
      paramHeaderProblem(spec, { region: 'Grüße' }, headers({ 'Mcp-Param-Region': `=?base64?${Buffer.from('Grüße').toString('base64')}?=` })),
    ).toBeUndefined();
    // without both the prefix and the suffix, a value is literal
    expect(paramHeaderProblem(spec, { region: '=?base64?abc' }, headers({ 'Mcp-Param-Region': '=?base64?abc' }))).toBeUndefined();
  });

  it('refuses a mismatch, a missing header, a header for an absent argument, raw non-ASCII, bad base64', () => {
    expect(paramHeaderProblem(spec, { region: 'eu' }, headers({ 'Mcp-Param-Region': 'us' }))).toMatch(/does not match/);
    expect(paramHeaderProblem(spec, { region: 'eu' }, headers({}))).toMatch(/is missing/);
    expect(paramHeaderProblem(spec, {}, headers({ 'Mcp-Param-Region': 'eu' }))).toMatch(/argument "region" is absent/);
    expect(paramHeaderProblem(spec, { region: 'é' }, headers({ 'Mcp-Param-Region': 'é' }))).toMatch(/characters/);
    expect(paramHeaderProblem(spec, { region: 'Hello' }, headers({ 'Mcp-Param-Region': '=?base64?SGVsbG8?=' }))).toMatch(/not valid base64/);
    expect(paramHeaderProblem(spec, { region: 'Hello' }, headers({ 'Mcp-Param-Region': '=?base64?SGVs!!!bG8=?=' }))).toMatch(/not valid base64/);
  });
});
