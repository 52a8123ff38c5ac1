/**
 * Questions across eras, end to end: an upstream asks (elicitation form and URL, sampling, roots, two
 * rounds with requestState), and the caller who provoked it answers — in all four directions:
 * legacy upstream (server-to-client requests) or modern upstream (input_required), to a legacy caller
 * (the official SDK v1 client: real requests) or a 2026-07-28 caller (the SDK v2 client: input_required
 * results it fulfils and retries), through `mcpx serve` and `/mcp`.
 */
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, killAll, MCPX, until } from '../cli/helpers.js';
import { startServeDaemon, textOf } from './clients.js';

type Era = 'legacy' | 'modern';
type Way = 'stdio' | 'http';

/** How this test's person answers: by the question's message. */
interface Person {
  name: string;
  colour?: string;
  action?: 'accept' | 'decline' | 'cancel';
  seen: string[];
}

function elicitAnswer(p: Person, params: Record<string, any>): Record<string, unknown> {
  p.seen.push(String(params['message']));
  if (p.action && p.action !== 'accept') return { action: p.action };
  if (params['mode'] === 'url') return { action: 'accept' };
  const props = Object.keys(params['requestedSchema']?.properties ?? {});
  if (props.includes('colour')) return { action: 'accept', content: { colour: p.colour ?? 'teal' } };
  return { action: 'accept', content: { name: p.name } };
}

const SAMPLED = { role: 'assistant', content: { type: 'text', text: 'hi there' }, model: 'test-model' };
const ROOTS = { roots: [{ uri: 'file:///work/a', name: 'a' }] };
const CAPS = { elicitation: { form: {}, url: {} }, sampling: {}, roots: {} };

interface Caller {
  call(name: string, args?: Record<string, unknown>): Promise<Record<string, any>>;
  close(): Promise<void>;
}

async function connect(era: Era, way: Way, target: { env: NodeJS.ProcessEnv; url: string; token: string }, person: Person): Promise<Caller> {
  const info = { name: `person-${person.name}`, version: '1.0.0' };
  if (era === 'legacy') {
    const c = new ClientV1(info, { capabilities: CAPS });
    c.setRequestHandler(ElicitRequestSchema, async (req) => elicitAnswer(person, req.params as never) as never);
    c.setRequestHandler(CreateMessageRequestSchema, async () => SAMPLED as never);
    c.setRequestHandler(ListRootsRequestSchema, async () => ROOTS);
    const transport =
      way === 'stdio'
        ? new StdioV1({ command: process.execPath, args: [MCPX, 'serve'], env: target.env as Record<string, string>, stderr: 'pipe' })
        : new HttpV1(new URL(target.url), { requestInit: { headers: { authorization: `Bearer ${target.token}` } } });
    await c.connect(transport);
    return { call: (name, args = {}) => c.callTool({ name, arguments: args }, undefined, { timeout: 60_000 }) as never, close: () => c.close() };
  }
  const c = new ClientV2(info, { capabilities: CAPS, versionNegotiation: { mode: { pin: '2026-07-28' } } } as never);
  c.setRequestHandler('elicitation/create', async (req: any) => elicitAnswer(person, req.params) as never);
  c.setRequestHandler('sampling/createMessage', async () => SAMPLED as never);
  c.setRequestHandler('roots/list', async () => ROOTS as never);
  const transport =
    way === 'stdio'
      ? new StdioV2({ command: process.execPath, args: [MCPX, 'serve'], env: target.env as Record<string, string>, stderr: 'pipe' })
      : new HttpV2(new URL(target.url), { requestInit: { headers: { authorization: `Bearer ${target.token}` } } } as never);
  await c.connect(transport);
  return { call: (name, args = {}) => c.callTool({ name, arguments: args }, { timeout: 60_000 }) as never, close: () => c.close() };
}

