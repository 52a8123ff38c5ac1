/**
 * The three tools of the `search` strategy (./tool-strategy.ts), over the tool search index the daemon
 * keeps (../catalog/search-index.ts: built from the known catalogue as it changes, never per request):
 *
 * - `search_tools {query, limit?}`: the best matches, compact (the name to call, its server, the first
 *   sentence of its description, a short signature), never whole schemas;
 * - `describe_tools {names}`: the full definitions of those tools;
 * - `call_tool {name, arguments}`: `arguments` checked against the tool's stored `inputSchema` before
 *   anything is sent (a mismatch answers the errors and the schema, so a model can retry), then called as
 *   any `tools/call` is (../front.ts): a stopped server starts, questions and progress reach the caller.
 *
 * Searching and describing read the index only: no upstream starts for them. And the front's
 * `instructions`, which tell a model what the servers are for and when to search.
 */
import type { IndexedTool, ScopeIndex } from '../catalog/search-index.js';
import { firstSentence } from '../catalog/tool-search.js';
import type { CatalogItem } from '../catalog/view.js';
import { isObject } from '../is-object.js';
import type { ToolStrategy } from './tool-strategy.js';

export const SEARCH_TOOLS = 'search_tools';
export const DESCRIBE_TOOLS = 'describe_tools';
export const CALL_TOOL = 'call_tool';
export const META_TOOLS: readonly string[] = [SEARCH_TOOLS, DESCRIBE_TOOLS, CALL_TOOL];

/** Results `search_tools` gives by default and at most. */
export const DEFAULT_LIMIT = 5;
export const MAX_LIMIT = 50;
/** Names one `describe_tools` describes at most. */
export const MAX_DESCRIBE = 20;

type ToolResult = Record<string, unknown>;
const text = (t: string, isError = false): ToolResult => ({ content: [{ type: 'text', text: t }], ...(isError ? { isError: true } : {}) });

/** A server's domain in a few words: its own instructions' first sentence, else its title, else what its tools are. */
function domainOf(found: ScopeIndex, server: string, words: number): string {
  const about = found.servers.find((s) => s.server === server);
  const said = firstSentence(about?.instructions) || about?.title || '';
  if (said) return clip(said, words);
  const names = [...found.tools.values()].filter((t) => t.server === server).map((t) => t.name);
  return `tools such as ${names.slice(0, 3).join(', ')}`;
}

function clip(s: string, words: number): string {
  const w = s.replace(/\s+/g, ' ').trim().split(' ');
  return w.length <= words ? w.join(' ') : `${w.slice(0, words).join(' ')}…`;
}

function toolCounts(found: ScopeIndex): Map<string, number> {
  const counts = new Map<string, number>();
  for (const t of found.tools.values()) counts.set(t.server, (counts.get(t.server) ?? 0) + 1);
  return counts;
}

