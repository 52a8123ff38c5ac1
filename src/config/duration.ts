/**
 * Durations as people write them in config files, environment variables and flags:
 * `500ms`, `2s`, `5m`, `1h`, `1d`, compounds such as `1m30s` or `1h 5m`, and plain numbers (milliseconds).
 *
 * Units are case-insensitive, white space around and between parts is ignored, decimals are allowed
 * (`1.5s`), and a compound lists each unit once, largest first. The result is a whole number of
 * milliseconds (rounded), never negative, and at most `MAX_DURATION_MS`: Node's timers cannot wait
 * longer (a larger delay fires at once), so a longer value would silently mean "now".
 *
 * No zod here: the CLI parses `--timeout` and the settings with this, without loading zod.
 */
import { McpxError } from '../errors.js';
import { showValue as show } from './show-value.js';
import { MAX_TIMER_MS } from '../timer-delay.js';

/** The longest duration a setting or flag may name: the longest delay `setTimeout` honours. */
export const MAX_DURATION_MS = MAX_TIMER_MS;

/** Quoted in every refusal so the user sees what to write instead. */
export const DURATION_FORMS = 'use e.g. 500ms, 2s, 5m, 1h, 1m30s, or a number of milliseconds';

const UNIT_MS = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1_000, ms: 1 } as const;
type Unit = keyof typeof UNIT_MS;
/** Largest first: the order a compound must follow. */
const UNITS: readonly Unit[] = ['d', 'h', 'm', 's', 'ms'];

export type DurationResult = { ok: true; ms: number } | { ok: false; message: string };

const refuse = (input: unknown, why = 'is not a duration'): DurationResult => ({ ok: false, message: `${show(input)} ${why} (${DURATION_FORMS})` });

function fromMs(input: unknown, ms: number): DurationResult {
  if (!Number.isFinite(ms)) return refuse(input);
  if (ms < 0) return refuse(input, 'is negative: not a duration');
  const whole = Math.round(ms);
  if (whole > MAX_DURATION_MS) return { ok: false, message: `${show(input)} is too long: a duration can be at most ${formatDuration(MAX_DURATION_MS)}` };
  return { ok: true, ms: whole };
}

const PLAIN = /^[+]?(?:\d+(?:\.\d*)?|\.\d+)$/;
const PART = /(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h|d)(?![a-z])/iy;

/** Parses without throwing: the milliseconds, or a message naming the value and the accepted forms. */
export function tryParseDuration(input: unknown): DurationResult {
  if (typeof input === 'number') return fromMs(input, input);
  if (typeof input !== 'string') return refuse(input);
  const text = input.trim();
  if (text === '') return refuse(input);
  if (text.startsWith('-')) return refuse(input, 'is negative: not a duration');
  if (PLAIN.test(text)) return fromMs(input, Number(text));

  let total = 0;
  let pos = 0;
  let lastRank = -1;
  while (pos < text.length) {
    while (pos < text.length && /\s/.test(text.charAt(pos))) pos += 1;
    if (pos >= text.length) break;
    PART.lastIndex = pos;
    const m = PART.exec(text);
    if (m === null) return refuse(input);
    const unit = (m[2] ?? '').toLowerCase() as Unit;
    const rank = UNITS.indexOf(unit);
    if (rank <= lastRank) return refuse(input, 'is not a duration: list each unit once, largest first');
    lastRank = rank;
    total += Number(m[1]) * UNIT_MS[unit];
    pos = PART.lastIndex;
  }
  return fromMs(input, total);
}

/**
 * The duration in milliseconds.
 * @param where prefixes the error message, e.g. `flag --pool-idle-timeout`.
 * @throws McpxError MCPX_BAD_SETTING naming the value and the accepted forms.
 */
export function parseDuration(input: unknown, where?: string): number {
  const r = tryParseDuration(input);
  if (!r.ok) throw new McpxError('MCPX_BAD_SETTING', where ? `${where}: ${r.message}` : r.message, { data: { value: show(input) } });
  return r.ms;
}

function compound(ms: number): string {
  let rest = ms;
  let out = '';
  for (const u of UNITS) {
    const n = Math.floor(rest / UNIT_MS[u]);
    if (n > 0) {
      out += `${n}${u}`;
      rest -= n * UNIT_MS[u];
    }
  }
  return out;
}

/**
 * The shortest text that parses back to `ms` (a whole, non-negative number of milliseconds):
 * 2000 → `2s`, 300000 → `5m`, 90000 → `90s`, 5400000 → `90m`, 3723000 → `1h2m3s`, 1500 → `1500ms`, 0 → `0ms`.
 * On a tie the single-unit form wins. Fractions are rounded to the millisecond.
 */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`formatDuration: ${ms} is not a non-negative finite number of milliseconds`);
  const whole = Math.round(ms);
  if (whole === 0) return '0ms';
  let best = compound(whole);
  for (const u of UNITS) {
    if (whole % UNIT_MS[u] === 0) {
      const single = `${whole / UNIT_MS[u]}${u}`;
      if (single.length <= best.length) best = single;
      break; // the largest unit that divides gives the shortest single-unit form
    }
  }
  return best;
}
