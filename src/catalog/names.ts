/**
 * The names a caller sees in aggregate mode: `<server>__<tool>` (prompts likewise), within the
 * tool-name rules (`A-Z a-z 0-9 _ - .`, case-sensitive) and at most 64 characters — Claude Code and
 * others refuse longer names even though the spec allows 128.
 *
 * - A character outside the allowed set becomes `_`.
 * - A name that would be longer than 64 characters, or that another (server, name) pair already
 *   took, is cut and given a suffix `-` + 6 hex digits of SHA-256(server NUL name): short, and stable
 *   for the same pair whatever else is configured.
 * - Pairs are named in config order (servers as configured, items as the server listed them), so a
 *   server added later never renames what an earlier one already exposed.
 *
 * Pure functions: the daemon (`mcpx tools`, `/v1/tools`) and every front compute the same mapping
 * from the same catalogue.
 */
import { createHash } from 'node:crypto';
import { SEPARATOR } from './separator.js';

export { SEPARATOR };
export const MAX_NAME = 64;
const SUFFIX_LENGTH = 7; // '-' + 6 hex digits

/** One upstream item and the name a caller sees for it. */
export interface ExposedName {
  /** The name in aggregate mode. */
  name: string;
  server: string;
  /** The upstream's own name. */
  original: string;
  /** Why the name is not simply `<server>__<original>`, when it is not. */
  adjusted?: 'characters' | 'length' | 'collision';
}

const DISALLOWED = /[^A-Za-z0-9_.-]/g;

export function sanitize(part: string): string {
  return part.replace(DISALLOWED, '_');
}

export function hashSuffix(server: string, original: string): string {
  return `-${createHash('sha256').update(`${server}\0${original}`).digest('hex').slice(0, 6)}`;
}

/**
 * Names for `pairs` (in order). The result has one entry per pair, in the same order; names are
 * unique among themselves.
 */
export function exposeNames(pairs: ReadonlyArray<{ server: string; name: string }>): ExposedName[] {
  const taken = new Set<string>();
  const out: ExposedName[] = [];
  for (const { server, name } of pairs) {
    const plain = `${server}${SEPARATOR}${name}`;
    const clean = `${sanitize(server)}${SEPARATOR}${sanitize(name)}`;
    let exposed = clean;
    let adjusted: ExposedName['adjusted'] = clean === plain ? undefined : 'characters';
    if (exposed.length > MAX_NAME || taken.has(exposed)) {
      adjusted = exposed.length > MAX_NAME ? 'length' : 'collision';
      exposed = clean.slice(0, MAX_NAME - SUFFIX_LENGTH) + hashSuffix(server, name);
      // Two pairs whose hashes agree in 24 bits and whose prefixes agree too: extend until free.
      for (let n = 2; taken.has(exposed); n++) exposed = `${clean.slice(0, MAX_NAME - SUFFIX_LENGTH - String(n).length)}${hashSuffix(server, name)}${n}`;
    }
    taken.add(exposed);
    out.push({ name: exposed, server, original: name, ...(adjusted ? { adjusted } : {}) });
  }
  return out;
}

/** Looks up a name a caller used. */
export class NameTable {
  private readonly byName = new Map<string, ExposedName>();
  readonly entries: ExposedName[];

  constructor(entries: ExposedName[]) {
    this.entries = entries;
    for (const e of entries) this.byName.set(e.name, e);
  }

  static of(pairs: ReadonlyArray<{ server: string; name: string }>): NameTable {
    return new NameTable(exposeNames(pairs));
  }

  resolve(name: string): ExposedName | undefined {
    return this.byName.get(name);
  }

  nameOf(server: string, original: string): string | undefined {
    return this.entries.find((e) => e.server === server && e.original === original)?.name;
  }
}
