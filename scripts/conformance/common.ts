/**
 * What the two conformance runners (scripts/conformance.ts: mcpx as the client; scripts/conformance-server.ts:
 * mcpx as the server) share: where the official CLI is, the check and run shapes it reports, running it in a
 * process group of its own with a time limit, and --help from the runner's own doc comment.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import { existsSync, mkdirSync, readFileSync, readlinkSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

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
    const child = spawnTracked([...cliStart(preloadArgs), ...args]);
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

const REGISTER = join(root, 'scripts', 'conformance', 'register.mjs');
let hookFree: string | null | undefined;

/**
 * `preloadArgs` and the CLI's script, without the module hook (register.mjs) where it is not needed. Node 20
 * has no fs.globSync, which the CLI imports (it uses it only in `tier-check`); the hook that hands it the shim
 * (fs-globsync.mjs) runs a loader thread that costs each CLI start about 0.4 s of CPU of its 1.1 s, and the
 * runners start the CLI once per scenario. So the CLI started is a copy of its bundle whose one `fs` import names
 * the shim, kept in dist/conformance-cli/dist/ next to a link to the package's requirements folder: its other
 * imports and files resolve as the package's own do (the package has no dependencies of its own). Node 22 and
 * later (fs.globSync there) start the CLI itself; a bundle whose `fs` import is not the one expected keeps the hook.
 */
function cliStart(preloadArgs: string[]): string[] {
  const hooked = preloadArgs.findIndex((a, i) => a === REGISTER && preloadArgs[i - 1] === '--import');
  if (hooked === -1) return [...preloadArgs, cli];
  const script = typeof (fs as { globSync?: unknown }).globSync === 'function' ? cli : hookFreeCli();
  if (script === null) return [...preloadArgs, cli];
  return [...preloadArgs.slice(0, hooked - 1), ...preloadArgs.slice(hooked + 1), script];
}

/** The copy of the CLI's bundle that imports the shim (written once per runner, atomically), or null. */
function hookFreeCli(): string | null {
  if (hookFree !== undefined) return hookFree;
  hookFree = null;
  try {
    const shim = JSON.stringify(pathToFileURL(join(root, 'scripts', 'conformance', 'fs-globsync.mjs')).href);
    let imports = 0;
    const text = readFileSync(cli, 'utf8').replace(/(import\{[^}]*\bglobSync as [\w$]+[^}]*\}from)"fs"/g, (_m, head: string) => {
      imports++;
      return `${head}${shim}`;
    });
    if (imports !== 1) return null;
    const home = join(root, 'dist', 'conformance-cli');
    mkdirSync(join(home, 'dist'), { recursive: true });
    const requirements = join(dirname(cli), '..', 'requirements');
    const link = join(home, 'requirements');
    if (linkTarget(link) !== requirements) {
      const tmp = `${link}.${process.pid}`;
      symlinkSync(requirements, tmp);
      renameSync(tmp, link);
    }
    const file = join(home, 'dist', 'index.js');
    if (!existsSync(file) || readFileSync(file, 'utf8') !== text) {
      const tmp = `${file}.${process.pid}`;
      writeFileSync(tmp, text);
      renameSync(tmp, file);
    }
    hookFree = file;
  } catch {
    // the hook, then
  }
  return hookFree;
}

function linkTarget(path: string): string | undefined {
  try {
    return readlinkSync(path);
  } catch {
    return undefined;
  }
}
