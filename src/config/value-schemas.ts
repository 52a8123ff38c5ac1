/**
 * The zod forms of the value types the settings and the config file read: a duration, a protocol
 * preference, and any setting's value (its codec). Each accepts and refuses exactly what its zod-free
 * parser does (./duration.ts, src/machines/preference.ts, the codecs in ./settings.ts), with the same
 * message, for a boundary that is validated with zod.
 *
 * Apart from those parsers on purpose: zod takes about as long to load as node itself, and the CLI
 * (`mcpx call` resolving the daemon's socket, `mcpx config`) reads settings without it.
 */
import { homedir } from 'node:os';
import { z } from 'zod';
import { CANONICAL_PREFERENCES, canonicalPreference, preferenceRefusal, type Preference } from '../machines/preference.js';
import { tryParseDuration } from './duration.js';
import type { Codec, SettingDef, SettingPath, SettingValues } from './settings.js';

/** A string or number in, milliseconds out; refusals carry the message of `tryParseDuration`. */
export const durationSchema = z
  .union([z.string(), z.number()], { error: (issue) => (tryParseDuration(issue.input) as { message: string }).message })
  .transform((value, ctx): number => {
    const r = tryParseDuration(value);
    if (!r.ok) {
      ctx.addIssue({ code: 'custom', message: r.message, input: value });
      return z.NEVER;
    }
    return r.ms;
  });

/**
 * The same rules as `parsePreference` for zod boundaries: accepts any alias, outputs the canonical name,
 * and refuses everything else (non-strings included) with one issue whose message lists the canonical values.
 */
export const preferenceSchema = z
  .string({ error: (issue) => preferenceRefusal(issue.input) })
  .transform((value, ctx): Preference => {
    const found = canonicalPreference(value);
    if (found === undefined) {
      ctx.addIssue({ code: 'custom', message: preferenceRefusal(value), input: value, params: { allowed: [...CANONICAL_PREFERENCES] } });
      return z.NEVER;
    }
    return found;
  });

function codecSchema<T>(codec: Codec<T>): z.ZodType<T, unknown> {
  return z.unknown().transform((value, ctx): T => {
    const r = codec.parse(value, { text: false, baseDir: process.cwd(), home: homedir() });
    if (!r.ok) {
      ctx.addIssue({ code: 'custom', message: r.message, input: value, ...(codec.allowed ? { params: { allowed: [...codec.allowed] } } : {}) });
      return z.NEVER;
    }
    return r.value;
  });
}

const bySetting = new WeakMap<SettingDef, z.ZodType>();

/**
 * The zod schema of one setting's typed value (config file, API body): `upstream.protocol` is
 * `preferenceSchema`; relative paths resolve against the working directory. Built once per setting.
 */
export function settingSchema<P extends SettingPath>(def: SettingDef<P, unknown>): z.ZodType<SettingValues[P], unknown> {
  let s = bySetting.get(def);
  if (!s) {
    s = def.codec.type === 'protocol' ? preferenceSchema : codecSchema(def.codec);
    bySetting.set(def, s);
  }
  return s as z.ZodType<SettingValues[P], unknown>;
}
