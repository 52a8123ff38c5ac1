/** The client table: every client's file on every platform (a pure function), and the editors alone. */
import { posix, win32 } from 'node:path';
import { describe, expect, it } from 'vitest';
import { clientPaths, CLIENTS, findClient, type ClientName, type Platform } from '../../src/install/clients.js';
import { editJson, editToml, parseClientFile } from '../../src/install/edit.js';
import { lineDiff } from '../../src/install/files.js';

/**
 * One sample home per platform. These are inputs to `clientPaths`, a pure function of platform, home,
 * environment and working folder: nothing here is read or written on disk, so the homes are fixed example
 * strings (a temp folder could not stand for a macOS or Windows home on this Linux machine). Every expected
 * path is built from them with that platform's own path rules.
 */
const HOMES: Record<Platform, string> = {
  linux: posix.join(posix.sep, 'home', 'ada'),
  darwin: posix.join(posix.sep, 'Users', 'ada'),
  win32: win32.join('C:\\', 'Users', 'ada'),
};
const J: Record<Platform, (...parts: string[]) => string> = { linux: posix.join, darwin: posix.join, win32: win32.join };
const under = (platform: Platform, ...parts: string[]): string => J[platform](HOMES[platform], ...parts);
const ENVS: Record<Platform, Record<string, string>> = {
  linux: {},
  darwin: {},
  win32: { USERPROFILE: HOMES.win32, APPDATA: under('win32', 'AppData', 'Roaming'), LOCALAPPDATA: under('win32', 'AppData', 'Local') },
};
const CWD: Record<Platform, string> = { linux: under('linux', 'proj'), darwin: under('darwin', 'proj'), win32: under('win32', 'proj') };
/** The per-user folder each platform keeps application settings in. */
const APP_SUPPORT: Record<Platform, string[]> = { linux: ['.config'], darwin: ['Library', 'Application Support'], win32: ['AppData', 'Roaming'] };
const app = (platform: Platform, ...parts: string[]): string => under(platform, ...APP_SUPPORT[platform], ...parts);
const each = (f: (p: Platform) => string[]): Record<Platform, string[]> => ({ linux: f('linux'), darwin: f('darwin'), win32: f('win32') });

const EXPECTED: Record<ClientName, Record<Platform, string[]>> = {
  'claude-desktop': {
    ...each((p) => [app(p, 'Claude', 'claude_desktop_config.json')]),
    // The Microsoft Store build keeps its own copy under LocalCache.
    win32: [
      app('win32', 'Claude', 'claude_desktop_config.json'),
      under('win32', 'AppData', 'Local', 'Packages', 'Claude_pzs8sxrjxfjjc', 'LocalCache', 'Roaming', 'Claude', 'claude_desktop_config.json'),
    ],
  },
  'claude-code': each((p) => [under(p, '.claude.json')]),
  cursor: each((p) => [under(p, '.cursor', 'mcp.json')]),
  vscode: each((p) => [app(p, 'Code', 'User', 'mcp.json')]),
  'vscode-insiders': each((p) => [app(p, 'Code - Insiders', 'User', 'mcp.json')]),
  windsurf: {
    ...each((p) => [under(p, '.codeium', 'windsurf', 'mcp_config.json')]),
    win32: [under('win32', '.codeium', 'windsurf', 'mcp_config.json'), app('win32', 'Codeium', 'windsurf', 'mcp_config.json')],
  },
  codex: each((p) => [under(p, '.codex', 'config.toml')]),
};

