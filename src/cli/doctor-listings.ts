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
import { unmatchedGlobs, type ToolPolicy } from '../catalog/tool-policy.js';

/** The catalogue's records by key; none when there is no catalogue yet (or it is unreadable: the daemon says so when it loads it). */
function catalogRecords(stateDir: string): Record<string, unknown> {
  let file: unknown;
  try {
    file = JSON.parse(readFileSync(join(stateDir, CATALOG_FILE), 'utf8'));
  } catch {
    return {};
  }
  return isObject(file) && isObject(file['servers']) ? file['servers'] : {};
}

/**
 * The globs of a server's `mcpx.tools` and `mcpx.pin` that match none of the tools it last listed (a typo,
 * or a tool it no longer has): a warning, from the catalogue, for servers that were listed.
 */
export function toolGlobNotes(
  stateDir: string,
  servers: ReadonlyArray<{ name: string; definition: ServerDefinition; disabled?: boolean; tools?: ToolPolicy['tools']; pin?: ToolPolicy['pin'] }>,
): Array<{ server: string; detail: string }> {
  const records = catalogRecords(stateDir);
  const notes: Array<{ server: string; detail: string }> = [];
  for (const s of servers) {
    if (s.disabled || (s.tools === undefined && (s.pin === undefined || s.pin === true))) continue;
    const names = new Set<string>();
    let listed = false;
    for (const lane of ['own', 'legacy'] as const) {
      const r = records[catalogKey(s.definition, lane)];
      if (!isObject(r) || !Array.isArray(r['tools'])) continue;
      listed = true;
      for (const t of r['tools']) if (isObject(t) && typeof t['name'] === 'string') names.add(t['name']);
    }
    if (!listed) continue;
    const policy: ToolPolicy = { ...(s.tools ? { tools: s.tools } : {}), ...(s.pin === undefined ? {} : { pin: s.pin }) };
    const none = unmatchedGlobs(policy, [...names]);
    if (none.length > 0)
      notes.push({
        server: s.name,
        detail: `${none.map((n) => `mcpx.${n.key} ${JSON.stringify(n.glob)}`).join(', ')} ${none.length === 1 ? 'matches' : 'match'} none of the ${names.size} tool(s) it last listed`,
      });
  }
  return notes;
}

export function listingNotes(
  stateDir: string,
  servers: ReadonlyArray<{ name: string; definition: ServerDefinition; disabled?: boolean }>,
): Array<{ server: string; detail: string }> {
  const records = catalogRecords(stateDir);
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
