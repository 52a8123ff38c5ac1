/**
 * Upstream faults over stdio, one daemon core (the /v1 API over a real registry): a crash mid-call, an
 * exit during the probe, a hang mid-call, one before answering anything, garbage on stdout, a 20 MB
 * answer, duplicated and unknown response ids, stdout closed while running. Each fault is hit several
 * times while a healthy server is called alongside. Every call is answered exactly once — a result or a
 * typed MCPX_* error, within its timeout — the faulty instance is replaced, and when the daemon core
 * stops, no process it started is left (counted from the stdio transport's own spawn reports).
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UPSTREAM_PROCESS_CHANNEL, type UpstreamProcessEvent } from '../../src/transports/spawn-tag.js';
import { harness, textOf, type Harness } from '../server/helpers.js';
import { tempDir } from '../support/real.js';
import { faultyEntry, isGone, pidOf } from './helpers.js';

const ROUNDS = Number(process.env['MCPX_FAULT_ROUNDS'] ?? 3);

interface Fault {
  server: string;
  tool: string;
  args?: Record<string, unknown>;
  timeoutMs?: number;
  /** What each faulty call must end in: a text result, or an error code. */
  expect: { text: string } | { code: string };
}

const FAULTS: Fault[] = [
  { server: 'crashes', tool: 'leak', args: { pad: 0, name: 'NOTHING' }, expect: { code: 'MCPX_TRANSPORT_CLOSED' } },
  { server: 'probeExit', tool: 'echo', args: { text: 'p' }, expect: { text: 'p era=legacy' } },
  { server: 'hangs', tool: 'hang', timeoutMs: 300, expect: { code: 'MCPX_REQUEST_TIMEOUT' } },
  { server: 'silent', tool: 'echo', args: { text: 's' }, expect: { code: 'MCPX_START_TIMEOUT' } },
  { server: 'garbage', tool: 'echo', args: { text: 'g' }, expect: { text: 'g era=legacy' } },
  { server: 'huge', tool: 'big', expect: { text: 'x'.repeat(20_000_000) } },
  { server: 'dups', tool: 'dup', args: { text: 'd' }, expect: { text: 'd era=legacy' } },
  { server: 'closesStdout', tool: 'close-stdout', timeoutMs: 10_000, expect: { code: 'MCPX_TRANSPORT_CLOSED' } },
];

let dir: { path: string; remove: () => Promise<void> };
let h: Harness;
const spawned = new Set<number>();
const onSpawn = (m: unknown) => {
  const e = m as UpstreamProcessEvent;
  if (e.type === 'spawn') spawned.add(e.pid);
};

beforeAll(async () => {
  subscribe(UPSTREAM_PROCESS_CHANNEL, onSpawn);
  dir = await tempDir('mcpx-faults-');
  h = await harness(dir.path, {
    healthy: faultyEntry('plain'),
    crashes: faultyEntry('plain'),
    probeExit: { fixture: 'raw', mode: 'exit-pre-init' },
    hangs: faultyEntry('plain'),
    silent: { fixture: 'raw', mode: 'silent', protocol: 'force-discover', mcpx: { startTimeout: '1500ms' } },
    garbage: { fixture: 'raw', mode: 'garbage' },
    huge: { fixture: 'raw', mode: 'huge', env: { HUGE_BYTES: '20000000' } },
    dups: faultyEntry('plain'),
    closesStdout: faultyEntry('plain'),
  });
});
afterAll(async () => {
  await h?.close();
  unsubscribe(UPSTREAM_PROCESS_CHANNEL, onSpawn);
  await dir?.remove();
});

async function call(server: string, tool: string, args: Record<string, unknown> = {}, timeoutMs?: number) {
  const res = await h.app.inject({ method: 'POST', url: '/v1/call', payload: { server, tool, args, ...(timeoutMs ? { timeoutMs } : {}) } });
  return { status: res.statusCode, body: res.json() as { ok: boolean; result?: Record<string, unknown>; error?: { code: string; message: string } } };
}

describe('stdio upstream faults', () => {
  it('every call answered once with a result or a typed error; instances replaced; healthy calls unaffected; no process left', async () => {
    let calls = 0;
    let answered = 0;
    const unexpected: string[] = [];
    /** Which process serves `server` now (whoami answers "era=legacy pid=<pid>"). */
    const pidServing = async (server: string) => {
      calls += 1;
      const r = await call(server, 'whoami');
      answered += 1;
      return pidOf(textOf(r.body as never));
    };
    // a fault that kills the process must leave the next call on a new one; the others on the same one
    const REPLACED: Record<string, boolean> = { crashes: true, closesStdout: true, hangs: false, dups: false };
    for (let round = 0; round < ROUNDS; round += 1) {
      const servedBy = new Map<string, number>();
      for (const server of Object.keys(REPLACED)) servedBy.set(server, await pidServing(server));
      const outcomes = await Promise.all([
        ...FAULTS.map(async (f) => {
          calls += 1;
          const r = await call(f.server, f.tool, f.args, f.timeoutMs);
          answered += 1;
          const got = r.body.ok ? { text: textOf(r.body as never) } : { code: r.body.error!.code };
          if (r.status !== 200 || JSON.stringify(got) !== JSON.stringify(f.expect))
            unexpected.push(`${f.server} round ${round}: ${r.status} ${JSON.stringify(got).slice(0, 200)} ${r.body.error?.message ?? ''}`);
          return got;
        }),
        ...Array.from({ length: 5 }, async (_, i) => {
          calls += 1;
          const r = await call('healthy', 'echo', { text: `h${round}.${i}` });
          answered += 1;
          if (textOf(r.body as never) !== `h${round}.${i} era=legacy`) unexpected.push(`healthy: ${JSON.stringify(r.body).slice(0, 200)}`);
        }),
      ]);
      expect(outcomes).toHaveLength(FAULTS.length + 5);
      // After each fault, the server still serves (a fresh instance where the old one died).
      for (const server of ['crashes', 'hangs', 'dups', 'closesStdout']) {
        calls += 1;
        const r = await call(server, 'echo', { text: 'after' });
        answered += 1;
        if (textOf(r.body as never) !== 'after era=legacy') unexpected.push(`${server} after: ${JSON.stringify(r.body).slice(0, 200)}`);
        const now = await pidServing(server);
        if ((now !== servedBy.get(server)) !== REPLACED[server])
          unexpected.push(
            `${server} round ${round}: served by pid ${servedBy.get(server)} before the fault, ${now} after (${REPLACED[server] ? 'a new process expected' : 'the same process expected'})`,
          );
      }
    }
    expect(unexpected).toEqual([]);
    expect(answered).toBe(calls);
    const processes = spawned.size;
    await h.close();
    const left = [...spawned].filter((pid) => !isGone(pid));
    console.log(
      `[faults] ${FAULTS.length} stdio faults × ${ROUNDS} rounds: ${calls} calls, ${answered} answered, lost ${calls - answered}; ${processes} processes started, ${left.length} left`,
    );
    expect(left).toEqual([]);
  }, 120_000);
});
