/**
 * Helpers for tests against real fixture processes: a temp folder per test, a session over a
 * fixture with its wire log, and what the log says was received.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SessionPreference } from '../../src/machines/preference.js';
import { UpstreamSession, type UpstreamSessionOptions } from '../../src/upstream/session.js';
import { fixtureCommand, type FixtureName, type RawMode } from '../fixtures/index.js';
import { methodsReceived, pids, readWireLog, received, waitForWireLog, type WireRecvEvent } from '../fixtures/wire-log-read.js';

export async function tempDir(prefix = 'mcpx-test-'): Promise<{ path: string; remove: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

export interface FixtureSpec {
  fixture: FixtureName;
  mode?: RawMode;
  env?: Record<string, string>;
}

export interface RealSession {
  session: UpstreamSession;
  log: string;
  /** Every process the session started, in order, with the methods each received. */
  wire(): { pids: number[]; methods: string[][]; requests: WireRecvEvent[][] };
  /** The wire once the last process has received `method` (notifications are not answered, so wait for them). */
  wireAfter(method: string): Promise<{ pids: number[]; methods: string[][]; requests: WireRecvEvent[][] }>;
}

/**
 * A session over a real fixture process, logging its wire to `log`. Sessions given the same `log`
 * have the same process definition (so the same era-cache key): a test's first and cached starts
 * share one log and are told apart by pid.
 */
export function realSession(log: string, spec: FixtureSpec, preference: SessionPreference, extra: Partial<UpstreamSessionOptions> = {}): RealSession {
  const cmd = fixtureCommand(spec.fixture, { ...(spec.mode ? { mode: spec.mode } : {}), log, env: { ...spec.env } });
  const session = new UpstreamSession({
    name: spec.mode ?? spec.fixture,
    definition: { command: cmd.command, args: cmd.args, env: cmd.env },
    preference,
    // Generous: many fixtures start at once on a 2-core machine, and the probe timeout has tests of its own.
    probeTimeoutMs: 10_000,
    startTimeoutMs: 20_000,
    stopGraceMs: 500,
    ...extra,
  });
  const wire = () => {
    const events = readWireLog(log);
    const ps = pids(events);
    // A modern session's own subscriptions/listen stream runs beside whatever a test sends: not part of its wire.
    const own = (m: string | undefined) => m !== 'subscriptions/listen';
    return {
      pids: ps,
      methods: ps.map((p) => methodsReceived(events, p).filter(own)),
      requests: ps.map((p) => received(events, p).filter((r) => own(r.method))),
    };
  };
  return {
    session,
    log,
    wire,
    async wireAfter(method: string) {
      await waitForWireLog(log, (events) => {
        const ps = pids(events);
        const last = ps[ps.length - 1];
        return last !== undefined && methodsReceived(events, last).includes(method);
      });
      return wire();
    },
  };
}

/** The text of the first text content of a tools/call result. */
export function textOf(result: Record<string, unknown>): string {
  const content = result.content as Array<{ type: string; text?: string }> | undefined;
  return content?.find((c) => c.type === 'text')?.text ?? '';
}
