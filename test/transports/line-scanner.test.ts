/**
 * The line scanner against JSON.parse: for any JSON object on a line (JSON-RPC shaped or not), cut into
 * chunks anywhere, it reports the top-level id, method and answer keys JSON.parse finds, and the line's
 * length; a line that is not an object reports nothing.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LineScanner, type LineFacts } from '../../src/transports/line-scanner.js';

function scan(text: string, cuts: number[]): LineFacts[] {
  const out: LineFacts[] = [];
  const s = new LineScanner((f) => out.push(f));
  const buf = Buffer.from(text, 'utf8');
  let at = 0;
  for (const c of [...cuts.map((x) => x % (buf.length + 1))].sort((a, b) => a - b)) {
    s.push(buf.subarray(at, c));
    at = c;
  }
  s.push(buf.subarray(at));
  return out;
}

/** What JSON.parse says of one line. */
function expected(line: string): Omit<LineFacts, 'bytes'> {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return {};
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return {};
  const o = v as Record<string, unknown>;
  const id = o['id'];
  const method = o['method'];
  return {
    ...(typeof id === 'string' || typeof id === 'number' || id === null ? { id } : {}),
    ...(typeof method === 'string' ? { method } : {}),
    ...('error' in o ? { answer: 'error' as const } : 'result' in o ? { answer: 'result' as const } : {}),
  };
}

const idArb = fc.oneof(fc.integer(), fc.string(), fc.constant(null), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.object());
const messageArb = fc
  .record(
    {
      jsonrpc: fc.constant('2.0'),
      id: idArb,
      method: fc.oneof(fc.string(), fc.constantFrom('tools/call', 'elicitation/create', 'notifications/progress'), fc.integer()),
      params: fc.jsonValue(),
      result: fc.jsonValue(),
      error: fc.record({ code: fc.integer(), message: fc.string() }),
    },
    { requiredKeys: [] },
  )
  .chain((o) =>
    // any key order, and now and then keys that look like the ones looked for, nested or escaped
    fc
      .shuffledSubarray(Object.entries(o), { minLength: Object.keys(o).length })
      .chain((entries) => fc.record({ entries: fc.constant(entries), extra: fc.dictionary(fc.constantFrom('ids', 'i', 'methods', 'x'), fc.jsonValue()) })),
  )
  .map(({ entries, extra }) => JSON.stringify(Object.fromEntries([...entries, ...Object.entries(extra)])));

describe('LineScanner', () => {
  it('finds what JSON.parse finds at the top level, whatever the chunks', () => {
    fc.assert(
      fc.property(fc.array(messageArb, { minLength: 1, maxLength: 4 }), fc.array(fc.nat(), { maxLength: 8 }), (lines, cuts) => {
        const text = lines.map((l) => `${l}\n`).join('');
        const got = scan(text, cuts);
        expect(got.map(({ bytes: _b, ...f }) => f)).toEqual(lines.map(expected));
        expect(got.map((f) => f.bytes)).toEqual(lines.map((l) => Buffer.byteLength(l)));
      }),
      { numRuns: 500 },
    );
  });

  it('reads pretty-printed spacing, escapes in keys and values, and unicode', () => {
    const lines = [
      '{ "jsonrpc" : "2.0" , "id" : "a\\"b\\\\" , "method" : "x/ü✓" }',
      '{"\\u0069d":7,"params":{"id":1,"method":"inner","result":{}},"result":{"id":2}}',
      '{"params":{"text":"a \\" } { [ ] , : quote"},"id":-3.5e2,"method":"tools/call"}',
      '[{"id":1}]',
      'not json {"id":1}',
      '',
    ];
    expect(scan(`${lines.join('\n')}\n`, [3, 17, 40, 41, 90]).map(({ bytes: _b, ...f }) => f)).toEqual(lines.map(expected));
  });

  it('reads a line of 20 MB in any chunks without keeping it', () => {
    const big = JSON.stringify({ jsonrpc: '2.0', method: 'tools/call', params: { text: 'x'.repeat(20_000_000) }, id: 'late' });
    const got = scan(`${big}\n`, [1, 65_536, 10_000_000]);
    expect(got).toEqual([{ id: 'late', method: 'tools/call', bytes: big.length }]);
  });
});
