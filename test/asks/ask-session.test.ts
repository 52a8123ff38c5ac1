/**
 * AskingSession (src/asks/ask-session.ts): every modern request declares its own caller's capabilities,
 * `{}` when the call names none, never the relayable ones the session declares at `initialize`. Listings
 * included: listTools/listAll do not go through request(), so they have their own overrides; so is the
 * listing a modern Streamable HTTP call makes first for its `Mcp-Param-*` headers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AskingSession } from '../../src/asks/ask-session.js';
import { StdioChannel } from '../../src/transports/stdio.js';
import { StreamableHttpChannel } from '../../src/transports/streamable-http.js';
import type { JsonRpcMessage } from '../../src/transports/types.js';
import type { InFlightCall } from '../../src/upstream/request-client.js';
import { fixtureCommand } from '../fixtures/index.js';
import { startHttpFixture } from '../fixtures/http/index.js';
import { tempDir } from '../support/real.js';

const CAPS = 'io.modelcontextprotocol/clientCapabilities';

let dir: { path: string; remove: () => Promise<void> };
beforeAll(async () => {
  dir = await tempDir('mcpx-asking-');
});
afterAll(async () => {
  await dir.remove();
});

describe('AskingSession in the modern era', () => {
  it("declares the caller's capabilities on every request, listings too ({} when none are named)", async () => {
    const cmd = fixtureCommand('dual-v2', { log: `${dir.path}/dual.log` });
    const sent: JsonRpcMessage[] = [];
    const session = new AskingSession({
      name: 'dual',
      definition: { command: cmd.command, args: cmd.args, env: cmd.env },
      preference: 'prefer-discover',
      probeTimeoutMs: 10_000,
      startTimeoutMs: 20_000,
      stopGraceMs: 500,
      channelFactory: () => {
        const ch = new StdioChannel<InFlightCall>({ command: cmd.command, args: cmd.args, env: cmd.env, stopGraceMs: 500 });
        const send = ch.send.bind(ch);
        ch.send = (m, c) => {
          sent.push(m);
          send(m, c);
        };
        return ch;
      },
    });
    try {
      const info = await session.start();
      expect(info.era).toBe('modern');
      const declared = (method: string) =>
        sent
          .filter((m) => 'method' in m && m.method === method)
          .map((m) => ((m as { params?: { _meta?: Record<string, unknown> } }).params?._meta ?? {})[CAPS]);
      await session.listTools();
      await session.listAll('tools');
      await session.listAll('tools', { capabilities: { roots: {} } });
      await session.request('tools/list', {});
      await session.callTool('echo', { text: 'hi' });
      await session.callTool('echo', { text: 'hi' }, { capabilities: { elicitation: { form: {} } } });
      expect(declared('tools/list')).toEqual([{}, {}, { roots: {} }, {}]);
      expect(declared('tools/call')).toEqual([{}, { elicitation: { form: {} } }]);
    } finally {
      await session.stop();
    }
  }, 60_000);

  it("over Streamable HTTP, the tools/list a call makes for its Mcp-Param headers declares that call's capabilities", async () => {
    const f = await startHttpFixture('v2-modern');
    const sent: JsonRpcMessage[] = [];
    const session = new AskingSession({
      name: 'remote',
      definition: { url: f.url },
      preference: 'prefer-discover',
      channelFactory: () => {
        const ch = new StreamableHttpChannel<InFlightCall>({ url: f.url });
        const send = ch.send.bind(ch);
        ch.send = (m, c, o) => {
          sent.push(m);
          send(m, c, o);
        };
        return ch;
      },
    });
    try {
      expect((await session.start()).era).toBe('modern');
      const declared = (method: string) =>
        sent
          .filter((m) => 'method' in m && m.method === method)
          .map((m) => ((m as { params?: { _meta?: Record<string, unknown> } }).params?._meta ?? {})[CAPS]);
      // The first call lists the tools (for their x-mcp-header annotations) before it is sent.
      await session.callTool('route', { region: 'eu' }, { capabilities: { sampling: {} } });
      expect(declared('tools/list')).toEqual([{ sampling: {} }]);
      expect(declared('tools/call')).toEqual([{ sampling: {} }]);
    } finally {
      await session.stop();
      await f.stop();
    }
  }, 60_000);
});
