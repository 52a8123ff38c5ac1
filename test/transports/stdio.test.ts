import { afterEach, describe, it, expect } from 'vitest';
import { readFileSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { McpxError, SpawnError, TransportClosedError } from '../../src/errors.js';
import { RpcPeer } from '../../src/transports/rpc-peer.js';
import { StdioChannel, type StdioChannelOptions } from '../../src/transports/stdio.js';
import type { CloseInfo, JsonRpcMessage, JsonRpcNotification } from '../../src/transports/types.js';
import { recordingLogger } from '../support/recording-logger.js';

const HELPER = fileURLToPath(new URL('./helpers/child.mjs', import.meta.url));

const channels: StdioChannel[] = [];
const strayPids = new Set<number>();

afterEach(async () => {
  // Every channel a test opened is stopped here, even when the test failed half-way.
  await Promise.all(channels.splice(0).map((ch) => ch.close()));
  for (const pid of strayPids) {
    if (isAlive(pid)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  }
  strayPids.clear();
});

/** A process is alive when kill(pid, 0) succeeds and it is not a zombie. Zombies count as dead:
 *  in containers whose PID 1 does not reap orphans, a killed grandchild stays a zombie forever. */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return process.platform !== 'linux';
  }
}

function open(options: StdioChannelOptions) {
  const ch = new StdioChannel(options);
  channels.push(ch);
  const messages: JsonRpcMessage[] = [];
  const closes: CloseInfo[] = [];
  const waiters: Array<() => void> = [];
  let closeWaiter: (() => void) | undefined;
  ch.onMessage((m) => {
    messages.push(m);
    for (const w of waiters.splice(0)) w();
  });
  ch.onClose((info) => {
    closes.push(info);
    closeWaiter?.();
  });
  const notification = (method: string, ms = 10_000): Promise<JsonRpcNotification> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${method} within ${ms} ms`)), ms);
      const check = () => {
        const found = messages.find((m): m is JsonRpcNotification => 'method' in m && m.method === method);
        if (found) {
          clearTimeout(timer);
          resolve(found);
        } else waiters.push(check);
      };
      check();
    });
  const closed = (ms = 10_000): Promise<CloseInfo> =>
    new Promise((resolve, reject) => {
      if (closes[0]) return resolve(closes[0]);
      const timer = setTimeout(() => reject(new Error(`channel did not close within ${ms} ms`)), ms);
      closeWaiter = () => {
        clearTimeout(timer);
        resolve(closes[0]!);
      };
    });
  return { ch, messages, closes, notification, closed };
}

function helper(mode: string, extra: Partial<StdioChannelOptions> = {}, moreArgs: string[] = []) {
  return open({ command: process.execPath, args: [HELPER, mode, ...moreArgs], stopGraceMs: 200, ...extra });
}

/** Poll until `cond` holds; fail the test after `ms`. */
async function until(cond: () => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const methods = (messages: JsonRpcMessage[]) => messages.map((m) => ('method' in m ? m.method : `response:${String((m as { id: unknown }).id)}`));

describe('StdioChannel', () => {
  it('talks to a real echo server: requests answered, out-of-order replies correlated', async () => {
    const { ch, notification } = helper('echo', { logger: pino({ level: 'silent' }) });
    await ch.start();
    expect(typeof ch.pid).toBe('number');
    expect(ch.closed).toBe(false);
    const ready = await notification('ready');
    expect(ready.params?.pid).toBe(ch.pid);

    const peer = new RpcPeer(ch);
    const order: string[] = [];
    const slow = peer.request('slow', { ms: 150, tag: 'slow' }).then((r) => (order.push('slow'), r));
    const fast = peer.request('slow', { ms: 1, tag: 'fast' }).then((r) => (order.push('fast'), r));
    const echo = peer.request('say', { text: 'héllo 😀' });
    expect(peer.pendingCount).toBe(3);
    expect(await echo).toEqual({ method: 'say', params: { text: 'héllo 😀' } });
    expect(await Promise.all([slow, fast])).toEqual([{ tag: 'slow' }, { tag: 'fast' }]);
    expect(order).toEqual(['fast', 'slow']);
    expect(peer.pendingCount).toBe(0);
  });

  it('writes the messages sent in one turn in order (batches over 64 KiB too), and flushes them before close', async () => {
    const { ch, messages, notification } = helper('echo');
    await ch.start();
    await notification('ready');
    const big = 'x'.repeat(40_000);
    // Sent in one turn: more than one 64 KiB write's worth, answered in the order sent.
    for (let i = 0; i < 5; i++) ch.send({ jsonrpc: '2.0', id: i, method: 'say', params: { i, big } });
    await until(() => messages.length === 6, 'five answers');
    expect(messages.slice(1).map((m) => (m as { id: unknown }).id)).toEqual([0, 1, 2, 3, 4]);
    // Sent right before close(): still written before stdin's EOF, so still answered.
    ch.send({ jsonrpc: '2.0', id: 'last', method: 'say', params: {} });
    await ch.close();
    expect(methods(messages).at(-1)).toBe('response:last');
  });

  it('skips garbage lines (with a truncated warning) and keeps valid messages; stderr is only a tail', async () => {
    const { logger, records } = recordingLogger();
    const { ch, messages, notification, closes } = helper('garbage', { logger });
    await ch.start();
    await notification('valid/two');
    expect(methods(messages)).toEqual(['ready', 'valid/one', 'valid/two']);
    const warnings = records.filter((r) => r.level === 'warn');
    // not json, {"hello"}, 5000 x's, the batch, jsonrpc 1.0, the broken object
    expect(warnings).toHaveLength(6);
    for (const w of warnings) expect(String(w.obj.line).length).toBeLessThanOrEqual(200 + 30);
    expect(warnings.map((w) => w.obj.reason).join('\n')).toMatch(/batch/);
    expect(closes).toEqual([]);
    expect(ch.closed).toBe(false);
    // stderr noise does not hurt; it shows up in the tail (and at debug level)
    await until(() => ch.stderrTail.length === 2, 'two stderr lines');
    expect(ch.stderrTail).toEqual(['some warning on stderr', 'Debugger listening... more noise']);
    expect(records.some((r) => r.level === 'debug' && r.obj.stderr === 'some warning on stderr')).toBe(true);
  });

  it('receives a 10 MB message intact', async () => {
    const { ch, notification } = helper('big', {}, ['10000000']);
    await ch.start();
    const big = await notification('big');
    const params = big.params as { unit: string; repeat: number; text: string };
    expect(params.repeat).toBe(1_000_000);
    expect(Buffer.byteLength(params.text)).toBe(10_000_000);
    expect(params.text === params.unit.repeat(params.repeat)).toBe(true);
    await notification('after-big');
    expect(ch.closed).toBe(false);
  });

  it('closes with MCPX_MESSAGE_TOO_LARGE when a message exceeds maxMessageBytes, and stops the child', async () => {
    const { ch, closed, messages } = helper('big', { maxMessageBytes: 1024 * 1024 }, ['10000000']);
    await ch.start();
    const pid = ch.pid!;
    const info = await closed();
    expect(info.reason).toBe('error');
    expect(info.error).toBeInstanceOf(McpxError);
    expect((info.error as McpxError).code).toBe('MCPX_MESSAGE_TOO_LARGE');
    expect((info.error as McpxError).data).toEqual({ limitBytes: 1024 * 1024 });
    expect(ch.closed).toBe(true);
    expect(methods(messages)).toEqual(['ready']);
    expect(() => ch.send({ jsonrpc: '2.0', method: 'x' })).toThrow(TransportClosedError);
    await ch.close();
    expect(isAlive(pid)).toBe(false);
  });

  it('rejects a pending request with MCPX_TRANSPORT_CLOSED naming the exit code and the stderr tail', async () => {
    const { ch, closed } = helper('echo');
    await ch.start();
    const peer = new RpcPeer(ch);
    const err = await peer.request('exit', { code: 3, stderr: ['fatal: boom', 'at somewhere'] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransportClosedError);
    const e = err as TransportClosedError;
    expect(e.code).toBe('MCPX_TRANSPORT_CLOSED');
    expect(e.message).toMatch(/exit, exit code 3/);
    expect(e.message).toContain('while waiting for exit');
    expect(e.message).toContain('fatal: boom');
    expect(e.data).toMatchObject({ reason: 'exit', exitCode: 3, stderrTail: ['fatal: boom', 'at somewhere'] });
    const info = await closed();
    expect(info).toMatchObject({ reason: 'exit', code: 3, signal: null, stderrTail: ['fatal: boom', 'at somewhere'] });
    expect(peer.pendingCount).toBe(0);
    // later requests fail at once
    await expect(peer.request('ping')).rejects.toBeInstanceOf(TransportClosedError);
  });

  it('fails to spawn a missing command with SpawnError (never synchronously)', async () => {
    const { ch, closes } = open({ command: 'mcpx-definitely-not-a-command-4711' });
    let p: Promise<void> | undefined;
    expect(() => (p = ch.start())).not.toThrow();
    const err = await p!.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SpawnError);
    expect((err as SpawnError).code).toBe('MCPX_SPAWN_FAILED');
    expect((err as SpawnError).message).toContain('mcpx-definitely-not-a-command-4711');
    expect(closes.map((c) => c.reason)).toEqual(['spawn-failed']);
    expect(ch.closed).toBe(true);
    expect(ch.pid).toBeUndefined();
    await ch.close(); // safe
    expect(closes).toHaveLength(1);
  });

  it('fails to spawn in a missing cwd with a SpawnError that names the directory', async () => {
    const cwd = join(tmpdir(), 'mcpx-no-such-dir-4711');
    const { ch } = open({ command: process.execPath, args: ['-e', '0'], cwd });
    const err = await ch.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SpawnError);
    expect((err as SpawnError).message).toContain(cwd);
  });

  it('merges env over process.env and honours cwd', async () => {
    const cwd = realpathSync(tmpdir());
    const { ch } = helper('echo', { env: { MCPX_TEST_VALUE: 'from-config' }, cwd });
    await ch.start();
    const peer = new RpcPeer(ch);
    expect(await peer.request('env', { name: 'MCPX_TEST_VALUE' })).toEqual({ value: 'from-config', hasPath: true, cwd });
  });

  it('survives writes to a child that closed its stdin (EPIPE)', async () => {
    const { logger, records } = recordingLogger();
    const { ch, notification } = open({
      command: '/bin/sh',
      args: ['-c', `exec 0<&-; printf '%s\\n' '{"jsonrpc":"2.0","method":"ready"}'; sleep 30`],
      stopGraceMs: 200,
      logger,
    });
    await ch.start();
    await notification('ready');
    const big = 'x'.repeat(256 * 1024);
    ch.send({ jsonrpc: '2.0', method: 'noise', params: { big } }); // accepted; the EPIPE comes asynchronously
    await until(() => records.some((r) => r.level === 'debug' && /EPIPE/.test(String((r.obj.err as Error | undefined)?.message))), 'the EPIPE to be logged');
    // Once stdin is known dead, send says so with a typed error instead of writing into the void.
    expect(() => ch.send({ jsonrpc: '2.0', method: 'noise' })).toThrow(/closed its stdin/);
    expect(() => ch.send({ jsonrpc: '2.0', method: 'noise' })).toThrow(TransportClosedError);
    // The process itself is still there and is still stopped in an orderly way.
    expect(isAlive(ch.pid!)).toBe(true);
  });

  describe('close()', () => {
    it('(a) a child that exits on stdin EOF stops without signals', async () => {
      const { ch, notification, closes } = helper('echo', { stopGraceMs: 2000 });
      await ch.start();
      await notification('ready');
      const pid = ch.pid!;
      const t0 = Date.now();
      await ch.close();
      expect(Date.now() - t0).toBeLessThan(1500);
      expect(closes).toEqual([{ reason: 'stopped', code: 0, signal: null, stderrTail: [] }]);
      expect(isAlive(pid)).toBe(false);
      expect(() => ch.send({ jsonrpc: '2.0', method: 'x' })).toThrow(TransportClosedError);
    });

    it('(b) a child that ignores EOF is stopped by SIGTERM', async () => {
      const { ch, notification, closes } = helper('ignore-eof');
      await ch.start();
      await notification('ready');
      const pid = ch.pid!;
      const t0 = Date.now();
      await ch.close();
      expect(Date.now() - t0).toBeGreaterThanOrEqual(190);
      expect(closes).toMatchObject([{ reason: 'stopped', code: null, signal: 'SIGTERM' }]);
      expect(isAlive(pid)).toBe(false);
    });

    it('(c) a child that ignores SIGTERM is killed with SIGKILL', async () => {
      const { ch, notification, closes } = helper('ignore-term');
      await ch.start();
      await notification('ready');
      const pid = ch.pid!;
      const t0 = Date.now();
      await ch.close();
      expect(Date.now() - t0).toBeGreaterThanOrEqual(390);
      expect(closes).toMatchObject([{ reason: 'stopped', signal: 'SIGKILL' }]);
      expect(closes[0]!.stderrTail).toContain('ignoring SIGTERM');
      expect(isAlive(pid)).toBe(false);
    });

    it('(d) stops a grandchild through the process group', async () => {
      const { ch, notification } = helper('grandchild');
      await ch.start();
      const ready = await notification('ready');
      const { pid, grandchild } = ready.params as { pid: number; grandchild: number };
      strayPids.add(grandchild);
      expect(pid).toBe(ch.pid);
      expect(isAlive(pid)).toBe(true);
      expect(isAlive(grandchild)).toBe(true);
      await ch.close();
      expect(isAlive(pid)).toBe(false);
      expect(isAlive(grandchild)).toBe(false);
    });

    it('(d′) sweeps a grandchild left behind by a child that exited on EOF', async () => {
      const { ch, notification, closes } = helper('grandchild-eof');
      await ch.start();
      const ready = await notification('ready');
      const { pid, grandchild } = ready.params as { pid: number; grandchild: number };
      strayPids.add(grandchild);
      expect(isAlive(grandchild)).toBe(true);
      await ch.close();
      expect(closes).toMatchObject([{ reason: 'stopped', code: 0 }]);
      expect(isAlive(pid)).toBe(false);
      expect(isAlive(grandchild)).toBe(false);
    });

    it('is idempotent and fires onClose once', async () => {
      const { ch, closes } = helper('echo');
      await ch.start();
      await Promise.all([ch.close(), ch.close()]);
      await ch.close();
      expect(closes).toHaveLength(1);
      expect(closes[0]!.reason).toBe('stopped');
    });

    it('is safe after the child died on its own, which is reported as an exit', async () => {
      const { ch, closed, closes } = helper('echo');
      await ch.start();
      const peer = new RpcPeer(ch);
      await peer.request('exit', { code: 0 }).catch(() => undefined);
      const info = await closed();
      expect(info).toMatchObject({ reason: 'exit', code: 0 });
      await ch.close();
      expect(closes).toHaveLength(1);
    });

    it('before start() fires onClose as stopped and makes start() reject', async () => {
      const { ch, closes } = helper('echo');
      await ch.close();
      expect(closes.map((c) => c.reason)).toEqual(['stopped']);
      await expect(ch.start()).rejects.toBeInstanceOf(TransportClosedError);
      expect(ch.pid).toBeUndefined();
    });
  });
});
