/**
 * The tool catalog: what each upstream offered when last listed, per process definition and lane,
 * kept in memory and in `<stateDir>/tool-catalog.json`:
 *
 *   {"version":1,"servers":{"<sha256>:own":{"at":"…","era":"modern","tools":[…],"prompts":[…],…}}}
 *
 * The listed items are kept exactly as the upstream sent them: only their identifying field is
 * checked (`name` for tools and prompts, `uri` for resources, `uriTemplate` for templates), and
 * nothing inside them (JSON Schemas in `inputSchema`/`outputSchema` included) is stripped or reordered.
 *
 * Durability is the era cache's: reading never fails, bad records are dropped, and each write is a
 * locked re-read, merge and atomic 0600 rename shared safely by every process on the state folder
 * (src/state/locked-json-file.ts).
 */
import stringify from 'safe-stable-stringify';
import type { Lane } from '../machines/preference.js';
import { catalogRecordOf } from '../state/record-checks.js';
import type { CatalogItem, CatalogRecord } from '../state/records.js';
import { LockedJsonFile, type StateFileFormat, type StateFileLogger, type StateFileOptions } from '../state/locked-json-file.js';
import { eraCacheKey, type ProcessDefinitionInput } from '../upstream/process-key.js';

export const CATALOG_FILE = 'tool-catalog.json';
export const CATALOG_VERSION = 1;

export type { CatalogItem, CatalogRecord };

/** The store's key for a server definition's listing on one lane: `<eraCacheKey>:<lane>`. */
export function catalogKey<T extends ProcessDefinitionInput>(definition: T, lane: Lane): string {
  return `${eraCacheKey(definition)}:${lane}`;
}

/**
 * Whether two records list the same tools, prompts, resources and templates (key order inside an
 * item does not matter; item order does). `at`, `era`, capabilities, serverInfo and instructions are
 * not compared, and an absent list equals an empty one: both offer nothing.
 */
export function sameListing(a: CatalogRecord, b: CatalogRecord): boolean {
  const listing = (r: CatalogRecord): string | undefined => stringify([r.tools, r.prompts ?? [], r.resources ?? [], r.resourceTemplates ?? []]);
  return listing(a) === listing(b);
}

/** The part of a pino logger the store uses (src/log.ts's Logger fits). */
export type CatalogStoreLogger = StateFileLogger;

/**
 * `enabled`: when false nothing is read or written and `get` always answers undefined. A write waits
 * up to `lockTimeoutMs` (3000) for the lock before failing with MCPX_CACHE_IO; a lock older than
 * `staleLockMs` (10000) is left over from a crashed writer and removed.
 */
export type CatalogStoreOptions = StateFileOptions & {
  /** The daemon's secret scrubber: a listing can quote an upstream's configured secrets (a tool description naming its env). */
  scrub?: (text: string) => string;
};

const FORMAT: StateFileFormat<CatalogRecord> = {
  fileName: CATALOG_FILE,
  version: CATALOG_VERSION,
  check: catalogRecordOf,
  label: 'tool catalog',
  recordLabel: 'catalog record',
};

/**
 * Reads like EraCache: `open`, then `get`, `entries`, `set` (settles once on disk; TypeError for an
 * invalid record, CacheIoError MCPX_CACHE_IO when the file cannot be written, the record staying in
 * memory for the next write), `delete`, `whenIdle`, `file`, `enabled`. Records handed out are frozen.
 */
export class CatalogStore extends LockedJsonFile<CatalogRecord> {
  private readonly scrub: ((text: string) => string) | undefined;

  private constructor(stateDir: string, opts: CatalogStoreOptions) {
    super(stateDir, FORMAT, opts);
    this.scrub = opts.scrub;
  }

  /** Stores the listing with known secrets blanked: the file outlives the config that made them secrets. */
  override async set(key: string, record: CatalogRecord): Promise<void> {
    if (this.scrub === undefined) return super.set(key, record);
    const json = JSON.stringify(record);
    const clean = this.scrub(json);
    return super.set(key, clean === json ? record : (JSON.parse(clean) as CatalogRecord));
  }

  /** Loads `<stateDir>/tool-catalog.json`. Never throws for what the file contains (or for failing to read it). */
  static async open(stateDir: string, opts: CatalogStoreOptions = {}): Promise<CatalogStore> {
    const store = new CatalogStore(stateDir, opts);
    await store.load();
    return store;
  }
}
