// Proves each fixture server (test/fixtures/*) behaves as documented, by driving it with raw
// newline-delimited JSON-RPC over a real child process. Every fixture runs with the wire-log
// preload, and every process started here is stopped by its own pid.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fixtureCommand, FIXTURES, RAW_MODES, type FixtureName, type RawMode } from './fixtures/index.js';
import { exitOf, methodsReceived, pids, readWireLog, received, runningPids, startOf, waitForWireLog } from './fixtures/wire-log-read.js';

// ---------------------------------------------------------------------------------------------
// helpers

const MODERN = '2026-07-28';
const SLOW_MS = 300;
const META = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'fixtures-test', version: '0.0.0' },
};
const metaWith = (version: string) => ({ ...META, 'io.modelcontextprotocol/protocolVersion': version });

type Id = string | number;
interface Msg {
  jsonrpc: '2.0';
  id?: Id | null;
  method?: string;
  params?: Record<string, unknown>;
  result?: any;
  error?: { code: number; message: string; data?: any };
}

const discover = (id: Id, meta: Record<string, unknown> = META): Msg => ({
  jsonrpc: '2.0',
  id,
  method: 'server/discover',
  params: { _meta: meta },
});
const initialize = (id: Id, protocolVersion = '2025-11-25', capabilities: Record<string, unknown> = {}): Msg => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion, capabilities, clientInfo: { name: 'fixtures-test', version: '0.0.0' } },
});
const initialized: Msg = { jsonrpc: '2.0', method: 'notifications/initialized' };
const req = (id: Id, method: string, params: Record<string, unknown> = {}): Msg => ({ jsonrpc: '2.0', id, method, params });
const modernReq = (id: Id, method: string, params: Record<string, unknown> = {}): Msg => req(id, method, { ...params, _meta: META });

const tmp = mkdtempSync(join(tmpdir(), 'mcpx-fixtures-'));
let logSeq = 0;
const newLog = () => join(tmp, `wire-${++logSeq}.jsonl`);

const live = new Set<Proc>();

class Proc {
  readonly child: ChildProcessWithoutNullStreams;
  readonly pid: number;
  readonly log: string;
  /** every stdout line, JSON or not */
  readonly lines: string[] = [];
  /** stdout lines that are not JSON */
  readonly nonJson: string[] = [];
  /** parsed messages, in arrival order, with arrival time */
  readonly messages: { msg: Msg; t: number }[] = [];
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private waiters: { pred: (m: Msg) => boolean; resolve: (m: Msg) => void }[] = [];
  private buf = '';

