/**
 * Thousands of concurrent calls through one real daemon (started in-process: its Unix socket and loopback
 * TCP listeners, a real pool registry, real stdio upstreams), across several servers and both caller
 * eras, by both ways in: the /v1 API (over the socket; `X-Mcpx-Caller-Protocol` legacy or modern) and
 * MCP clients on `/mcp` (the official SDK v1 client, a 2025-11-25 caller, and the SDK v2 client pinned to
 * 2026-07-28). Each call carries a unique text the echo tool sends back, so every answer is matched to its
 * call: answered exactly once, by the right call. Pool limits are watched from the daemon's own events
 * (live instances per server and lane never above `max`). Memory: the heap after a warm-up, and again
 * after the burst once every caller has closed (both after a full GC).
 *
 * Used by concurrency.test.ts (npm test: one burst) and concurrency.stress.ts (npm run test:stress).
 */
import { Writable } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Agent, getGlobalDispatcher, request, setGlobalDispatcher } from 'undici';
import { startDaemon, type DaemonHandle } from '../../src/daemon/daemon.js';
import type { DaemonEvent } from '../../src/core/events.js';
import { fixtureCommand, type FixtureName } from '../fixtures/index.js';
import { writeConfig } from '../server/helpers.js';
import { freePort, httpCaller, textOf as mcpText, type McpCaller } from '../serve/clients.js';
import { tempDir } from '../support/real.js';
import { FAULTY, isGone } from './helpers.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Heap in use after a full collection (twice: weak callbacks run between). */
export async function heapAfterGc(): Promise<number> {
  for (let i = 0; i < 3; i += 1) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
  return process.memoryUsage().heapUsed;
}

export const MAX_PER_LANE = 3;
/** HTTP connections per listener (the socket's /v1, the TCP /mcp). */
export const CONNECTIONS = 400;
/** Sessions the /v1 calls to the per-session server use (more than MAX_PER_LANE: they queue). */
const SESSIONS = 8;

/**
 * Servers: two dual-era (one under `follow`, so legacy callers take its legacy lane), one legacy SDK
 * server, one hand-written legacy server per session and `exclusive` (each call holds its session's
 * instance alone; SESSIONS sessions want more instances than MAX_PER_LANE, so the limit is really reached).
 */
const SERVERS: Array<{ name: string; fixture?: FixtureName; faulty?: true; protocol?: string; sharing?: string; scope?: string }> = [
  { name: 'dualA', fixture: 'dual-v2' },
  { name: 'dualFollow', fixture: 'dual-v2', protocol: 'follow' },
  { name: 'legacyA', fixture: 'legacy-v1' },
  { name: 'handExclusive', faulty: true, sharing: 'exclusive', scope: 'session' },
];

export interface Burst {
  calls: number;
  answered: number;
  wrong: string[];
  byWay: Record<string, number>;
  maxLive: Record<string, number>;
  ms: number;
}

export interface ConcurrencyRig {
  daemon: DaemonHandle;
  /** Live instances per `server/lane` right now, and the most seen, from the daemon's events. */
  maxLive: Map<string, number>;
  spawned: Set<number>;
  burst(n: number, tag: string): Promise<Burst>;
  stop(): Promise<{ left: number[] }>;
}

