// The SDK v2 (@modelcontextprotocol/server) factory behind the dual and modern-only demo servers.
// serveStdio calls it per era: ctx.era is 'legacy' for an initialize session, 'modern' for 2026-07-28.
import { McpServer } from '@modelcontextprotocol/server';
import * as z from 'zod/v4';
import { registerDemoTools } from './common.mjs';

export function demoFactory(name) {
  return (ctx) => {
    const era = ctx?.era ?? 'legacy';
    const server = new McpServer({ name: `mcpx-demo-${name}`, version: '1.0.0' });
    registerDemoTools(server, era, name, (shape) => z.object(shape));
    return server;
  };
}

export function exitOnStdinEnd() {
  process.stdin.on('end', () => setTimeout(() => process.exit(0), 10));
}
