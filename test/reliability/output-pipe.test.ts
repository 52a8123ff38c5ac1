/**
 * Issue 36/37: every command writes all of its output before it exits, into a pipe as into a file, with the
 * right exit code. Into a pipe Node writes asynchronously; a `process.exit` with output still queued cut
 * `mcpx tools --json | jq` at 64 KiB. Through the built binary, against a fixture whose tool list is
 * ~220 KB (raw.mjs huge, HUGE_TOOLS) and whose `big` tool answers 2 MB:
 *
 * - `mcpx tools --json`, `mcpx call … big`, and `mcpx call … big-error --json` (exit 1 after 4 MB of
 *   JSON), each read through a real pipe by a child that reads slowly, and written into a file;
 * - `mcpx serve` whose client closes stdin while 10 MB of answers are still on their way: all arrive,
 *   then serve exits 0.
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeConfig } from '../server/helpers.js';
import { tempDir } from '../support/real.js';
import { collectEvents, type DaemonEvent } from '../support/sse-events.js';
import { cleanEnv, ForegroundDaemon, killAll, MCPX, until } from '../cli/helpers.js';

const BIG = 2_000_000;
const TOOLS = 200;

let dir: { path: string; remove: () => Promise<void> };
let env: NodeJS.ProcessEnv;
let socket: string;

beforeAll(async () => {
  dir = await tempDir('mcpx-output-pipe-');
  const state = join(dir.path, 'state');
  socket = join(state, 'daemon.sock');
  const config = writeConfig(dir.path, { h: { fixture: 'raw', mode: 'huge', env: { HUGE_BYTES: String(BIG), HUGE_TOOLS: String(TOOLS) } } });
  env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: config });
  await ForegroundDaemon.start(socket, [], { env });
}, 60_000);
afterAll(async () => {
  await killAll();
  await dir?.remove();
});

/** Reads its stdin slowly (a pause after each chunk, after a late start) into the file named by argv[1]. */
const SLOW_READER = `
const out = require('node:fs').createWriteStream(process.argv.at(-1));
setTimeout(() => {
  process.stdin.on('data', (c) => { out.write(c); process.stdin.pause(); setTimeout(() => process.stdin.resume(), 3); });
  process.stdin.on('end', () => out.end());
}, 300);
`;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * `mcpx …` with its stdout into a file (its stderr read here, through a pipe), or through a shell pipe
 * (`mcpx … | slow reader`, a real pipe) into a child that reads it slowly (its stderr then into a file).
 */
