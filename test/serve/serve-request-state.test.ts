/**
 * The requestState mcpx hands a 2026-07-28 caller between question rounds (over /mcp, on the wire):
 * signed, bound, expiring — a tampered, replayed or expired state is refused with -32602; the
 * upstream's own input key is kept. And a caller that goes away mid-question: the call is abandoned
 * and the upstream is told, and the session goes on serving.
 */
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { methodsReceived, readWireLog } from '../fixtures/wire-log-read.js';
import { killAll, MCPX, until } from '../cli/helpers.js';
import { startServeDaemon, stdioCaller, textOf } from './clients.js';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
  'io.modelcontextprotocol/clientInfo': { name: 'wire', version: '1' },
};

describe('requestState between question rounds, and a caller that goes away', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let env: NodeJS.ProcessEnv;
  let url: string;
  let token: string;
  let id = 1;

  beforeAll(async () => {
    const d = await startServeDaemon(
      'mcpx-serve-state-',
      {
        new: { fixture: 'asking-v2', protocol: 'force-discover' },
        old: { fixture: 'asking-v2', protocol: 'force-initialize' },
      },
      { MCPX_SERVE_QUESTION_TTL: '4s' },
    );
    dir = { path: d.dir, remove: d.remove };
    ({ env, url, token } = d);
  }, 60_000);
  afterAll(async () => {
    await killAll();
    await dir?.remove();
  });

  /** One 2026-07-28 tools/call on the wire; the JSON-RPC message that answers it. */
  async function call(name: string, extra: Record<string, unknown> = {}): Promise<any> {
    const body = { jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name, arguments: {}, ...extra, _meta: META } };
    const r = await request(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': name,
      },
      body: JSON.stringify(body),
    });
    const text = await r.body.text();
    if (String(r.headers['content-type']).startsWith('text/event-stream')) {
      const msgs = text
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => JSON.parse(l.slice(5)));
      return msgs.find((m) => m.id === body.id);
    }
    return JSON.parse(text);
  }

  const accept = { name: { action: 'accept', content: { name: 'Ada' } } };

  it("a round keeps the upstream's key; the state is signed (tampered: -32602) and good once (replayed: -32602)", async () => {
    const first = await call('new__ask_name');
    expect(first.result).toMatchObject({ resultType: 'input_required', inputRequests: { name: { method: 'elicitation/create' } } });
    const state: string = first.result.requestState;
    expect(typeof state).toBe('string');
    expect(state).not.toContain('ask-'); // opaque: no daemon-side id in the clear

    const tampered = state.slice(0, -3) + (state.endsWith('A') ? 'B' : 'A') + state.slice(-2);
    expect((await call('new__ask_name', { inputResponses: accept, requestState: tampered })).error).toMatchObject({ code: -32602 });
    // bound to the method and the tool: the same state on another tool is refused
    expect((await call('new__ask_url', { inputResponses: accept, requestState: state })).error).toMatchObject({ code: -32602 });

    const done = await call('new__ask_name', { inputResponses: accept, requestState: state });
    expect(textOf(done.result)).toBe('hello Ada era=modern');
    const replay = await call('new__ask_name', { inputResponses: accept, requestState: state });
    expect(replay.error).toMatchObject({ code: -32602 });
  }, 60_000);

  it("an expired state is refused (-32602); a legacy upstream's question reaches a modern caller the same way", async () => {
    const first = await call('old__ask_name');
    expect(first.result.resultType).toBe('input_required');
    const state = first.result.requestState;
    const key = Object.keys(first.result.inputRequests)[0]!;
    // serve.questionTtl is 4s here: well past it, the state no longer verifies.
    await new Promise((r) => setTimeout(r, 6_000));
    expect((await call('old__ask_name', { inputResponses: { [key]: accept.name }, requestState: state })).error).toMatchObject({ code: -32602 });

    const again = await call('old__ask_name');
    const k2 = Object.keys(again.result.inputRequests)[0]!;
    const done = await call('old__ask_name', { inputResponses: { [k2]: accept.name }, requestState: again.result.requestState });
    expect(textOf(done.result)).toBe('hello Ada era=legacy');
  }, 60_000);

  it('a caller that goes away mid-question: its call is abandoned, the upstream is told, the session goes on', async () => {
    const log = join(dir.path, 'old.wire.log');
    let asked!: () => void;
    const wasAsked = new Promise<void>((r) => (asked = r));
    const c = new ClientV1({ name: 'leaver', version: '1' }, { capabilities: { elicitation: {} } });
    c.setRequestHandler(ElicitRequestSchema, async () => {
      asked();
      return new Promise(() => {}); // never answers
    });
    const transport = new StdioV1({ command: process.execPath, args: [MCPX, 'serve'], env: env as Record<string, string>, stderr: 'pipe' });
    await c.connect(transport);
    const cancelsBefore = methodsReceived(readWireLog(log)).filter((m) => m === 'notifications/cancelled').length;
    void c.callTool({ name: 'old__ask_name', arguments: {} }, undefined, { timeout: 60_000 }).catch(() => undefined);
    await wasAsked;
    await c.close(); // the client exits with the question open
    await until(
      () => methodsReceived(readWireLog(log)).filter((m) => m === 'notifications/cancelled').length > cancelsBefore,
      20_000,
      'the upstream told of the cancellation',
    );

    const next = await stdioCaller('legacy', { env });
    try {
      // the same legacy stdio session serves the next caller (one that cannot answer: refused, not hung)
      expect(textOf(await next.callTool('old__ask_name'))).toMatch(/mcpx has no caller to ask \(elicitation\/create\)/);
      // roots on a shared legacy session are mcpx's own answer, whoever calls: none configured, none declared
      expect(textOf(await next.callTool('old__ask_roots'))).toMatch(
        /^Cannot request input 'roots' \(roots\/list\): the client on this 2025-era connection did not declare/,
      );
    } finally {
      await next.close();
    }
  }, 60_000);
});
