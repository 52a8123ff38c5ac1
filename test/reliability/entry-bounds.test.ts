/**
 * Through the built binary:
 *
 * - #16 100,000-deep tool arguments through `/mcp` and through `mcpx serve` are refused like `/v1/call`
 *   refuses them (MAX_JSON_DEPTH, naming the field) — not a 500 / a `MCPX_INTERNAL` stack overflow.
 * - #18 a 70 MB result from an upstream is reported as `MCPX_MESSAGE_TOO_LARGE` naming the 64 MiB limit,
 *   not as a process that exited while the call was in flight.
 * - #23 a config file nested 100,000 deep is a config error naming the file, not a stack overflow.
 */
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../src/front/json-depth.js';
import { writeConfig } from '../server/helpers.js';
import { tempDir } from '../support/real.js';
import { cleanEnv, ForegroundDaemon, killAll, MCPX, mcpx, trackPid } from '../cli/helpers.js';

const DEPTH = 100_000;
/** `{"d":{"d":…{"d":"leaf"}}}`, `levels` objects deep, as JSON text (JSON.stringify itself would overflow). */
const nested = (levels: number): string => `${'{"d":'.repeat(levels)}"leaf"${'}'.repeat(levels)}`;
const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' },
};
/** A 2026-07-28 tools/call whose `arguments` are `args` (JSON text). */
const callText = (id: number, tool: string, args: string): string =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: tool, arguments: '\u0000ARGS\u0000', _meta: META } }).replace(
    '"\\u0000ARGS\\u0000"',
    args,
  );

let dir: { path: string; remove: () => Promise<void> };
let env: NodeJS.ProcessEnv;
let socket: string;

beforeAll(async () => {
  dir = await tempDir('mcpx-entry-bounds-');
  const state = join(dir.path, 'state');
  socket = join(state, 'daemon.sock');
  const config = writeConfig(dir.path, {
    dual: { fixture: 'dual-v2' },
    huge: { fixture: 'raw', mode: 'huge', env: { HUGE_BYTES: String(70_000_000) } },
  });
  env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: config });
  await ForegroundDaemon.start(socket, [], { env });
});
afterAll(async () => {
  await killAll();
  await dir?.remove();
});

function postMcp(body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        socketPath: socket,
        path: '/mcp',
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'tools/call',
          'mcp-name': 'dual__echo',
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('#16 deep arguments on every entry', () => {
  it('/mcp: a 400 with -32602 naming params.arguments; 64 levels are served', async () => {
    const r = await postMcp(callText(1, 'dual__echo', nested(DEPTH)));
    expect(r.status, r.text).toBe(400);
    const body = JSON.parse(r.text);
    expect(body).toMatchObject({ jsonrpc: '2.0', id: 1, error: { code: -32602 } });
    expect(body.error.message).toContain(`params.arguments nests deeper than ${MAX_JSON_DEPTH} levels`);
    // At the limit the call goes through (the echo tool refuses the shape, as a tool result, not a protocol error).
    const ok = await postMcp(callText(2, 'dual__echo', `{"text":"x","d":${nested(MAX_JSON_DEPTH - 1)}}`));
    expect(ok.status, ok.text).toBe(200);
    expect(ok.text).not.toContain('nests deeper');
  });

  it('mcpx serve: the same -32602 error', async () => {
    const child = spawn(process.execPath, [MCPX, 'serve'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    trackPid(child.pid);
    let out = '';
    child.stdout.setEncoding('utf8');
    const line = new Promise<string>((resolve) =>
      child.stdout.on('data', (c: string) => {
        out += c;
        if (out.includes('\n')) resolve(out.slice(0, out.indexOf('\n')));
      }),
    );
    const exited = new Promise((r) => child.on('exit', r));
    child.stdin.write(`${callText(7, 'dual__echo', nested(DEPTH))}\n`);
    const answer = JSON.parse(await line);
    child.stdin.end();
    await exited;
    expect(answer).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32602 } });
    expect(answer.error.message).toContain(`params.arguments nests deeper than ${MAX_JSON_DEPTH} levels`);
  });
});

