/**
 * Processes an earlier upstream left running, for `mcpx doctor` (Linux: /proc).
 *
 * Every stdio upstream, and whatever it starts, carries MCPX_SPAWN_TAG in its environment. A stop ends
 * each upstream's process group and the next daemon's sweep ends what a crashed one recorded
 * (./orphans.ts), but a descendant that made a session of its own (`setsid`) is in neither: it outlives
 * its server. Such a process is found by its tag: it carries one, while its parent neither carries the
 * same tag (its upstream is gone) nor is an mcpx daemon (a live upstream's parent is its daemon).
 * Nothing is signalled here: the user is told what it is and how to end it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { isLive, procStat } from '../transports/proc-stat.js';
import { SPAWN_TAG_VAR } from '../transports/spawn-tag.js';

export interface Leftover {
  pid: number;
  /** Its command line (cut to 200 characters). */
  command: string;
  /** The spawn tag of the daemon whose upstream started it. */
  tag: string;
  pgid: number;
  ppid: number;
}

function tagOf(pid: number): string | undefined {
  try {
    const entry = readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .find((e) => e.startsWith(`${SPAWN_TAG_VAR}=`));
    return entry?.slice(SPAWN_TAG_VAR.length + 1);
  } catch {
    return undefined; // gone, or another user's
  }
}

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim().slice(0, 200);
  } catch {
    return '?';
  }
}

/** An mcpx daemon's command line (`node …/main.js daemon …`, `mcpx daemon`). */
const isDaemon = (pid: number): boolean => {
  const cmd = commandOf(pid);
  return /\bdaemon\b/.test(cmd) && /node|mcpx|main/.test(cmd);
};

/** Every live process of this user's carrying a spawn tag whose upstream and daemon are gone; [] off Linux. */
export function findLeftovers(): Leftover[] {
  let pids: number[];
  try {
    pids = readdirSync('/proc')
      .filter((n) => /^\d+$/.test(n))
      .map(Number);
  } catch {
    return [];
  }
  const found: Leftover[] = [];
  for (const pid of pids) {
    if (pid === process.pid) continue;
    const tag = tagOf(pid);
    if (tag === undefined) continue;
    const stat = procStat(pid);
    if (!isLive(stat)) continue;
    if (tagOf(stat.ppid) === tag || isDaemon(stat.ppid)) continue;
    found.push({ pid, command: commandOf(pid), tag, pgid: stat.pgrp, ppid: stat.ppid });
  }
  return found;
}
