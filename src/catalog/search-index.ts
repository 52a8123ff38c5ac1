/**
 * The tool search index over the known catalogue: what `search_tools`, `describe_tools` and `call_tool`
 * (src/front/search-tools.ts), `GET /v1/tools/search` and `mcpx tools --search` read. It is built from the
 * listings the catalogue already has (nothing is started for it) when the catalogue changes — a listing
 * recorded that is new or differs, a change of the set of servers — and kept until the next change: never
 * per session or per request. One index per caller lane and entry scope (its servers, its tool globs),
 * since what a caller may find is filtered before ranking: a tool the entry denies, or one meant for an
 * MCP App alone, is never a result.
 */
import type { Caller } from '../call/call.js';
import { exposeNames } from './names.js';
import { appOnlyTool, globsKey, toolShown, type ToolGlobs } from './tool-filter.js';
import { buildToolIndex, type SearchableTool, type ServerAbout, type ToolHit, type ToolIndex } from './tool-search.js';
import type { CatalogChange, CatalogItem, CatalogView } from './view.js';

/** What an entry shows: one server under its own names, or some servers, less what its globs deny. */
export interface SearchScope {
  passthrough?: string;
  servers?: readonly string[];
  globs?: ToolGlobs;
}

export interface IndexedTool {
  server: string;
  /** The server's own name. */
  name: string;
  /** The name the entry's callers see. */
  exposed: string;
  item: CatalogItem;
}

/** One built index and the tools behind it. */
export interface ScopeIndex {
  readonly index: ToolIndex;
  /** Every tool a caller of the scope may find, describe and call, by the name it sees. */
  readonly tools: ReadonlyMap<string, IndexedTool>;
  /** Each shown server that has tools: its name, title and own instructions. */
  readonly servers: readonly ServerAbout[];
  /** The catalogue revision it was built from. */
  readonly revision: number;
  search(query: string, limit?: number): ToolHit[];
}

export interface ToolSearchDeps {
  /** The known catalogue for a caller's lane, scrubbed, starting nothing. */
  view(caller: Caller): Promise<CatalogView>;
  revision(): number;
  onChange(listener: (change: CatalogChange) => void): () => void;
}

/** Indexes kept at most (lanes × entry scopes in use). */
const MAX_KEPT = 32;

export class ToolSearch {
  private readonly kept = new Map<string, { caller: Caller; scope: SearchScope; built: Promise<ScopeIndex> }>();
  private readonly unsubscribe: () => void;
  /** Indexes built so far (a test and the bench read it: one per catalogue change, not per request). */
  builds = 0;

  constructor(private readonly deps: ToolSearchDeps) {
    // Built again as the catalogue changes, off any caller's request.
    this.unsubscribe = deps.onChange(() => setImmediate(() => this.rebuildKept()));
  }

  /** The index of a caller's lane and an entry's scope: the kept one while the catalogue is unchanged. */
  async scope(caller: Caller, scope: SearchScope = {}): Promise<ScopeIndex> {
    const key = `${caller.config ?? ''}\0${caller.callerProtocol ?? ''}\0${scope.passthrough ?? ''}\0${[...(scope.servers ?? [])].sort().join(',')}\0${globsKey(scope.globs)}`;
    const kept = this.kept.get(key);
    if (!kept) {
      if (this.kept.size >= MAX_KEPT) this.kept.delete(this.kept.keys().next().value!);
      return this.keep(key, caller, scope);
    }
    const built = await kept.built;
    if (built.revision === this.deps.revision()) return built;
    // A change whose rebuild has not run yet: built now, once, for everyone waiting.
    return this.kept.get(key) === kept ? this.keep(key, caller, scope) : this.kept.get(key)!.built;
  }

  close(): void {
    this.unsubscribe();
    this.kept.clear();
  }

  private rebuildKept(): void {
    for (const [key, k] of this.kept) void this.keep(key, k.caller, k.scope).catch(() => undefined);
  }

  /** Builds and keeps an index; one that fails is forgotten, so the next use builds again. */
  private keep(key: string, caller: Caller, scope: SearchScope): Promise<ScopeIndex> {
    const entry = { caller, scope, built: this.build(caller, scope) };
    this.kept.set(key, entry);
    entry.built.catch(() => this.kept.get(key) === entry && this.kept.delete(key));
    return entry.built;
  }

  private async build(caller: Caller, scope: SearchScope): Promise<ScopeIndex> {
    const revision = this.deps.revision();
    const view = await this.deps.view(caller);
    this.builds += 1;
    const shows = (server: string) =>
      scope.passthrough !== undefined ? server === scope.passthrough : scope.servers === undefined || scope.servers.includes(server);
    // Names are given over every configured server, exactly as the fronts give them.
    const pairs = view.servers.flatMap((s) =>
      s.tools.filter((t) => typeof t['name'] === 'string').map((t) => ({ server: s.server, name: t['name'] as string, item: t })),
    );
    const named = exposeNames(pairs);
    const tools = new Map<string, IndexedTool>();
    const searchable: SearchableTool[] = [];
    pairs.forEach((p, i) => {
      if (!shows(p.server)) return;
      const exposed = scope.passthrough !== undefined ? p.name : named[i]!.name;
      if (!toolShown(scope.globs, exposed) || appOnlyTool(p.item)) return;
      tools.set(exposed, { server: p.server, name: p.name, exposed, item: p.item });
      searchable.push(searchableOf(p.server, p.name, exposed, p.item));
    });
    const servers: ServerAbout[] = view.servers
      .filter((s) => shows(s.server) && s.tools.length > 0)
      .map((s) => ({ server: s.server, ...(s.title ? { title: s.title } : {}), ...(s.instructions ? { instructions: s.instructions } : {}) }));
    const index = buildToolIndex(searchable, servers);
    return { index, tools, servers, revision, search: (query, limit) => index.search(query, limit) };
  }
}

function searchableOf(server: string, name: string, exposed: string, item: CatalogItem): SearchableTool {
  const str = (k: string) => (typeof item[k] === 'string' ? { [k]: item[k] as string } : {});
  const obj = (k: string) => (item[k] !== null && typeof item[k] === 'object' && !Array.isArray(item[k]) ? { [k]: item[k] as Record<string, unknown> } : {});
  return { server, name, exposed, ...str('title'), ...str('description'), ...obj('inputSchema'), ...obj('annotations') };
}
