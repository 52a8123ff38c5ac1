/**
 * What one caller of the front sees: the catalogue's tools and prompts under the names shown
 * (`<server>__<name>` in aggregate mode, ../catalog/names.ts; a server's own names in passthrough mode), resources
 * and templates by their URIs, and which server serves each; kept per caller lane between requests.
 */
import { UriTemplate } from '@modelcontextprotocol/server';
import type { Caller, ProgressListener } from '../call/call.js';
import type { CatalogItem, CatalogView, ServerCatalog } from '../catalog/view.js';
import type { Controller } from '../core/controller.js';
import { resolveBare } from './bare-names.js';
import { NameTable, sanitize, SEPARATOR } from '../catalog/names.js';
import { toolShown, type ToolGlobs } from '../catalog/tool-filter.js';
import { UiUris } from './ui-uris.js';

/** What one caller sees, computed from a catalogue view. */
export class FrontView {
  readonly tools: NameTable;
  readonly prompts: NameTable;
  private readonly toolItems = new Map<string, CatalogItem>();
  private readonly promptItems = new Map<string, CatalogItem>();
  readonly resources: Array<{ server: string; item: CatalogItem }> = [];
  readonly templates: Array<{ server: string; item: CatalogItem; template: UriTemplate | undefined }> = [];
  readonly errors: Array<{ server: string; code: string; message: string }> = [];
  /** Every server was listed (no failure, nothing left unlisted): the view may be reused until the catalogue changes. */
  readonly complete: boolean;
  /** Colliding `ui://` URIs made distinct (aggregate mode; passthrough shows one server, nothing collides). */
  readonly ui: UiUris;
  /** The names callers see of the tools their servers pin (`mcpx.pin`): listed under every tool strategy. */
  readonly pinned = new Set<string>();

  constructor(
    view: CatalogView,
    readonly mode: { passthrough?: string; servers?: readonly string[]; globs?: ToolGlobs },
  ) {
    // Names are given over every configured server, so a `--servers` filter never renames anything.
    const all = view.servers;
    const pairs = (pick: (s: ServerCatalog) => CatalogItem[]) =>
      all.flatMap((s) =>
        pick(s)
          .filter((i) => typeof i['name'] === 'string')
          .map((i) => ({ server: s.server, name: i['name'] as string, item: i })),
      );
    this.complete = all.every((s) => s.error === undefined && s.source !== 'none');
    const toolPairs = pairs((s) => s.tools);
    const promptPairs = pairs((s) => s.prompts);
    this.tools = NameTable.of(toolPairs);
    this.prompts = NameTable.of(promptPairs);
    toolPairs.forEach((p, i) => this.toolItems.set(this.tools.entries[i]!.name, p.item));
    for (const s of all) {
      for (const original of s.pinned ?? []) {
        const e = this.tools.entries.find((x) => x.server === s.server && x.original === original);
        if (e) this.pinned.add(mode.passthrough === undefined ? e.name : e.original);
      }
    }
    promptPairs.forEach((p, i) => this.promptItems.set(this.prompts.entries[i]!.name, p.item));
    this.ui = mode.passthrough === undefined ? new UiUris(all) : new UiUris();
    const seen = new Set<string>();
    for (const s of all.filter((x) => this.shows(x.server))) {
      if (s.error) this.errors.push({ server: s.server, ...s.error });
      for (const listed of s.resources) {
        const r = this.ui.resource(s.server, listed);
        const uri = r['uri'];
        if (typeof uri !== 'string' || seen.has(uri)) continue; // the first server to list a URI serves it
        seen.add(uri);
        this.resources.push({ server: s.server, item: r });
      }
      for (const t of s.resourceTemplates) {
        const uriTemplate = t['uriTemplate'];
        if (typeof uriTemplate !== 'string') continue;
        let template: UriTemplate | undefined;
        try {
          template = new UriTemplate(uriTemplate);
        } catch {
          template = undefined;
        }
        this.templates.push({ server: s.server, item: this.ui.resource(s.server, t), template });
      }
    }
  }

  shows(server: string): boolean {
    if (this.mode.passthrough !== undefined) return server === this.mode.passthrough;
    return this.mode.servers === undefined || this.mode.servers.includes(server);
  }

  /** Whether the entry's tool globs show the tool its callers know by this name. */
  toolShown(name: string): boolean {
    return toolShown(this.mode.globs, name);
  }

  listTools(): CatalogItem[] {
    if (this.mode.passthrough !== undefined) return this.passthroughItems('tools').filter((t) => this.toolShown(t['name'] as string));
    return this.tools.entries
      .filter((e) => this.shows(e.server) && this.toolShown(e.name))
      .map((e) => ({ ...this.ui.tool(e.server, this.toolItems.get(e.name)!), name: e.name }));
  }

  listPrompts(): CatalogItem[] {
    if (this.mode.passthrough !== undefined) return this.passthroughItems('prompts');
    return this.prompts.entries.filter((e) => this.shows(e.server)).map((e) => ({ ...this.promptItems.get(e.name), name: e.name }));
  }

