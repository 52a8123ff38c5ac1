/**
 * Which MCP clients are running now, and what each needs to pick up an edited config. A client that runs
 * while its file is edited may keep the old command (VS Code caches it), or write its own copy back over the
 * edit (Claude Desktop, Claude Code): `mcpx install` and `uninstall` name it with its reload step, and
 * `mcpx doctor` shows it. Process names per platform are data (`PROCESS_NAMES`), matched by a pure function,
 * so every platform's matching is testable on any machine; only listing the processes touches the system.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type { ClientName, Platform } from './clients.js';

/** Executable names (as `/proc/<pid>/comm`, `ps -o comm` or `tasklist` give them), compared case-sensitively. */
export const PROCESS_NAMES: Record<ClientName, Record<Platform, string[]>> = {
  'claude-desktop': { linux: ['claude-desktop'], darwin: ['Claude'], win32: ['Claude.exe'] },
  'claude-code': { linux: ['claude'], darwin: ['claude'], win32: ['claude.exe'] },
  cursor: { linux: ['cursor', 'Cursor'], darwin: ['Cursor'], win32: ['Cursor.exe'] },
  vscode: { linux: ['code'], darwin: ['Code', 'Electron'], win32: ['Code.exe'] },
  'vscode-insiders': { linux: ['code-insiders'], darwin: ['Code - Insiders'], win32: ['Code - Insiders.exe'] },
  windsurf: { linux: ['windsurf', 'Windsurf'], darwin: ['Windsurf'], win32: ['Windsurf.exe'] },
  codex: { linux: ['codex'], darwin: ['codex'], win32: ['codex.exe'] },
};

/** What a running client needs after its file changed. */
export const RELOAD_STEPS: Record<ClientName, string> = {
  'claude-desktop':
    'quit Claude Desktop completely (its menu → Quit, not only the window) and start it again: it reads the file at start and may write its own copy back over an edit made while it runs',
  'claude-code': 'start a new Claude Code session (`/mcp` shows the servers): a running session keeps the servers it started with',
  cursor: 'in Cursor Settings → MCP, turn the mcpx server off and on (or reload the window)',
  vscode: 'run "MCP: List Servers" → mcpx → Restart, or "Developer: Reload Window": VS Code keeps the old command until then',
  'vscode-insiders': 'run "MCP: List Servers" → mcpx → Restart, or "Developer: Reload Window": VS Code keeps the old command until then',
  windsurf: 'in Windsurf Settings → Cascade → MCP servers, press Refresh',
  codex: 'start a new codex session: a running one keeps the servers it started with',
};

export interface RunningProcess {
  pid: number;
  name: string;
}

/** Those of `processes` that are `client` on `platform`. Pure. */
export function matchClient(client: ClientName, platform: Platform, processes: readonly RunningProcess[]): RunningProcess[] {
  const wanted = new Set(PROCESS_NAMES[client][platform]);
  return processes.filter((p) => wanted.has(p.name));
}

/** The processes running now, by executable name; an empty list when they cannot be listed. */
export function listProcesses(platform: Platform): RunningProcess[] {
  try {
    if (platform === 'linux') {
      const out: RunningProcess[] = [];
      for (const entry of readdirSync('/proc')) {
        if (!/^\d+$/.test(entry)) continue;
        try {
          out.push({ pid: Number(entry), name: readFileSync(`/proc/${entry}/comm`, 'utf8').trim() });
        } catch {
          // gone since the listing
        }
      }
      return out;
    }
    if (platform === 'darwin') {
      return execFileSync('ps', ['-axo', 'pid=,comm='], { encoding: 'utf8', timeout: 5000 })
        .split('\n')
        .map((l) => /^\s*(\d+)\s+(.*)$/.exec(l))
        .filter((m): m is RegExpExecArray => m !== null)
        .map((m) => ({ pid: Number(m[1]), name: m[2]!.split('/').pop()! }));
    }
    return execFileSync('tasklist', ['/fo', 'csv', '/nh'], { encoding: 'utf8', timeout: 5000, windowsHide: true })
      .split(/\r?\n/)
      .map((l) => /^"([^"]*)","(\d+)"/.exec(l))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => ({ pid: Number(m[2]), name: m[1]! }));
  } catch {
    return [];
  }
}

/** A sentence for a client that is running (undefined when it is not). */
export function runningNote(client: { name: ClientName; title: string }, platform: Platform, processes: readonly RunningProcess[]): string | undefined {
  const mine = matchClient(client.name, platform, processes);
  if (mine.length === 0) return undefined;
  return `${client.title} is running (pid ${mine.map((p) => p.pid).join(', ')}): ${RELOAD_STEPS[client.name]}`;
}
