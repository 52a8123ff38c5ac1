/**
 * Real servers' tools behind the built binary (captured listings of GitHub, Slack, Notion, Playwright and
 * the filesystem server, 97 tools, replayed by test/fixtures/replay-listing-server.mjs with their exact
 * schemas): a client that says it is Cursor, on the default strategy, is given the three tools; it finds
 * tools by what a person would ask (no word of the tool's name), and call_tool checks the real schemas
 * before anything is sent, starting the server only for the call.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-info.js';
import { cleanEnv, ForegroundDaemon, killAll, MCPX, mcpx } from '../cli/helpers.js';
import { FIXTURE_DIR, WIRE_LOG_PRELOAD } from '../fixtures/index.js';
import { pids, readWireLog } from '../fixtures/wire-log-read.js';
import { writeConfig } from '../server/helpers.js';
import { tempDir } from '../support/real.js';
import { textOf, type CallerEra } from './clients.js';

const LISTINGS = join(packageRoot(), 'bench', 'tool-search', 'listings');
const SERVERS = ['github', 'slack', 'notion', 'playwright', 'filesystem'];

let dir: { path: string; remove: () => Promise<void> };
let env: NodeJS.ProcessEnv;
let socket: string;

const started = (server: string): number => {
  const log = join(dir.path, `${server}.wire.log`);
  return existsSync(log) ? pids(readWireLog(log)).length : 0;
};

beforeAll(async () => {
  dir = await tempDir('mcpx-real-search-');
  const state = join(dir.path, 'state');
  socket = join(state, 'daemon.sock');
  const entry = (server: string) =>
    ({
      command: process.execPath,
      args: ['--import', WIRE_LOG_PRELOAD, join(FIXTURE_DIR, 'replay-listing-server.mjs'), join(LISTINGS, `${server}.json`)],
      env: { MCPX_FIXTURE_LOG: join(dir.path, `${server}.wire.log`) },
      mcpx: { startTimeout: '30s' },
    }) as never;
  env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: writeConfig(dir.path, Object.fromEntries(SERVERS.map((s) => [s, entry(s)]))) });
  // The catalogue, listed once by a first daemon; then nothing runs.
  const d = await ForegroundDaemon.start(socket, [], { env });
  const listed = await mcpx(['tools', '--json'], { env, timeoutMs: 90_000 });
  expect(listed.code, listed.stderr).toBe(0);
  expect(JSON.parse(listed.stdout).tools.length).toBe(97);
  await d.stop();
}, 120_000);

afterAll(async () => {
  await killAll();
  await dir?.remove();
});

const hitsOf = (result: Record<string, any>): string[] => [...textOf(result).matchAll(/^\d+\. ([^\s(]+)\(/gm)].map((m) => m[1]!);

describe('real listings, a Cursor client, the default strategy', () => {
  it.each(['legacy', 'modern'] as CallerEra[])(
    'a %s client finds by plain words and calls with the schema checked',
    async (era) => {
      const d = await ForegroundDaemon.start(socket, [], { env });
      const info = { name: 'cursor-vscode', version: '1.0.0' };
      const params = { command: process.execPath, args: [MCPX, 'serve'], env: env as Record<string, string>, stderr: 'pipe' as const };
      let c: { listTools(): Promise<any>; callTool(p: unknown, ...rest: unknown[]): Promise<any>; close(): Promise<void> };
      if (era === 'legacy') {
        const v1 = new ClientV1(info, { capabilities: {} });
        await v1.connect(new StdioV1(params));
        c = v1 as never;
      } else {
        const v2 = new ClientV2(info, { versionNegotiation: { mode: { pin: '2026-07-28' } } } as never);
        await v2.connect(new StdioV2(params));
        c = v2 as never;
      }
      const before = SERVERS.map(started);
      const call = (name: string, args: Record<string, unknown>) => c.callTool({ name, arguments: args }) as Promise<Record<string, any>>;
      try {
        // 97 tools is more than Cursor takes: the three tools instead.
        expect((await c.listTools()).tools.map((t: { name: string }) => t.name)).toEqual(['search_tools', 'describe_tools', 'call_tool']);
        expect(hitsOf(await call('search_tools', { query: 'open a bug report in a repo', limit: 3 }))).toContain('github__create_issue');
        expect(hitsOf(await call('search_tools', { query: 'post a message to a channel', limit: 3 }))).toContain('slack__slack_post_message');
        expect(hitsOf(await call('search_tools', { query: 'capture an image of the web page', limit: 3 }))).toContain('playwright__browser_take_screenshot');
        expect(SERVERS.map(started)).toEqual(before); // searching started nothing

        // The real schema is checked before anything is sent: required fields missing.
        const wrong = await call('call_tool', { name: 'github__create_issue', arguments: { owner: 'o' } });
        expect(wrong['isError']).toBe(true);
        expect(textOf(wrong)).toMatch(/do not match the input schema of github__create_issue: .*(repo|title)/);
        expect(started('github')).toBe(before[0]);

        const ok = await call('call_tool', { name: 'github__create_issue', arguments: { owner: 'o', repo: 'r', title: 't' } });
        expect(textOf(ok)).toBe('called create_issue {"owner":"o","repo":"r","title":"t"}');
        expect(started('github')).toBe(before[0]! + 1);
      } finally {
        await c.close();
        await d.stop();
      }
    },
    120_000,
  );
});
