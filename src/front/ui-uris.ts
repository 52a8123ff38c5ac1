/**
 * MCP Apps' `ui://` URIs in aggregate mode. Two servers whose tools point at the same `ui://` URI would
 * show as one resource, and both tools would render the first server's app; so such a URI is made
 * distinct per server, the scheme kept exactly `ui` (hosts refuse to render anything else):
 * `ui://<authority>/<path>` becomes `ui://<server>+<authority>/<path>`. Only colliding URIs change; every
 * other URI stays byte-identical, so what an app reads by a URI it hard-codes keeps working.
 *
 * A URI collides when more than one configured server refers to it (a tool's `_meta.ui.resourceUri` or
 * the deprecated `_meta["ui/resourceUri"]`, a resources/list entry; templates likewise among templates).
 * Decided over every configured server, like names (../catalog/names.ts), so a `--servers` filter changes nothing.
 * A rewritten URI is never rewritten again: the map goes from upstream URIs to shown ones, and each
 * payload is rewritten once, on its way to the caller.
 */
import { UriTemplate } from '@modelcontextprotocol/server';
import { isObject } from '../is-object.js';
import type { CatalogItem, ServerCatalog } from '../catalog/view.js';
import { hashSuffix, sanitize } from '../catalog/names.js';

const UI = 'ui://';
/** The deprecated flat key hosts still read (ext-apps' RESOURCE_URI_META_KEY). */
const FLAT_KEY = 'ui/resourceUri';

const isUi = (uri: unknown): uri is string => typeof uri === 'string' && uri.startsWith(UI);

/** The `ui://` URIs a tool links to, from either key. */
function toolUris(tool: CatalogItem): string[] {
  const meta = tool['_meta'];
  if (!isObject(meta)) return [];
  const out: string[] = [];
  if (isObject(meta['ui']) && isUi(meta['ui']['resourceUri'])) out.push(meta['ui']['resourceUri']);
  if (isUi(meta[FLAT_KEY])) out.push(meta[FLAT_KEY]);
  return out;
}

interface Template {
  server: string;
  template: UriTemplate;
}

export class UiUris {
  /** Upstream URIs (and templates) more than one server refers to. */
  private readonly colliding = new Set<string>();
  private readonly collidingTemplates: Template[] = [];
  /** server → the prefix put in front of its colliding URIs' authority, and back. */
  private readonly prefixes = new Map<string, string>();
  private readonly servers = new Map<string, string>();
  /** A `ui://` URI exactly one server refers to (in tool `_meta`, often not in resources/list) → that server. */
  private readonly owners = new Map<string, string>();

  /** `servers` in config order, every configured one. No servers (passthrough): nothing is rewritten. */
  constructor(servers: readonly ServerCatalog[] = []) {
    const refs = new Map<string, Set<string>>();
    const templateRefs = new Map<string, Set<string>>();
    const note = (map: Map<string, Set<string>>, uri: string, server: string) => {
      let set = map.get(uri);
      if (!set) map.set(uri, (set = new Set()));
      set.add(server);
    };
    for (const s of servers) {
      for (const t of s.tools) for (const uri of toolUris(t)) note(refs, uri, s.server);
      for (const r of s.resources) if (isUi(r['uri'])) note(refs, r['uri'], s.server);
      for (const t of s.resourceTemplates) if (isUi(t['uriTemplate'])) note(templateRefs, t['uriTemplate'], s.server);
    }
    for (const [uri, owners] of refs) {
      if (owners.size > 1) this.colliding.add(uri);
      else this.owners.set(uri, [...owners][0]!);
    }
    for (const [uriTemplate, owners] of templateRefs) {
      if (owners.size < 2) continue;
      this.colliding.add(uriTemplate);
      for (const server of owners) {
        try {
          this.collidingTemplates.push({ server, template: new UriTemplate(uriTemplate) });
        } catch {
          // a template that does not parse matches nothing
        }
      }
    }
    // A prefix per server, unique even when two names sanitize alike.
    for (const s of servers) {
      let prefix = sanitize(s.server);
      if (this.servers.has(prefix)) prefix = `${prefix}${hashSuffix(s.server, '')}`;
      this.prefixes.set(s.server, prefix);
      this.servers.set(prefix, s.server);
    }
  }

  /** Whether anything is rewritten at all (most configurations: nothing collides). */
  get active(): boolean {
    return this.colliding.size > 0;
  }

  /** The URI (or template) the caller sees for `server`'s `uri`. */
  shown(server: string, uri: string): string {
    if (!isUi(uri) || !this.collides(server, uri)) return uri;
    return `${UI}${this.prefixes.get(server) ?? sanitize(server)}+${uri.slice(UI.length)}`;
  }

