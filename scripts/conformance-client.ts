/**
 * The client side of the official MCP conformance suite (`conformance client --command …`), played by
 * mcpx's own upstream session: it probes the scenario's mock server (URL = last argument) with the
 * default preference, lists its tools and calls them as the scenario expects. `npm run conformance`.
 *
 * The calls: the ones the runner names in MCP_CONFORMANCE_CONTEXT (`toolCalls`, e.g. http-custom-headers)
 * when it names any; otherwise every tool listTools() returns (tools the session excluded, such as those
 * with invalid x-mcp-header annotations, are not in that list), with plausible arguments made from its
 * inputSchema. When the server offers resources or prompts, those are listed, read and fetched too, so
 * that every request kind with a standard header is exercised (http-standard-headers).
 *
 * Questions the server asks — a legacy `elicitation/create` request (through the session's
 * onServerRequest) or a 2026-07-28 `input_required` round (onInputRequired) — are answered as a consenting
 * user would: accept, with each field's schema default (SEP-1034), else a plausible value. The session
 * declares the elicitation capability, the only one it can answer.
 */
import { McpxError } from '../src/errors.js';
import { UpstreamSession, type Tool } from '../src/upstream/session.js';

const url = process.argv[process.argv.length - 1];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';

/** Scenarios that want less than the default client (list, call every tool, resources, prompts). */
const LIST_ONLY = new Set([
  // SEP-2106: the check is that listing does not fetch a network `$ref`; the mock has no tools/call at all.
  'json-schema-ref-no-deref',
]);

interface ToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function contextToolCalls(): ToolCall[] | undefined {
  const raw = process.env.MCP_CONFORMANCE_CONTEXT;
  if (!raw) return undefined;
  const context: unknown = JSON.parse(raw);
  const calls = isObject(context) && Array.isArray(context.toolCalls) ? context.toolCalls : undefined;
  return calls?.filter((c): c is ToolCall => isObject(c) && typeof c.name === 'string' && isObject(c.arguments));
}

/** A value a schema accepts, good enough for a mock: its const/default/enum/example, else one of its type. */
function sampleValue(schema: unknown): unknown {
  if (!isObject(schema)) return 'example';
  if ('const' in schema) return schema.const;
  // The default first: it is what the schema's author picked (SEP-1034 elicitation defaults).
  if ('default' in schema) return schema.default;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'integer':
      return typeof schema.minimum === 'number' ? Math.ceil(schema.minimum) : 1;
    case 'number':
      return typeof schema.minimum === 'number' ? schema.minimum : 1.5;
    case 'boolean':
      return true;
    case 'array':
      return [];
    case 'object':
      return sampleArgs(schema);
    case 'null':
      return null;
    default:
      return 'example';
  }
}

/** Arguments for an object schema: its required properties and the ones mirrored into headers (x-mcp-header). */
function sampleArgs(schema: unknown): Record<string, unknown> {
  if (!isObject(schema) || !isObject(schema.properties)) return {};
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const args: Record<string, unknown> = {};
  for (const [key, prop] of Object.entries(schema.properties)) {
    const wanted = required.has(key) || (isObject(prop) && ('x-mcp-header' in prop || JSON.stringify(prop.properties ?? {}).includes('"x-mcp-header"')));
    if (wanted) args[key] = sampleValue(prop);
  }
  return args;
}

/** A consenting user's answer to a form elicitation: accept, each field at its default (SEP-1034) or a plausible value. */
function acceptForm(params: unknown): { action: 'accept'; content: Record<string, unknown> } {
  const schema = isObject(params) ? params.requestedSchema : undefined;
  const properties = isObject(schema) && isObject(schema.properties) ? schema.properties : {};
  const content = Object.fromEntries(Object.entries(properties).map(([key, prop]) => [key, sampleValue(prop)]));
  return { action: 'accept', content };
}

/** The answer to one question from the server (legacy request or modern inputRequest); only elicitation is declared. */
async function answerQuestion(method: string, params: unknown): Promise<unknown> {
  if (method === 'elicitation/create') return acceptForm(params);
  // An Error carrying a JSON-RPC code: RpcPeer answers a legacy request with it as the error.
  throw Object.assign(new Error(`the conformance client does not answer ${method}`), { code: -32601 });
}