  constructor(name: FixtureName, opts: { mode?: RawMode; env?: Record<string, string> } = {}) {
    this.log = newLog();
    const cmd = fixtureCommand(name, { ...opts, log: this.log });
    this.child = spawn(cmd.command, cmd.args, { env: { ...process.env, ...cmd.env }, stdio: 'pipe' });
    this.pid = this.child.pid!;
    live.add(this);
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (chunk: string) => this.onData(chunk));
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (chunk: string) => (this.stderr += chunk));
    this.child.stdin.on('error', () => {}); // EPIPE when the fixture exited on purpose
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        live.delete(this);
        resolve({ code, signal });
      });
    });
  }

  private onData(chunk: string) {
    this.buf += chunk;
    let nl;
    while ((nl = this.buf.indexOf('\n')) !== -1) {
      const line = this.buf.slice(0, nl);
      this.buf = this.buf.slice(nl + 1);
      this.lines.push(line);
      let msg: Msg;
      try {
        msg = JSON.parse(line) as Msg;
      } catch {
        this.nonJson.push(line);
        continue;
      }
      this.messages.push({ msg, t: Date.now() });
      this.waiters = this.waiters.filter((w) => {
        if (!w.pred(msg)) return true;
        w.resolve(msg);
        return false;
      });
    }
  }

  send(...msgs: Msg[]) {
    for (const m of msgs) this.child.stdin.write(JSON.stringify(m) + '\n');
  }

  /** Resolves with the first message (past or future) matching pred. */
  waitFor(pred: (m: Msg) => boolean, timeoutMs = 20_000, what = 'message'): Promise<Msg> {
    const seen = this.messages.find((m) => pred(m.msg));
    if (seen) return Promise.resolve(seen.msg);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`${what}: none within ${timeoutMs} ms (pid ${this.pid}, stderr: ${this.stderr.trim()})`));
      }, timeoutMs);
      const waiter = {
        pred,
        resolve: (m: Msg) => {
          clearTimeout(timer);
          resolve(m);
        },
      };
      this.waiters.push(waiter);
    });
  }

  /** The response (result or error) to request id. */
  response(id: Id, timeoutMs = 20_000): Promise<Msg> {
    return this.waitFor((m) => m.id === id && m.method === undefined, timeoutMs, `response to id ${JSON.stringify(id)}`);
  }

  /** Sends a request and waits for its response. */
  async request(m: Msg, timeoutMs = 20_000): Promise<Msg> {
    this.send(m);
    return this.response(m.id as Id, timeoutMs);
  }

  /** Asserts that no response to id arrives within ms. */
  async expectNoResponse(id: Id, ms: number) {
    await new Promise((r) => setTimeout(r, ms));
    expect(this.messages.filter((m) => m.msg.id === id)).toEqual([]);
  }

  arrival(id: Id): number | undefined {
    return this.messages.find((m) => m.msg.id === id && m.msg.method === undefined)?.t;
  }

  /** Ends stdin and waits for the exit; escalates to SIGTERM/SIGKILL (this pid only). */
  async close(graceMs = 3000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.exitInfo) return this.exitInfo;
    this.child.stdin.end();
    const timeout = (ms: number) => new Promise<undefined>((r) => setTimeout(() => r(undefined), ms));
    let info = await Promise.race([this.exited, timeout(graceMs)]);
    if (!info) {
      this.child.kill('SIGTERM');
      info = await Promise.race([this.exited, timeout(1000)]);
    }
    if (!info) {
      this.child.kill('SIGKILL');
      info = await this.exited;
    }
    return info;
  }
}

afterAll(async () => {
  await Promise.all([...live].map((p) => p.close(500)));
  rmSync(tmp, { recursive: true, force: true });
});

/** Runs body with a fixture process and always stops it; returns the exit info. */
async function withFixture(name: FixtureName, opts: { mode?: RawMode; env?: Record<string, string> }, body: (p: Proc) => Promise<void>) {
  const p = new Proc(name, opts);
  try {
    await body(p);
  } finally {
    await p.close();
  }
  return p;
}

const text = (m: Msg) => m.result?.content?.[0]?.text as string | undefined;

const LEGACY_DISCOVER_ERROR = { code: -32601, message: 'Method not found' };
const SERVER_INFO_KEY = 'io.modelcontextprotocol/serverInfo';

/** Full legacy handshake; returns the initialize response. */
async function handshake(p: Proc, id: Id = 'init', version = '2025-11-25') {
  const r = await p.request(initialize(id, version));
  p.send(initialized);
  return r;
}

// ---------------------------------------------------------------------------------------------
// SDK fixtures

