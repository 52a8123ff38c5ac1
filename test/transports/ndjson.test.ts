import { describe, it, expect } from 'vitest';
import { encode, NdjsonDecoder, type NdjsonOverflow } from '../../src/transports/ndjson.js';

function collect(maxLineBytes?: number) {
  const lines: string[] = [];
  const overflows: NdjsonOverflow[] = [];
  const decoder = new NdjsonDecoder({
    ...(maxLineBytes === undefined ? {} : { maxLineBytes }),
    onLine: (line) => lines.push(line),
    onOverflow: (info) => overflows.push(info),
  });
  return { decoder, lines, overflows };
}

describe('NdjsonDecoder', () => {
  it('reassembles a line split across chunks, including inside multi-byte UTF-8 characters', () => {
    const message = { text: 'héllo € 😀 世界', n: 1 };
    const bytes = Buffer.from(encode(message));
    const { decoder, lines } = collect();
    // One byte at a time: every multi-byte character gets split.
    for (let i = 0; i < bytes.length; i++) decoder.push(bytes.subarray(i, i + 1));
    expect(lines).toEqual([JSON.stringify(message)]);
    expect(JSON.parse(lines[0]!)).toEqual(message);
    expect(lines[0]).not.toContain('\uFFFD');
  });

  it('splits exactly at every position of a two-line input', () => {
    const input = Buffer.from('{"a":"ü€"}\n{"b":"😀"}\n');
    for (let cut = 0; cut <= input.length; cut++) {
      const { decoder, lines } = collect();
      decoder.push(input.subarray(0, cut));
      decoder.push(input.subarray(cut));
      expect(lines, `cut at ${cut}`).toEqual(['{"a":"ü€"}', '{"b":"😀"}']);
    }
  });

  it('emits several messages from one chunk in order', () => {
    const { decoder, lines } = collect();
    decoder.push(Buffer.from('{"n":1}\n{"n":2}\n{"n":3}\n{"n":4'));
    expect(lines).toEqual(['{"n":1}', '{"n":2}', '{"n":3}']);
    decoder.push(Buffer.from('}\n'));
    expect(lines).toEqual(['{"n":1}', '{"n":2}', '{"n":3}', '{"n":4}']);
  });

  it('strips \\r\\n endings, also when \\r and \\n arrive in different chunks', () => {
    const { decoder, lines } = collect();
    decoder.push(Buffer.from('{"n":1}\r\n{"n":2}\r'));
    decoder.push(Buffer.from('\n'));
    expect(lines).toEqual(['{"n":1}', '{"n":2}']);
  });

  it('ignores blank and whitespace-only lines', () => {
    const { decoder, lines } = collect();
    decoder.push(Buffer.from('\n\r\n   \n\t\r\n{"n":1}\n\n\n{"n":2}\n'));
    expect(lines).toEqual(['{"n":1}', '{"n":2}']);
  });

  it('delivers a final line without a newline on end(), and nothing afterwards', () => {
    const { decoder, lines } = collect();
    decoder.push(Buffer.from('{"n":1}\n{"n":2}'));
    expect(lines).toEqual(['{"n":1}']);
    decoder.end();
    expect(lines).toEqual(['{"n":1}', '{"n":2}']);
    decoder.push(Buffer.from('{"n":3}\n'));
    expect(lines).toHaveLength(2);
    expect(decoder.stopped).toBe(true);
  });

  it('calls onOverflow once when a terminated line exceeds the limit, then stops decoding', () => {
    const { decoder, lines, overflows } = collect(10);
    decoder.push(Buffer.from('{"a":123}\n{"a":"0123456789"}\n{"b":1}\n'));
    expect(lines).toEqual(['{"a":123}']);
    expect(overflows).toEqual([{ limit: 10, bytes: 18 }]); // {"a":"0123456789"} is 18 bytes
    decoder.push(Buffer.from('{"c":1}\n' + 'x'.repeat(100) + '\n'));
    expect(lines).toEqual(['{"a":123}']);
    expect(overflows).toHaveLength(1);
    expect(decoder.stopped).toBe(true);
  });

  it('detects an overflow while the line is still arriving, without waiting for its newline', () => {
    const { decoder, overflows } = collect(1000);
    for (let i = 0; i < 5; i++) decoder.push(Buffer.alloc(300, 0x61));
    expect(overflows).toHaveLength(1);
    expect(overflows[0]!.limit).toBe(1000);
    expect(overflows[0]!.bytes).toBeGreaterThan(1000);
    expect(decoder.bufferedBytes).toBe(0); // nothing more is held in memory
  });

  it('accepts a line of exactly maxLineBytes, with or without \\r', () => {
    const line = '"' + 'x'.repeat(8) + '"'; // 10 bytes
    const { decoder, lines, overflows } = collect(10);
    decoder.push(Buffer.from(line + '\r'));
    decoder.push(Buffer.from('\n' + line + '\n'));
    expect(lines).toEqual([line, line]);
    expect(overflows).toEqual([]);
  });

  it('decodes a 10 MB line arriving in 64 KiB chunks correctly and fast', () => {
    const unit = 'aé€😀'; // 10 bytes of UTF-8, so chunk boundaries split characters
    const text = unit.repeat(1_000_000);
    const payload = Buffer.from(encode({ jsonrpc: '2.0', method: 'big', params: { text } }));
    expect(payload.length).toBeGreaterThan(10_000_000);
    const { decoder, lines, overflows } = collect(64 * 1024 * 1024);
    const t0 = performance.now();
    for (let off = 0; off < payload.length; off += 64 * 1024) decoder.push(payload.subarray(off, off + 64 * 1024));
    const elapsed = performance.now() - t0;
    expect(overflows).toEqual([]);
    expect(lines).toHaveLength(1);
    const parsed = JSON.parse(lines[0]!) as { params: { text: string } };
    expect(parsed.params.text.length).toBe(text.length);
    expect(parsed.params.text === text).toBe(true);
    // Linear work: one concat and one decode. Quadratic string building would take seconds.
    expect(elapsed).toBeLessThan(1000);
  });
});

describe('encode', () => {
  it('produces one JSON line terminated by \\n that round-trips', () => {
    const message = { jsonrpc: '2.0', id: 1, method: 'x', params: { s: 'line1\nline2\r\n', t: 'a\u2028b\u2029c' } };
    const line = encode(message);
    expect(line.endsWith('\n')).toBe(true);
    expect(line.slice(0, -1)).not.toMatch(/[\n\r\u2028\u2029]/);
    expect(JSON.parse(line)).toEqual(message);
  });

  it('rejects values JSON.stringify cannot encode', () => {
    expect(() => encode(undefined)).toThrow(TypeError);
  });
});
