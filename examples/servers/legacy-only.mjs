// Demo upstream: legacy-only (official SDK v1, @modelcontextprotocol/sdk). It speaks `initialize`
// sessions only; `server/discover` gets -32601, so mcpx falls back to a legacy session.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { registerDemoTools } from './common.mjs';

const server = new McpServer({ name: 'mcpx-demo-legacy-only', version: '1.0.0' });
registerDemoTools(server, 'legacy', 'legacy-only', (shape) => shape);

const transport = new StdioServerTransport();
transport.onclose = () => process.exit(0);
process.stdin.on('end', () => process.exit(0));
await server.connect(transport);