describe.concurrent('SDK fixtures', () => {
  it('legacy-v1: discover -> -32601, then initialize 2025-11-25 on the same pipe; echo/whoami say era=legacy', async () => {
    const p = await withFixture('legacy-v1', {}, async (p) => {
      expect((await p.request(discover(1))).error).toEqual(LEGACY_DISCOVER_ERROR);
      const init = await handshake(p, 2);
      expect(init.result).toEqual({
        protocolVersion: '2025-11-25',
        capabilities: { tools: { listChanged: true } },
        serverInfo: { name: 'fixture-legacy-v1', version: '1.0.0' },
      });
      const list = await p.request(req(3, 'tools/list'));
      expect(list.result.tools.map((t: { name: string }) => t.name)).toEqual(['echo', 'whoami']);
      const echo = await p.request(req(4, 'tools/call', { name: 'echo', arguments: { text: 'hi' } }));
      expect(echo.result).toEqual({ content: [{ type: 'text', text: 'hi era=legacy' }] });
      expect(text(await p.request(req(5, 'tools/call', { name: 'whoami', arguments: {} })))).toBe(`era=legacy pid=${p.pid}`);
      // A v1 server does not gate on the handshake: a modern request is served legacy-shaped.
      const modern = await p.request(modernReq(6, 'tools/call', { name: 'echo', arguments: { text: 'm' } }));
      expect(modern.result).toEqual({ content: [{ type: 'text', text: 'm era=legacy' }] });
    });
    expect(await p.exited).toEqual({ code: 0, signal: null });
  });

  it('dual-v2: discover -> DiscoverResult ["2026-07-28"], and initialize still pins legacy', async () => {
    await withFixture('dual-v2', {}, async (p) => {
      const d = await p.request(discover(1));
      expect(d.result).toEqual({
        supportedVersions: [MODERN],
        capabilities: { tools: { listChanged: true } },
        resultType: 'complete',
        ttlMs: 0,
        cacheScope: 'private',
        _meta: { [SERVER_INFO_KEY]: { name: 'fixture-v2', version: '1.0.0' } },
      });
      const init = await handshake(p, 2);
      expect(init.result).toEqual({
        protocolVersion: '2025-11-25',
        capabilities: { tools: { listChanged: true } },
        serverInfo: { name: 'fixture-v2', version: '1.0.0' },
      });
      const list = await p.request(req(3, 'tools/list'));
      expect(list.result.tools.map((t: { name: string }) => t.name)).toEqual(['echo', 'whoami', 'legacy_only_ask']);
      expect(list.result.resultType).toBeUndefined();
      expect(text(await p.request(req(4, 'tools/call', { name: 'echo', arguments: { text: 'hi' } })))).toBe('hi era=legacy');
      // after initialize, discover is an unknown method
      expect((await p.request(discover(5))).error).toEqual(LEGACY_DISCOVER_ERROR);
    });
  });

  it('dual-v2: a first _meta request pins modern (resultType, ttlMs, serverInfo); initialize then gets -32022', async () => {
    await withFixture('dual-v2', {}, async (p) => {
      const list = await p.request(modernReq(1, 'tools/list'));
      expect(list.result).toMatchObject({ resultType: 'complete', ttlMs: 0, cacheScope: 'private' });
      expect(list.result._meta[SERVER_INFO_KEY]).toEqual({ name: 'fixture-v2', version: '1.0.0' });
      expect(list.result.tools.map((t: { name: string }) => t.name)).toEqual(['echo', 'whoami']);
      const echo = await p.request(modernReq(2, 'tools/call', { name: 'echo', arguments: { text: 'hi' } }));
      expect(echo.result).toEqual({
        content: [{ type: 'text', text: 'hi era=modern' }],
        resultType: 'complete',
        _meta: { [SERVER_INFO_KEY]: { name: 'fixture-v2', version: '1.0.0' } },
      });
      expect((await p.request(initialize(3))).error).toEqual({
        code: -32022,
        message: 'Unsupported protocol version: 2025-11-25',
        data: { supported: [MODERN], requested: '2025-11-25' },
      });
    });
  });

  it('dual-v2: legacy_only_ask sends a real elicitation/create to a legacy caller', async () => {
    await withFixture('dual-v2', {}, async (p) => {
      await p.request(initialize(1, '2025-11-25', { elicitation: {} }));
      p.send(initialized);
      p.send(req(2, 'tools/call', { name: 'legacy_only_ask', arguments: {} }));
      const ask = await p.waitFor((m) => m.method === 'elicitation/create', 20_000, 'elicitation/create');
      expect(ask.params).toMatchObject({ message: 'What is your name?', mode: 'form' });
      expect(ask.params?._meta).toBeUndefined(); // push-style elicitInput carries no _meta
      p.send({ jsonrpc: '2.0', id: ask.id, result: { action: 'accept', content: { name: 'Ada' } } });
      expect(text(await p.response(2))).toBe('hello Ada era=legacy');
    });
  });

  it('modern-v2: discover -> DiscoverResult; initialize -> -32022; modern whoami says era=modern', async () => {
    await withFixture('modern-v2', {}, async (p) => {
      const d = await p.request(discover(1));
      expect(d.result).toMatchObject({ supportedVersions: [MODERN], resultType: 'complete', ttlMs: 0, cacheScope: 'private' });
      expect((await p.request(initialize(2))).error).toEqual({
        code: -32022,
        message: 'Unsupported protocol version: 2025-11-25',
        data: { supported: [MODERN], requested: '2025-11-25' },
      });
      const who = await p.request(modernReq(3, 'tools/call', { name: 'whoami', arguments: {} }));
      expect(text(who)).toBe(`era=modern pid=${p.pid}`);
      expect(who.result.resultType).toBe('complete');
    });
  });
});