describe('questions across eras through mcpx serve and /mcp', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let target: { env: NodeJS.ProcessEnv; url: string; token: string; socket: string };

  beforeAll(async () => {
    const d = await startServeDaemon('mcpx-serve-questions-', {
      old: { fixture: 'asking-v2', protocol: 'force-initialize' },
      new: { fixture: 'asking-v2', protocol: 'force-discover' },
      // dual-v2 offers legacy_only_ask (push-style elicitation) on legacy sessions only
      fol: { fixture: 'dual-v2', protocol: 'follow' },
      dis: { fixture: 'dual-v2', protocol: 'prefer-discover' },
    });
    dir = { path: d.dir, remove: d.remove };
    target = { env: d.env, url: d.url, token: d.token, socket: d.socket };
  }, 60_000);
  afterAll(async () => {
    await killAll();
    await dir?.remove();
  });

  const directions: Array<[Era, Way]> = [
    ['legacy', 'stdio'],
    ['modern', 'stdio'],
    ['legacy', 'http'],
    ['modern', 'http'],
  ];
  for (const [era, way] of directions) {
    for (const upstream of ['old', 'new'] as const) {
      const upEra = upstream === 'old' ? 'legacy' : 'modern';
      it(`a ${upEra} upstream asks a ${era} caller over ${way}: form, URL, sampling, roots, two rounds; decline and cancel`, async () => {
        const person: Person = { name: 'Ada', colour: 'green', seen: [] };
        const c = await connect(era, way, target, person);
        try {
          expect(textOf(await c.call(`${upstream}__ask_name`))).toBe(`hello Ada era=${upEra}`);
          expect(person.seen).toContain('What is your name?');
          expect(textOf(await c.call(`${upstream}__ask_url`))).toBe(`url accept era=${upEra}`);
          expect(textOf(await c.call(`${upstream}__ask_sample`))).toBe(`sampled hi there model=test-model era=${upEra}`);
          // A modern request's roots are its caller's. A shared legacy session has none to give (no
          // mcpx.roots) and declares none, never one caller's: the server's own SDK will not ask.
          const roots = textOf(await c.call(`${upstream}__ask_roots`));
          if (upEra === 'modern') expect(roots).toBe(`roots file:///work/a era=${upEra}`);
          else expect(roots).toMatch(/^Cannot request input 'roots' \(roots\/list\): the client on this 2025-era connection did not declare/);
          const two = textOf(await c.call(`${upstream}__ask_two`));
          expect(two).toMatch(new RegExp(`^name=Ada colour=green states=s0:"ü✓"\\|s1:"Ada":s0:"ü✓" era=${upEra}$`));
          person.action = 'decline';
          expect(textOf(await c.call(`${upstream}__ask_name`))).toBe(`ask_name decline era=${upEra}`);
          person.action = 'cancel';
          expect(textOf(await c.call(`${upstream}__ask_name`))).toBe(`ask_name cancel era=${upEra}`);
        } finally {
          await c.close();
        }
        // nothing left pending daemon-side
        await until(async () => (await api(target.socket, 'GET', '/v1/status')).status === 200, 5_000, 'status');
      }, 120_000);
    }
  }

  it('two callers with calls in flight on one shared session are each asked only their own question', async () => {
    for (const upstream of ['old', 'new'] as const) {
      const ada: Person = { name: 'Ada', seen: [] };
      const bob: Person = { name: 'Bob', seen: [] };
      const a = await connect('legacy', 'stdio', target, ada);
      const b = await connect('modern', 'http', target, bob);
      try {
        const [ra, rb] = await Promise.all([a.call(`${upstream}__ask_name`, { tag: 'A' }), b.call(`${upstream}__ask_name`, { tag: 'B' })]);
        expect(textOf(ra)).toMatch(/^hello Ada to=A era=/);
        expect(textOf(rb)).toMatch(/^hello Bob to=B era=/);
        expect(ada.seen).toEqual(['question for A']);
        expect(bob.seen).toEqual(['question for B']);
      } finally {
        await a.close();
        await b.close();
      }
    }
  }, 120_000);

  it('follow end to end: a legacy caller is asked over the legacy lane; a 2026-07-28 caller reaches the modern session; under prefer-discover legacy callers share it', async () => {
    const ada: Person = { name: 'Ada', seen: [] };
    const legacy = await connect('legacy', 'stdio', target, ada);
    const modern = await connect('modern', 'http', target, { name: 'Bob', seen: [] });
    try {
      expect(textOf(await legacy.call('fol__legacy_only_ask'))).toBe('hello Ada era=legacy');
      expect(ada.seen).toEqual(['What is your name?']);
      // the modern session has no such tool: the caller's mistake, as the upstream would say
      await expect(modern.call('fol__legacy_only_ask')).rejects.toThrow(/Unknown tool/);
      expect(textOf(await modern.call('fol__echo', { text: 'm' }))).toBe('m era=modern');
      await expect(legacy.call('dis__legacy_only_ask')).rejects.toThrow(/Unknown tool/);
      expect(textOf(await legacy.call('dis__echo', { text: 'l' }))).toBe('l era=modern');
    } finally {
      await legacy.close();
      await modern.close();
    }
  }, 60_000);

  it('a caller that declared nothing is never asked: a modern upstream says -32021, a legacy one is refused at once', async () => {
    const { stdioCaller } = await import('./clients.js');
    const modern = await stdioCaller('modern', { env: target.env });
    const legacy = await stdioCaller('legacy', { env: target.env });
    try {
      await expect(modern.callTool('new__ask_name')).rejects.toMatchObject({ code: -32021 });
      const r = await legacy.callTool('old__ask_name');
      expect(textOf(r)).toMatch(/mcpx has no caller to ask \(elicitation\/create\)/);
    } finally {
      await modern.close();
      await legacy.close();
    }
  }, 60_000);
});
