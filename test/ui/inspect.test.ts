/**
 * `mcpx daemon --inspect`: every actor reaches the Stately inspector's relay on 127.0.0.1, and nothing
 * secret does. A sentinel secret sits in a server's env (and the server echoes it in its answers) and
 * in another server's headers; it must appear neither in the relayed stream nor in the page's data.
 * Stopping ends the inspector's connection loop, even while it is waiting to reconnect.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActor, createMachine } from 'xstate';
import { WebSocket } from 'ws';
import { startDaemon, type DaemonHandle } from '../../src/daemon/daemon.js';
import { startStatelyInspector } from '../../src/inspect/stately.js';
import { packageRoot } from '../../src/package-info.js';
import { api, cleanEnv, ForegroundDaemon, killAll, mcpx, until } from '../cli/helpers.js';
import { tempDir } from '../support/real.js';

const SENTINEL = 'sEnTiNeL-env-4d1f0b8e93';
const SENTINEL_HEADER = 'sEnTiNeL-hdr-77c2a51e0d';

/** A legacy stdio server that answers with its env's secret inside (serverInfo, instructions, tools). */
const LEAKY_SERVER = `
import { createInterface } from 'node:readline';
const secret = process.env.SENTINEL_TOKEN ?? '';
const send = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  let m; try { m = JSON.parse(line); } catch { return; }
  if (m.id === undefined) return;
  if (m.method === 'initialize') return send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'leaky', version: '1.0.0+' + secret }, instructions: 'the token is ' + secret } });
  if (m.method === 'tools/list') return send({ jsonrpc: '2.0', id: m.id, result: { tools: [{ name: 'echo', description: 'leaks ' + secret, inputSchema: { type: 'object' } }] } });
  send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found: ' + m.method + ' ' + secret } });
}).on('close', () => process.exit(0));
`;

class Sink extends Writable {
  text = '';
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    this.text += chunk.toString('utf8');
    cb();
  }
}

