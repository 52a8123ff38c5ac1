/**
 * What a daemon started, and what a crashed one left behind.
 *
 * Every stdio upstream process is recorded while it runs in `<state>/upstream-processes.json` (0600):
 * its pid, process group and start time (field 22 of /proc/<pid>/stat), next to the daemon's own pid
 * and start time and the spawn tag its children carry (MCPX_SPAWN_TAG). A daemon that stops cleanly
 * has stopped them all and removes the file. A daemon killed with SIGKILL cannot, and its upstreams
 * live on under PID 1: one that ignores stdin EOF and SIGTERM, or the children of one (`sh -c "sleep
 * 4242 & exec node server.mjs"`: the server exits on EOF, the sleep stays). The next daemon on the
 * folder sweeps them before it starts anything.
 *
 * The sweep never signals a process that is not the one recorded. A pid counts only while its start
 * time is the recorded one (a reused pid has another); a group is signalled as a whole only while its
 * leader is that recorded process. When the leader is gone, the group's remaining members are
 * signalled one by one, and only those that carry the dead daemon's spawn tag in their environment and
 * started after the leader (a pid and group id cannot be reused while a member still holds them, and
 * the tag is random per daemon process). A live recorded process, a group leader or not, must carry the
 * tag too: a forged ledger can name any process with its start time, but not plant the tag. Linux only: elsewhere there is no /proc to check against, and
 * the file is left alone.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { readFileSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { silentLogger, type Logger } from '../log.js';
import { isLive, procStat } from '../transports/proc-stat.js';
import { SPAWN_TAG, SPAWN_TAG_VAR, UPSTREAM_PROCESS_CHANNEL, type UpstreamProcessEvent } from '../transports/spawn-tag.js';
import { writePrivateFile } from './state-dir.js';
import { NotRegularFileError, readRegularFile } from '../state/safe-files.js';

export const PROCESS_LEDGER = 'upstream-processes.json';

export interface LedgerEntry {
  pid: number;
  pgid: number;
  /** Clock ticks after boot (/proc/<pid>/stat field 22). */
  start: number;
  command: string;
}

export interface LedgerFile {
  version: 1;
  daemon: { pid: number; start: number | null };
  /** MCPX_SPAWN_TAG of every process this daemon started. */
  tag: string;
  processes: LedgerEntry[];
}

export interface SweepReport {
  /** The dead daemon whose leftovers were looked at (null: no ledger, or its daemon still runs). */
  daemon: { pid: number; start: number | null } | null;
  /** Processes signalled (each verified first), by pid. */
  signalled: number[];
  /** Still alive after SIGKILL (should be none). */
  survivors: number[];
}

const isLinux = process.platform === 'linux';

function parseLedger(text: string): LedgerFile | undefined {
  try {
    const v = JSON.parse(text) as Partial<LedgerFile>;
    if (v.version !== 1 || typeof v.tag !== 'string' || !Array.isArray(v.processes) || typeof v.daemon?.pid !== 'number') return undefined;
    const processes = v.processes.filter(
      (p): p is LedgerEntry => Number.isSafeInteger(p?.pid) && p.pid > 1 && Number.isSafeInteger(p.pgid) && p.pgid > 1 && Number.isFinite(p.start),
    );
    return { version: 1, daemon: { pid: v.daemon.pid, start: typeof v.daemon.start === 'number' ? v.daemon.start : null }, tag: v.tag, processes };
  } catch {
    return undefined;
  }
}

/** Whether `pid` is still the process recorded with `start`. */
function isRecorded(pid: number, start: number): boolean {
  const s = procStat(pid);
  return isLive(s) && s.start === start;
}

/** Whether a process's environment carries `tag` (unreadable: no). */
function carriesTag(pid: number, tag: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`${SPAWN_TAG_VAR}=${tag}`);
  } catch {
    return false;
  }
}