/** The three tools' definitions, `search_tools`' description naming the servers and their domains. */
export function metaToolDefinitions(found: ScopeIndex): CatalogItem[] {
  const counts = toolCounts(found);
  const domains = [...counts.keys()].map((s) => `${s} (${domainOf(found, s, 8)})`).join('; ');
  return [
    {
      name: SEARCH_TOOLS,
      title: 'Search tools',
      description:
        `Find the tool for a task among ${found.tools.size} tools of ${counts.size} servers that are not listed here: ${domains || 'none yet'}. ` +
        'Describe what you want to do in plain words (or give a tool name). Answers the best matches: the name to call, its server, what it does and its arguments. ' +
        `Then ${DESCRIBE_TOOLS} for a tool's full schema, and ${CALL_TOOL} to run it. Search before concluding a capability is missing.`,
      inputSchema: {
        type: 'object',
        properties: {
          query: { type: 'string', description: 'What you want to do, in plain words, or a tool name.' },
          limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, description: `How many results (default ${DEFAULT_LIMIT}).` },
        },
        required: ['query'],
        additionalProperties: false,
      },
      annotations: { title: 'Search tools', readOnlyHint: true, openWorldHint: false },
    },
    {
      name: DESCRIBE_TOOLS,
      title: 'Describe tools',
      description: `The full definitions (description, input schema, annotations) of tools named by ${SEARCH_TOOLS}.`,
      inputSchema: {
        type: 'object',
        properties: {
          names: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: MAX_DESCRIBE, description: 'Tool names as search_tools gave them.' },
        },
        required: ['names'],
        additionalProperties: false,
      },
      annotations: { title: 'Describe tools', readOnlyHint: true, openWorldHint: false },
    },
    {
      name: CALL_TOOL,
      title: 'Call a tool',
      description: `Runs a tool found with ${SEARCH_TOOLS}: its name and its arguments, which are checked against its input schema first (a mismatch answers the errors and the schema).`,
      inputSchema: {
        type: 'object',
        properties: {
          name: { type: 'string', description: 'The tool name as search_tools gave it.' },
          arguments: { type: 'object', description: "The tool's arguments, as its input schema says.", additionalProperties: true },
        },
        required: ['name'],
        additionalProperties: false,
      },
      // What it does is the called tool's: nothing can be promised of it here.
      annotations: { title: 'Call a tool', openWorldHint: true },
    },
  ];
}

/** `search_tools`: the best matches, one line each. */
export function searchTools(found: ScopeIndex, args: Record<string, unknown>): ToolResult {
  const query = args['query'];
  if (typeof query !== 'string' || query.trim() === '') return text(`${SEARCH_TOOLS} needs a query: what you want to do, in plain words.`, true);
  const rawLimit = args['limit'];
  const limit = typeof rawLimit === 'number' && Number.isFinite(rawLimit) ? Math.min(MAX_LIMIT, Math.max(1, Math.floor(rawLimit))) : DEFAULT_LIMIT;
  const hits = found.search(query, limit).filter((h) => found.tools.has(h.exposed));
  if (hits.length === 0) return text(`No tool matches "${query}". Try other words (what the tool acts on, or the outcome you want).`);
  const lines = hits.map((h, i) => {
    const sig = h.signature.startsWith(`${h.name}(`) ? `${h.exposed}${h.signature.slice(h.name.length)}` : `${h.exposed} ${h.signature}`;
    return `${i + 1}. ${sig} [${h.server}]${h.description ? `: ${h.description}` : ''}`;
  });
  return text(`${lines.join('\n')}\n(${CALL_TOOL} runs one by its name; ${DESCRIBE_TOOLS} gives full schemas.)`);
}

/** `describe_tools`: the full definitions, under the names the caller uses. */
export function describeTools(found: ScopeIndex, args: Record<string, unknown>): ToolResult {
  const names = args['names'];
  if (!Array.isArray(names) || names.length === 0 || !names.every((n) => typeof n === 'string'))
    return text(`${DESCRIBE_TOOLS} needs names: a list of tool names as ${SEARCH_TOOLS} gave them.`, true);
  const wanted = [...new Set(names as string[])].slice(0, MAX_DESCRIBE);
  const tools = wanted.flatMap((n) => {
    const t = found.tools.get(n);
    return t ? [definitionOf(t)] : [];
  });
  const unknown = wanted.filter((n) => !found.tools.has(n));
  const body: Record<string, unknown> = { tools, ...(unknown.length > 0 ? { unknown, hint: `${SEARCH_TOOLS} finds tool names` } : {}) };
  return text(JSON.stringify(body), tools.length === 0);
}

function definitionOf(t: IndexedTool): Record<string, unknown> {
  const { name: _name, _meta: _m, icons: _i, ...rest } = t.item;
  return { name: t.exposed, server: t.server, ...rest };
}

/** A tool's input schema checked by the SDK's own JSON Schema validator (ajv), compiled once per listed schema. */
type Check = (input: unknown) => { valid: boolean; errorMessage?: string | undefined };
const checks = new WeakMap<object, Check | null>();
let validator: Promise<{ getValidator(schema: unknown): Check }> | undefined;

