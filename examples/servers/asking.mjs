// Demo upstream that asks its caller a question in the middle of a call (official SDK v2, both eras).
// The tool returns `inputRequired(...)`: a 2026-07-28 caller gets an input_required result and retries
// with its answers; a legacy caller gets a real elicitation/create request from the SDK. mcpx relays
// either to whoever called, in that caller's own era.
import { inputRequired, inputResponse, McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod/v4';
import { exitOnStdinEnd } from './v2.mjs';

const form = {
  type: 'object',
  properties: {
    name: { type: 'string', title: 'Your name' },
    colour: { type: 'string', title: 'Favourite colour', enum: ['red', 'green', 'blue'], default: 'green' },
    cups: { type: 'integer', title: 'Cups of tea a day', minimum: 0 },
  },
  required: ['name'],
};

serveStdio((ctx) => {
  const era = ctx?.era ?? 'legacy';
  const server = new McpServer({ name: 'mcpx-demo-asking', version: '1.0.0' });
  server.registerTool('greet', { description: 'Asks who you are, then greets you', inputSchema: z.object({}) }, async (_args, hctx) => {
    const r = inputResponse(hctx.mcpReq.inputResponses, 'who');
    if (r.kind === 'elicit' && r.action === 'accept') {
      const { name, colour, cups } = r.content ?? {};
      return { content: [{ type: 'text', text: `Hello ${name}! ${colour} it is${cups === undefined ? '' : `, and ${cups} cups of tea`}. (asked over the ${era} era)` }] };
    }
    if (r.kind === 'elicit') return { content: [{ type: 'text', text: `No greeting, then (${r.action}).` }] };
    return inputRequired({ inputRequests: { who: inputRequired.elicit({ message: 'Who is there?', requestedSchema: form }) } });
  });
  return server;
});
exitOnStdinEnd();
