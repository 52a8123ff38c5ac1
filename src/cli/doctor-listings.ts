/**
 * `mcpx doctor`'s view of the persisted tool catalogue: for each configured server, the items it last
 * listed that mcpx does not serve (src/catalog/valid-listing.ts), read from `<state>/tool-catalog.json`
 * without a daemon and without starting anything.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeLeftOut } from '../catalog/left-out.js';
import { CATALOG_FILE, catalogKey } from '../catalog/catalog-store.js';
import { validListing } from '../catalog/valid-listing.js';
import { isObject } from '../is-object.js';
import type { ServerDefinition } from '../upstream/definition.js';

export function listingNotes(
  stateDir: string,
  servers: ReadonlyArray<{ name: string; definition: ServerDefinition; disabled?: boolean }>,
): Array<{ server: string; detail: string }> {
  let file: unknown;
  try {
    file = JSON.parse(readFileSync(join(stateDir, CATALOG_FILE), 'utf8'));
  } catch {
    return []; // no catalogue yet (or unreadable: the daemon says so when it loads it)
  }
  const records = isObject(file) && isObject(file['servers']) ? file['servers'] : {};
  const notes: Array<{ server: string; detail: string }> = [];
  for (const s of servers) {
    if (s.disabled) continue;
    const seen = new Set<string>();
    for (const lane of ['own', 'legacy'] as const) {
      const r = records[catalogKey(s.definition, lane)];
      if (!isObject(r)) continue;
      const lists = Object.fromEntries((['tools', 'prompts', 'resources', 'resourceTemplates'] as const).map((k) => [k, Array.isArray(r[k]) ? r[k] : []]));
      for (const l of validListing(lists).leftOut) seen.add(describeLeftOut(l));
    }
    if (seen.size > 0) notes.push({ server: s.name, detail: [...seen].join('; ') });
  }
  return notes;
}