// ---------------------------------------------------------------------------------------------
// raw.mjs modes

const ECHO_TOOL = {
  name: 'echo',
  description: 'Echo the text back with the era',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
};
const RAW_INFO = { name: 'fixture-raw', version: '1.0.0' };
const RAW_INIT = { protocolVersion: '2025-11-25', capabilities: { tools: { listChanged: false } }, serverInfo: RAW_INFO };
const RAW_DISCOVER = {
  supportedVersions: [MODERN],
  capabilities: { tools: {} },
  ttlMs: 0,
  cacheScope: 'private',
  resultType: 'complete',
  _meta: { [SERVER_INFO_KEY]: RAW_INFO },
};

/** After a legacy handshake: tools/list and echo are legacy-shaped. */
async function expectLegacyServing(p: Proc) {
  const list = await p.request(req('l', 'tools/list'));
  expect(list.result).toEqual({ tools: [ECHO_TOOL] });
  const echo = await p.request(req('e', 'tools/call', { name: 'echo', arguments: { text: 'hi' } }));
  expect(echo.result).toEqual({ content: [{ type: 'text', text: 'hi era=legacy' }] });
}

/** Modern requests are served statelessly with modern shapes. */
async function expectModernServing(p: Proc) {
  const list = await p.request(modernReq('ml', 'tools/list'));
  expect(list.result).toEqual({
    tools: [ECHO_TOOL],
    ttlMs: 0,
    cacheScope: 'private',
    resultType: 'complete',
    _meta: { [SERVER_INFO_KEY]: RAW_INFO },
  });
  const echo = await p.request(modernReq('me', 'tools/call', { name: 'echo', arguments: { text: 'hi' } }));
  expect(echo.result).toEqual({
    content: [{ type: 'text', text: 'hi era=modern' }],
    resultType: 'complete',
    _meta: { [SERVER_INFO_KEY]: RAW_INFO },
  });
}

