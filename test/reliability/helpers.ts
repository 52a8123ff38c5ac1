/** Shared pieces of the reliability tests (issue 10). */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURE_DIR } from '../fixtures/index.js';

/** test/fixtures/faulty.mjs: a hand-written legacy server (modes plain, stubborn; tools echo, whoami, leak). */
export const FAULTY = join(FIXTURE_DIR, 'faulty.mjs');

/** A config entry running faulty.mjs. */
export function faultyEntry(mode: 'plain' | 'stubborn', extra: Record<string, unknown> = {}): never {
  return { command: process.execPath, args: [FAULTY, mode], mcpx: { probeTimeout: '10s', startTimeout: '20s' }, ...extra } as never;
}

/** Gone: kill(pid, 0) fails with ESRCH, or the process is a zombie (exited, not yet reaped). */
export function isGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return /^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return true;
  }
}

/** A live process's environment, from /proc/<pid>/environ. */
export function environOf(pid: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
    const eq = entry.indexOf('=');
    if (eq > 0) out[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  return out;
}

/** The pid in a `whoami` answer ("era=legacy pid=123"). */
export function pidOf(text: string): number {
  const m = /pid=(\d+)/.exec(text);
  if (!m) throw new Error(`no pid in ${JSON.stringify(text)}`);
  return Number(m[1]);
}