describe('client paths', () => {
  for (const platform of ['linux', 'darwin', 'win32'] as const) {
    for (const c of CLIENTS) {
      it(`${c.name} on ${platform}`, () => {
        expect(clientPaths(c.name, { platform, home: HOMES[platform], env: ENVS[platform], cwd: CWD[platform] })).toEqual(EXPECTED[c.name][platform]);
      });
    }
    it(`claude-code --project on ${platform}: .mcp.json in the folder`, () => {
      expect(clientPaths('claude-code', { platform, home: HOMES[platform], env: ENVS[platform], cwd: CWD[platform] }, { project: true })).toEqual([
        J[platform](CWD[platform], '.mcp.json'),
      ]);
    });
  }

  it('follows XDG_CONFIG_HOME on Linux, CODEX_HOME and CLAUDE_CONFIG_DIR everywhere; relative values are ignored', () => {
    const xdg = posix.join(posix.sep, 'xdg');
    const codex = posix.join(posix.sep, 'codex');
    const cc = posix.join(posix.sep, 'cc');
    const ctx = { platform: 'linux' as const, home: HOMES.linux, cwd: posix.sep, env: { XDG_CONFIG_HOME: xdg, CODEX_HOME: codex, CLAUDE_CONFIG_DIR: cc } };
    expect(clientPaths('vscode', ctx)).toEqual([posix.join(xdg, 'Code', 'User', 'mcp.json')]);
    expect(clientPaths('claude-desktop', ctx)).toEqual([posix.join(xdg, 'Claude', 'claude_desktop_config.json')]);
    expect(clientPaths('codex', ctx)).toEqual([posix.join(codex, 'config.toml')]);
    expect(clientPaths('claude-code', ctx)).toEqual([posix.join(cc, '.claude.json')]);
    expect(clientPaths('codex', { ...ctx, env: { CODEX_HOME: 'rel' } })).toEqual([under('linux', '.codex', 'config.toml')]);
    // macOS ignores XDG_CONFIG_HOME; Windows without APPDATA falls back to the profile's Roaming folder
    expect(clientPaths('vscode', { ...ctx, platform: 'darwin', home: HOMES.darwin })).toEqual([app('darwin', 'Code', 'User', 'mcp.json')]);
    const other = win32.join('D:\\', 'h');
    expect(clientPaths('vscode', { platform: 'win32', home: other, cwd: 'D:\\', env: {} })).toEqual([
      win32.join(other, 'AppData', 'Roaming', 'Code', 'User', 'mcp.json'),
    ]);
  });

  it('knows the names people type, not ambiguous ones', () => {
    expect(findClient('Claude-Desktop')?.name).toBe('claude-desktop');
    expect(findClient('code')?.name).toBe('vscode');
    expect(findClient('claude')).toBeUndefined();
    expect(CLIENTS.find((c) => c.name === 'vscode')?.key).toBe('servers');
    expect(CLIENTS.find((c) => c.name === 'codex')?.format).toBe('toml');
  });
});

describe('editors', () => {
  it('JSON: a syntax error names line and column', () => {
    expect(() => parseClientFile('{\n  "mcpServers": {\n    "a": { "command": "x" }\n    "b": {}\n  }\n}', 'json', 'mcpServers', '/f.json')).toThrow(
      /\/f\.json:4:5: /,
    );
  });

  it('JSON: tabs, CRLF and comments are kept', () => {
    const text = '{\r\n\t// keep\r\n\t"mcpServers": {\r\n\t\t"a": {"command": "x"}\r\n\t}\r\n}\r\n';
    const out = editJson(text, 'mcpServers', { remove: ['a'], set: { mcpx: { command: 'n' } } });
    expect(out).toContain('\t// keep\r\n');
    expect(out).toContain('\t\t"mcpx": {\r\n\t\t\t"command": "n"\r\n\t\t}');
    expect(out.includes('\n') && !/[^\r]\n/.test(out)).toBe(true);
  });

  it('JSON: a file on one line keeps its other servers as written (the entry goes in compact)', () => {
    const text = '{ "mcpServers": { "a": { "command": "x" } }, "z": [1,2] }\n';
    const out = editJson(text, 'mcpServers', { remove: [], set: { mcpx: { command: 'n' } } });
    expect(out.startsWith('{ "mcpServers": { "a": { "command": "x" }')).toBe(true);
    expect(out.endsWith(' }, "z": [1,2] }\n')).toBe(true);
    expect(parseClientFile(out, 'json', 'mcpServers', '/f').servers).toEqual({ a: { command: 'x' }, mcpx: { command: 'n' } });
    const back = editJson(out, 'mcpServers', { remove: ['mcpx'], set: {} });
    expect(back).toBe(text);
  });

  it('TOML: tables cut out whole, the entry in place of a replaced one, other lines untouched', () => {
    const text = 'model = "o3" # mine\n\n[mcp_servers.a]\ncommand = "x"\n\n[mcp_servers.a.env]\nK = "v"\n\n[profiles.p]\nmodel = "o4"\n';
    const out = editToml(text, 'mcp_servers', { remove: ['a'], set: { mcpx: { command: 'n', args: ['a b', 'c\\d'] } } }, '/c.toml');
    expect(out).toBe('model = "o3" # mine\n\n[profiles.p]\nmodel = "o4"\n\n[mcp_servers.mcpx]\ncommand = "n"\nargs = ["a b", "c\\\\d"]\n');
    const again = editToml(out, 'mcp_servers', { remove: [], set: { mcpx: { command: 'm' } } }, '/c.toml');
    expect(again).toBe('model = "o3" # mine\n\n[profiles.p]\nmodel = "o4"\n\n[mcp_servers.mcpx]\ncommand = "m"\n');
  });

  it('TOML: a layout it cannot edit alone is refused, and a syntax error names line and column', () => {
    expect(() => editToml('mcp_servers.a = { command = "x" }\n', 'mcp_servers', { remove: ['a'], set: {} }, '/c.toml')).toThrow(/cannot change/);
    expect(() => parseClientFile('a = 1\nb = = 2\n', 'toml', 'mcp_servers', '/c.toml')).toThrow(/\/c\.toml:2:\d+: /);
  });

  it('diff: only the changed lines, with context', () => {
    const d = lineDiff('a\nb\nc\n', 'a\nB\nc\n', 'f');
    expect(d).toContain('@@ -1,3 +1,3 @@\n a\n-b\n+B\n c');
  });
});

