/**
 * MCP extensions (SEP-2133) between mcpx and its callers.
 *
 * - mcpx declares to a caller each extension that caller declared and that mcpx can carry: MCP Apps
 *   (`io.modelcontextprotocol/ui`, which mcpx relays for every server), and any extension one of its
 *   servers offers (the first server in config order to offer it gives the settings). A legacy caller sees
 *   them in its `initialize` result, a 2026-07-28 caller in `server/discover`, each from what that request
 *   declared. Upstream servers' offers come from the catalogue as known: nothing is started to answer.
 * - App-only tools (`_meta.ui.visibility` without `"model"`) are callable only by the app of a host that
 *   renders MCP Apps; mcpx declares the UI extension to every upstream (src/protocol/extensions.ts), so a
 *   caller that did not declare it would otherwise see them as tools for its model. Its tools/list leaves
 *   them out; calling one by name still works.
 */
import { CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY, type Server, type ServerContext } from '@modelcontextprotocol/server';
import { isObject } from '../is-object.js';
import { UI_EXTENSION, UI_MIME_TYPE } from '../protocol/extensions.js';
import type { CatalogItem, ServerCatalog } from '../catalog/view.js';

type Extensions = Record<string, Record<string, unknown>>;

function extensionsOf(caps: unknown): Extensions {
  const ext = isObject(caps) ? caps['extensions'] : undefined;
  if (!isObject(ext)) return {};
  return Object.fromEntries(Object.entries(ext).filter((e): e is [string, Record<string, unknown>] => isObject(e[1])));
}

/** The extensions a request's caller declared: the request's own `_meta` (2026-07-28), else its `initialize`. */
export function callerExtensions(server: Server, ctx: ServerContext): Extensions {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  return extensionsOf(envelope?.[CLIENT_CAPABILITIES_META_KEY] ?? server.getClientCapabilities());
}

/** Whether the caller renders MCP Apps: it declared the UI extension (with the apps' MIME type, when it lists any). */
export function rendersApps(declared: Extensions): boolean {
  const ui = declared[UI_EXTENSION];
  if (!ui) return false;
  const types = ui['mimeTypes'];
  return !Array.isArray(types) || types.includes(UI_MIME_TYPE);
}

/** A tool only an app may call: its `_meta.ui.visibility` lists no `"model"`. */
export function appOnly(tool: CatalogItem): boolean {
  const meta = tool['_meta'];
  const visibility = isObject(meta) && isObject(meta['ui']) ? meta['ui']['visibility'] : undefined;
  return Array.isArray(visibility) && !visibility.includes('model');
}

/** What mcpx declares to a caller that declared `declared`, given its servers' offers. */
export function offeredTo(declared: Extensions, servers: readonly ServerCatalog[]): Extensions {
  const offered: Extensions = {};
  for (const s of servers) for (const [id, settings] of Object.entries(extensionsOf({ extensions: s.extensions }))) offered[id] ??= settings;
  offered[UI_EXTENSION] ??= {};
  return Object.fromEntries(Object.entries(offered).filter(([id]) => id in declared));
}

/**
 * Makes a front instance declare extensions: its `initialize` result (legacy callers) and its
 * `server/discover` result (2026-07-28 callers; the serving entry installs that handler after the
 * instance is built, so it is wrapped as it is set). `known` gives the servers this caller sees.
 */
export function declareExtensions(server: Server, known: (callerProtocol: string | undefined) => Promise<readonly ServerCatalog[]>): void {
  const withOffer = async (result: Record<string, unknown>, declared: Extensions, callerProtocol: string | undefined) => {
    if (Object.keys(declared).length === 0) return result;
    // What the catalogue knows; should it fail, the handshake still goes on with mcpx's own offer.
    const servers = await known(callerProtocol).catch(() => []);
    const extensions = offeredTo(declared, servers);
    if (Object.keys(extensions).length === 0) return result;
    const caps = isObject(result['capabilities']) ? result['capabilities'] : {};
    return { ...result, capabilities: { ...caps, extensions: { ...extensionsOf(caps), ...extensions } } };
  };
  type Handler = (req: { params?: Record<string, unknown> }, ctx: ServerContext) => unknown;
  const set = server.setRequestHandler.bind(server) as unknown as (method: string, handler: Handler) => void;
  // The SDK's own initialize answer (negotiation, capabilities), with the extensions added.
  const initialize = (server as unknown as { _oninitialize(req: unknown): Promise<Record<string, unknown>> })._oninitialize.bind(server);
  set('initialize', async (req) => {
    const params = req.params ?? {};
    const version = typeof params['protocolVersion'] === 'string' ? params['protocolVersion'] : undefined;
    return withOffer(await initialize(req), extensionsOf(params['capabilities']), version);
  });
  (server as unknown as { setRequestHandler: (method: string, handler: Handler) => void }).setRequestHandler = (method, handler) => {
    if (method !== 'server/discover') return set(method, handler);
    set(method, async (req, ctx) => {
      const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
      const version = envelope?.[PROTOCOL_VERSION_META_KEY];
      const declared = extensionsOf(envelope?.[CLIENT_CAPABILITIES_META_KEY]);
      return withOffer((await handler(req, ctx)) as Record<string, unknown>, declared, typeof version === 'string' ? version : undefined);
    });
  };
}