describe('mcpx daemon --inspect', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let daemon: DaemonHandle;
  const frames: string[] = [];
  let viewer: WebSocket | undefined;
  let inspectorUrl: string;
  const logs = new Sink();

  beforeAll(async () => {
    dir = await tempDir('mcpx-inspect-');
    const server = join(dir.path, 'leaky.mjs');
    writeFileSync(server, LEAKY_SERVER);
    const config = join(dir.path, 'mcpx.json');
    writeFileSync(
      config,
      JSON.stringify({
        mcpServers: {
          leaky: { command: process.execPath, args: [server], env: { SENTINEL_TOKEN: SENTINEL }, mcpx: { probeTimeout: '20s', startTimeout: '60s' } },
          web: { url: 'http://127.0.0.1:9/mcp', headers: { Authorization: `Bearer ${SENTINEL_HEADER}` }, mcpx: { startTimeout: '60s' } },
        },
      }),
    );
    const env = cleanEnv(dir.path, { MCPX_STATE_DIR: join(dir.path, 'state') });
    daemon = await startDaemon({ configFlag: config, env, cwd: dir.path, inspect: { port: 0 }, logStream: logs, prettyLogs: false });
    const login = await api(daemon.socket, 'POST', '/v1/ui/login');
    inspectorUrl = login.body.inspector;
  }, 60_000);

  afterAll(async () => {
    viewer?.terminate();
    await daemon?.stop();
    await dir?.remove();
  });

  it('relays every pool and session actor on 127.0.0.1, with its machine, and no secret', async () => {
    expect(inspectorUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/#[A-Za-z0-9_-]+$/);
    const u = new URL(inspectorUrl);
    viewer = new WebSocket(`ws://${u.host}/relay?role=viewer&token=${encodeURIComponent(u.hash.slice(1))}`);
    viewer.on('message', (m) => frames.push(m.toString()));
    await new Promise<void>((resolve, reject) => {
      viewer!.once('open', () => resolve());
      viewer!.once('error', reject);
    });
    // the servers start on first use
    const leaky = await daemon.controller.tools('leaky', {}, { fresh: true });
    expect(leaky.ok).toBe(true);
    const web = await daemon.controller.tools('web', {}, { fresh: true }).catch((e: unknown) => e);
    expect(web).toBeDefined();

    const parsed = () =>
      frames.map(
        (f) =>
          JSON.parse(f) as {
            type: string;
            sessionId: string;
            definition?: string;
            snapshot?: { value?: unknown; context?: Record<string, unknown> };
            event?: { type: string; answer?: Record<string, unknown> };
          },
      );
    await until(
      () => parsed().some((f) => f.sessionId === 'session:leaky:i1' && f.type === '@xstate.snapshot' && f.snapshot?.value === 'ready'),
      30_000,
      'the leaky session ready in the relayed stream',
    );
    await until(
      () => parsed().some((f) => f.sessionId === 'session:web:i1' && f.type === '@xstate.snapshot' && f.snapshot?.value === 'failed'),
      30_000,
      'the web session failed in the relayed stream',
    );
    const all = parsed();
    const actors = new Set(all.filter((f) => f.type === '@xstate.actor').map((f) => f.sessionId));
    expect([...actors].sort()).toEqual(expect.arrayContaining(['pool:leaky', 'pool:web', 'session:leaky:i1', 'session:web:i1']));
    expect(all.find((f) => f.type === '@xstate.actor' && f.sessionId === 'session:leaky:i1')!.definition).toContain('"id":"session"');
    expect(
      all.some(
        (f) =>
          f.type === '@xstate.event' &&
          f.sessionId === 'session:leaky:i1' &&
          f.event?.type.startsWith('verdict.') &&
          f.event.answer &&
          'result' in f.event.answer,
      ),
    ).toBe(true);

    // The daemon did see the secret (the server echoed it) …
    expect(JSON.stringify(daemon.controller.pool('leaky').upstreamInfo())).toContain(SENTINEL);
    // … and it reached neither the inspector nor the page's data.
    const ready = all.find((f) => f.sessionId === 'session:leaky:i1' && f.type === '@xstate.snapshot' && f.snapshot?.value === 'ready')!;
    expect(String(ready.snapshot!.context!['instructions'])).toContain('<redacted>');
    const stream = frames.join('\n');
    expect(stream).not.toContain(SENTINEL);
    expect(stream).not.toContain(SENTINEL_HEADER);
    expect(stream).not.toMatch(/"(env|headers)":\s*\{/);
    const page = await api(daemon.socket, 'GET', '/ui/api/state');
    expect(page.status).toBe(200);
    expect(page.text).not.toContain(SENTINEL);
    expect(page.text).not.toContain(SENTINEL_HEADER);
    expect(page.body.servers.map((s: { server: string }) => s.server)).toEqual(['leaky', 'web']);
    expect(logs.text).not.toContain(SENTINEL);
  }, 90_000);

  it('refuses relay connections without the token, or from another origin', async () => {
    const u = new URL(inspectorUrl);
    const attempt = (url: string, headers: Record<string, string> = {}) =>
      new Promise<string>((resolve) => {
        const ws = new WebSocket(url, { headers });
        ws.once('open', () => {
          ws.terminate();
          resolve('open');
        });
        ws.once('unexpected-response', (_req, res) => resolve(String(res.statusCode)));
        ws.once('error', () => resolve('error'));
      });
    expect(await attempt(`ws://${u.host}/relay?role=viewer`)).toBe('401');
    expect(await attempt(`ws://${u.host}/relay?role=viewer&token=wrong`)).toBe('401');
    expect(await attempt(`ws://${u.host}/relay?role=viewer&token=${u.hash.slice(1)}`, { origin: 'http://evil.example' })).toBe('403');
  });
});

describe('the inspector connection loop', () => {
  it('stop() ends it, even while it waits to reconnect to a relay that went away', async () => {
    const inspector = await startStatelyInspector({ port: 0, retryMs: 60_000 });
    const actor = createActor(createMachine({ id: 'toy', initial: 'a', states: { a: { on: { go: 'b' } }, b: {} } }), {
      inspect: (ev) => inspector.inspect(ev, { actor: 'pool', server: 'toy' }),
    });
    actor.start();
    await until(() => inspector.connection().open, 10_000, 'the inspector connected to its relay');
    inspector.dropConnections();
    await until(() => inspector.connection().retryPending, 10_000, 'a reconnect scheduled');
    const attempts = inspector.connection().attempts;
    await inspector.stop();
    expect(inspector.connection()).toEqual({ open: false, retryPending: false, stopped: true, attempts });
    actor.send({ type: 'go' }); // nothing reopens it
    expect(inspector.connection()).toEqual({ open: false, retryPending: false, stopped: true, attempts });
    actor.stop();
  });
});

describe('without --inspect', () => {
  it('nothing of the inspector is imported statically: @statelyai/inspect and ws only in src/inspect/stately.ts, which is only imported dynamically', () => {
    const src = join(packageRoot(), 'src');
    const files: string[] = [];
    const walk = (d: string): void => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        if (e.isDirectory()) walk(join(d, e.name));
        else if (e.name.endsWith('.ts')) files.push(join(d, e.name));
      }
    };
    walk(src);
    const staticImport = (text: string, spec: RegExp) => text.split('\n').some((l) => /^\s*import\s+(?!type\b)/.test(l) && spec.test(l));
    const offenders = files.filter((f) => {
      const rel = relative(src, f);
      const text = readFileSync(f, 'utf8');
      if (rel === join('inspect', 'stately.ts')) return false;
      return staticImport(text, /from '(@statelyai\/inspect[^']*|ws)'/) || staticImport(text, /inspect\/stately\.js'/);
    });
    expect(offenders).toEqual([]);
  });
});

describe('mcpx daemon --inspect (the command)', () => {
  it('runs the demo with its actors on the relay, and exits cleanly on SIGTERM', async () => {
    const dir = await tempDir('mcpx-inspect-cli-');
    try {
      const state = join(dir.path, 'state');
      const env = cleanEnv(dir.path, { MCPX_STATE_DIR: state });
      const daemon = await ForegroundDaemon.start(join(state, 'daemon.sock'), ['--inspect=0'], { env, timeoutMs: 60_000 });
      const r = await mcpx(['ui', '--json'], { env, timeoutMs: 60_000 });
      expect(r.code, r.stderr).toBe(0);
      const inspector = new URL(JSON.parse(r.stdout).inspector as string);
      expect(inspector.hostname).toBe('127.0.0.1');
      const ws = new WebSocket(`ws://${inspector.host}/relay?role=viewer&token=${encodeURIComponent(inspector.hash.slice(1))}`);
      const ids = new Set<string>();
      ws.on('message', (m) => ids.add((JSON.parse(m.toString()) as { sessionId: string }).sessionId));
      await until(
        () => ['session:legacy-only:i1', 'session:dual:i1', 'session:modern-only:i1', 'pool:dual'].every((id) => ids.has(id)),
        60_000,
        "the demo's actors on the relay",
      );
      ws.terminate();
      const exit = await daemon.stop('SIGTERM');
      expect(exit).toEqual({ code: 0, signal: null });
    } finally {
      await killAll();
      await dir.remove();
    }
  }, 120_000);
});