async function checkOf(schema: Record<string, unknown>): Promise<Check | null> {
  if (checks.has(schema)) return checks.get(schema)!;
  validator ??= import('@modelcontextprotocol/server/validators/ajv').then((m) => new m.AjvJsonSchemaValidator() as never);
  let check: Check | null;
  try {
    check = (await validator).getValidator(schema);
  } catch {
    check = null; // a dialect or schema ajv cannot compile: the upstream is left to judge the arguments
  }
  checks.set(schema, check);
  return check;
}

/**
 * `call_tool`'s arguments, resolved and checked: the tool and the arguments to call it with, or the
 * result that says what is wrong (an unknown name, arguments that do not match the schema).
 */
export async function callToolTarget(
  found: ScopeIndex,
  args: Record<string, unknown>,
): Promise<{ tool: IndexedTool; arguments: Record<string, unknown> } | { result: ToolResult }> {
  const name = args['name'];
  if (typeof name !== 'string' || name === '') return { result: text(`${CALL_TOOL} needs name: the tool name as ${SEARCH_TOOLS} gave it.`, true) };
  const tool = found.tools.get(name);
  if (!tool) return { result: text(`No tool is named "${name}" here. ${SEARCH_TOOLS} finds tool names.`, true) };
  let given: unknown = args['arguments'] ?? {};
  // Models often send the arguments as a JSON string: taken when it is an object's JSON.
  if (typeof given === 'string') {
    try {
      given = JSON.parse(given) as unknown;
    } catch {
      // left as it is, and refused below
    }
  }
  const schema = isObject(tool.item['inputSchema']) ? tool.item['inputSchema'] : { type: 'object' };
  if (!isObject(given)) return { result: text(`arguments must be an object, as the input schema of ${name} says: ${JSON.stringify(schema)}`, true) };
  const check = await checkOf(schema);
  const outcome = check?.(given);
  if (outcome && !outcome.valid) {
    return {
      result: text(
        `The arguments do not match the input schema of ${name}: ${outcome.errorMessage ?? 'invalid'}. Nothing was called. ` +
          `Call ${CALL_TOOL} again with arguments that match. Its input schema: ${JSON.stringify(schema)}`,
        true,
      ),
    };
  }
  return { tool, arguments: given };
}

/** What the front tells a model at connect: the servers, what each is for, and when to search. */
export function frontInstructions(found: ScopeIndex, strategy: ToolStrategy): string {
  const counts = toolCounts(found);
  const prefixed = [...found.tools.values()].some((t) => t.exposed !== t.name);
  const lines = [...counts.entries()].map(([server, n]) => `- ${server} (${n} tool${n === 1 ? '' : 's'}): ${domainOf(found, server, 24)}`);
  const head =
    counts.size === 0
      ? 'mcpx: one MCP server in front of the servers its user configured; none has listed tools yet.'
      : `mcpx: one MCP server in front of ${counts.size} server${counts.size === 1 ? '' : 's'}, ${found.tools.size} tools in all.${prefixed ? ' Tool names are <server>__<tool>.' : ''}\n${clipLines(lines, 3_000)}`;
  const search =
    `Use ${SEARCH_TOOLS} (plain words: what you want to do) to find a tool, ${DESCRIBE_TOOLS} for its full schema, ${CALL_TOOL} to run it. ` +
    'Search before concluding that a capability is missing, and prefer these tools over shell commands or HTTP requests for what the servers above do.';
  if (strategy === 'all') return `${head}\nEvery tool is listed.`;
  if (strategy === 'search') return `${head}\nOnly a few tools are listed. ${search}`;
  return `${head}\nWhen the tools listed include ${SEARCH_TOOLS} (the client handles fewer tools than there are), the others are not listed: ${search}`;
}

function clipLines(lines: string[], max: number): string {
  let out = '';
  for (const [i, l] of lines.entries()) {
    if (out.length + l.length > max) return `${out}- … and ${lines.length - i} more servers`;
    out += `${out ? '\n' : ''}${l}`;
  }
  return out;
}