/** Live members of process group `pgid` (the leader included, if alive). */
async function groupMembers(pgid: number): Promise<Array<{ pid: number; start: number }>> {
  const out: Array<{ pid: number; start: number }> = [];
  let names: string[];
  try {
    names = await readdir('/proc');
  } catch {
    return out;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const s = procStat(Number(name));
    if (isLive(s) && s.pgrp === pgid) out.push({ pid: s.pid, start: s.start });
  }
  return out;
}

/** One thing the sweep may signal: a whole group under its verified leader, or one verified process. */
type Target = { kind: 'group'; pgid: number; leader: number; start: number } | { kind: 'process'; pid: number; start: number };

const stillTarget = (t: Target): boolean => isRecorded(t.kind === 'group' ? t.leader : t.pid, t.start);

/** Signals a target after checking, right then, that it is still the recorded process. */
function signal(t: Target, sig: NodeJS.Signals): boolean {
  if (!stillTarget(t)) return false;
  try {
    process.kill(t.kind === 'group' ? -t.pgid : t.pid, sig);
    return true;
  } catch {
    return false;
  }
}

async function targetsOf(ledger: LedgerFile): Promise<Target[]> {
  const targets: Target[] = [];
  const seen = new Set<number>();
  for (const e of ledger.processes) {
    const leader = procStat(e.pid);
    // The pid is someone else's now: the recorded process and its group are long gone (a group id is
    // not reused while a member holds it), so nothing under this entry is ours.
    if (leader !== undefined && leader.start !== e.start) continue;
    // A live recorded process is signalled only if it carries the dead daemon's tag: a forged ledger can
    // name any process and its start time, but not put the tag in a stranger's environment.
    if (isLive(leader) && !carriesTag(e.pid, ledger.tag)) continue;
    if (isLive(leader) && leader.pgrp === e.pgid && e.pgid === e.pid) {
      targets.push({ kind: 'group', pgid: e.pgid, leader: e.pid, start: e.start });
      continue;
    }
    if (isLive(leader) && !seen.has(e.pid)) {
      seen.add(e.pid); // recorded, but not leading its group: the process alone
      targets.push({ kind: 'process', pid: e.pid, start: e.start });
    }
    // The leader is gone: what is left of its group, member by member.
    for (const m of await groupMembers(e.pgid)) {
      if (seen.has(m.pid) || m.start < e.start || !carriesTag(m.pid, ledger.tag)) continue;
      seen.add(m.pid);
      targets.push({ kind: 'process', pid: m.pid, start: m.start });
    }
  }
  return targets;
}

/**
 * Sweeps what the previous daemon on `stateDir` left running, if that daemon is dead: SIGTERM to each
 * verified target, up to `graceMs` for them to go, then SIGKILL to what is left (verified again).
 * Never throws; removes the ledger when done.
 */
export async function sweepOrphans(stateDir: string, opts: { logger?: Logger; graceMs?: number } = {}): Promise<SweepReport> {
  const log = opts.logger ?? silentLogger;
  const graceMs = opts.graceMs ?? 2_000;
  const file = join(stateDir, PROCESS_LEDGER);
  const report: SweepReport = { daemon: null, signalled: [], survivors: [] };
  if (!isLinux) return report;
  let text: string;
  try {
    text = await readRegularFile(file); // a FIFO in its place would block the start for good
  } catch (err) {
    // no ledger: the last daemon stopped cleanly (or none ran); anything but a regular file is no ledger of ours
    if (err instanceof NotRegularFileError) log.warn({ file }, `ignoring the upstream process ledger: ${err.message}`);
    return report;
  }
  const ledger = parseLedger(text);
  if (ledger === undefined) {
    log.warn({ file }, 'ignoring an unreadable upstream process ledger');
    await rm(file, { force: true }).catch(() => undefined);
    return report;
  }
  const d = ledger.daemon;
  if (d.start !== null && isRecorded(d.pid, d.start)) {
    // Still running (this very process, in tests; or a daemon on another socket): its processes are its own.
    return report;
  }
  report.daemon = d;
  const targets = await targetsOf(ledger);
  for (const t of targets) if (signal(t, 'SIGTERM')) report.signalled.push(t.kind === 'group' ? t.leader : t.pid);
  const deadline = Date.now() + graceMs;
  let left = targets.filter(stillTarget);
  while (left.length > 0 && Date.now() < deadline) {
    await sleep(25);
    left = left.filter(stillTarget);
  }
  for (const t of left) signal(t, 'SIGKILL');
  // A group whose leader went on SIGTERM may keep members that ignored it: found again (by tag), and killed.
  const after = await targetsOf(ledger);
  for (const t of after)
    if (signal(t, 'SIGKILL') && !report.signalled.includes(t.kind === 'group' ? t.leader : t.pid)) report.signalled.push(t.kind === 'group' ? t.leader : t.pid);
  let survivors = [...left, ...after];
  for (const end = Date.now() + 1_000; survivors.length > 0 && Date.now() < end;) {
    await sleep(25);
    survivors = survivors.filter(stillTarget);
  }
  report.survivors = survivors.map((t) => (t.kind === 'group' ? t.leader : t.pid));
  if (report.signalled.length > 0) {
    log.warn(
      { daemon: d.pid, processes: report.signalled, survivors: report.survivors },
      `stopped ${report.signalled.length} upstream process(es) left running by a daemon that did not stop cleanly`,
    );
  }
  await rm(file, { force: true }).catch(() => undefined);
  return report;
}

