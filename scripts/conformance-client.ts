/**
 * The client side of the official MCP conformance suite (`conformance client --command …`), played by
 * mcpx's own upstream session: it probes the scenario's mock server (URL = last argument) with the
 * default preference, lists its tools and calls them as the scenario expects. `npm run conformance`.
 */
import { UpstreamSession } from '../src/upstream/session.js';

const url = process.argv[process.argv.length - 1];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';

async function main(): Promise<void> {
  if (!url || !/^https?:\/\//.test(url)) throw new Error(`usage: conformance-client <server-url> (got ${JSON.stringify(url)})`);
  const session = new UpstreamSession({ name: scenario || 'conformance', definition: { url }, preference: 'prefer-discover' });
  try {
    const info = await session.start();
    console.error(`[mcpx] ${scenario}: era ${info.era} ${info.negotiated} via ${info.eraSource}`);
    const tools = await session.listTools();
    for (const tool of tools) {
      // The scenarios' mocks expose arithmetic tools; `add_numbers` is what tools_call checks.
      const args = tool.name === 'add_numbers' ? { a: 2, b: 3 } : {};
      const result = await session.callTool(tool.name, args, {
        // Questions (MRTR input_required) are answered as a consenting user would.
        onInputRequired: async (requests) =>
          Object.fromEntries(Object.keys(requests).map((key) => [key, { action: 'accept', content: { confirmed: true } }])),
      });
      console.error(`[mcpx] ${tool.name} → ${JSON.stringify(result).slice(0, 200)}`);
    }
  } finally {
    await session.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(`[mcpx] ${scenario}: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
