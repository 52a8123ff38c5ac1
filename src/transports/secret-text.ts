/**
 * Secret values in text an upstream wrote (stderr, a stray stdout line): which configured values count
 * as secrets, and cutting text short without ever leaving a piece of one behind.
 *
 * A cut is where a scrubber that looks for whole values goes blind: `…SECRET=sentin…` no longer
 * contains the value. So text is redacted first and cut after, and a cut that still ends in the start
 * of a secret (a value longer than what was kept) loses that start too.
 */

import { REDACTED } from '../redaction.js';

/** Shorter values are too likely to occur by chance to be blanked everywhere. */
export const MIN_SECRET_LENGTH = 6;
/** What marks a cut. */
export const CUT_MARK = '…';

/**
 * The values of the configured `env`, whatever their names (a `DATABASE_URL` or a `GH` holds a
 * credential as often as an `API_KEY`), longest first (so a value containing another goes whole).
 */
export function secretEnvValues(env: Readonly<Record<string, string>> | undefined): string[] {
  const out = new Set<string>();
  for (const v of Object.values(env ?? {})) if (v.length >= MIN_SECRET_LENGTH) out.add(v);
  return [...out].sort((a, b) => b.length - a.length);
}

/** Every whole occurrence of a secret replaced by `<redacted>`. `secrets` longest first. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (out.includes(s)) out = out.split(s).join(REDACTED);
  return out;
}

/**
 * The length of the longest tail of `text` that is the start of a secret (but not all of it), at least
 * `min` characters: what a cut right after `text` would leave of that secret.
 */
export function secretFragmentAtEnd(text: string, secrets: readonly string[], min = 1): number {
  let best = 0;
  for (const s of secrets) {
    for (let k = Math.min(s.length - 1, text.length); k >= Math.max(min, best + 1); k -= 1) {
      if (text.endsWith(s.slice(0, k))) {
        best = k;
        break;
      }
    }
  }
  return best;
}

/**
 * `text` redacted, then cut to `max` characters with the cut mark; a tail that starts a secret is
 * redacted too. Text within `max` after redaction comes back uncut.
 */
export function cutRedacted(text: string, max: number, secrets: readonly string[], forceMark = false): string {
  const clean = redactSecrets(text, secrets);
  if (clean.length <= max && !forceMark) return clean;
  let kept = clean.slice(0, max);
  const fragment = secretFragmentAtEnd(kept, secrets);
  if (fragment > 0) kept = `${kept.slice(0, kept.length - fragment)}${REDACTED}`;
  return `${kept}${CUT_MARK}`;
}
