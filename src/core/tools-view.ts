/**
 * `/v1/tools`: the tool catalogue's listings, each tool with the name MCP clients see. Names are given over
 * every configured server's known listing, exactly as the fronts give them, so the mapping shown is the
 * one clients get.
 */
import type { CatalogView } from '../catalog/view.js';
import { McpxError } from '../errors.js';
import { exposeNames } from '../catalog/names.js';
import type { Tool } from '../upstream/session.js';
import type { ToolsView } from './views.js';

/**
 * Tools of one server, or of every server when `server` is undefined (servers with no listing yet are
 * started and listed; `fresh` lists the asked ones live now).
 * @throws McpxError MCPX_BAD_REQUEST (one server pooled per session, and no session).
 */
export async function toolsView(
  catalogView: (opts: { only?: readonly string[]; fresh?: boolean }) => Promise<CatalogView>,
  server: string | undefined,
  opts: { fresh?: boolean },
): Promise<ToolsView> {
  const view = await catalogView({ ...(server === undefined ? {} : { only: [server] }), ...(opts.fresh ? { fresh: true } : {}) });
  const named = exposeNames(
    view.servers.flatMap((s) => s.tools.filter((t) => typeof t['name'] === 'string').map((t) => ({ server: s.server, name: t['name'] as string }))),
  );
  const exposed = new Map(named.map((n) => [`${n.server}\0${n.original}`, n.name]));
  const out: ToolsView = { ok: true, tools: [], lanes: {}, errors: [], leftOut: [] };
  for (const row of view.servers) {
    if (server !== undefined && row.server !== server) continue;
    out.lanes[row.server] = row.lane;
    if (row.error) {
      if (server !== undefined && row.error.code === 'MCPX_BAD_REQUEST')
        throw new McpxError('MCPX_BAD_REQUEST', row.error.message, row.error.data ? { data: row.error.data } : undefined);
      out.ok = false;
      out.errors.push({ server: row.server, ...row.error });
      continue;
    }
    for (const l of row.leftOut ?? []) out.leftOut.push({ server: row.server, ...l });
    for (const t of row.tools) {
      if (typeof t['name'] !== 'string') continue;
      out.tools.push({ ...(t as Tool), server: row.server, exposed: exposed.get(`${row.server}\0${t['name']}`) ?? t['name'] });
    }
  }
  return out;
}
