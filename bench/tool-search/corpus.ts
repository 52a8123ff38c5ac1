/**
 * The captured listings (bench/tool-search/listings) and the labelled queries (queries.json), read for
 * the tool-search bench: as the catalogue would hold them, each tool under `<server>__<tool>`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SearchableTool, ServerAbout } from '../../src/catalog/tool-search.js';
import { ROOT } from '../lib/knobs.js';

export const FOLDER = join(ROOT, 'bench', 'tool-search');

export interface Listing {
  server: string;
  package: string;
  version: string;
  serverInfo?: { name?: string; title?: string; version?: string };
  instructions?: string;
  tools: Array<{ name: string; title?: string; description?: string; inputSchema?: Record<string, unknown>; annotations?: Record<string, unknown> }>;
}

export interface LabelledQuery {
  id: string;
  query: string;
  kind: 'exact' | 'paraphrase' | 'task' | 'server' | 'ambiguous';
  relevant: string[];
  split: 'tune' | 'held';
}

export function loadListings(): Listing[] {
  const dir = join(FOLDER, 'listings');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as Listing);
}

export function loadQueries(): LabelledQuery[] {
  return (JSON.parse(readFileSync(join(FOLDER, 'queries.json'), 'utf8')) as { queries: LabelledQuery[] }).queries;
}

/** The listings as the catalogue holds them; `copy` > 0 renames every server `<server>-<copy>`. */
export function corpusOf(listings: readonly Listing[], copy = 0): { tools: SearchableTool[]; servers: ServerAbout[] } {
  const tools: SearchableTool[] = [];
  const servers: ServerAbout[] = [];
  for (const l of listings) {
    const server = copy > 0 ? `${l.server}-${copy}` : l.server;
    servers.push({ server, ...(l.serverInfo?.title ? { title: l.serverInfo.title } : {}), ...(l.instructions ? { instructions: l.instructions } : {}) });
    for (const t of l.tools) tools.push({ ...t, server, exposed: `${server}__${t.name}` });
  }
  return { tools, servers };
}

/** `size` tools: the captured ones, then copies under new server names, cut at `size`. */
export function corpusOfSize(listings: readonly Listing[], size: number): { tools: SearchableTool[]; servers: ServerAbout[] } {
  const tools: SearchableTool[] = [];
  const servers: ServerAbout[] = [];
  for (let copy = 0; tools.length < size; copy++) {
    const c = corpusOf(listings, copy);
    tools.push(...c.tools);
    servers.push(...c.servers);
  }
  return { tools: tools.slice(0, size), servers };
}
