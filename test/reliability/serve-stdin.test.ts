/**
 * `mcpx serve`'s stdin against what a client should not send, through the built binary (`npm run build`
 * first), speaking raw JSON-RPC lines:
 *
 * - #15 one line over 10 MiB: answered with an error, and serve goes on answering; it exits when stdin ends.
 * - #23 a request before `initialize` (the SDK's "Server not initialized"), a second `initialize` ("Server
 *   already initialized"), a batch (not in MCP since 2025-06-18): each gets a JSON-RPC error, none is
 *   served or dropped in silence. A ping before `initialize` is still answered (the spec allows it).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, MCPX, until } from '../cli/helpers.js';
import { startServeDaemon, type ServeDaemon } from '../serve/clients.js';

let d: ServeDaemon;
const serves = new Set<ChildProcessWithoutNullStreams>();

beforeAll(async () => {
  d = await startServeDaemon('mcpx-serve-stdin-', { tools: { fixture: 'serve-tools' } }, { MCPX_LOG_LEVEL: 'warn' });
}, 60_000);
afterAll(async () => {
  for (const s of serves) if (s.exitCode === null && s.signalCode === null) s.kill('SIGKILL');
  await killAll();
  await d?.remove();
});

/** `mcpx serve` speaking raw lines: `send` writes one, `answer(id)` waits for the response to `id`. */
function serve() {
  const child = spawn(process.execPath, [MCPX, 'serve'], { env: d.env, cwd: d.dir, stdio: ['pipe', 'pipe', 'pipe'] });
  serves.add(child);
  const messages: Array<Record<string, any>> = [];
  let buf = '';
  let stderr = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (c: string) => {
    buf += c;
    let i: number;
    while ((i = buf.indexOf('\n')) !== -1) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line.trim() !== '') messages.push(JSON.parse(line));
    }
  });
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  child.stdin.on('error', () => undefined); // a serve that stopped reading
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    messages,
    exited,
    stderr: () => stderr,
    send(msg: unknown): Promise<void> {
      const line = typeof msg === 'string' ? msg : JSON.stringify(msg);
      return new Promise((resolve) => child.stdin.write(`${line}\n`, () => resolve()));
    },
    async answer(id: unknown, ms = 20_000): Promise<Record<string, any>> {
      await until(
        () => messages.some((m) => m.id === id && ('result' in m || 'error' in m)),
        ms,
        `an answer to id ${JSON.stringify(id)}; got ${JSON.stringify(messages).slice(0, 500)}; stderr ${stderr.slice(0, 500)}`,
      );
      return messages.find((m) => m.id === id && ('result' in m || 'error' in m))!;
    },
  };
}

const INIT = (id: number) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1.0.0' } },
});

describe('#15 a line over 10 MiB', () => {
  it('is answered with an error; serve goes on answering, then exits when stdin ends', async () => {
    const s = serve();
    await s.send(INIT(1));
    expect((await s.answer(1)).result.protocolVersion).toBe('2025-11-25');
    await s.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    const t0 = Date.now();
    const huge = JSON.stringify({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'tools__echo', arguments: { text: 'x'.repeat(11 * 1024 * 1024) } },
    });
    s.child.stdin.write(`${huge}\n`); // not awaited: a serve that stopped reading never takes it all
    const refused = await s.answer(2);
    console.log(`an ${huge.length}-byte line: answered in ${Date.now() - t0} ms with ${JSON.stringify(refused.error)}`);
    expect(refused.error.code).toBe(-32600);
    expect(refused.error.message).toMatch(/limit/);
    // Still listening: a normal call, and one just under the limit.
    await s.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'tools__echo', arguments: { text: 'after' } } });
    expect(JSON.stringify((await s.answer(3)).result)).toContain('after');
    await s.send({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'tools__echo', arguments: { text: 'y'.repeat(1024 * 1024) } } });
    expect((await s.answer(4)).result).toBeDefined();
    // A line that is not JSON gets the JSON-RPC parse error, and serve goes on.
    await s.send('{"jsonrpc":"2.0","id":5,');
    await until(() => s.messages.some((m) => m.error?.code === -32700), 10_000, 'a parse error');
    await s.send({ jsonrpc: '2.0', id: 6, method: 'ping' });
    expect((await s.answer(6)).result).toEqual({});
    s.child.stdin.end();
    const code = await Promise.race([s.exited, until(() => false, 15_000, 'serve to exit after stdin ended').then(() => 'hung')]);
    expect(code).toBe(0);
  }, 90_000);

  it('exits when stdin ends in the middle of an oversized line', async () => {
    const s = serve();
    await s.send(INIT(1));
    await s.answer(1);
    s.child.stdin.write('{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"x","arguments":{"t":"' + 'z'.repeat(12 * 1024 * 1024));
    s.child.stdin.end();
    const code = await Promise.race([s.exited, until(() => false, 15_000, 'serve to exit after stdin ended').then(() => 'hung')]);
    expect(code).toBe(0);
  }, 60_000);
});

describe('#23 what a legacy caller may not send', () => {
  it('a request before initialize, a second initialize and a batch each get the error the SDK gives', async () => {
    const s = serve();
    // Before initialize: a ping is fine, a request is not.
    await s.send({ jsonrpc: '2.0', id: 'p', method: 'ping' });
    expect((await s.answer('p')).result).toEqual({});
    await s.send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const early = await s.answer(1);
    expect(early.result).toBeUndefined();
    expect(early.error).toMatchObject({ code: -32000, message: expect.stringMatching(/not initialized/) });
    // A batch: JSON-RPC batches left MCP in 2025-06-18.
    await s.send([
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      { jsonrpc: '2.0', id: 3, method: 'ping' },
    ]);
    await until(() => s.messages.some((m) => m.id === null && m.error?.code === -32600), 10_000, 'the batch refused');
    expect(s.messages.find((m) => m.id === null && m.error?.code === -32600)!.error.message).toMatch(/batch/i);
    expect(s.messages.some((m) => m.id === 2 || m.id === 3)).toBe(false);
    // initialize, then initialize again.
    await s.send(INIT(4));
    expect((await s.answer(4)).result.protocolVersion).toBe('2025-11-25');
    await s.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    await s.send(INIT(5));
    expect((await s.answer(5)).error).toMatchObject({ code: -32600, message: expect.stringMatching(/already initialized/) });
    // And the session serves as before.
    await s.send({ jsonrpc: '2.0', id: 6, method: 'tools/list' });
    expect((await s.answer(6)).result.tools.map((t: { name: string }) => t.name)).toContain('tools__echo');
    s.child.stdin.end();
    expect(await s.exited).toBe(0);
  }, 60_000);

  it('a 2026-07-28 caller needs no initialize (server/discover first) and is not refused', async () => {
    const s = serve();
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    await s.send({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta } });
    const r = await s.answer(1);
    expect(r.error).toBeUndefined();
    expect(r.result.tools.map((t: { name: string }) => t.name)).toContain('tools__echo');
    s.child.stdin.end();
    expect(await s.exited).toBe(0);
  }, 60_000);
});