describe('safe writes', () => {
  it("atomicWrite keeps the mode, refuses a file that changed under it; withLock waits, takes over a dead holder's lock", async () => {
    const { mkdtempSync, writeFileSync, readFileSync, statSync, rmSync, existsSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { atomicWrite, withLock, backupFile, assertWritable } = await import('../../src/install/files.js');
    const dir = mkdtempSync(join(tmpdir(), 'mcpx-files-'));
    try {
      const f = join(dir, 'c.json');
      writeFileSync(f, 'one', { mode: 0o640 });
      atomicWrite(f, 'two', 'one');
      expect(readFileSync(f, 'utf8')).toBe('two');
      expect(statSync(f).mode & 0o777).toBe(0o640);
      expect(() => atomicWrite(f, 'three', 'one')).toThrow(expect.objectContaining({ code: 'MCPX_INSTALL_RACE' }));
      expect(readFileSync(f, 'utf8')).toBe('two');
      const b = backupFile(f, new Date('2026-12-02T01:02:03.456Z'));
      expect(b).toBe(`${f}.mcpx-backup-20261202T010203Z`);
      expect(backupFile(f, new Date('2026-12-02T01:02:03.456Z'))).toBe(`${f}.mcpx-backup-20261202T010203Z-2`);
      // A lock whose holder is gone is taken over; a live holder's makes the next wait, then fail.
      writeFileSync(`${f}.mcpx.lock`, '999999999');
      expect(await withLock(f, () => 'ran')).toBe('ran');
      expect(existsSync(`${f}.mcpx.lock`)).toBe(false);
      writeFileSync(`${f}.mcpx.lock`, String(process.ppid));
      const t0 = Date.now();
      await expect(withLock(f, () => 'no')).rejects.toThrow(expect.objectContaining({ code: 'MCPX_INSTALL_LOCKED' }));
      expect(Date.now() - t0).toBeGreaterThanOrEqual(4_900);
      rmSync(`${f}.mcpx.lock`);
      // A symlinked dotfile: the target is replaced, the link stays a link.
      const { symlinkSync, lstatSync } = await import('node:fs');
      const link = join(dir, 'link.json');
      symlinkSync(f, link);
      atomicWrite(link, 'four', 'two');
      expect(lstatSync(link).isSymbolicLink()).toBe(true);
      expect(readFileSync(f, 'utf8')).toBe('four');
      const { chmodSync } = await import('node:fs');
      chmodSync(f, 0o444);
      expect(() => assertWritable(f)).toThrow(expect.objectContaining({ code: 'MCPX_INSTALL_READ_ONLY' }));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 15_000);
});

describe('install plans', () => {
  it('a file changed between plan and write: nothing written; planned again, servers moved already count as there', async () => {
    const { mkdtempSync, writeFileSync, readFileSync, rmSync, mkdirSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { planInstall, applyInstall } = await import('../../src/install/install.js');
    const dir = mkdtempSync(join(tmpdir(), 'mcpx-plan-'));
    try {
      const file = join(dir, '.claude.json');
      const configFile = join(dir, 'mcpx', 'config.json');
      mkdirSync(join(dir, 'mcpx'));
      writeFileSync(file, '{\n  "numStartups": 1,\n  "mcpServers": {\n    "a": { "command": "x" }\n  }\n}\n');
      const client = findClient('claude-code')!;
      const opts = { client, file, configFile, spec: { command: '/n', args: ['/m.js', 'serve'] }, import: true, renames: new Map(), skips: new Set<string>() };
      const first = planInstall(opts);
      // The client writes its file meanwhile.
      writeFileSync(file, readFileSync(file, 'utf8').replace('"numStartups": 1', '"numStartups": 2'));
      await expect(applyInstall(first, join(dir, 'state'))).rejects.toThrow(expect.objectContaining({ code: 'MCPX_INSTALL_RACE' }));
      expect(readFileSync(file, 'utf8')).toContain('"a": { "command": "x" }');
      expect(JSON.parse(readFileSync(configFile, 'utf8')).mcpServers).toEqual({ a: { command: 'x' } }); // written first
      const second = planInstall(opts);
      expect(second.imported).toMatchObject({ moved: [], already: ['a'] });
      await applyInstall(second, join(dir, 'state'));
      const now = JSON.parse(readFileSync(file, 'utf8'));
      expect(now.numStartups).toBe(2);
      expect(Object.keys(now.mcpServers)).toEqual(['mcpx']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
