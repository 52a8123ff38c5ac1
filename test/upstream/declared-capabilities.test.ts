/**
 * A session as the daemon's pools make it (clientCapabilities: what mcpx can relay, declared at
 * `initialize` and in the probe; capabilitiesWithoutRelay: `{}`): every modern request declares its own
 * call's relay's capabilities, `{}` when the call has no relay, never the relayable ones. Listings
 * included, and the listing a modern Streamable HTTP call makes first for its `Mcp-Param-*` headers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RELAYABLE_CAPABILITIES } from '../../src/call/question-relay.js';
import { StdioChannel } from '../../src/transports/stdio.js';
import { StreamableHttpChannel } from '../../src/transports/streamable-http.js';
import type { JsonRpcMessage } from '../../src/transports/types.js';
import type { CallHandling } from '../../src/call/call.js';
import { UpstreamSession } from '../../src/upstream/session.js';
import { fixtureCommand } from '../fixtures/index.js';
import { startHttpFixture } from '../fixtures/http/index.js';
import { tempDir } from '../support/real.js';
import { declaring } from '../support/relay.js';

const CAPS = 'io.modelcontextprotocol/clientCapabilities';
/** What the daemon's pool registry (createPoolRegistry) gives every session. */
const DAEMON = { clientCapabilities: { ...RELAYABLE_CAPABILITIES }, capabilitiesWithoutRelay: {} };

let dir: { path: string; remove: () => Promise<void> };
beforeAll(async () => {
  dir = await tempDir('mcpx-declared-');
});
afterAll(async () => {
  await dir.remove();
});

describe("the daemon's sessions in the modern era", () => {
  it("declare the call's relay's capabilities on every request, listings too ({} without a relay)", async () => {
    const cmd = fixtureCommand('dual-v2', { log: `${dir.path}/dual.log` });
    const sent: JsonRpcMessage[] = [];
    const session = new UpstreamSession({
      ...DAEMON,
      name: 'dual',
      definition: { command: cmd.command, args: cmd.args, env: cmd.env },
      preference: 'prefer-discover',
      probeTimeoutMs: 10_000,
      startTimeoutMs: 20_000,
      stopGraceMs: 500,
      channelFactory: () => {
        const ch = new StdioChannel<CallHandling>({ command: cmd.command, args: cmd.args, env: cmd.env, stopGraceMs: 500 });
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
      await session.listAll('tools', { relay: declaring({ roots: {} }) });
      await session.request('tools/list', {});
      await session.callTool('echo', { text: 'hi' });
      await session.callTool('echo', { text: 'hi' }, { relay: declaring({ elicitation: { form: {} } }) });
      expect(declared('tools/list')).toEqual([{}, {}, { roots: {} }, {}]);
      expect(declared('tools/call')).toEqual([{}, { elicitation: { form: {} } }]);
    } finally {
      await session.stop();
    }
  }, 60_000);

  it("over Streamable HTTP, the tools/list a call makes for its Mcp-Param headers declares that call's capabilities", async () => {
    const f = await startHttpFixture('v2-modern');
    const sent: JsonRpcMessage[] = [];
    const session = new UpstreamSession({
      ...DAEMON,
      name: 'remote',
      definition: { url: f.url },
      preference: 'prefer-discover',
      channelFactory: () => {
        const ch = new StreamableHttpChannel<CallHandling>({ url: f.url });
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
      await session.callTool('route', { region: 'eu' }, { relay: declaring({ sampling: {} }) });
      expect(declared('tools/list')).toEqual([{ sampling: {} }]);
      expect(declared('tools/call')).toEqual([{ sampling: {} }]);
    } finally {
      await session.stop();
      await f.stop();
    }
  }, 60_000);
});
