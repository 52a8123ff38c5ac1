/**
 * An MCP client meets a server that needs authorization, through `mcpx serve` and the daemon's `/mcp`
 * (the built binary): a client that declared URL-mode elicitation is asked to open the authorization URL,
 * the login finishes on mcpx's own callback and the call completes; a client that did not gets an
 * `isError` result saying to run `mcpx login NAME`. The authorization server approves at once, so the
 * client's "browser" is a redirect follower.
 */
import { spawn } from 'node:child_process';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, MCPX, mcpx } from '../cli/helpers.js';
import { FOLLOW_REDIRECTS, startAutoApprove } from '../fixtures/oauth/index.js';
import { startServeDaemon, textOf, type ServeDaemon } from '../serve/clients.js';

type Era = 'legacy' | 'modern';
type Way = 'stdio' | 'http';

/** Follows the authorization URL like a browser would; resolves once it ended. */
function openInBrowser(url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [FOLLOW_REDIRECTS, url], { stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`follow-redirects exited ${code}`))));
  });
}

interface Asked {
  mode?: string;
  url?: string;
  message?: string;
}

async function connect(era: Era, way: Way, d: ServeDaemon, asked: Asked[], url: boolean) {
  const caps = url ? { elicitation: { form: {}, url: {} } } : {};
  const answer = async (params: Asked) => {
    asked.push(params);
    if (params.mode === 'url' && params.url) await openInBrowser(params.url);
    return { action: 'accept' };
  };
  const headers = { authorization: `Bearer ${d.token}` };
  const info = { name: 'front-authorize-test', version: '1.0.0' };
  if (era === 'legacy') {
    const c = new ClientV1(info, { capabilities: caps });
    if (url) c.setRequestHandler(ElicitRequestSchema, async (req) => (await answer(req.params as Asked)) as never);
    await c.connect(
      way === 'stdio'
        ? new StdioV1({ command: process.execPath, args: [MCPX, 'serve'], env: d.env as Record<string, string>, stderr: 'pipe' })
        : new HttpV1(new URL(d.url), { requestInit: { headers } }),
    );
    return {
      call: (args: Record<string, unknown>) => c.callTool({ name: 'locked__echo', arguments: args }, undefined, { timeout: 60_000 }),
      tools: async () => (await c.listTools()).tools.map((t) => t.name),
      close: () => c.close(),
    };
  }
  const c = new ClientV2(info, { capabilities: caps, versionNegotiation: { mode: { pin: '2026-07-28' } } } as never);
  if (url) c.setRequestHandler('elicitation/create', async (req: any) => (await answer(req.params)) as never);
  await c.connect(
    way === 'stdio'
      ? new StdioV2({ command: process.execPath, args: [MCPX, 'serve'], env: d.env as Record<string, string>, stderr: 'pipe' })
      : new HttpV2(new URL(d.url), { requestInit: { headers } } as never),
  );
  return {
    call: (args: Record<string, unknown>) => c.callTool({ name: 'locked__echo', arguments: args }, { timeout: 60_000 }),
    tools: async () => (await c.listTools()).tools.map((t: { name: string }) => t.name),
    close: () => c.close(),
  };
}

describe('an MCP client meets a server that needs authorization', () => {
  let locked: Awaited<ReturnType<typeof startAutoApprove>>;
  let d: ServeDaemon;

  beforeAll(async () => {
    locked = await startAutoApprove();
    d = await startServeDaemon('mcpx-front-auth-', { locked: { url: locked.url } });
  }, 60_000);
  afterAll(async () => {
    await killAll();
    await locked?.stop();
    await d?.remove();
  });

  const logout = async () => expect((await mcpx(['logout', 'locked'], { env: d.env })).code).toBe(0);

  for (const [era, way] of [
    ['legacy', 'http'],
    ['modern', 'http'],
    ['legacy', 'stdio'],
    ['modern', 'stdio'],
  ] as Array<[Era, Way]>) {
    it(`${era} client over ${way === 'http' ? '/mcp' : 'mcpx serve'}: without URL elicitation, an isError result naming mcpx login`, async () => {
      await logout();
      const asked: Asked[] = [];
      const c = await connect(era, way, d, asked, false);
      try {
        const r = (await c.call({ text: 'x' })) as Record<string, any>;
        expect(r['isError']).toBe(true);
        expect(textOf(r)).toContain('MCPX_UPSTREAM_UNAUTHORIZED');
        expect(textOf(r)).toContain('run `mcpx login locked`');
        expect(asked).toEqual([]);
      } finally {
        await c.close();
      }
    });

    it(`${era} client over ${way === 'http' ? '/mcp' : 'mcpx serve'}: with URL elicitation, asked to open the authorization URL, and the call completes`, async () => {
      await logout();
      const asked: Asked[] = [];
      const c = await connect(era, way, d, asked, true);
      try {
        const r = (await c.call({ text: 'in place' })) as Record<string, any>;
        expect(r['isError'], textOf(r)).toBeFalsy();
        expect(textOf(r)).toBe('authorized: in place');
        expect(asked).toHaveLength(1);
        expect(asked[0]).toMatchObject({ mode: 'url', message: expect.stringContaining('locked needs you to sign in') });
        expect(asked[0]!.url).toMatch(/\/authorize\?.*code_challenge_method=S256/);
        // Authorized now: the next call asks nothing.
        expect(textOf((await c.call({ text: 'again' })) as Record<string, any>)).toBe('authorized: again');
        expect(asked).toHaveLength(1);
      } finally {
        await c.close();
      }
    });
  }

  it('a server that needs a login again still lists its last tools (from the catalogue)', async () => {
    await logout();
    const c = await connect('modern', 'http', d, [], false);
    try {
      expect(await c.tools()).toContain('locked__echo');
      expect((await c.call({ text: 'x' })) as Record<string, any>).toMatchObject({ isError: true });
    } finally {
      await c.close();
    }
  });
});
