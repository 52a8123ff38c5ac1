#!/usr/bin/env node
// A real MCP client using mcpx the way Claude Desktop or Claude Code would: it starts `mcpx serve` as
// its stdio server, lists the tools, and calls one. Either official SDK:
//
//   node examples/mcp-client.mjs legacy  [TOOL JSON]   the SDK v1 client (a 2025-11-25 caller)
//   node examples/mcp-client.mjs modern  [TOOL JSON]   the SDK v2 client pinned to 2026-07-28
//
// MCPX_STATE_DIR / MCPX_CONFIG pass through to `mcpx serve` as they would from a client's config.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const mcpx = join(here, '..', 'dist', 'src', 'cli', 'main.js');
const [era = 'legacy', tool, json = '{}'] = process.argv.slice(2);
const server = { command: process.execPath, args: [mcpx, 'serve'], env: process.env };

let client;
if (era === 'legacy') {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
  client = new Client({ name: 'example-client', version: '1.0.0' }, { capabilities: {} });
  await client.connect(new StdioClientTransport(server));
} else {
  const { Client } = await import('@modelcontextprotocol/client');
  const { StdioClientTransport } = await import('@modelcontextprotocol/client/stdio');
  client = new Client({ name: 'example-client', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StdioClientTransport(server));
}
console.log(`connected as a ${era} caller; server ${JSON.stringify(client.getServerVersion())}`);
const { tools } = await client.listTools();
for (const t of tools) console.log(`  ${t.name.padEnd(28)} ${t.description ?? ''}`);
const calls = tool ? [[tool, JSON.parse(json)]] : [['legacy-only__add', { a: 2, b: 3 }], ['dual__add', { a: 2, b: 3 }], ['modern-only__add', { a: 2, b: 3 }]];
for (const [name, args] of calls) {
  const r = await client.callTool({ name, arguments: args });
  console.log(`${name} ${JSON.stringify(args)} → ${r.content.map((c) => c.text).join(' ')}${r.isError ? ' (isError)' : ''}`);
}
await client.close();
