/**
 * SEP-2243 on a modern Streamable HTTP session: which listed tools may be called, and the `Mcp-Param-*`
 * headers each call of them carries. Built from the latest complete tools/list; the header rules
 * themselves are the pure functions of src/transports/mcp-param-headers.ts.
 */
import { McpxError } from '../errors.js';
import type { Logger } from '../log.js';
import { paramHeaderSpec, paramHeaders, type ParamHeader } from '../transports/mcp-param-headers.js';

export interface ListedTool {
  name: string;
  inputSchema?: unknown;
}

export class ToolHeaders {
  private readonly headers = new Map<string, ParamHeader[]>();
  private readonly excludedTools = new Map<string, string>();

  /**
   * "Clients using the Streamable HTTP transport MUST reject tool definitions where any x-mcp-header value
   * violates these constraints. Rejection means the client MUST exclude the invalid tool from the result of
   * tools/list. Clients SHOULD log a warning when rejecting a tool definition, including the tool name and
   * the reason for rejection." Excluded rather than flagged, so that every consumer of listTools (the pool,
   * the /v1 API, relayed MCP clients) sees the list a conforming client would; `excluded()` tells why.
   * `previous` is the last listing's table, so a warning is logged once per tool and reason.
   */
  static admit<T extends ListedTool>(tools: T[], log: Logger, previous?: ToolHeaders): { table: ToolHeaders; admitted: T[] } {
    const table = new ToolHeaders();
    const admitted = tools.filter((tool) => {
      const spec = paramHeaderSpec(tool.inputSchema);
      if (spec.ok) {
        table.headers.set(tool.name, spec.params);
        return true;
      }
      table.excludedTools.set(tool.name, spec.reason);
      const level = previous?.excludedTools.get(tool.name) === spec.reason ? 'debug' : 'warn';
      log[level]({ tool: tool.name, reason: spec.reason }, 'excluding a tool whose x-mcp-header annotations are invalid (SEP-2243)');
      return false;
    });
    return { table, admitted };
  }

  excluded(): Array<{ name: string; reason: string }> {
    return [...this.excludedTools].map(([name, reason]) => ({ name, reason }));
  }

  /**
   * The `Mcp-Param-*` headers for one call. A tool excluded for invalid annotations is refused
   * (MCPX_BAD_TOOL); a tool never listed gets none; an argument with no header form is refused by
   * paramHeaders (MCPX_BAD_REQUEST). Nothing is sent in either refusal.
   */
  for(server: string, name: string, args: Record<string, unknown>): Record<string, string> {
    const reason = this.excludedTools.get(name);
    if (reason !== undefined && !this.headers.has(name)) {
      throw new McpxError('MCPX_BAD_TOOL', `${server}: tool ${JSON.stringify(name)} is not callable: its x-mcp-header annotations are invalid (${reason})`, {
        data: { server, tool: name, reason },
      });
    }
    const params = this.headers.get(name);
    return params === undefined ? {} : paramHeaders({ params }, args, `${server}: ${name}`);
  }
}
