/**
 * The catalogue as a caller sees it: what each configured server offers for the caller's lane, and the
 * changes callers hear of (list_changed). The MCP fronts name and route from it; `/v1/tools` shows it.
 */
import type { ChangedList } from '../call/call.js';
import type { Lane } from '../machines/preference.js';
import type { LeftOut } from './left-out.js';

export type CatalogItem = Record<string, unknown>;

/** What one server offers, for the lane the caller's era selects. */
export interface ServerCatalog {
  server: string;
  lane: Lane;
  /**
   * Where the listing came from: `live` (listed from a running instance in this daemon's lifetime),
   * `catalog` (the persisted catalogue, written by an earlier run: it may be stale), `none` (nothing
   * could be listed: see `error`).
   */
  source: 'live' | 'catalog' | 'none';
  /** When it was listed (ISO 8601). */
  at?: string;
  /** The tools served: what the server's `mcpx.tools` filter lets through, less those held (changed since first seen, under pinTools). */
  tools: CatalogItem[];
  /**
   * The server's own names of its served tools that its `mcpx.pin` pins: they stay in every listing,
   * whatever a front's tool strategy. Absent: none.
   */
  pinned?: readonly string[];
  prompts: CatalogItem[];
  resources: CatalogItem[];
  resourceTemplates: CatalogItem[];
  /** Items the server listed that no client SDK would take (src/catalog/valid-listing.ts): not served. */
  leftOut?: LeftOut[];
  error?: { code: string; message: string; data?: Record<string, unknown> };
  /** The extensions the server offers (its `capabilities.extensions`, SEP-2133), when it offers any. */
  extensions?: Record<string, unknown>;
  /** The server's own `instructions` (its initialize or discover result), when it gave any. */
  instructions?: string;
  /** The server's `serverInfo.title`, when it gave one. */
  title?: string;
}

export interface CatalogView {
  /** Every configured, enabled server, in config order (the order names are given in). */
  servers: ServerCatalog[];
}

export interface CatalogChange {
  /** The server whose listing changed; absent: the set of servers changed (a config reload). */
  server?: string;
  /** The config whose set of servers changed (absent with `server` absent: every config's may have). */
  config?: string;
  lists: ChangedList[];
}