describe.concurrent('raw.mjs modes', () => {
  it('every documented mode is covered here', () => {
    expect(Object.keys(RAW_MODES).sort()).toEqual(
      [
        'legacy',
        'invalid-params',
        'silent',
        'exit-pre-init',
        'catch-all',
        'slow-modern',
        'slow-dual',
        'v32022-legacy',
        'v32022-none',
        'v32022-retry',
        'modern-error',
        'missing-cap',
        'bad-legacy-version',
        'garbage',
        'huge',
        'crash-after-init',
        'exit-on-refused-init',
        'legacy-slow-init',
        'pinning-dual',
        'flood-list-changed',
        'flood-roots',
      ].sort(),
    );
  });

  it('legacy: discover -> -32601; initialize echoes a known legacy version', async () => {
    await withFixture('raw', { mode: 'legacy' }, async (p) => {
      expect((await p.request(discover(1))).error).toEqual(LEGACY_DISCOVER_ERROR);
      expect((await handshake(p, 2, '2025-06-18')).result.protocolVersion).toBe('2025-06-18');
      await expectLegacyServing(p);
      expect((await p.request(req(3, 'ping'))).result).toEqual({});
    });
  });

  it('invalid-params: requests before initialize -> -32602; initialize -> 2025-11-25', async () => {
    await withFixture('raw', { mode: 'invalid-params' }, async (p) => {
      expect((await p.request(discover(1))).error).toEqual({ code: -32602, message: 'Invalid params' });
      expect((await p.request(req(2, 'tools/list'))).error).toEqual({ code: -32602, message: 'Invalid params' });
      expect((await handshake(p, 3)).result).toEqual(RAW_INIT);
      await expectLegacyServing(p);
    });
  });

  it('silent: no answer at all before initialize, then legacy', async () => {
    await withFixture('raw', { mode: 'silent' }, async (p) => {
      p.send(discover(1), req(2, 'tools/list'));
      await p.expectNoResponse(1, 400);
      await p.expectNoResponse(2, 0);
      expect((await handshake(p, 3)).result).toEqual(RAW_INIT);
      await expectLegacyServing(p);
      expect(p.lines).toHaveLength(3);
    });
  });

  it('exit-pre-init: exits 1 with a stderr line on a pre-initialize request; initialize first works', async () => {
    const a = new Proc('raw', { mode: 'exit-pre-init' });
    a.send(discover(1));
    expect(await a.exited).toEqual({ code: 1, signal: null });
    expect(a.stderr).toMatch(/exit-pre-init/);
    expect(a.lines).toEqual([]);

    await withFixture('raw', { mode: 'exit-pre-init' }, async (p) => {
      expect((await handshake(p, 1)).result).toEqual(RAW_INIT);
      await expectLegacyServing(p);
    });
  });

  it('catch-all: {} for unknown requests including server/discover; initialize works', async () => {
    await withFixture('raw', { mode: 'catch-all' }, async (p) => {
      const d = await p.request(discover(1));
      expect(d).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
      expect((await handshake(p, 2)).result).toEqual(RAW_INIT);
      expect((await p.request(req(3, 'no/such/method'))).result).toEqual({});
      await expectLegacyServing(p);
    });
  });

  it('slow-modern: discover answered after SLOW_MS; initialize refused at once with -32022', async () => {
    await withFixture('raw', { mode: 'slow-modern', env: { SLOW_MS: String(SLOW_MS) } }, async (p) => {
      const t0 = Date.now();
      p.send(discover(1), initialize(2));
      const init = await p.response(2);
      expect(init.error).toEqual({
        code: -32022,
        message: 'Unsupported protocol version: 2025-11-25',
        data: { supported: [MODERN], requested: '2025-11-25' },
      });
      const d = await p.response(1);
      expect(d.result).toEqual(RAW_DISCOVER);
      expect(p.arrival(1)! - t0).toBeGreaterThanOrEqual(SLOW_MS - 20);
      expect(p.arrival(2)!).toBeLessThan(p.arrival(1)!); // refused before discover's answer
      await expectModernServing(p);
      // claim-less and wrong-version requests are refused
      expect((await p.request(req(3, 'tools/list'))).error?.code).toBe(-32022);
      expect((await p.request(req(4, 'tools/list', { _meta: metaWith('2025-11-25') }))).error).toEqual({
        code: -32022,
        message: 'Unsupported protocol version: 2025-11-25',
        data: { supported: [MODERN], requested: '2025-11-25' },
      });
    });
  });

  it('slow-dual: discover answered after SLOW_MS; initialize accepted but answered after discover', async () => {
    await withFixture('raw', { mode: 'slow-dual', env: { SLOW_MS: String(SLOW_MS) } }, async (p) => {
      const t0 = Date.now();
      p.send(discover(1), initialize(2));
      const init = await p.response(2);
      expect(init.result).toEqual(RAW_INIT);
      expect((await p.response(1)).result).toEqual(RAW_DISCOVER);
      expect(p.arrival(1)! - t0).toBeGreaterThanOrEqual(SLOW_MS - 20);
      expect(p.messages.map((m) => m.msg.id)).toEqual([1, 2]); // in order
      p.send(initialized);
      await expectLegacyServing(p);
    });
  });

  it('pinning-dual: slow to start; a discover pins the process, so the initialize behind it gets -32022', async () => {
    await withFixture('raw', { mode: 'pinning-dual', env: { SLOW_MS: String(SLOW_MS) } }, async (p) => {
      const t0 = Date.now();
      p.send(discover(1), initialize(2));
      expect((await p.response(1)).result).toEqual(RAW_DISCOVER);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(SLOW_MS - 20);
      expect((await p.response(2)).error?.code).toBe(-32022);
      await expectModernServing(p);
    });
  });

  it('pinning-dual: initialize first on a fresh process is served legacy', async () => {
    await withFixture('raw', { mode: 'pinning-dual', env: { SLOW_MS: '0' } }, async (p) => {
      expect((await p.request(initialize(1))).result).toEqual(RAW_INIT);
      p.send(initialized);
      await expectLegacyServing(p);
    });
  });

  it('slow-dual: a first _meta request pins modern instead', async () => {
    await withFixture('raw', { mode: 'slow-dual', env: { SLOW_MS: '0' } }, async (p) => {
      expect((await p.request(discover(1))).result).toEqual(RAW_DISCOVER);
      await expectModernServing(p);
      expect((await p.request(initialize(2))).error?.code).toBe(-32022);
    });
  });

  it('v32022-legacy: discover -> -32022 supported ["2025-06-18"]; initialize -> 2025-06-18', async () => {
    await withFixture('raw', { mode: 'v32022-legacy' }, async (p) => {
      expect((await p.request(discover(1))).error).toEqual({
        code: -32022,
        message: 'Unsupported protocol version: 2026-07-28',
        data: { supported: ['2025-06-18'], requested: MODERN },
      });
      expect((await handshake(p, 2)).result).toEqual({ ...RAW_INIT, protocolVersion: '2025-06-18' });
      await expectLegacyServing(p);
    });
  });

  it('v32022-none: discover -> -32022 supported ["2031-01-01"]; initialize refused with -32022 too', async () => {
    await withFixture('raw', { mode: 'v32022-none' }, async (p) => {
      expect((await p.request(discover(1))).error).toEqual({
        code: -32022,
        message: 'Unsupported protocol version: 2026-07-28',
        data: { supported: ['2031-01-01'], requested: MODERN },
      });
      expect((await p.request(initialize(2))).error).toEqual({
        code: -32022,
        message: 'Unsupported protocol version: 2025-11-25',
        data: { supported: ['2031-01-01'], requested: '2025-11-25' },
      });
    });
  });

  it('v32022-retry: -32022 {"supported":["2026-07-28"]} for other versions, DiscoverResult for 2026-07-28', async () => {
    await withFixture('raw', { mode: 'v32022-retry' }, async (p) => {
      expect((await p.request(discover(1, metaWith('2027-03-01')))).error).toEqual({
        code: -32022,
        message: 'Unsupported protocol version: 2027-03-01',
        data: { supported: [MODERN], requested: '2027-03-01' },
      });
      expect((await p.request(discover(2))).result).toEqual(RAW_DISCOVER);
      await expectModernServing(p);
      expect((await p.request(initialize(3))).error?.code).toBe(-32022);
    });
  });

  it('modern-error: discover -> -32020 "Header mismatch"; initialize would succeed', async () => {
    await withFixture('raw', { mode: 'modern-error' }, async (p) => {
      expect((await p.request(discover(1))).error).toEqual({ code: -32020, message: 'Header mismatch' });
      expect((await handshake(p, 2)).result).toEqual(RAW_INIT);
    });
  });

  it('missing-cap: discover -> -32021 requiredCapabilities {elicitation:{}}', async () => {
    await withFixture('raw', { mode: 'missing-cap' }, async (p) => {
      expect((await p.request(discover(1))).error).toEqual({
        code: -32021,
        message: 'Missing required client capability: elicitation',
        data: { requiredCapabilities: { elicitation: {} } },
      });
      expect((await p.request(modernReq(2, 'tools/list'))).error?.code).toBe(-32021);
      const withCap = { ...META, 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } };
      expect((await p.request(req(3, 'tools/list', { _meta: withCap }))).result.resultType).toBe('complete');
    });
  });

  it('bad-legacy-version: discover -> -32601; initialize -> protocolVersion 1999-01-01', async () => {
    await withFixture('raw', { mode: 'bad-legacy-version' }, async (p) => {
      expect((await p.request(discover(1))).error).toEqual(LEGACY_DISCOVER_ERROR);
      expect((await p.request(initialize(2))).result.protocolVersion).toBe('1999-01-01');
    });
  });

  it('garbage: non-JSON stdout lines and stderr noise around legacy answers', async () => {
    await withFixture('raw', { mode: 'garbage' }, async (p) => {
      expect((await p.request(discover(1))).error).toEqual(LEGACY_DISCOVER_ERROR);
      expect((await handshake(p, 2)).result).toEqual(RAW_INIT);
      await expectLegacyServing(p);
      expect(p.nonJson.length).toBeGreaterThanOrEqual(5); // startup + one before each of 4 answers
      expect(p.lines[0]).not.toMatch(/^\{/);
      expect(p.stderr).toMatch(/noise/);
    });
  });

  it('huge: tools big and big-error (isError) return one text content of HUGE_BYTES (default 10_000_000) characters', async () => {
    await withFixture('raw', { mode: 'huge' }, async (p) => {
      await handshake(p, 1);
      const list = await p.request(req(2, 'tools/list'));
      expect(list.result.tools.map((t: { name: string }) => t.name)).toEqual(['echo', 'big', 'big-error']);
      const big = await p.request(req(3, 'tools/call', { name: 'big', arguments: {} }), 15_000);
      expect(text(big)).toHaveLength(10_000_000);
      const bigError = await p.request(req(4, 'tools/call', { name: 'big-error', arguments: {} }), 15_000);
      expect(bigError.result.isError).toBe(true);
      expect(text(bigError)).toHaveLength(10_000_000);
    });
  });

  it('crash-after-init: exits with code 3 about 100 ms after notifications/initialized', async () => {
    const p = new Proc('raw', { mode: 'crash-after-init' });
    expect((await p.request(discover(1))).error).toEqual(LEGACY_DISCOVER_ERROR);
    const r = await p.request(initialize(2));
    expect(r.result).toEqual(RAW_INIT);
    const t0 = Date.now();
    p.send(initialized);
    expect(await p.exited).toEqual({ code: 3, signal: null });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(80);
  });

  it('exit-on-refused-init: modern-only; exits on initialize without writing anything', async () => {
    const p = new Proc('raw', { mode: 'exit-on-refused-init' });
    expect((await p.request(discover(1))).result).toEqual(RAW_DISCOVER);
    await expectModernServing(p);
    const before = p.lines.length;
    p.send(initialize(2));
    expect(await p.exited).toEqual({ code: 1, signal: null });
    expect(p.lines.length).toBe(before);
    expect(p.stderr).toBe('');
  });

  it('legacy-slow-init: discover -> -32601 at once; initialize answered after SLOW_MS', async () => {
    await withFixture('raw', { mode: 'legacy-slow-init', env: { SLOW_MS: String(SLOW_MS) } }, async (p) => {
      expect((await p.request(discover(1))).error).toEqual(LEGACY_DISCOVER_ERROR);
      const t0 = Date.now();
      expect((await handshake(p, 2)).result).toEqual(RAW_INIT);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(SLOW_MS - 20);
    });
  });

  it('every mode exits 0 when stdin ends', async () => {
    const modes = Object.keys(RAW_MODES) as RawMode[];
    // A pending slow answer must not keep the process alive: it is due long after the grace below, so a
    // process that waited for it would be stopped with SIGTERM. The grace is only a guard against a hang:
    // every mode starts at once, and on a busy machine starting and exiting takes seconds (no race).
    const procs = modes.map((mode) => new Proc('raw', { mode, env: { SLOW_MS: '300000' } }));
    procs.forEach((p, i) => modes[i]!.startsWith('slow') && p.send(discover(1)));
    const exits = await Promise.all(procs.map((p) => p.close(45_000)));
    expect(exits).toEqual(modes.map(() => ({ code: 0, signal: null })));
  }, 120_000);
});

