// Tools shared by the demo servers. Every answer names the era that served it, so `mcpx call`
// shows at a glance which protocol mcpx chose (legacy: an initialize session; modern: 2026-07-28).
import * as z from 'zod/v4';

/** Registers echo, add and now on an McpServer (SDK v1 or v2: the registerTool signature is the same). */
export function registerDemoTools(server, era, name, schemaOf) {
  server.registerTool(
    'echo',
    { description: 'Echo the text back, naming the era that served it', inputSchema: schemaOf({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: 'text', text: `${text} (from ${name}, era=${era})` }] }),
  );
  server.registerTool(
    'add',
    { description: 'Add two numbers', inputSchema: schemaOf({ a: z.number(), b: z.number() }) },
    async ({ a, b }) => ({ content: [{ type: 'text', text: `${a} + ${b} = ${a + b} (from ${name}, era=${era})` }] }),
  );
  server.registerTool('now', { description: 'The current time on the server' }, async () => ({
    content: [{ type: 'text', text: `${new Date().toISOString()} (from ${name}, era=${era})` }],
  }));
}
