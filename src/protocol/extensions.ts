/**
 * MCP extensions (SEP-2133: `capabilities.extensions`, `{id: settings}`) mcpx takes part in. Today one:
 * MCP Apps (`io.modelcontextprotocol/ui`), interactive HTML a host renders from a tool's `ui://` resource.
 */

export const UI_EXTENSION = 'io.modelcontextprotocol/ui';
/** The MIME type of an MCP App's HTML resource (ext-apps' RESOURCE_MIME_TYPE). */
export const UI_MIME_TYPE = 'text/html;profile=mcp-app';

/**
 * What mcpx declares to its upstreams, as a client: MCP Apps, whose resources it relays to hosts that
 * render them. A legacy session is shared by callers that did and did not declare it, and a server may
 * register its UI tools only for clients that declare it; so mcpx always declares it, and keeps app-only
 * tools from callers that did not (src/front/extensions.ts).
 */
export const UPSTREAM_EXTENSIONS: Readonly<Record<string, Record<string, unknown>>> = Object.freeze({
  [UI_EXTENSION]: { mimeTypes: [UI_MIME_TYPE] },
});

/** `caps` with mcpx's extensions added (the caps' own settings for an id win). */
export function withUpstreamExtensions<T extends object>(caps: T | undefined): T & { extensions: Record<string, Record<string, unknown>> } {
  const own = (caps as { extensions?: unknown } | undefined)?.extensions;
  const extensions = { ...UPSTREAM_EXTENSIONS, ...(typeof own === 'object' && own !== null ? (own as Record<string, Record<string, unknown>>) : {}) };
  return { ...(caps ?? ({} as T)), extensions };
}
