/**
 * What the two conformance runners (scripts/conformance.ts: mcpx as the client; scripts/conformance-server.ts:
 * mcpx as the server) share: where the official CLI is, the check and run shapes it reports, running it in a
 * process group of its own with a time limit, and --help from the runner's own doc comment.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (scripts run from dist/scripts). */
export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
/** The official conformance CLI. */
export const cli = join(dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/conformance/package.json')), 'dist', 'index.js');
export const DEFAULT_VERSIONS = ['2025-11-25', '2026-07-28'];

export type Status = 'SUCCESS' | 'FAILURE' | 'WARNING' | 'SKIPPED' | 'INFO';

export interface Check {
  id: string;
  status: Status;
  errorMessage?: string;
}

/** A check that counts against a run. */
export const failing = (c: Check): boolean => c.status === 'FAILURE' || c.status === 'WARNING';

export class UsageError extends Error {}

/** --help: prints the runner's doc comment (the first block comment of `moduleUrl`) and exits. */
export function printHelp(moduleUrl: string): never {
  const doc = readFileSync(fileURLToPath(moduleUrl), 'utf8');
  console.log(/\/\*\*([\s\S]*?)\*\//.exec(doc)?.[1]?.replace(/^ \* ?/gm, '') ?? "see the runner's source");
  process.exit(0);
}

/** Every child a runner started and has not seen exit (killed on the way out). */
export const children = new Set<ChildProcess>();

/** Kill a child's whole process group (children are spawned detached, as group leaders). */
export function killGroup(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    /* already gone */
  }
}

/** Spawn `node <args>` as the leader of its own process group, tracked in `children`. */
export function spawnTracked(args: string[], stdin: 'ignore' | 'pipe' = 'ignore'): ChildProcess {
  const child = spawn(process.execPath, args, { cwd: root, detached: true, stdio: [stdin, 'pipe', 'pipe'] });
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

/**
 * Run the conformance CLI (after `preloadArgs`, e.g. `--import` hooks) in its own process group; resolves
 * with its output when it exits or was killed at `limitMs`. The group goes with it: whatever the CLI started
 * (a client command, rare grandchildren) does not outlive the run.
 */
export function runCli(preloadArgs: string[], args: string[], limitMs: number): Promise<{ code: number | null; out: string; killed: boolean }> {
  return new Promise((done) => {
    const child = spawnTracked([...preloadArgs, cli, ...args]);
    let out = '';
    const keep = (b: Buffer) => {
      out += b.toString('utf8');
      if (out.length > 400_000) out = out.slice(-200_000);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      killGroup(child);
    }, limitMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      killGroup(child);
      done({ code, out, killed });
    });
  });
}