  private collides(server: string, uri: string): boolean {
    return this.colliding.has(uri) || this.collidingTemplates.some((t) => t.server === server && t.template.match(uri) !== null);
  }

  /**
   * Where a `ui://` URI a caller used goes: a rewritten one to its server under the upstream's URI, one
   * that only a tool's `_meta` names to that tool's server. Undefined: not mcpx's to route (the caller's
   * view routes it as any other URI).
   */
  route(uri: string): { server: string; uri: string } | undefined {
    if (!isUi(uri)) return undefined;
    const rest = uri.slice(UI.length);
    const plus = rest.indexOf('+');
    const end = rest.search(/[/?#]/);
    if (plus > 0 && (end === -1 || plus < end)) {
      const server = this.servers.get(rest.slice(0, plus));
      const original = `${UI}${rest.slice(plus + 1)}`;
      if (server !== undefined && this.collides(server, original)) return { server, uri: original };
    }
    const owner = this.owners.get(uri);
    return owner === undefined ? undefined : { server: owner, uri };
  }

  /** A tools/list entry with its `_meta` URIs (both keys) as the caller sees them. */
  tool(server: string, item: CatalogItem): CatalogItem {
    if (!this.active || !isObject(item['_meta'])) return item;
    const meta = this.meta(server, item['_meta']);
    return meta === item['_meta'] ? item : { ...item, _meta: meta };
  }

  /** A resources/list entry (`uri`) or templates/list entry (`uriTemplate`). */
  resource(server: string, item: CatalogItem): CatalogItem {
    if (!this.active) return item;
    const key = typeof item['uriTemplate'] === 'string' ? 'uriTemplate' : 'uri';
    const uri = item[key];
    if (typeof uri !== 'string') return item;
    const shown = this.shown(server, uri);
    return shown === uri ? item : { ...item, [key]: shown };
  }

  /**
   * A result from `server` (tools/call, resources/read, prompts/get) as the caller sees it: `_meta`, the
   * content's `resource_link` and embedded resources, a read's `contents`, a prompt's messages.
   */
  result(server: string, result: Record<string, unknown>): Record<string, unknown> {
    if (!this.active) return result;
    let out = result;
    const set = (key: string, value: unknown) => {
      if (value !== out[key]) out = { ...out, [key]: value };
    };
    if (isObject(result['_meta'])) set('_meta', this.meta(server, result['_meta']));
    if (Array.isArray(result['content']))
      set(
        'content',
        this.list(result['content'], (b) => this.block(server, b)),
      );
    if (Array.isArray(result['contents']))
      set(
        'contents',
        this.list(result['contents'], (c) => this.contents(server, c)),
      );
    if (Array.isArray(result['messages']))
      set(
        'messages',
        this.list(result['messages'], (m) => {
          if (!isObject(m) || !isObject(m['content'])) return m;
          const content = this.block(server, m['content']);
          return content === m['content'] ? m : { ...m, content };
        }),
      );
    return out;
  }

  private meta(server: string, meta: Record<string, unknown>): Record<string, unknown> {
    let out = meta;
    const ui = meta['ui'];
    if (isObject(ui) && isUi(ui['resourceUri'])) {
      const shown = this.shown(server, ui['resourceUri']);
      if (shown !== ui['resourceUri']) out = { ...out, ui: { ...ui, resourceUri: shown } };
    }
    if (isUi(meta[FLAT_KEY])) {
      const shown = this.shown(server, meta[FLAT_KEY]);
      if (shown !== meta[FLAT_KEY]) out = { ...out, [FLAT_KEY]: shown };
    }
    return out;
  }

  /** A content block: `resource_link` has `uri`, an embedded `resource` has `resource.uri`. */
  private block(server: string, block: unknown): unknown {
    if (!isObject(block)) return block;
    if (block['type'] === 'resource_link' && typeof block['uri'] === 'string') {
      const shown = this.shown(server, block['uri']);
      return shown === block['uri'] ? block : { ...block, uri: shown };
    }
    if (block['type'] === 'resource' && isObject(block['resource'])) {
      const resource = this.contents(server, block['resource']);
      return resource === block['resource'] ? block : { ...block, resource };
    }
    return block;
  }

  private contents(server: string, c: unknown): unknown {
    if (!isObject(c) || typeof c['uri'] !== 'string') return c;
    const shown = this.shown(server, c['uri']);
    return shown === c['uri'] ? c : { ...c, uri: shown };
  }

  private list(items: unknown[], fn: (x: unknown) => unknown): unknown[] {
    let changed = false;
    const out = items.map((x) => {
      const y = fn(x);
      if (y !== x) changed = true;
      return y;
    });
    return changed ? out : items;
  }
}
