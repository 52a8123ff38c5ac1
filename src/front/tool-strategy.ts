/**
 * How an entry offers its tools (`mcpx serve --tools`, `/mcp?tools=`):
 *
 * - `all`: every tool, in config order (servers as configured, tools as each server listed them): the
 *   same list for the whole connection, changed only through `list_changed`.
 * - `search`: `search_tools`, `describe_tools` and `call_tool` (./search-tools.ts), plus the tools a
 *   server pins (`mcpx.pin`).
 * - `auto` (the default): `all` while the listing fits what the client handles, else `search`; decided
 *   once per connection (a 2026-07-28 caller, which has none, once per client name on the entry), at its
 *   first need, and kept.
 *
 * What a client handles, by the `clientInfo.name` it sends (self-reported, so it only chooses a
 * presentation, never what is allowed): docs/serving.md has the table and where each figure comes from.
 */
export const TOOL_STRATEGIES = ['all', 'search', 'auto'] as const;
export type ToolStrategy = (typeof TOOL_STRATEGIES)[number];
export type ToolListing = 'all' | 'search';

export const isToolStrategy = (v: unknown): v is ToolStrategy => typeof v === 'string' && (TOOL_STRATEGIES as readonly string[]).includes(v);

/** The tools a client with no known cap is given in full at most (`auto`); more get `search`. */
export const DEFAULT_TOOL_CAP = 40;

/**
 * Known clients, matched on `clientInfo.name` (case-insensitive, anywhere in it), first match wins.
 * `null`: the client defers tools itself (names first, schemas on demand), so it gets every tool.
 */
export const CLIENT_TOOL_CAPS: ReadonlyArray<{ match: RegExp; client: string; cap: number | null }> = [
  { match: /claude-code|claude code/i, client: 'Claude Code', cap: null },
  { match: /codex/i, client: 'Codex', cap: null },
  { match: /cursor/i, client: 'Cursor', cap: 40 },
  { match: /windsurf|codeium/i, client: 'Windsurf', cap: 50 },
  { match: /antigravity/i, client: 'Antigravity', cap: 50 },
  { match: /visual studio code|vscode|vs code|copilot/i, client: 'VS Code (Copilot)', cap: 64 },
  { match: /jetbrains|phpstorm|intellij|pycharm|webstorm/i, client: 'JetBrains IDEs', cap: 100 },
];

/** The cap `auto` applies to a client (null: none). */
export function toolCapFor(clientName: string | undefined): number | null {
  if (clientName === undefined) return DEFAULT_TOOL_CAP;
  const known = CLIENT_TOOL_CAPS.find((c) => c.match.test(clientName));
  return known === undefined ? DEFAULT_TOOL_CAP : known.cap;
}

/** What a connection is given: the strategy itself, or for `auto` what fits the client. */
export function decideListing(strategy: ToolStrategy, clientName: string | undefined, toolCount: number): ToolListing {
  if (strategy !== 'auto') return strategy;
  const cap = toolCapFor(clientName);
  return cap === null || toolCount <= cap ? 'all' : 'search';
}

/** An entry's tool options as its address carries them (`/mcp?tools=&allowTools=&denyTools=`, serve's stream). */
export interface EntryTools {
  tools?: ToolStrategy;
  allowTools?: string[];
  denyTools?: string[];
}

/** Reads the tool options of an entry's query; a string says what is wrong. */
export function entryToolsOf(query: URLSearchParams): EntryTools | string {
  const tools = query.get('tools');
  if (tools !== null && !isToolStrategy(tools)) return `tools must be one of ${TOOL_STRATEGIES.join(', ')} (got ${JSON.stringify(tools)})`;
  const globs = (key: string) =>
    query
      .getAll(key)
      .flatMap((v) => v.split(','))
      .map((g) => g.trim())
      .filter((g) => g.length > 0);
  const allow = globs('allowTools');
  const deny = globs('denyTools');
  return { ...(tools === null ? {} : { tools }), ...(allow.length > 0 ? { allowTools: allow } : {}), ...(deny.length > 0 ? { denyTools: deny } : {}) };
}

/** The same options written into a query (serve's stream). */
export function setEntryTools(query: URLSearchParams, t: EntryTools): void {
  if (t.tools !== undefined) query.set('tools', t.tools);
  if (t.allowTools && t.allowTools.length > 0) query.set('allowTools', t.allowTools.join(','));
  if (t.denyTools && t.denyTools.length > 0) query.set('denyTools', t.denyTools.join(','));
}
