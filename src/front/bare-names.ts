/**
 * A tool called by the name its server registered (`get-time`) rather than the name mcpx shows
 * (`basic__get-time`). An MCP App's HTML hard-codes its server's own tool names (`callServerTool`), and
 * its host forwards them as they are; mcpx cannot tell an app's call from the model's. So a bare name is
 * routed through the caller's catalogue view when exactly one server it sees offers a tool by that name —
 * nothing is started or asked to find it — and refused, naming every candidate the way a caller would
 * call it, when several do. Shown names always win: a bare name is looked up only when no shown name matches.
 */
import { ProtocolError } from '@modelcontextprotocol/server';
import type { NameTable } from '../catalog/names.js';

export type BareMatch = { server: string; original: string; name: string };

/** The one tool `name` is the upstream name of, among the tools `shows` admits (by server and shown name); undefined when none. */
export function resolveBare(table: NameTable, name: string, shows: (server: string, shown: string) => boolean, invalidParams: number): BareMatch | undefined {
  const candidates = table.entries.filter((e) => e.original === name && shows(e.server, e.name));
  if (candidates.length === 0) return undefined;
  if (candidates.length > 1) {
    const list = candidates.map((c) => `${c.name} (${c.server})`).join(', ');
    throw new ProtocolError(invalidParams, `Unknown tool: ${name}. Several servers offer a tool by that name; call one of: ${list}`, {
      candidates: candidates.map((c) => ({ name: c.name, server: c.server })),
    });
  }
  const [only] = candidates;
  return { server: only!.server, original: only!.original, name: only!.name };
}
