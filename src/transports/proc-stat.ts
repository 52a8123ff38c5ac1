/**
 * `/proc/<pid>/stat` on Linux: a process's state, parent, process group and start time. The start
 * time (clock ticks after boot) tells a process from a later one that reuses its pid.
 */
import { readFileSync } from 'node:fs';

export interface ProcStat {
  pid: number;
  /** R, S, D, Z (zombie), X, T, … */
  state: string;
  ppid: number;
  pgrp: number;
  /** Field 22: when the process started, in clock ticks after boot. */
  start: number;
}

/** The stat line parsed; undefined when the process is gone or there is no /proc. */
export function procStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // "pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime
  // cstime priority nice threads itrealvalue starttime …" — comm may hold spaces and parentheses.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const start = Number(fields[19]);
  if (!Number.isFinite(start)) return undefined;
  return { pid, state: fields[0] ?? '?', ppid: Number(fields[1]), pgrp: Number(fields[2]), start };
}

/** Alive: it has a stat line and is not a zombie (exited, not yet reaped) or dead. */
export const isLive = (s: ProcStat | undefined): s is ProcStat => s !== undefined && s.state !== 'Z' && s.state !== 'X';
