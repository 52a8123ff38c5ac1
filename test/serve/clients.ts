/**
 * Real MCP clients for the serve tests: the official SDK v1 client (a 2025-11-25 caller) and the SDK v2
 * client pinned to 2026-07-28, each over stdio (spawning `mcpx serve`) or Streamable HTTP (`/mcp`).
 */
import { createServer } from 'node:net';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { cleanEnv, ForegroundDaemon, MCPX, readJson, until } from '../cli/helpers.js';
import { writeConfig, type ServerEntry } from '../server/helpers.js';
import { tempDir } from '../support/real.js';

export type CallerEra = 'legacy' | 'modern';
export type Way = 'stdio' | 'http';

/** The part of both SDK clients the tests use. */
export interface McpCaller {
  era: CallerEra;
  way: Way;
  listTools(): Promise<{ tools: Array<Record<string, any>> }>;
  callTool(
    name: string,
    args?: Record<string, unknown>,
    opts?: { signal?: AbortSignal; onprogress?: (p: { progress: number; total?: number }) => void; timeout?: number },
  ): Promise<Record<string, any>>;
  listPrompts(): Promise<{ prompts: Array<Record<string, any>> }>;
  getPrompt(name: string, args?: Record<string, string>): Promise<Record<string, any>>;
  listResources(): Promise<{ resources: Array<Record<string, any>> }>;
  listResourceTemplates(): Promise<{ resourceTemplates: Array<Record<string, any>> }>;
  readResource(uri: string): Promise<Record<string, any>>;
  raw: any;
  close(): Promise<void>;
}

export interface StdioTarget {
  env: NodeJS.ProcessEnv;
  /** Extra `mcpx serve` arguments (--passthrough, --servers). */
  args?: string[];
  stderr?: (line: string) => void;
}

export interface HttpTarget {
  url: string;
  token?: string;
}

function wrap(era: CallerEra, way: Way, c: any): McpCaller {
  const opts = (o?: { signal?: AbortSignal; onprogress?: (p: any) => void; timeout?: number }) => ({
    ...(o?.signal ? { signal: o.signal } : {}),
    ...(o?.onprogress ? { onprogress: o.onprogress } : {}),
    timeout: o?.timeout ?? 60_000,
  });
  return {
    era,
    way,
    raw: c,
    listTools: () => c.listTools(),
    // v1: callTool(params, resultSchema?, options); v2: callTool(params, options)
    callTool: (name, args = {}, o) =>
      era === 'legacy' ? c.callTool({ name, arguments: args }, undefined, opts(o)) : c.callTool({ name, arguments: args }, opts(o)),
    listPrompts: () => c.listPrompts(),
    getPrompt: (name, args) => c.getPrompt({ name, ...(args ? { arguments: args } : {}) }),
    listResources: () => c.listResources(),
    listResourceTemplates: () => c.listResourceTemplates(),
    readResource: (uri) => c.readResource({ uri }),
    close: () => c.close(),
  };
}

const INFO = { name: 'mcpx-test-caller', version: '1.0.0' };

/** `mcpx serve` spawned by an SDK client over stdio. */
export async function stdioCaller(era: CallerEra, t: StdioTarget): Promise<McpCaller> {
  const params = { command: process.execPath, args: [MCPX, 'serve', ...(t.args ?? [])], env: t.env as Record<string, string>, stderr: 'pipe' as const };
  if (era === 'legacy') {
    const transport = new StdioV1(params);
    const c = new ClientV1(INFO, { capabilities: {} });
    await c.connect(transport);
    pipeStderr(transport.stderr, t.stderr);
    return wrap(era, 'stdio', c);
  }
  const transport = new StdioV2(params);
  const c = new ClientV2(INFO, { versionNegotiation: { mode: { pin: '2026-07-28' } } } as never);
  await c.connect(transport);
  pipeStderr(transport.stderr, t.stderr);
  return wrap(era, 'stdio', c);
}

function pipeStderr(stream: unknown, sink: ((line: string) => void) | undefined): void {
  const s = stream as NodeJS.ReadableStream | null;
  if (!s) return;
  s.on('data', (c: Buffer) => sink?.(c.toString()));
}

/** An SDK client over Streamable HTTP to the daemon's `/mcp`. */
export async function httpCaller(era: CallerEra, t: HttpTarget): Promise<McpCaller> {
  const requestInit = t.token ? { headers: { authorization: `Bearer ${t.token}` } } : {};
  if (era === 'legacy') {
    const c = new ClientV1(INFO, { capabilities: {} });
    await c.connect(new HttpV1(new URL(t.url), { requestInit }));
    return wrap(era, 'http', c);
  }
  const c = new ClientV2(INFO, { versionNegotiation: { mode: { pin: '2026-07-28' } } } as never);
  await c.connect(new HttpV2(new URL(t.url), { requestInit } as never));
  return wrap(era, 'http', c);
}

/** A free loopback TCP port (bound, then released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const a = srv.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** The text of a tool result's content. */
export function textOf(result: Record<string, any>): string {
  return (
    (result['content'] as Array<{ type: string; text?: string }> | undefined)
      ?.filter((c) => c.type === 'text')
      .map((c) => c.text)
      .join('\n') ?? ''
  );
}

/** A daemon for the serve tests: a temp folder, a config of `servers`, the Unix socket and loopback TCP with its token. */
export interface ServeDaemon {
  dir: string;
  state: string;
  socket: string;
  config: string;
  env: NodeJS.ProcessEnv;
  /** The /mcp URL on the TCP listener. */
  url: string;
  token: string;
  remove(): Promise<void>;
}

export async function startServeDaemon(prefix: string, servers: Record<string, ServerEntry>, extraEnv: Record<string, string> = {}): Promise<ServeDaemon> {
  const dir = await tempDir(prefix);
  const state = join(dir.path, 'state');
  const socket = join(state, 'daemon.sock');
  const config = writeConfig(dir.path, servers);
  const port = await freePort();
  const env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: config, MCPX_DAEMON_PORT: String(port), ...extraEnv });
  await ForegroundDaemon.start(socket, [], { env });
  await until(() => existsSync(join(state, 'daemon.json')), 10_000, 'daemon.json'); // written just after the socket answers
  return {
    dir: dir.path,
    state,
    socket,
    config,
    env,
    url: `http://127.0.0.1:${port}/mcp`,
    token: readJson(join(state, 'daemon.json')).token,
    remove: dir.remove,
  };
}
