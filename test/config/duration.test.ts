import { describe, expect, it } from 'vitest';
import { McpxError } from '../../src/errors.js';
import { DURATION_FORMS, MAX_DURATION_MS, formatDuration, parseDuration, tryParseDuration } from '../../src/config/duration.js';

describe('parseDuration', () => {
  const GOOD: [string | number, number][] = [
    ['2s', 2_000],
    ['500ms', 500],
    ['5m', 300_000],
    ['1h', 3_600_000],
    ['1d', 86_400_000],
    ['1m30s', 90_000],
    ['1h2m3s4ms', 3_723_004],
    ['1s500ms', 1_500],
    ['1.5s', 1_500],
    ['.5s', 500],
    ['0', 0],
    ['0s', 0],
    ['1500', 1_500],
    [' 2s ', 2_000],
    ['\t1m 30s\n', 90_000],
    ['1 m 30 s', 90_000],
    ['2S', 2_000],
    ['500MS', 500],
    ['1H30M', 5_400_000],
    [1500, 1_500],
    [0, 0],
    [2.4, 2],
  ];
  for (const [input, ms] of GOOD) {
    it(`${JSON.stringify(input)} → ${ms} ms`, () => {
      expect(parseDuration(input)).toBe(ms);
      expect(tryParseDuration(input)).toEqual({ ok: true, ms });
    });
  }

  const BAD: unknown[] = [
    '',
    '   ',
    '5 minutes',
    '2 0s',
    'two seconds',
    '2x',
    's',
    'ms',
    '1m1m',
    '30s1m',
    '1ms1s',
    '-2s',
    '-5',
    -1,
    -0.5,
    'Infinity',
    Infinity,
    NaN,
    '1e3',
    '0x10',
    '2s,',
    '1.5.5s',
    null,
    undefined,
    true,
    {},
    ['2s'],
  ];
  for (const input of BAD) {
    it(`refuses ${String(JSON.stringify(input))}, naming the value and the accepted forms`, () => {
      const r = tryParseDuration(input);
      expect(r.ok).toBe(false);
      const message = (r as { message: string }).message;
      expect(message).toContain(DURATION_FORMS);
      expect(() => parseDuration(input)).toThrow(McpxError);
      // the thrown error says what the refusal says
      expect(() => parseDuration(input)).toThrow(message);
    });
  }

  it('says what is wrong: the example from the README, negatives, unit order', () => {
    expect(tryParseDuration('5 minutes')).toEqual({ ok: false, message: `"5 minutes" is not a duration (${DURATION_FORMS})` });
    expect((tryParseDuration('-2s') as { message: string }).message).toMatch(/^"-2s" is negative/);
    expect((tryParseDuration(-1) as { message: string }).message).toMatch(/^-1 is negative/);
    expect((tryParseDuration('30s1m') as { message: string }).message).toContain('largest first');
  });

  it('refuses what Node timers cannot wait for (a longer delay would fire at once)', () => {
    expect(parseDuration(MAX_DURATION_MS)).toBe(MAX_DURATION_MS);
    expect(parseDuration('24d')).toBe(24 * 86_400_000);
    const r = tryParseDuration('25d');
    expect(r.ok).toBe(false);
    expect((r as { message: string }).message).toContain('too long');
  });

  it('prefixes the message with where the value came from, code MCPX_BAD_SETTING', () => {
    try {
      parseDuration('soon', 'flag --pool-idle-timeout');
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(McpxError);
      expect((err as McpxError).code).toBe('MCPX_BAD_SETTING');
      expect((err as Error).message).toBe(`flag --pool-idle-timeout: "soon" is not a duration (${DURATION_FORMS})`);
    }
  });
});

describe('formatDuration', () => {
  const CASES: [number, string][] = [
    [0, '0ms'],
    [1, '1ms'],
    [500, '500ms'],
    [1_000, '1s'],
    [1_500, '1500ms'],
    [2_000, '2s'],
    [90_000, '90s'],
    [120_000, '2m'],
    [300_000, '5m'],
    [3_600_000, '1h'],
    [5_400_000, '90m'],
    [3_723_000, '3723s'], // shorter than 1h2m3s
    [3_600_001, '1h1ms'], // shorter than 3600001ms
    [86_400_000, '1d'],
    [86_401_000, '1d1s'], // shorter than 86401s
    [3_661_001, '3661001ms'], // a tie with 1h1m1s1ms goes to the single unit
    [90_061_001, '90061001ms'], // shorter than 1d1h1m1s1ms
  ];
  for (const [ms, text] of CASES) {
    it(`${ms} → ${text}, which parses back`, () => {
      expect(formatDuration(ms)).toBe(text);
      expect(parseDuration(text)).toBe(ms);
    });
  }

  it('is never longer than the plain millisecond count plus its unit, and always round-trips', () => {
    for (let ms = 0; ms < 200_000_000; ms = ms * 3 + 7) {
      const text = formatDuration(ms);
      expect(parseDuration(text)).toBe(ms);
      expect(text.length).toBeLessThanOrEqual(`${ms}ms`.length);
    }
  });

  it('refuses negatives and non-finite numbers', () => {
    expect(() => formatDuration(-1)).toThrow(RangeError);
    expect(() => formatDuration(Number.NaN)).toThrow(RangeError);
  });
});
