/**
 * Issue 10 #2, the sweep's safety rules (src/daemon/orphans.ts), against real processes:
 * a recorded leader is signalled with its group only while pid and start time match; a group whose
 * leader is gone loses only the members carrying the dead daemon's spawn tag; a reused pid, a member
 * without the tag and the processes of a daemon that still runs are never signalled.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROCESS_LEDGER, sweepOrphans, type LedgerFile } from '../../src/daemon/orphans.js';
import { procStat } from '../../src/transports/proc-stat.js';
import { SPAWN_TAG_VAR } from '../../src/transports/spawn-tag.js';
import { until } from '../cli/helpers.js';
import { tempDir } from '../support/real.js';
import { FAULTY, isGone } from './helpers.js';

const DEAD_TAG = 'a'.repeat(32);
const OTHER_TAG = 'b'.repeat(32);
/** Beyond the kernel's pid_max (2^22): no such daemon runs. */
const DEAD_DAEMON = { pid: 4_194_305, start: 1 };

let dir: { path: string; remove: () => Promise<void> };
const started: number[] = [];
beforeAll(async () => {
  dir = await tempDir('mcpx-orphans-');
});
afterAll(async () => {
  for (const pid of started) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  await dir?.remove();
});

function detached(command: string, args: string[], tag: string, stdin: 'ignore' | 'pipe' = 'ignore'): ChildProcess {
  const child = spawn(command, args, { detached: true, stdio: [stdin, 'ignore', 'ignore'], env: { PATH: process.env['PATH'] ?? '', [SPAWN_TAG_VAR]: tag } });
  started.push(child.pid!);
  return child;
}

/** `sh` leading a group with a `sleep` in it; the sh exits when its stdin closes, leaving the sleep. */
async function groupWithLostLeader(tag: string, secs: string): Promise<{ leader: number; start: number; member: number }> {
  const sh = detached('sh', ['-c', `sleep ${secs} & read x`], tag, 'pipe');
  const leader = sh.pid!;
  await until(() => memberOf(leader, secs) !== undefined, 5_000, 'the sleep');
  const start = procStat(leader)!.start;
  const member = memberOf(leader, secs)!;
  started.push(member);
  sh.stdin!.end();
  await until(() => isGone(leader), 5_000, 'the leader to exit');
  return { leader, start, member };
}

function memberOf(pgid: number, secs: string): number | undefined {
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = procStat(Number(name));
    try {
      if (s?.pgrp === pgid && s.pid !== pgid && readFileSync(`/proc/${name}/cmdline`, 'utf8') === `sleep\0${secs}\0`) return s.pid;
    } catch {
      // gone
    }
  }
  return undefined;
}

const ledgerWith = (daemon: LedgerFile['daemon'], processes: LedgerFile['processes']): void =>
  writeFileSync(join(dir.path, PROCESS_LEDGER), JSON.stringify({ version: 1, daemon, tag: DEAD_TAG, processes } satisfies LedgerFile));

describe.runIf(process.platform === 'linux')("sweeping a dead daemon's upstreams", () => {
  it('signals exactly the recorded processes and the tagged members of their groups', async () => {
    const secs = String(5000 + Math.floor(Math.random() * 900));
    const stubborn = detached(process.execPath, [FAULTY, 'stubborn'], DEAD_TAG, 'pipe'); // ignores EOF and SIGTERM
    await until(() => procStat(stubborn.pid!) !== undefined, 5_000, 'stubborn');
    // Its pid on record with another start time (it even carries the tag: the pid rule alone must spare it).
    const reused = detached('sleep', [secs], DEAD_TAG);
    await until(() => procStat(reused.pid!) !== undefined, 5_000, 'reused');
    const ours = await groupWithLostLeader(DEAD_TAG, secs);
    const foreign = await groupWithLostLeader(OTHER_TAG, secs);

    ledgerWith(DEAD_DAEMON, [
      { pid: stubborn.pid!, pgid: stubborn.pid!, start: procStat(stubborn.pid!)!.start, command: 'node' },
      { pid: reused.pid!, pgid: reused.pid!, start: procStat(reused.pid!)!.start - 7, command: 'sleep' },
      { pid: ours.leader, pgid: ours.leader, start: ours.start, command: 'sh' },
      { pid: foreign.leader, pgid: foreign.leader, start: foreign.start, command: 'sh' },
    ]);
    const report = await sweepOrphans(dir.path, { graceMs: 300 });
    expect(report.daemon).toEqual(DEAD_DAEMON);
    expect(report.signalled.sort((a, b) => a - b)).toEqual([stubborn.pid!, ours.member].sort((a, b) => a - b));
    expect(report.survivors).toEqual([]);
    expect(isGone(stubborn.pid!)).toBe(true); // needed SIGKILL: it ignores SIGTERM
    expect(isGone(ours.member)).toBe(true);
    expect(isGone(reused.pid!)).toBe(false);
    expect(isGone(foreign.member)).toBe(false);
    // The ledger is consumed.
    expect(() => readFileSync(join(dir.path, PROCESS_LEDGER))).toThrow();
  });

  it('leaves everything alone while the recorded daemon still runs', async () => {
    const victim = detached('sleep', ['600'], DEAD_TAG);
    await until(() => procStat(victim.pid!) !== undefined, 5_000, 'victim');
    ledgerWith({ pid: process.pid, start: procStat(process.pid)!.start }, [
      { pid: victim.pid!, pgid: victim.pid!, start: procStat(victim.pid!)!.start, command: 'sleep' },
    ]);
    const report = await sweepOrphans(dir.path, { graceMs: 100 });
    expect(report).toEqual({ daemon: null, signalled: [], survivors: [] });
    expect(isGone(victim.pid!)).toBe(false);
  });

  it('an unreadable ledger is dropped, not acted on', async () => {
    writeFileSync(join(dir.path, PROCESS_LEDGER), '{"version":1,"processes":"nope"');
    expect(await sweepOrphans(dir.path)).toEqual({ daemon: null, signalled: [], survivors: [] });
  });
});