/**
 * The live ledger of one daemon: records every stdio upstream process of this mcpx process as it
 * starts, forgets it when it is gone, and keeps `<state>/upstream-processes.json` up to date (writes
 * are serialized; the last state always lands). `close()` removes the file once nothing is recorded.
 */
export class ProcessLedger {
  private readonly file: string;
  private readonly log: Logger;
  private readonly entries = new Map<number, LedgerEntry>();
  private readonly self: { pid: number; start: number | null };
  private writing: Promise<void> | undefined;
  private dirty = false;
  private closed = false;
  private readonly onEvent = (message: unknown): void => this.handle(message as UpstreamProcessEvent);

  constructor(stateDir: string, logger: Logger = silentLogger) {
    this.file = join(stateDir, PROCESS_LEDGER);
    this.log = logger;
    this.self = { pid: process.pid, start: procStat(process.pid)?.start ?? null };
    if (isLinux) subscribe(UPSTREAM_PROCESS_CHANNEL, this.onEvent);
  }

  /** What is recorded now. */
  processes(): LedgerEntry[] {
    return [...this.entries.values()];
  }

  /** Waits for the file to reflect every change so far. */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
  }

  /** Stops recording; removes the file when nothing is left running, else leaves it for the next sweep. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (isLinux) unsubscribe(UPSTREAM_PROCESS_CHANNEL, this.onEvent);
    await this.flush();
    const left = this.processes().filter((e) => isRecorded(e.pid, e.start));
    if (left.length === 0) await rm(this.file, { force: true }).catch(() => undefined);
    else this.log.warn({ processes: left.map((e) => e.pid) }, 'upstream processes still running at stop; the next daemon sweeps them');
  }

  private handle(e: UpstreamProcessEvent): void {
    if (this.closed) return;
    if (e.type === 'spawn') {
      if (e.tag !== SPAWN_TAG || e.start === null) return; // not started here, or gone before it could be read
      this.entries.set(e.pid, { pid: e.pid, pgid: e.pgid, start: e.start, command: e.command });
    } else if (!this.entries.delete(e.pid)) {
      return;
    }
    this.schedule();
  }

  private schedule(): void {
    if (this.writing) {
      this.dirty = true;
      return;
    }
    this.writing = (async () => {
      do {
        this.dirty = false;
        const body: LedgerFile = { version: 1, daemon: this.self, tag: SPAWN_TAG, processes: this.processes() };
        try {
          await writePrivateFile(this.file, `${JSON.stringify(body)}\n`);
        } catch (err) {
          // A sweep after a crash would miss these processes; nothing else depends on the file.
          this.log.warn({ err, file: this.file }, 'could not record the upstream processes');
        }
      } while (this.dirty);
    })().finally(() => {
      this.writing = undefined;
    });
  }
}
