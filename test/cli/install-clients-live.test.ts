/**
 * `mcpx install` against what goes wrong around a client's file: the client running while it is edited
 * (named, with its reload step), the client wiping its file afterwards (`mcpx doctor` says so and `--fix`
 * re-adds the entry), two installs at once, a client folder that does not exist yet. Through the built
 * binary, in a temp HOME; the "running client" is a real process with the client's executable name.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseJsonc } from 'jsonc-parser';
import { afterAll, describe, expect, it } from 'vitest';
import { matchClient, PROCESS_NAMES, RELOAD_STEPS } from '../../src/install/running.js';
import { CLIENTS } from '../../src/install/clients.js';
import { cleanEnv, mcpx, until } from './helpers.js';
import { tempDir } from '../support/real.js';

const children: ChildProcess[] = [];
const dirs: Array<{ remove: () => Promise<void> }> = [];
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  for (const d of dirs) await d.remove();
});

const CURSOR_FILE = '{\n  // the user\'s own settings\n  "mcpServers": {},\n  "theme": "dark"\n}\n';

async function home(cursorText: string | null = CURSOR_FILE) {
  const dir = await tempDir('mcpx-install-live-');
  dirs.push(dir);
  const file = join(dir.path, '.cursor', 'mcp.json');
  if (cursorText !== null) {
    mkdirSync(join(dir.path, '.cursor'), { recursive: true });
    writeFileSync(file, cursorText);
  }
  const config = join(dir.path, 'mcpx.json');
  writeFileSync(config, '{ "mcpServers": {} }\n');
  return { dir: dir.path, file, config, env: cleanEnv(dir.path, { MCPX_STATE_DIR: join(dir.path, 'state') }) };
}

describe('process names per platform (pure)', () => {
  it('every client has names on every platform and a reload step; matching is by exact executable name', () => {
    for (const c of CLIENTS) {
      for (const p of ['linux', 'darwin', 'win32'] as const) expect(PROCESS_NAMES[c.name][p].length, `${c.name} ${p}`).toBeGreaterThan(0);
      expect(RELOAD_STEPS[c.name].length).toBeGreaterThan(10);
    }
    const ps = [
      { pid: 1, name: 'Cursor.exe' },
      { pid: 2, name: 'Code.exe' },
      { pid: 3, name: 'cursor-helper' },
      { pid: 4, name: 'Claude' },
    ];
    expect(matchClient('cursor', 'win32', ps).map((p) => p.pid)).toEqual([1]);
    expect(matchClient('vscode', 'win32', ps).map((p) => p.pid)).toEqual([2]);
    expect(matchClient('cursor', 'linux', ps)).toEqual([]); // a helper of another name is not the client
    expect(matchClient('claude-desktop', 'darwin', ps).map((p) => p.pid)).toEqual([4]);
    expect(matchClient('claude-code', 'darwin', ps)).toEqual([]); // Claude (the app) is not claude (the CLI)
  });
});

describe('mcpx install around a live client', () => {
  it('a running client is named with its pid and reload step, in text and --json', async () => {
    const h = await home();
    // A real process whose executable is called `cursor`, as Cursor's is on Linux.
    const fake = join(h.dir, 'bin', 'cursor');
    mkdirSync(join(h.dir, 'bin'));
    copyFileSync('/bin/sleep', fake);
    const child = spawn(fake, ['120'], { stdio: 'ignore' });
    children.push(child);
    await until(
      () => existsSync(`/proc/${child.pid}/comm`) && readFileSync(`/proc/${child.pid}/comm`, 'utf8').trim() === 'cursor',
      10_000,
      'the fake cursor process',
    );
    const r = await mcpx(['install', '--client', 'cursor', '--config', h.config], { env: h.env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`Cursor is running (pid ${child.pid}`);
    expect(r.stdout).toContain(RELOAD_STEPS.cursor);
    const u = await mcpx(['uninstall', '--client', 'cursor', '--json'], { env: h.env });
    expect(u.code, u.stderr).toBe(0);
    expect(JSON.parse(u.stdout).running).toContain(`Cursor is running (pid ${child.pid}`);
    expect(readFileSync(h.file, 'utf8')).toBe(CURSOR_FILE);
    child.kill('SIGKILL');
    await until(() => child.exitCode !== null || child.signalCode !== null, 10_000, 'the fake cursor to exit');
    // Not running: the ordinary hint, no pid.
    const again = await mcpx(['install', '--client', 'cursor', '--config', h.config], { env: h.env });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).not.toContain('is running');
  });

  it('a client that wiped its file: doctor names the missing entry and the command; doctor --fix re-adds it', async () => {
    const h = await home();
    expect((await mcpx(['install', '--client', 'cursor', '--config', h.config], { env: h.env })).code).toBe(0);
    writeFileSync(h.file, '{}'); // what Claude Desktop and others do to their files
    const d = await mcpx(['doctor', '--config', h.config], { env: h.env });
    expect(d.code).toBe(1);
    expect(d.stdout).toMatch(/FAIL client cursor\s+\S+mcp\.json: the mcpx entry installed \S+ is gone .*mcpx doctor --fix re-adds it/);
    const fix = await mcpx(['doctor', '--config', h.config, '--fix', '--json'], { env: h.env });
    expect(fix.code, fix.stdout + fix.stderr).toBe(0);
    expect(JSON.parse(fix.stdout).fixed).toEqual(['cursor']);
    const entry = (parseJsonc(readFileSync(h.file, 'utf8')) as { mcpServers: Record<string, { command: string; args: string[] }> }).mcpServers['mcpx']!;
    expect(entry.command).toBe(process.execPath);
    expect(entry.args.slice(1)).toEqual(['serve', '--config', h.config, '--tools', 'auto']);
    // Healthy again: doctor has nothing to fix.
    expect((await mcpx(['doctor', '--config', h.config], { env: h.env })).code).toBe(0);
  });

  it('two installs at once leave one mcpx entry and every other byte as it was', async () => {
    const h = await home();
    const [a, b] = await Promise.all([
      mcpx(['install', '--client', 'cursor', '--config', h.config], { env: h.env }),
      mcpx(['install', '--client', 'cursor', '--config', h.config], { env: h.env }),
    ]);
    expect([a.code, b.code], a.stderr + b.stderr).toEqual([0, 0]);
    const text = readFileSync(h.file, 'utf8');
    expect(text.match(/"mcpx"/g)).toHaveLength(1);
    expect(text).toContain("// the user's own settings");
    expect(text).toContain('"theme": "dark"');
    expect(Object.keys((parseJsonc(text) as { mcpServers: Record<string, unknown> }).mcpServers)).toEqual(['mcpx']);
  });

  it('a client whose folder does not exist yet: the file is made with the entry alone, and uninstall removes it', async () => {
    const h = await home(null);
    const r = await mcpx(['install', '--client', 'cursor', '--config', h.config], { env: h.env });
    expect(r.code, r.stderr).toBe(0);
    expect(Object.keys((parseJsonc(readFileSync(h.file, 'utf8')) as { mcpServers: Record<string, unknown> }).mcpServers)).toEqual(['mcpx']);
    const u = await mcpx(['uninstall', '--client', 'cursor'], { env: h.env });
    expect(u.code, u.stderr).toBe(0);
    expect(existsSync(h.file), u.stdout).toBe(false);
  });
});
