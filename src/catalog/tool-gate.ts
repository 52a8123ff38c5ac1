/**
 * Which tools of a listing are served, pinned and held, and why a call is refused: the server's policy
 * (./tool-policy.ts: `mcpx.tools`, `mcpx.pin`, `pinTools`) over the tool definitions first seen
 * (./tool-digests.ts). The catalogue (./catalog.ts) asks it for every listing it serves, every live listing
 * it records, and every call; it knows keys and listings, the gate knows rules (docs/serving.md, "Which
 * tools are served").
 */
import { McpxError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Lane } from '../machines/preference.js';
import { sanitize, SEPARATOR } from './names.js';
import { changedParts, type ChangedPart, type ToolDigests } from './tool-digests.js';
import { filterRefusal, toolAllowed, toolPinned, type ToolPolicy } from './tool-policy.js';
import type { CatalogItem } from './view.js';

/** A tool whose definition changed since it was first seen (`mcpx tools --changed`, the `tool.changed` event). */
export interface ChangedTool {
  server: string;
  /** The tool's own name. */
  tool: string;
  /** The name a caller would see it under (aggregate mode) once served. */
  exposed: string;
  lane: Lane;
  changed: ChangedPart[];
  /** When the difference was first seen (ISO 8601). */
  since: string;
  /** Held out of listings and refused on call until accepted (pinTools). */
  held: boolean;
}

export interface ToolGateDeps {
  /** The server's own say over its tools; none: every tool served, none pinned or held. */
  policy?(server: string): ToolPolicy;
  /** The tool definitions as first seen; none: nothing is held or reported. */
  digests: ToolDigests | null;
  log: Logger;
  /** A live listing found a changed tool. */
  changed(change: ChangedTool): void;
}

/** The lane of a catalogue key (`<sha256>:<lane>`). */
const laneOf = (key: string): Lane => key.slice(key.lastIndexOf(':') + 1) as Lane;

/** The name a tool is shown under in aggregate mode, when nothing else claims it (./names.ts). */
export function exposedGuess(server: string, tool: string): string {
  return `${sanitize(server)}${SEPARATOR}${sanitize(tool)}`;
}

export class ToolGate {
  constructor(private readonly deps: ToolGateDeps) {}

  get digests(): ToolDigests | null {
    return this.deps.digests;
  }

  policy(server: string): ToolPolicy {
    return this.deps.policy?.(server) ?? {};
  }

  /** The tools served of a listing under `key`: the filter's, less those held; and the names pinned among them. */
  served(server: string, key: string, tools: CatalogItem[]): { tools: CatalogItem[]; pinned: string[] } {
    const policy = this.policy(server);
    const holds = policy.pinTools === true && this.deps.digests !== null;
    if (policy.tools === undefined && policy.pin === undefined && !holds) return { tools, pinned: [] };
    const kept = tools.filter((t) => {
      const name = t['name'] as string;
      return toolAllowed(policy.tools, name) && !(holds && this.deps.digests!.tool(key, name)?.changed !== undefined);
    });
    const pinned = policy.pin === undefined ? [] : kept.map((t) => t['name'] as string).filter((n) => toolPinned(policy.pin, n));
    return { tools: kept, pinned };
  }

  /** A live listing against the definitions first seen: each tool that differs now is reported (the log, `changed`). */
  observe(server: string, key: string, tools: ReadonlyArray<Record<string, unknown>>): void {
    const digests = this.deps.digests;
    if (!digests) return;
    const lane = laneOf(key);
    const held = this.policy(server).pinTools === true;
    for (const c of digests.observe(key, tools)) {
      const what = c.changed.length > 0 ? c.changed.join(', ') : 'definition';
      // Names and parts only: the texts may quote what they should not.
      this.deps.log.warn(
        { server, tool: c.tool, lane, changed: c.changed, since: c.since, held },
        `${server}: tool ${JSON.stringify(c.tool)} changed its ${what} since it was first seen${held ? `; it is held until accepted (mcpx tools --accept ${server} ${c.tool})` : ''}`,
      );
      this.deps.changed({ server, tool: c.tool, exposed: exposedGuess(server, c.tool), lane, changed: c.changed, since: c.since, held });
    }
  }

  /**
   * Why a call to this tool is refused, or undefined: the server's filter leaves it out (MCPX_TOOL_DENIED),
   * or it changed since first seen and is held (MCPX_TOOL_HELD). `key`: the catalogue key of the call's lane.
   */
  refusal(server: string, tool: string, key: string | undefined): McpxError | undefined {
    const policy = this.policy(server);
    const filtered = filterRefusal(policy.tools, tool);
    if (filtered !== undefined)
      return new McpxError(
        'MCPX_TOOL_DENIED',
        `tool ${JSON.stringify(tool)} of server ${JSON.stringify(server)} is not served: the config's ${filtered} leaves it out`,
        {
          data: { server, tool },
        },
      );
    if (policy.pinTools !== true || key === undefined) return undefined;
    const d = this.deps.digests?.tool(key, tool);
    if (!d?.changed) return undefined;
    const parts = changedParts(d);
    return new McpxError(
      'MCPX_TOOL_HELD',
      `tool ${JSON.stringify(tool)} of server ${JSON.stringify(server)} changed its ${parts.length > 0 ? parts.join(', ') : 'definition'} since it was first seen (${d.changed.at}) and is held: review it (mcpx tools --changed) and accept it with mcpx tools --accept ${server} ${tool}`,
      { data: { server, tool, changed: parts, since: d.changed.at } },
    );
  }

  /** The changed tools under `key` that its known listing still has. */
  changed(server: string, key: string, listed: ReadonlySet<unknown>): ChangedTool[] {
    const held = this.policy(server).pinTools === true;
    const out: ChangedTool[] = [];
    for (const [tool, d] of Object.entries(this.deps.digests?.get(key)?.tools ?? {})) {
      if (!d.changed || !listed.has(tool)) continue;
      out.push({ server, tool, exposed: exposedGuess(server, tool), lane: laneOf(key), changed: changedParts(d), since: d.changed.at, held });
    }
    return out;
  }

  /** Approves what is listed now under `key`; false when there was no change to accept. */
  accept(key: string, tool: string): boolean {
    return this.deps.digests?.accept(key, tool) ?? false;
  }
}