/** A 2026-07-28 tools/call to dual__echo whose `where` holds a 100,000-deep value (JSON text): an extra key, the id, or the whole message in an array. */
function deepOutside(where: 'key' | 'id' | 'array' | 'batch'): string {
  const call = callText(9, 'dual__echo', '{"text":"x"}');
  if (where === 'key') return `${call.slice(0, -1)},"extra":${nested(DEPTH)}}`;
  if (where === 'id') return call.replace('"id":9', `"id":${nested(DEPTH)}`);
  if (where === 'array') return `${'['.repeat(DEPTH)}${call}${']'.repeat(DEPTH)}`;
  return `[${call},${nested(DEPTH)}]`;
}

describe('issue 37 #16 deep values outside params, on both entries', () => {
  const cases = [
    ['an extra top-level key', 'key', 9, 'extra nests deeper'],
    ['the id', 'id', null, 'id nests deeper'],
    ['a top-level array around the message', 'array', null, 'the message (an array) nests deeper'],
    ['a batch with a deep member (its key named)', 'batch', null, 'Invalid Request: d nests deeper'],
  ] as const;

  it.each(cases)('/mcp, %s: HTTP 400 with -32600 naming the field (before: 500 -32603)', async (_label, where, id, says) => {
    const r = await postMcp(deepOutside(where));
    expect(r.status, r.text.slice(0, 300)).toBe(400);
    const body = JSON.parse(r.text);
    expect(body).toMatchObject({ jsonrpc: '2.0', id, error: { code: -32600 } });
    expect(body.error.message).toContain(`${says} than ${MAX_JSON_DEPTH} levels`);
  });

  it('mcpx serve: each answered -32600 with its field (the id null where it cannot be read); the stream serves on', async () => {
    const child = spawn(process.execPath, [MCPX, 'serve'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    trackPid(child.pid);
    let out = '';
    child.stdout.setEncoding('utf8');
    const lines = () => out.split('\n').filter((l) => l.length > 0);
    child.stdout.on('data', (c: string) => (out += c));
    const exited = new Promise((r) => child.on('exit', r));
    // A 2026-07-28 message needs no handshake: the key and the id outside params, then an echo served.
    child.stdin.write(`${deepOutside('key')}\n`);
    child.stdin.write(`${deepOutside('id')}\n`);
    child.stdin.write(`${callText(10, 'dual__echo', '{"text":"after"}')}\n`);
    const deadline = Date.now() + 30_000;
    while (lines().length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    child.stdin.end();
    await exited;
    const answers = lines().map((l) => JSON.parse(l));
    expect(answers.find((a) => a.id === 9)).toMatchObject({ error: { code: -32600, message: expect.stringContaining('extra nests deeper') } });
    expect(answers.find((a) => a.id === null)).toMatchObject({ error: { code: -32600, message: expect.stringContaining('id nests deeper') } });
    expect(JSON.stringify(answers.find((a) => a.id === 10)?.result)).toContain('after');
  }, 60_000);
});

describe('#18 an oversized message from an upstream', () => {
  it('is MCPX_MESSAGE_TOO_LARGE naming the limit, and the next call is served by a fresh process', async () => {
    const r = await mcpx(['call', 'huge', 'big', '{}', '--json'], { env, timeoutMs: 60_000 });
    expect(r.code).not.toBe(0);
    const out = `${r.stdout}${r.stderr}`;
    expect(out).toContain('MCPX_MESSAGE_TOO_LARGE');
    expect(out).toContain('64 MiB (67108864 bytes)');
    expect(out).not.toContain('exited while this call was in flight');
    const next = await mcpx(['call', 'huge', 'echo', '{"text":"after"}'], { env });
    expect(next.stdout).toBe('after era=legacy\n');
  }, 90_000);
});

describe('#23 a config file nested 100,000 deep', () => {
  it('is a config error naming the file, line and column and the limit', async () => {
    const file = join(dir.path, 'deep.json');
    writeFileSync(file, `{"mcpServers":{"a":{"command":"x","env":${nested(DEPTH)}}}}`);
    const r = await mcpx(['config', '--config', file], { env: { ...env, MCPX_CONFIG: file } });
    expect(r.code).not.toBe(0);
    expect(r.stderr).not.toContain('Maximum call stack');
    expect(r.stderr).toContain(`config ${file}: line 1, column `);
    expect(r.stderr).toContain('nests deeper than 64 levels');
  });
});