  private passthroughItems(kind: 'tools' | 'prompts'): CatalogItem[] {
    const table = kind === 'tools' ? this.tools : this.prompts;
    const items = kind === 'tools' ? this.toolItems : this.promptItems;
    return table.entries.filter((e) => e.server === this.mode.passthrough).map((e) => items.get(e.name)!);
  }

  /** The server and upstream name behind a tool (or prompt) name a caller used. */
  resolve(kind: 'tools' | 'prompts', name: string): { server: string; original: string; item: CatalogItem } | undefined {
    const table = kind === 'tools' ? this.tools : this.prompts;
    const items = kind === 'tools' ? this.toolItems : this.promptItems;
    if (kind === 'tools' && !this.toolShown(name)) return undefined;
    if (this.mode.passthrough !== undefined) {
      const e = table.entries.find((x) => x.server === this.mode.passthrough && x.original === name);
      return e ? { server: e.server, original: e.original, item: items.get(e.name)! } : undefined;
    }
    const e = table.resolve(name);
    if (!e || !this.shows(e.server)) return undefined;
    return { server: e.server, original: e.original, item: items.get(e.name)! };
  }

  /**
   * A tool called by its server's own name (an MCP App's call, ./bare-names.ts), when no shown name
   * matched: the one server offering it; throws naming the candidates when several do.
   */
  resolveBare(name: string, invalidParams: number): { server: string; original: string; item: CatalogItem } | undefined {
    if (this.mode.passthrough !== undefined) return undefined;
    // A tool the entry hides is no candidate: never named, never called.
    const m = resolveBare(this.tools, name, (server, shown) => this.shows(server) && this.toolShown(shown), invalidParams);
    return m ? { server: m.server, original: m.original, item: this.toolItems.get(m.name)! } : undefined;
  }

  /**
   * A tool name of a server that could not be listed (it fails to start, say): the call goes to that
   * server anyway, so the caller learns why from the server's own failure rather than "unknown tool".
   */
  resolveUnlisted(name: string): { server: string; original: string } | undefined {
    for (const e of this.errors) {
      const prefix = this.mode.passthrough === e.server ? '' : `${sanitize(e.server)}${SEPARATOR}`;
      if (this.mode.passthrough !== undefined && this.mode.passthrough !== e.server) continue;
      if (name.startsWith(prefix) && name.length > prefix.length && this.toolShown(name)) return { server: e.server, original: name.slice(prefix.length) };
    }
    return undefined;
  }

  /** The server that serves a URI: the one that listed it, else the first whose template matches it. */
  serverForUri(uri: string): string | undefined {
    const listed = this.resources.find((r) => r.item['uri'] === uri);
    if (listed) return listed.server;
    const t = this.templates.find((x) => x.template?.match(uri));
    if (t) return t.server;
    return this.mode.passthrough;
  }

  /**
   * Where a resources/read goes: a `ui://` URI mcpx made distinct (or one only a tool's `_meta` names) to
   * its server under the upstream's URI; any other to the server that serves it (serverForUri).
   */
  routeUri(uri: string): { server: string; uri: string } | undefined {
    const ui = this.ui.route(uri);
    if (ui && this.shows(ui.server)) return ui;
    const server = this.serverForUri(uri);
    return server === undefined ? undefined : { server, uri };
  }

  serverForTemplate(uriTemplate: string): string | undefined {
    return this.templates.find((t) => t.item['uriTemplate'] === uriTemplate)?.server ?? this.mode.passthrough;
  }
}

/**
 * The caller's view of the catalogue, kept between requests: a `tools/call` resolves its name against
 * the view the last listing (or call) built, instead of fetching the catalogue and rebuilding the name
 * tables on every request. One view per caller lane (the caller's revision picks the lane, and the lane
 * the listing). A view is dropped when the catalogue announces a change, after `maxAgeMs`
 * (a bound in case an announcement is lost), and is never kept when a server failed to list; a name the
 * kept view does not know is looked up again in a fresh view before it is refused.
 */
export class ViewCache {
  private readonly views = new Map<string, { view: FrontView; at: number }>();
  private generation = 0;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly controller: Controller,
    private readonly mode: { passthrough?: string; servers?: readonly string[]; globs?: ToolGlobs; config?: string },
    private readonly maxAgeMs = 5_000,
  ) {
    this.unsubscribe = controller.onCatalogChange(mode.config, () => this.clear());
  }

  /** The kept view for this caller's lane, else a fresh one; `fresh` always fetches (and keeps the result). */
  async get(caller: Caller, fresh = false, onProgress?: ProgressListener): Promise<FrontView> {
    const key = caller.callerProtocol ?? '';
    const kept = this.views.get(key);
    if (!fresh && kept && Date.now() - kept.at < this.maxAgeMs) return kept.view;
    const generation = this.generation;
    const view = new FrontView(await this.controller.offer(caller, onProgress ? { onProgress } : {}), this.mode);
    // A change announced while this view was being fetched may have come after the catalogue was read.
    if (view.complete && generation === this.generation) this.views.set(key, { view, at: Date.now() });
    else this.views.delete(key);
    return view;
  }

  clear(): void {
    this.generation += 1;
    this.views.clear();
  }

  close(): void {
    this.unsubscribe();
    this.clear();
  }
}