async function run(args: string[], into: 'file' | 'slow-pipe'): Promise<Run> {
  const base = join(dir.path, `run-${Date.now()}-${Math.random().toString(36).slice(2)}`);
  const files = { out: `${base}.out`, err: `${base}.err`, code: `${base}.code` };
  if (into === 'file') {
    const fd = openSync(files.out, 'w');
    const child = spawn(process.execPath, [MCPX, ...args], { env, cwd: dir.path, stdio: ['ignore', fd, 'pipe'] });
    closeSync(fd);
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    return { code, stdout: readFileSync(files.out, 'utf8'), stderr };
  }
  const script = '{ "$NODE" "$MCPX" "$@" 2>"$ERR_FILE"; echo $? >"$CODE_FILE"; } | "$NODE" -e "$READER" "$OUT_FILE"';
  const sh = spawn('/bin/sh', ['-c', script, 'sh', ...args], {
    env: { ...env, NODE: process.execPath, MCPX, READER: SLOW_READER, OUT_FILE: files.out, ERR_FILE: files.err, CODE_FILE: files.code },
    cwd: dir.path,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await new Promise((resolve) => sh.on('close', resolve));
  return { code: Number(readFileSync(files.code, 'utf8').trim()), stdout: readFileSync(files.out, 'utf8'), stderr: readFileSync(files.err, 'utf8') };
}

describe('#36 output into a pipe or a file is written whole before the exit', () => {
  for (const into of ['slow-pipe', 'file'] as const) {
    it(`mcpx tools --json (~220 KB) into a ${into}`, async () => {
      const r = await run(['tools', 'h', '--json'], into);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.length).toBeGreaterThan(200 * 1024);
      const body = JSON.parse(r.stdout) as { tools: Array<{ name: string }> };
      expect(body.tools.filter((t) => t.name.startsWith('pad-'))).toHaveLength(TOOLS);
    }, 60_000);

    it(`mcpx call h big (2 MB) into a ${into}`, async () => {
      const r = await run(['call', 'h', 'big', '{}'], into);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.length).toBe(BIG + 1);
      expect(r.stdout).toBe(`${'x'.repeat(BIG)}\n`);
    }, 60_000);

    it(`mcpx call h big-error --json (4 MB, exit 1) into a ${into}`, async () => {
      const r = await run(['call', 'h', 'big-error', '{}', '--json'], into);
      expect(r.code).toBe(1);
      const body = JSON.parse(r.stdout) as { ok: boolean; error: { code: string; data: { result: { content: Array<{ text: string }> } } } };
      expect(body.ok).toBe(false);
      expect(body.error.code).toBe('MCPX_TOOL_ERROR');
      expect(body.error.data.result.content[0]!.text).toHaveLength(BIG);
      // The one-line error on stderr (through a pipe too) is whole.
      expect(r.stderr.startsWith('mcpx: h/big-error: eee')).toBe(true);
      expect(r.stderr.endsWith('e\n')).toBe(true);
    }, 60_000);
  }
});

describe('#36 mcpx serve whose client closes stdin with answers still on their way', () => {
  it('writes every answer before it exits', async () => {
    const N = 5;
    // The daemon's record of each finished call (made once its answer has gone out) says when all N are answered.
    const events: DaemonEvent[] = [];
    const client = new Client('http://localhost', { socketPath: socket });
    const abort = new AbortController();
    const res = await client.request({ path: '/v1/events', method: 'GET', signal: abort.signal });
    const collecting = collectEvents(res.body, events);

    const child = spawn(process.execPath, [MCPX, 'serve'], { env, cwd: dir.path, stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    child.stdout.pause(); // nothing is read until every answer has left the daemon
    const lines = [
      { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      ...Array.from({ length: N }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name: 'h__big', arguments: {} } })),
    ];
    child.stdin.write(lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
    const finished = () => events.filter((e) => e.type === 'call.finished' && e.data.tool === 'big').length;
    await until(() => finished() >= N, 30_000, `${N} calls answered (${finished()} so far)`);
    abort.abort();
    await collecting;
    await client.close();

    child.stdin.end();
    // Nothing read for a while yet: serve must not exit with answers it has not written (it did, at once).
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 3_000))]);
    // Then read it, slowly: a pause of 5 ms after each chunk. (A 'data' listener, not read(): when the child
    // exits, node resumes its stdout, and what a paused reader had not read yet would go to no one.)
    let buf = '';
    const ids: unknown[] = [];
    const ended = new Promise((resolve) => child.stdout.once('end', resolve));
    child.stdout.on('data', (c: Buffer) => {
      buf += c.toString();
      for (let i: number; (i = buf.indexOf('\n')) !== -1; buf = buf.slice(i + 1)) {
        const m = JSON.parse(buf.slice(0, i)) as { id: unknown; result: { content?: Array<{ text: string }> } };
        if (m.id !== 0) expect(m.result.content![0]!.text).toHaveLength(BIG);
        ids.push(m.id);
      }
      child.stdout.pause();
      setTimeout(() => child.stdout.resume(), 5);
    });
    child.stdout.resume();
    const code = await exited;
    await ended;
    expect(code, stderr).toBe(0);
    expect(ids, `${buf.length} bytes of an unfinished line; ${stderr}`).toEqual([0, 1, 2, 3, 4, 5]);
  }, 90_000);
});
