/**
 * The MCP clients `mcpx install` knows: where each keeps its config file on each platform, the key that
 * holds its servers and the file's format (docs/clients.md). `clientPaths` is a pure function of platform,
 * home folder, environment and working folder, so every platform's paths are testable on any machine.
 */
import { posix, win32 } from 'node:path';

export type ClientName = 'claude-desktop' | 'claude-code' | 'cursor' | 'vscode' | 'vscode-insiders' | 'windsurf' | 'codex';
export type Platform = 'linux' | 'darwin' | 'win32';

/** How a client's file holds servers: a JSON(C) object under `key`, or TOML tables `[mcp_servers.NAME]`. */
export type ClientFormat = 'json' | 'toml';

export interface ClientInfo {
  name: ClientName;
  title: string;
  format: ClientFormat;
  /** The key holding the servers (TOML: the table prefix). */
  key: 'mcpServers' | 'servers' | 'mcp_servers';
  /** VS Code requires `type: "stdio"` on a command entry. */
  typeStdio: boolean;
  /** The field a remote server's address is in (Windsurf writes `serverUrl`). */
  urlKey: 'url' | 'serverUrl';
  /**
   * The tool strategy its entry runs `mcpx serve` with (docs/clients.md): `all` for a client that defers
   * tools itself (names first, schemas when it needs them: its own search sees every tool, with its
   * validation and permissions), `auto` for one that takes only so many tools (the full list while it
   * fits, else search_tools, describe_tools and call_tool).
   */
  tools: 'all' | 'auto';
}

export const CLIENTS: readonly ClientInfo[] = [
  { name: 'claude-desktop', title: 'Claude Desktop', format: 'json', key: 'mcpServers', typeStdio: false, urlKey: 'url', tools: 'auto' },
  { name: 'claude-code', title: 'Claude Code', format: 'json', key: 'mcpServers', typeStdio: false, urlKey: 'url', tools: 'all' },
  { name: 'cursor', title: 'Cursor', format: 'json', key: 'mcpServers', typeStdio: false, urlKey: 'url', tools: 'auto' },
  { name: 'vscode', title: 'VS Code', format: 'json', key: 'servers', typeStdio: true, urlKey: 'url', tools: 'auto' },
  { name: 'vscode-insiders', title: 'VS Code Insiders', format: 'json', key: 'servers', typeStdio: true, urlKey: 'url', tools: 'auto' },
  { name: 'windsurf', title: 'Windsurf', format: 'json', key: 'mcpServers', typeStdio: false, urlKey: 'serverUrl', tools: 'auto' },
  { name: 'codex', title: 'Codex', format: 'toml', key: 'mcp_servers', typeStdio: false, urlKey: 'url', tools: 'all' },
];

/** Names a user might type for a client, mapped to the client (`claude` is ambiguous, so not here). */
const ALIASES: Record<string, ClientName> = {
  'claude-desktop': 'claude-desktop',
  claudedesktop: 'claude-desktop',
  desktop: 'claude-desktop',
  'claude-code': 'claude-code',
  claudecode: 'claude-code',
  cursor: 'cursor',
  vscode: 'vscode',
  code: 'vscode',
  'vs-code': 'vscode',
  'vscode-insiders': 'vscode-insiders',
  'code-insiders': 'vscode-insiders',
  windsurf: 'windsurf',
  codex: 'codex',
};

export function findClient(name: string): ClientInfo | undefined {
  const n = ALIASES[name.trim().toLowerCase()];
  return n === undefined ? undefined : CLIENTS.find((c) => c.name === n);
}

export interface PathContext {
  platform: Platform;
  home: string;
  env: Readonly<Record<string, string | undefined>>;
  /** For project-scope files (Claude Code's `.mcp.json`). */
  cwd: string;
}

/**
 * The files a client may read, most likely first. More than one only where a client has been seen in more
 * than one place (the Microsoft Store build of Claude Desktop; Windsurf on Windows): the first that exists
 * is used, else the first.
 */
export function clientPaths(client: ClientName, ctx: PathContext, opts: { project?: boolean } = {}): string[] {
  const p = ctx.platform === 'win32' ? win32 : posix;
  const env = ctx.env;
  const abs = (v: string | undefined): string | undefined => (v !== undefined && v !== '' && p.isAbsolute(v) ? v : undefined);
  // Windows programs take the profile folder from USERPROFILE, not HOME.
  const home = ctx.platform === 'win32' ? (abs(env['USERPROFILE']) ?? ctx.home) : ctx.home;
  const appData = abs(env['APPDATA']) ?? p.join(home, 'AppData', 'Roaming');
  const localAppData = abs(env['LOCALAPPDATA']) ?? p.join(home, 'AppData', 'Local');
  const xdgConfig = abs(env['XDG_CONFIG_HOME']) ?? p.join(home, '.config');
  const macSupport = p.join(home, 'Library', 'Application Support');
  const appFolder = (name: string): string =>
    ctx.platform === 'win32' ? p.join(appData, name) : ctx.platform === 'darwin' ? p.join(macSupport, name) : p.join(xdgConfig, name);
  switch (client) {
    case 'claude-desktop': {
      const main = p.join(appFolder('Claude'), 'claude_desktop_config.json');
      // The Store (MSIX) build keeps its Roaming folder inside its package folder.
      return ctx.platform === 'win32'
        ? [main, p.join(localAppData, 'Packages', 'Claude_pzs8sxrjxfjjc', 'LocalCache', 'Roaming', 'Claude', 'claude_desktop_config.json')]
        : [main];
    }
    case 'claude-code': {
      if (opts.project) return [p.join(ctx.cwd, '.mcp.json')];
      const dir = abs(env['CLAUDE_CONFIG_DIR']);
      return [dir !== undefined ? p.join(dir, '.claude.json') : p.join(home, '.claude.json')];
    }
    case 'cursor':
      return [p.join(home, '.cursor', 'mcp.json')];
    case 'vscode':
      return [p.join(appFolder('Code'), 'User', 'mcp.json')];
    case 'vscode-insiders':
      return [p.join(appFolder('Code - Insiders'), 'User', 'mcp.json')];
    case 'windsurf': {
      const main = p.join(home, '.codeium', 'windsurf', 'mcp_config.json');
      return ctx.platform === 'win32' ? [main, p.join(appData, 'Codeium', 'windsurf', 'mcp_config.json')] : [main];
    }
    case 'codex': {
      const dir = abs(env['CODEX_HOME']);
      return [p.join(dir ?? p.join(home, '.codex'), 'config.toml')];
    }
  }
}

export function currentPlatform(): Platform {
  return process.platform === 'win32' ? 'win32' : process.platform === 'darwin' ? 'darwin' : 'linux';
}