// ---------------------------------------------------------------------------------------------
// wire log

describe.concurrent('wire-log preload', () => {
  it('records start, each received message (method, id, kind, version, _meta) and exit', async () => {
    const p = await withFixture('legacy-v1', {}, async (p) => {
      await p.request(discover(1));
      await handshake(p, 2);
      await p.request(modernReq(3, 'tools/list'));
      p.send({ jsonrpc: '2.0', id: 'x', result: {} }); // a (stray) response from the client
      await p.request(req(4, 'ping'));
    });
    const events = await waitForWireLog(p.log, (ev) => exitOf(ev, p.pid) !== undefined);
    expect(pids(events)).toEqual([p.pid]);
    expect(startOf(events, p.pid)).toMatchObject({ event: 'start', fixture: 'legacy-v1.mjs' });
    expect(startOf(events, p.pid)!.mode).toBeUndefined();
    expect(methodsReceived(events)).toEqual(['server/discover', 'initialize', 'notifications/initialized', 'tools/list', 'ping']);
    const recv = received(events, p.pid).map(({ pid: _p, t: _t, ...rest }) => rest);
    const metaKeys = Object.keys(META);
    expect(recv).toEqual([
      { event: 'recv', method: 'server/discover', id: 1, kind: 'request', version: MODERN, hasMeta: true, metaKeys },
      { event: 'recv', method: 'initialize', id: 2, kind: 'request', version: '2025-11-25', hasMeta: false },
      { event: 'recv', method: 'notifications/initialized', kind: 'notification', hasMeta: false },
      { event: 'recv', method: 'tools/list', id: 3, kind: 'request', version: MODERN, hasMeta: true, metaKeys },
      { event: 'recv', id: 'x', kind: 'response', hasMeta: false },
      { event: 'recv', method: 'ping', id: 4, kind: 'request', hasMeta: false },
    ]);
    expect(exitOf(events, p.pid)).toMatchObject({ code: 0 });
    expect(runningPids(events)).toEqual([]);
  });

  it('several processes share one log; partial lines are buffered; a signal death is recorded', async () => {
    const log = newLog();
    const spawnShared = (name: FixtureName, mode?: RawMode) => {
      const cmd = fixtureCommand(name, { log, ...(mode ? { mode } : {}) });
      const child = spawn(cmd.command, cmd.args, { env: { ...process.env, ...cmd.env }, stdio: 'pipe' });
      const exited = new Promise<{ code: number | null; signal: string | null }>((r) => child.on('exit', (code, signal) => r({ code, signal })));
      return { child, exited };
    };
    const a = spawnShared('dual-v2');
    const b = spawnShared('raw', 'silent');
    try {
      // one message split across two writes, then two messages in one write
      const line = JSON.stringify(discover(1));
      a.child.stdin.write(line.slice(0, 20));
      await new Promise((r) => setTimeout(r, 50));
      a.child.stdin.write(line.slice(20) + '\n' + JSON.stringify(initialize(2)) + '\n');
      b.child.stdin.write(JSON.stringify(initialize(1, '2025-06-18')) + '\n');
      await waitForWireLog(log, (ev) => received(ev).length === 3);
      a.child.stdin.end();
      b.child.kill('SIGTERM');
      expect(await a.exited).toEqual({ code: 0, signal: null });
      expect(await b.exited).toEqual({ code: null, signal: 'SIGTERM' });
    } finally {
      for (const x of [a, b]) if (x.child.exitCode === null && x.child.signalCode === null) x.child.kill('SIGKILL');
    }
    const events = readWireLog(log);
    const [pa, pb] = [a.child.pid!, b.child.pid!];
    expect(new Set(pids(events))).toEqual(new Set([pa, pb]));
    expect(startOf(events, pb)).toMatchObject({ fixture: 'raw.mjs', mode: 'silent' });
    expect(methodsReceived(events, pa)).toEqual(['server/discover', 'initialize']);
    expect(received(events, pb).map((e) => [e.method, e.version])).toEqual([['initialize', '2025-06-18']]);
    expect(exitOf(events, pa)).toMatchObject({ code: 0 });
    expect(exitOf(events, pb)).toMatchObject({ signal: 'SIGTERM' });
  });

  it('fixtureCommand builds node --import <preload> <fixture> [mode] with the log env', () => {
    const c = fixtureCommand('raw', { mode: 'silent', log: '/var/log/x.jsonl', env: { SLOW_MS: '1' } });
    expect(c).toEqual({
      command: process.execPath,
      args: ['--import', expect.stringMatching(/test\/fixtures\/wire-log\.mjs$/), FIXTURES.raw, 'silent'],
      env: { MCPX_FIXTURE_LOG: '/var/log/x.jsonl', SLOW_MS: '1' },
    });
    expect(fixtureCommand('dual-v2').args).toHaveLength(3);
    expect(fixtureCommand('dual-v2').env).toEqual({});
  });
});