function argsFor(tool: Tool, tools: Tool[]): Record<string, unknown> {
  // The scenarios' mocks expose arithmetic tools; `add_numbers` is what tools_call checks.
  if (tool.name === 'add_numbers') return { a: 2, b: 3 };
  // json-schema-2020-12-preservation: echo back, verbatim, the inputSchema mcpx received for the other tool.
  if (tool.name === 'json_schema_echo') return { schema: tools.find((t) => t.name !== tool.name)?.inputSchema ?? {} };
  return sampleArgs(tool.inputSchema);
}

async function main(): Promise<number> {
  if (!url || !/^https?:\/\//.test(url)) throw new Error(`usage: conformance-client <server-url> (got ${JSON.stringify(url)})`);
  // The runner binds its mocks to 127.0.0.1 only (scripts/conformance/loopback.mjs); `localhost` might resolve to ::1.
  const target = new URL(url);
  if (target.hostname === 'localhost') target.hostname = '127.0.0.1';
  const session = new UpstreamSession({
    name: scenario || 'conformance',
    definition: { url: target.href },
    preference: 'prefer-discover',
    // Mocks answer in milliseconds; a request left hanging ends well inside the runner's limit, so the CLI
    // still writes its checks (it waits for the client before it grades).
    startTimeoutMs: 10_000,
    requestTimeoutMs: 10_000,
    clientCapabilities: { elicitation: {} },
    onServerRequest: (req) => answerQuestion(req.method, req.params),
  });
  let failures = 0;
  const attempt = async (what: string, run: () => Promise<unknown>): Promise<unknown> => {
    try {
      const result = await run();
      console.error(`[mcpx] ${what} → ${JSON.stringify(result).slice(0, 200)}`);
      return result;
    } catch (err) {
      // A refusal mcpx makes on purpose (a tool excluded for invalid annotations) is what the scenario wants.
      if (!(err instanceof McpxError && err.code === 'MCPX_BAD_TOOL')) failures++;
      console.error(`[mcpx] ${what} failed: ${err instanceof McpxError ? `${err.code} ` : ''}${err instanceof Error ? err.message : String(err)}`);
      return undefined;
    }
  };
  try {
    const info = await session.start();
    console.error(`[mcpx] ${scenario}: era ${info.era} ${info.negotiated} via ${info.eraSource}`);
    const tools = await session.listTools();
    console.error(`[mcpx] tools: ${tools.map((t) => t.name).join(', ') || '(none)'}`);
    for (const { name, reason } of session.excludedTools()) console.error(`[mcpx] excluded ${name}: ${reason}`);
    if (LIST_ONLY.has(scenario)) return 0;
    const calls = contextToolCalls() ?? tools.map((tool) => ({ name: tool.name, arguments: argsFor(tool, tools) }));
    for (const call of calls) {
      await attempt(`${call.name}(${JSON.stringify(call.arguments)})`, () =>
        session.callTool(call.name, call.arguments, {
          onInputRequired: async (requests) => {
            const answers = await Promise.all(Object.entries(requests).map(async ([key, q]) => [key, await answerQuestion(q.method, q.params)] as const));
            return Object.fromEntries(answers);
          },
        }),
      );
    }
    const capabilities = isObject(info.capabilities) ? info.capabilities : {};
    if (isObject(capabilities.resources)) {
      const listed = await attempt('resources/list', () => session.request('resources/list'));
      const resources = isObject(listed) && Array.isArray(listed.resources) ? listed.resources.filter(isObject) : [];
      for (const r of resources) if (typeof r.uri === 'string') await attempt(`resources/read ${r.uri}`, () => session.request('resources/read', { uri: r.uri }));
    }
    if (isObject(capabilities.prompts)) {
      const listed = await attempt('prompts/list', () => session.request('prompts/list'));
      const prompts = isObject(listed) && Array.isArray(listed.prompts) ? listed.prompts.filter(isObject) : [];
      for (const p of prompts) {
        if (typeof p.name !== 'string') continue;
        const args = Array.isArray(p.arguments)
          ? Object.fromEntries(p.arguments.filter((a) => isObject(a) && a.required === true && typeof a.name === 'string').map((a) => [(a as { name: string }).name, 'example']))
          : {};
        await attempt(`prompts/get ${p.name}`, () => session.request('prompts/get', { name: p.name, arguments: args }));
      }
    }
  } finally {
    await session.stop();
  }
  return failures === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`[mcpx] ${scenario}: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
