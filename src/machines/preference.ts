/**
 * `upstream.protocol` and a server's own `protocol` key (docs/behaviour.md §1).
 *
 * Values are named for the first request mcpx sends. Every reader (config file, env, CLI flag, the
 * settings API, a server's `protocol` key) goes through `canonicalPreference` / `parsePreference`, so
 * the aliases are accepted everywhere and only canonical names travel further. No zod here: the CLI
 * reads preferences (in the config file and the settings) without loading it.
 */
import { ProtocolValueError } from '../errors.js';
import { eraOfRevision } from './versions.js';

export const CANONICAL_PREFERENCES = ['prefer-discover', 'prefer-initialize', 'force-discover', 'force-initialize', 'follow'] as const;

export type Preference = (typeof CANONICAL_PREFERENCES)[number];

/** What one session runs under: the pool resolves `follow` into prefer-discover (own lane) or force-initialize (legacy lane). */
export type SessionPreference = Exclude<Preference, 'follow'>;

export const DEFAULT_PREFERENCE: Preference = 'prefer-discover';

/** Older names, lower case, and the canonical value each stands for (docs/behaviour.md §1 table). */
export const PREFERENCE_ALIASES: Readonly<Record<string, Preference>> = Object.freeze({
  modern: 'prefer-discover',
  'prefer-modern': 'prefer-discover',
  'prefer-stateless': 'prefer-discover',
  'prefer-newest': 'prefer-discover',
  legacy: 'prefer-initialize',
  'prefer-legacy': 'prefer-initialize',
  'prefer-session': 'prefer-initialize',
  'prefer-oldest': 'prefer-initialize',
  'force-modern': 'force-discover',
  'force-stateless': 'force-discover',
  'force-legacy': 'force-initialize',
  'force-session': 'force-initialize',
});

export function isPreference(value: unknown): value is Preference {
  return typeof value === 'string' && (CANONICAL_PREFERENCES as readonly string[]).includes(value);
}

/** The canonical name for `value`, or undefined. Case-insensitive; surrounding white space ignored. */
export function canonicalPreference(value: unknown): Preference | undefined {
  if (typeof value !== 'string') return undefined;
  const v = value.trim().toLowerCase();
  if (isPreference(v)) return v;
  return Object.hasOwn(PREFERENCE_ALIASES, v) ? PREFERENCE_ALIASES[v] : undefined;
}

/** JSON.stringify throws on bigint and cycles; the error message must still be built. */
function printable(value: unknown): unknown {
  try {
    JSON.stringify(value);
    return value;
  } catch {
    return typeof value === 'bigint' ? `${value}n` : String(value);
  }
}

/**
 * Normalises a protocol preference to its canonical name.
 * @param where prefixes the error message, e.g. `config.json: mcpServers.x.protocol`.
 * @throws ProtocolValueError (MCPX_BAD_PROTOCOL_VALUE) listing the canonical values.
 */
export function parsePreference(value: unknown, where?: string): Preference {
  const found = canonicalPreference(value);
  if (found === undefined) throw new ProtocolValueError(printable(value), CANONICAL_PREFERENCES, where);
  return found;
}

/** The two session lanes of `follow` (docs/behaviour.md §6): the server's own session, and the legacy-only one. */
export type Lane = 'own' | 'legacy';

/**
 * What a session on `lane` runs under. `follow` is prefer-discover for the server's own session and
 * force-initialize for the legacy lane; every other value has a single lane, so both lanes get the value itself.
 */
export function laneSessionPreference(p: Preference, lane: Lane): SessionPreference {
  if (p !== 'follow') return p;
  return lane === 'legacy' ? 'force-initialize' : 'prefer-discover';
}

/**
 * The lane a caller's own protocol revision asks for (docs/behaviour.md §6): under `follow`, a caller that
 * speaks a revision before 2026-07-28 gets the legacy lane; everyone else, and every other value, the own lane.
 * A caller that names no revision (the CLI, /v1 without the header) gets the own lane.
 */
export function callerLane(p: Preference, callerProtocol: string | undefined): Lane {
  if (p !== 'follow') return 'own';
  const rev = callerProtocol?.trim();
  return rev && eraOfRevision(rev) === 'legacy' ? 'legacy' : 'own';
}

/** force-* values never probe, never fall back, and never read or write the era cache (the machines apply this). */
export function isForced(p: Preference): p is 'force-discover' | 'force-initialize' {
  return p === 'force-discover' || p === 'force-initialize';
}

/** The message refusing `input` as a preference (it lists the canonical values). */
export function preferenceRefusal(input: unknown): string {
  return new ProtocolValueError(printable(input), CANONICAL_PREFERENCES).message;
}