export async function startRig(): Promise<ConcurrencyRig> {
  const dir = await tempDir('mcpx-conc-');
  const servers: Record<string, unknown> = {};
  for (const s of SERVERS) {
    const cmd = s.faulty ? { command: process.execPath, args: [FAULTY, 'plain'], env: {} } : fixtureCommand(s.fixture!);
    servers[s.name] = {
      ...cmd,
      ...(s.protocol ? { protocol: s.protocol } : {}),
      mcpx: {
        max: MAX_PER_LANE,
        ...(s.sharing ? { sharing: s.sharing } : {}),
        ...(s.scope ? { scope: s.scope } : {}),
        probeTimeout: '20s',
        startTimeout: '30s',
      },
    };
  }
  const config = writeConfig(dir.path, {}, { mcpServers: servers });
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MCPX_'))),
    MCPX_STATE_DIR: `${dir.path}/state`,
    MCPX_CONFIG: config,
    MCPX_DAEMON_PORT: String(port),
    MCPX_LOG_LEVEL: 'warn',
  };
  const sink = new Writable({ write: (_c, _e, cb) => cb() });
  const daemon = await startDaemon({ env, cwd: dir.path, logStream: sink, prettyLogs: false });

  const live = new Map<string, number>();
  const maxLive = new Map<string, number>();
  const spawned = new Set<number>();
  const unsubscribe = daemon.controller.hub.subscribe((e: DaemonEvent) => {
    const ev = e as { type: string; server?: string; lane?: string; pid?: number };
    if (ev.type !== 'server.start' && ev.type !== 'server.stop') return;
    const k = `${ev.server}/${ev.lane}`;
    const n = (live.get(k) ?? 0) + (ev.type === 'server.start' ? 1 : -1);
    live.set(k, n);
    maxLive.set(k, Math.max(maxLive.get(k) ?? 0, n));
    if (ev.type === 'server.start' && typeof ev.pid === 'number') spawned.add(ev.pid);
  });
  // At most CONNECTIONS per listener, as a client holds them: more simultaneous new connections than the
  // kernel's listen backlog (511 in Node) are reset before the daemon sees them (ECONNRESET at the caller).
  const agent = new Agent({ connect: { socketPath: daemon.socket }, connections: CONNECTIONS });
  const previousDispatcher = getGlobalDispatcher();
  setGlobalDispatcher(new Agent({ connections: CONNECTIONS })); // the SDK clients' fetch
  const url = `http://127.0.0.1:${port}/mcp`;

  async function v1Call(server: string, text: string, era: 'legacy' | 'modern', session: string): Promise<string> {
    const res = await request('http://localhost/v1/call', {
      dispatcher: agent,
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(era === 'legacy' ? { 'x-mcpx-caller-protocol': '2025-11-25' } : {}) },
      body: JSON.stringify({ server, tool: 'echo', args: { text }, session }),
    });
    const body = (await res.body.json()) as {
      ok: boolean;
      result?: { content?: Array<{ type: string; text?: string }> };
      error?: { code: string; message: string };
    };
    if (!body.ok) throw new Error(`${body.error?.code}: ${body.error?.message}`);
    return body.result?.content?.find((c) => c.type === 'text')?.text ?? '';
  }

  return {
    daemon,
    maxLive,
    spawned,
    async burst(n, tag) {
      const callers: McpCaller[] = [
        await httpCaller('legacy', { url, ...(daemon.token ? { token: daemon.token } : {}) }),
        await httpCaller('modern', { url, ...(daemon.token ? { token: daemon.token } : {}) }),
      ];
      const ways = ['v1-legacy', 'v1-modern', 'mcp-legacy', 'mcp-modern'] as const;
      const byWay: Record<string, number> = {};
      const wrong: string[] = [];
      let answered = 0;
      const t0 = Date.now();
      const answers = await Promise.all(
        Array.from({ length: n }, async (_, i) => {
          const way = ways[i % ways.length]!;
          const server = SERVERS[Math.floor(i / ways.length) % SERVERS.length]!.name;
          const text = `${tag}-${i}`;
          let got: string;
          try {
            if (way === 'v1-legacy') got = await v1Call(server, text, 'legacy', `s${i % SESSIONS}`);
            else if (way === 'v1-modern') got = await v1Call(server, text, 'modern', `s${i % SESSIONS}`);
            else got = mcpText(await callers[way === 'mcp-legacy' ? 0 : 1]!.callTool(`${server}__echo`, { text }, { timeout: 120_000 }));
          } catch (err) {
            const cause = (err as { cause?: { code?: string; message?: string } }).cause;
            got = `error: ${(err as Error).message}${cause ? ` (${cause.code ?? ''} ${cause.message ?? ''})` : ''}`;
          }
          answered += 1;
          byWay[way] = (byWay[way] ?? 0) + 1;
          // echo answers "<text> era=<era>": the text is this call's own, and only this call's
          if (!new RegExp(`^${text} era=(legacy|modern)$`).test(got)) wrong.push(`${way} ${server} ${text}: ${got.slice(0, 160)}`);
          return got;
        }),
      );
      const ms = Date.now() - t0;
      const distinct = new Set(answers.map((a) => a.split(' ')[0]));
      if (distinct.size !== n) wrong.push(`${n - distinct.size} answers were not distinct`);
      for (const c of callers) await c.close();
      return { calls: n, answered, wrong, byWay, maxLive: Object.fromEntries(maxLive), ms };
    },
    async stop() {
      unsubscribe();
      await agent.close();
      const mcpAgent = getGlobalDispatcher();
      setGlobalDispatcher(previousDispatcher);
      await mcpAgent.close();
      await daemon.stop('test over');
      const end = Date.now() + 10_000;
      while ([...spawned].some((p) => !isGone(p)) && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
      await dir.remove();
      return { left: [...spawned].filter((p) => !isGone(p)) };
    },
  };
}
