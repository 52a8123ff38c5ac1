import { mkdir, mkdtemp, realpath, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, McpxError } from '../../src/errors.js';
import { CANONICAL_PREFERENCES, PREFERENCE_ALIASES, type Preference } from '../../src/machines/preference.js';
import { eraCacheKey } from '../../src/upstream/process-key.js';
import { DEFAULT_URL_WIRE, TRANSPORT_CAPABILITIES, WIRES } from '../../src/transports/capabilities.js';
import { wireOf } from '../../src/upstream/definition.js';
import {
  assertConfigOk,
  dottedKey,
  expandVariables,
  findConfigFile,
  loadConfig,
  parseConfigText,
  redactConfig,
  redactUrl,
  resolvePoolConfigs,
  type LoadedConfig,
} from '../../src/config/config-file.js';
import { Settings } from '../../src/config/settings.js';

let root: string;
let home: string;
let env: NodeJS.ProcessEnv;

beforeEach(async () => {
  root = await realpath(await mkdtemp(join(tmpdir(), 'mcpx-config-')));
  home = join(root, 'home');
  await mkdir(home);
  env = { HOME: home };
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function put(path: string, text: string | object): Promise<string> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, typeof text === 'string' ? text : JSON.stringify(text, null, 2));
  return path;
}

const messages = (c: LoadedConfig): string[] => c.errors.map((e) => e.message);
const parse = (text: string, file = '/cfg/.mcpx.json', e: NodeJS.ProcessEnv = { HOME: '/users/u' }): LoadedConfig => parseConfigText(text, file, { env: e });

describe('discovery', () => {
  it('--config names the file alone (relative to cwd), over MCPX_CONFIG and any project file', async () => {
    await put(join(root, 'proj/.mcpx.json'), { mcpServers: { project: { command: 'p' } } });
    await put(join(root, 'proj/custom.json'), { mcpServers: { flagged: { command: 'f' } } });
    await put(join(root, 'envfile.json'), { mcpServers: { fromEnv: { command: 'e' } } });
    const c = await loadConfig({ configFlag: 'custom.json', cwd: join(root, 'proj'), env: { ...env, MCPX_CONFIG: join(root, 'envfile.json') } });
    expect(c).toMatchObject({ found: true, via: 'flag', file: join(root, 'proj/custom.json'), errors: [] });
    expect(c.servers.map((s) => s.name)).toEqual(['flagged']);
  });

  it('MCPX_CONFIG names the file alone, over project files', async () => {
    await put(join(root, 'proj/.mcpx.json'), { mcpServers: { project: { command: 'p' } } });
    await put(join(root, 'envfile.json'), { mcpServers: { fromEnv: { command: 'e' } } });
    const c = await loadConfig({ cwd: join(root, 'proj'), env: { ...env, MCPX_CONFIG: join(root, 'envfile.json') } });
    expect(c).toMatchObject({ found: true, via: 'env', file: join(root, 'envfile.json') });
    expect(c.servers.map((s) => s.name)).toEqual(['fromEnv']);
  });

  it('a missing --config or MCPX_CONFIG file is an error naming it, never a fall-back to discovery', async () => {
    await put(join(root, '.mcpx.json'), { mcpServers: {} });
    const missing = join(root, 'nope.json');
    const byFlag = await loadConfig({ configFlag: missing, cwd: root, env });
    expect(byFlag).toMatchObject({ found: false, file: missing, via: 'flag', servers: [] });
    expect(messages(byFlag)).toEqual([`config ${missing} (named by --config): no such file`]);
    const byEnv = await loadConfig({ cwd: root, env: { ...env, MCPX_CONFIG: missing } });
    expect(messages(byEnv)).toEqual([`config ${missing} (named by MCPX_CONFIG): no such file`]);
    const err = (() => {
      try {
        assertConfigOk(byEnv);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as McpxError).code).toBe('MCPX_BAD_CONFIG');
    const dir = await loadConfig({ configFlag: root, cwd: root, env });
    expect(messages(dir)).toEqual([`config ${root} (named by --config): is a folder, not a file`]);
  });

  it('walks up to the nearest folder with .mcpx.json or .mcp.json', async () => {
    const deep = join(root, 'a/b/c');
    await mkdir(deep, { recursive: true });
    await put(join(root, '.mcpx.json'), { mcpServers: { top: { command: 't' } } });
    await put(join(root, 'a/.mcp.json'), { mcpServers: { middle: { command: 'm' } } });
    const c = await loadConfig({ cwd: deep, env });
    expect(c).toMatchObject({ found: true, via: 'project', file: join(root, 'a/.mcp.json') });
    expect(c.servers.map((s) => s.name)).toEqual(['middle']);
    expect((await findConfigFile({ cwd: root, env }))?.file).toBe(join(root, '.mcpx.json'));
  });

  it('checks .mcpx.json before .mcp.json in the same folder', async () => {
    await put(join(root, 'p/.mcp.json'), { mcpServers: { claude: { command: 'c' } } });
    await put(join(root, 'p/.mcpx.json'), { mcpServers: { mcpx: { command: 'x' } } });
    expect((await findConfigFile({ cwd: join(root, 'p'), env }))?.file).toBe(join(root, 'p/.mcpx.json'));
  });

  it('a folder named .mcp.json is not a config file', async () => {
    await mkdir(join(root, 'p/.mcp.json'), { recursive: true });
    await put(join(root, '.mcp.json'), { mcpServers: {} });
    expect((await findConfigFile({ cwd: join(root, 'p'), env }))?.file).toBe(join(root, '.mcp.json'));
  });

  /** The walk goes up to /; the "none" and XDG cases need no project file above the temp folder. */
  async function ancestorsHaveProjectFile(): Promise<boolean> {
    for (let d = dirname(root); ; d = dirname(d)) {
      for (const n of ['.mcpx.json', '.mcp.json']) {
        if (
          await stat(join(d, n)).then(
            (s) => s.isFile(),
            () => false,
          )
        )
          return true;
      }
      if (dirname(d) === d) return false;
    }
  }

  it('then $XDG_CONFIG_HOME/mcpx/config.json, else ~/.config/mcpx/config.json', async () => {
    expect(await ancestorsHaveProjectFile()).toBe(false);
    const cwd = join(root, 'work');
    await mkdir(cwd);
    const homeFile = await put(join(home, '.config/mcpx/config.json'), { mcpServers: { fromHome: { command: 'h' } } });
    expect(await findConfigFile({ cwd, env })).toEqual({ file: homeFile, via: 'user' });
    const xdgFile = await put(join(root, 'xdg/mcpx/config.json'), { mcpServers: { fromXdg: { command: 'x' } } });
    const c = await loadConfig({ cwd, env: { ...env, XDG_CONFIG_HOME: join(root, 'xdg') } });
    expect(c).toMatchObject({ found: true, via: 'user', file: xdgFile });
    expect(c.servers.map((s) => s.name)).toEqual(['fromXdg']);
    // a project file still wins over the user config
    await put(join(cwd, '.mcp.json'), { mcpServers: {} });
    expect((await findConfigFile({ cwd, env }))?.via).toBe('project');
  });

  it('none found: { found: false } with no errors (the daemon runs the demo)', async () => {
    expect(await ancestorsHaveProjectFile()).toBe(false);
    const c = await loadConfig({ cwd: root, env: { ...env, XDG_CONFIG_HOME: join(root, 'empty-xdg') } });
    expect(c).toEqual({ found: false, servers: [], settingsFile: {}, errors: [], warnings: [] });
    expect(() => assertConfigOk(c)).not.toThrow();
  });
});

describe('files other tools write work unchanged', () => {
  it('the README example', () => {
    const text = `{
  "mcpServers": {
    "memory": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {}, "cwd": "." },
    "remote": { "url": "http://127.0.0.1:8080/mcp", "headers": { "Authorization": "Bearer …" }, "protocol": "follow",
                "mcpx": { "scope": "session", "max": 2, "sharing": "shared", "idleTimeout": "5m" } }
  },
  "upstream": { "protocol": "prefer-discover", "eraCache": true, "probeTimeout": "2s" },
  "pool": { "scope": "global", "max": 4 }
}`;
    const c = parse(text, '/proj/.mcpx.json');
    expect(c.errors).toEqual([]);
    expect(c.warnings).toEqual([]);
    expect(c.servers).toEqual([
      {
        name: 'memory',
        transport: 'stdio',
        definition: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-memory'], env: {}, cwd: '/proj' },
        limits: {},
        timeouts: {},
        disabled: false,
      },
      {
        name: 'remote',
        transport: 'http',
        definition: { url: 'http://127.0.0.1:8080/mcp', headers: { Authorization: 'Bearer …' } },
        preference: 'follow',
        limits: { scope: 'session', max: 2, sharing: 'shared', idleTimeoutMs: 300_000 },
        timeouts: {},
        disabled: false,
      },
    ]);
    expect(c.settingsFile).toEqual({ upstream: { protocol: 'prefer-discover', eraCache: true, probeTimeout: '2s' }, pool: { scope: 'global', max: 4 } });
  });

  it('Claude Desktop claude_desktop_config.json', async () => {
    const file = await put(
      join(root, 'Claude/claude_desktop_config.json'),
      `{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/u/Desktop", "/Users/u/Downloads"]
    },
    "github": {
      "command": "docker",
      "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
      "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_exampletoken123" }
    },
    "sqlite": { "command": "uvx", "args": ["mcp-server-sqlite", "--db-path", "/Users/u/test.db"], "alwaysAllow": ["read_query"], "autoApprove": [] }
  },
  "globalShortcut": "Ctrl+Space"
}
`,
    );
    const c = await loadConfig({ configFlag: file, env });
    expect(c.errors).toEqual([]);
    expect(c.serversKey).toBe('mcpServers');
    expect(c.settingsFile).toEqual({});
    expect(c.servers.map((s) => [s.name, s.transport, s.disabled])).toEqual([
      ['filesystem', 'stdio', false],
      ['github', 'stdio', false],
      ['sqlite', 'stdio', false],
    ]);
    expect(c.servers[1]?.definition).toEqual({
      command: 'docker',
      args: ['run', '-i', '--rm', '-e', 'GITHUB_PERSONAL_ACCESS_TOKEN', 'ghcr.io/github/github-mcp-server'],
      env: { GITHUB_PERSONAL_ACCESS_TOKEN: 'ghp_exampletoken123' },
      cwd: join(root, 'Claude'),
    });
    // other tools' keys are ignored and left out
    expect(JSON.stringify(c.servers)).not.toContain('alwaysAllow');
    expect(JSON.stringify(c.servers)).not.toContain('autoApprove');
    expect(JSON.stringify(c)).not.toContain('globalShortcut');
    const pools = resolvePoolConfigs(c, new Settings({ env }));
    expect(pools.map((p) => p.preference)).toEqual(['prefer-discover', 'prefer-discover', 'prefer-discover']);
  });

  it('Claude Code .mcp.json: type stdio/http/sse and ${VAR} / ${VAR:-default} expansion', () => {
    const text = JSON.stringify({
      mcpServers: {
        local: { type: 'stdio', command: '${TOOLS_DIR}/server', args: ['--port', '${PORT:-3000}'], env: { API_KEY: '${API_KEY}' } },
        api: { type: 'http', url: '${API_BASE_URL:-https://api.example.com}/mcp', headers: { Authorization: 'Bearer ${API_KEY}' } },
        old: { type: 'sse', url: 'https://sse.example.com/sse' },
      },
    });
    const c = parse(text, '/proj/.mcp.json', { HOME: '/users/u', TOOLS_DIR: '/opt/tools', API_KEY: 'sk-live-123' });
    expect(c.errors).toEqual([]);
    expect(c.servers.map((s) => s.definition)).toEqual([
      { command: '/opt/tools/server', args: ['--port', '3000'], env: { API_KEY: 'sk-live-123' }, cwd: '/proj' },
      { url: 'https://api.example.com/mcp', headers: { Authorization: 'Bearer sk-live-123' } },
      // `type: "sse"` goes straight to the deprecated HTTP+SSE transport (no probe).
      { url: 'https://sse.example.com/sse', headers: {}, transport: 'sse' },
    ]);
    expect(c.servers.map((s) => s.transport)).toEqual(['stdio', 'http', 'http']);
    expect(c.warnings).toEqual([]);
  });

  it('VS Code .vscode/mcp.json: "servers", comments, trailing commas, ${env:…} and ${workspaceFolder}', () => {
    const text = `{
  // 💡 Inputs are prompted on first server start, then stored securely by VS Code.
  "inputs": [
    { "type": "promptString", "id": "perplexity-key", "description": "Perplexity API Key", "password": true },
  ],
  "servers": {
    /* a local one */
    "Perplexity": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "server-perplexity-ask"],
      "env": { "PERPLEXITY_API_KEY": "\${env:PERPLEXITY_API_KEY}" },
    },
    "fetch": { "type": "stdio", "command": "uvx", "args": ["mcp-server-fetch", "--root", "\${workspaceFolder}/data"] },
    "github": { "type": "http", "url": "https://api.githubcopilot.com/mcp/" },
  },
}`;
    const c = parse(text, '/ws/.vscode/mcp.json', { HOME: '/users/u', PERPLEXITY_API_KEY: 'pplx-abc' });
    expect(c.errors).toEqual([]);
    expect(c.serversKey).toBe('servers');
    expect(c.servers.map((s) => [s.name, s.transport])).toEqual([
      ['Perplexity', 'stdio'],
      ['fetch', 'stdio'],
      ['github', 'http'],
    ]);
    expect(c.servers[0]?.definition).toMatchObject({ env: { PERPLEXITY_API_KEY: 'pplx-abc' }, cwd: '/ws/.vscode' });
    expect(c.servers[1]?.definition).toMatchObject({ args: ['mcp-server-fetch', '--root', '/ws/data'] });
    expect(c.settingsFile).toEqual({});
  });

  it('VS Code ${input:…} cannot be prompted for: an error naming file, server and key', () => {
    const c = parse(JSON.stringify({ servers: { p: { command: 'npx', env: { KEY: '${input:perplexity-key}' } } } }), '/ws/.vscode/mcp.json');
    expect(messages(c)).toEqual([
      'config /ws/.vscode/mcp.json: servers.p.env.KEY: ${input:perplexity-key} asks the editor to prompt for a value, which mcpx cannot do; put the value in an environment variable and write ${env:NAME}',
    ]);
    expect(c.errors[0]).toMatchObject({ file: '/ws/.vscode/mcp.json', server: 'p', key: 'servers.p.env.KEY' });
  });
});

describe('variables', () => {
  const ctx = { env: { A: 'x', EMPTY: '' }, home: '/users/u', workspaceFolder: '/ws' };
  it('expand as Claude Code, VS Code and Cursor do', () => {
    expect(expandVariables('${A}-${A:-d}-${B:-d}-${EMPTY:-e}-${env:A}-${userHome}-${workspaceFolder}-${workspaceFolderBasename}', ctx)).toEqual({
      ok: true,
      value: 'x-x-d-e-x-/users/u-/ws-ws',
      missingEnv: [],
      // what came from the environment (secrets, issue 12); a default written in the file did not
      fromEnv: ['x', 'x', 'x'],
    });
    expect(expandVariables('${env:NOPE}', ctx)).toEqual({ ok: true, value: '', missingEnv: ['NOPE'], fromEnv: [] });
    expect(expandVariables('$A ${not a var} ${config:x}', ctx)).toEqual({ ok: true, value: '$A ${not a var} ${config:x}', missingEnv: [], fromEnv: [] });
    expect(expandVariables('${NOPE}', ctx)).toEqual({
      ok: false,
      message: '${NOPE} is not set in the environment (write ${NOPE:-default} to give a fallback)',
    });
  });

  it('an unset ${VAR} is an error naming file, server and key; an unset ${env:VAR} a warning', () => {
    const c = parse(JSON.stringify({ mcpServers: { s: { command: 'x', args: ['--token', '${TOKEN}'], env: { B: '${env:MAYBE}' } } } }));
    expect(messages(c)).toEqual([
      'config /cfg/.mcpx.json: mcpServers.s.args[1]: ${TOKEN} is not set in the environment (write ${TOKEN:-default} to give a fallback)',
    ]);
    expect(c.warnings.map((w) => w.message)).toEqual([
      'config /cfg/.mcpx.json: mcpServers.s.env.B: ${env:MAYBE} is not set in the environment; it expands to an empty string',
    ]);
  });
});

describe('JSON with comments', () => {
  it('accepts line and block comments and trailing commas', () => {
    const c = parse(`// mcpx config
{
  /* servers */
  "mcpServers": {
    "a": { "command": "node", "args": ["a.js",], }, // trailing commas
  },
  "pool": { "max": 2, },
}`);
    expect(c.errors).toEqual([]);
    expect(c.servers[0]?.definition).toMatchObject({ command: 'node', args: ['a.js'] });
    expect(c.settingsFile).toEqual({ pool: { max: 2 } });
  });

  it('accepts a byte-order mark', () => {
    expect(parse('\uFEFF{"mcpServers": {"a": {"command": "x"}}}').servers).toHaveLength(1);
  });

  it('a syntax error names the file, line and column', () => {
    const text = '{\n  "mcpServers": {\n    "a": { "command": "x" }\n    "b": { "command": "y" }\n  }\n}\n';
    const c = parse(text, '/cfg/broken.json');
    expect(c.found).toBe(true);
    expect(c.servers).toEqual([]);
    expect(c.errors[0]).toMatchObject({ file: '/cfg/broken.json', line: 4, column: 5 });
    expect(messages(c)[0]).toBe('config /cfg/broken.json: line 4, column 5: "," expected');
  });

  it('an unterminated string and a stray character are located too', () => {
    expect(messages(parse('{"mcpServers": {"a": {"command": "x}}}\n'))[0]).toMatch(/^config \/cfg\/\.mcpx\.json: line 1, column 3\d: unterminated string$/);
    expect(messages(parse('{\n\n  "pool": { "max": 2 } }\n}'))[0]).toBe(
      'config /cfg/.mcpx.json: line 4, column 1: end of file expected (something follows the top-level value)',
    );
  });

  it('an empty file and a top level that is not an object are errors', () => {
    expect(messages(parse('  \n'))).toEqual(['config /cfg/.mcpx.json: the file is empty (expected a JSON object such as {"mcpServers": {}})']);
    expect(messages(parse('[]'))).toEqual(['config /cfg/.mcpx.json: the top level must be a JSON object (found an array)']);
  });
});

describe('errors name the file, the server and the key', () => {
  const F = '/users/u/.mcpx.json';
  const one = (server: object, e?: NodeJS.ProcessEnv): LoadedConfig => parse(JSON.stringify({ mcpServers: { remote: server } }, null, 2), F, e);

  it('a bad duration in the mcpx block (the brief example)', () => {
    const c = one({ url: 'http://127.0.0.1:8080/mcp', mcpx: { idleTimeout: '5 minutes' } });
    expect(messages(c)).toEqual([
      `config ${F}: mcpServers.remote.mcpx.idleTimeout: "5 minutes" is not a duration (use e.g. 500ms, 2s, 5m, 1h, 1m30s, or a number of milliseconds)`,
    ]);
    expect(c.errors[0]).toMatchObject({ source: 'file', file: F, server: 'remote', key: 'mcpServers.remote.mcpx.idleTimeout', line: 6, column: 9 });
    expect(c.servers).toEqual([]);
  });

  it("mcpx.roots: a list of folder paths, resolved against the file's folder; a bad value names file, server and key", () => {
    const good = one({ command: 'x', mcpx: { roots: ['./data', '~/src', '/abs'] } });
    expect(messages(good)).toEqual([]);
    const [data, src, abs] = good.servers[0]!.roots!;
    expect([data, abs]).toEqual(['/users/u/data', '/abs']);
    expect(src).toMatch(/\/src$/);
    expect(messages(one({ command: 'x', mcpx: { roots: '/tmp' } }))).toEqual([
      `config ${F}: mcpServers.remote.mcpx.roots: "/tmp" is not a list of folder paths (e.g. ["~/src", "./data"])`,
    ]);
    const bad = one({ command: 'x', mcpx: { roots: ['/ok', 3, ''] } });
    expect(messages(bad)).toEqual([
      `config ${F}: mcpServers.remote.mcpx.roots[1]: 3 is not a folder path`,
      `config ${F}: mcpServers.remote.mcpx.roots[2]: "" is not a folder path`,
    ]);
    expect(bad.errors[0]).toMatchObject({ file: F, server: 'remote', key: 'mcpServers.remote.mcpx.roots[1]' });
    expect(bad.servers).toEqual([]);
  });

  it('mcpx.tools, mcpx.pin, mcpx.pinTools: globs and a boolean; a bad value names file, server and key', () => {
    const good = one({ command: 'x', mcpx: { tools: { allow: ['read_*', 'list'], deny: ['read_secret?'] }, pin: ['list'], pinTools: true } });
    expect(messages(good)).toEqual([]);
    expect(good.servers[0]).toMatchObject({ tools: { allow: ['read_*', 'list'], deny: ['read_secret?'] }, pin: ['list'], pinTools: true });
    expect(one({ command: 'x', mcpx: { pin: true } }).servers[0]!.pin).toBe(true);
    expect(one({ command: 'x' }).servers[0]).not.toHaveProperty('tools');
    const bad = one({ command: 'x', mcpx: { tools: { allow: 'read_*', deny: ['ok', 3, ''], only: [] }, pin: 'all', pinTools: 'yes' } });
    expect(messages(bad)).toEqual([
      `config ${F}: mcpServers.remote.mcpx.tools.allow: "read_*" is not a list of tool names or globs (e.g. ["read_*", "search"])`,
      `config ${F}: mcpServers.remote.mcpx.tools.deny[1]: 3 is not a tool name or glob (a non-empty string; * matches any run of characters, ? one)`,
      `config ${F}: mcpServers.remote.mcpx.tools.deny[2]: "" is not a tool name or glob (a non-empty string; * matches any run of characters, ? one)`,
      `config ${F}: mcpServers.remote.mcpx.tools.only: is not a key of mcpx.tools; use allow, deny`,
      `config ${F}: mcpServers.remote.mcpx.pin: "all" is not true (every tool) or a list of tool names or globs`,
      `config ${F}: mcpServers.remote.mcpx.pinTools: "yes" is not a boolean (use true or false)`,
    ]);
    expect(bad.errors[0]).toMatchObject({ file: F, server: 'remote', key: 'mcpServers.remote.mcpx.tools.allow' });
    expect(bad.servers).toEqual([]);
    expect(messages(one({ command: 'x', mcpx: { tools: ['read_*'] } }))).toEqual([
      `config ${F}: mcpServers.remote.mcpx.tools: ["read_*"] is not an object like {"allow": ["read_*"], "deny": ["delete_*"]}`,
    ]);
  });

  it("other clients' tool lists are ignored with a warning naming mcpx.tools", () => {
    const c = one({ command: 'x', disabledTools: ['a'], includeTools: ['b'], excludeTools: ['c'] });
    expect(c.warnings.map((w) => w.message)).toEqual([
      `config ${F}: mcpServers.remote.disabledTools: is another client's key, ignored by mcpx: to leave tools out write "mcpx": {"tools": {"deny": ["name", "prefix_*"]}}`,
      `config ${F}: mcpServers.remote.includeTools: is another client's key, ignored by mcpx: to serve only some tools write "mcpx": {"tools": {"allow": ["name", "prefix_*"]}}`,
      `config ${F}: mcpServers.remote.excludeTools: is another client's key, ignored by mcpx: to leave tools out write "mcpx": {"tools": {"deny": ["name", "prefix_*"]}}`,
    ]);
  });

  it('an unknown key in the mcpx block, with a suggestion', () => {
    const c = one({ command: 'x', mcpx: { idelTimeout: '5m', colour: 'blue' } });
    expect(messages(c)).toEqual([
      `config ${F}: mcpServers.remote.mcpx.idelTimeout: is not an mcpx key (did you mean idleTimeout?); use scope, max, sharing, idleTimeout, probeTimeout, startTimeout, requestTimeout, inheritEnv, roots, tools, pin, pinTools`,
      `config ${F}: mcpServers.remote.mcpx.colour: is not an mcpx key; use scope, max, sharing, idleTimeout, probeTimeout, startTimeout, requestTimeout, inheritEnv, roots, tools, pin, pinTools`,
    ]);
  });

  it('bad mcpx values: scope, max, sharing, probeTimeout, and a block that is not an object', () => {
    const c = one({ command: 'x', mcpx: { scope: 'planet', max: 0, sharing: 'mine', probeTimeout: -5 } });
    expect(messages(c)).toEqual([
      `config ${F}: mcpServers.remote.mcpx.scope: "planet" is not one of: global, session, call`,
      `config ${F}: mcpServers.remote.mcpx.max: 0 is not a whole number ≥ 1`,
      `config ${F}: mcpServers.remote.mcpx.sharing: "mine" is not one of: shared, exclusive`,
      `config ${F}: mcpServers.remote.mcpx.probeTimeout: -5 is negative: not a duration (use e.g. 500ms, 2s, 5m, 1h, 1m30s, or a number of milliseconds)`,
    ]);
    expect(messages(one({ command: 'x', mcpx: 'fast' }))).toEqual([
      `config ${F}: mcpServers.remote.mcpx: must be an object with the keys scope, max, sharing, idleTimeout, probeTimeout, startTimeout, requestTimeout, inheritEnv, roots, tools, pin, pinTools`,
    ]);
  });

  it('a bad protocol lists the canonical values', () => {
    expect(messages(one({ command: 'x', protocol: 'sideways' }))).toEqual([
      `config ${F}: mcpServers.remote.protocol: "sideways" is not a protocol preference; use one of: prefer-discover, prefer-initialize, force-discover, force-initialize, follow`,
    ]);
    expect(messages(one({ command: 'x', protocol: 3 }))[0]).toBe(
      `config ${F}: mcpServers.remote.protocol: 3 is not a protocol preference; use one of: prefer-discover, prefer-initialize, force-discover, force-initialize, follow`,
    );
  });

  it('command and url together, or neither', () => {
    expect(messages(one({ command: 'x', url: 'http://127.0.0.1/mcp' }))).toEqual([
      `config ${F}: mcpServers.remote: has both "command" and "url"; give one: "command" for a stdio server, "url" for a Streamable HTTP server`,
    ]);
    expect(messages(one({ args: ['a'] }))).toEqual([`config ${F}: mcpServers.remote: needs "command" (a stdio server) or "url" (a Streamable HTTP server)`]);
    expect(messages(one({ type: 'http' }))).toEqual([`config ${F}: mcpServers.remote: is type "http" and needs a "url"`]);
  });

  it('type/transport must agree with command/url and with each other', () => {
    expect(messages(one({ type: 'stdio', url: 'http://127.0.0.1/mcp' }))).toEqual([
      `config ${F}: mcpServers.remote.type: "stdio" needs "command", but this server has a "url"`,
    ]);
    expect(messages(one({ type: 'streamable-http', command: 'x' }))).toEqual([
      `config ${F}: mcpServers.remote.type: "streamable-http" needs "url", but this server has a "command"`,
    ]);
    expect(messages(one({ type: 'websocket', command: 'x' }))).toEqual([
      `config ${F}: mcpServers.remote.type: "websocket" is not a transport mcpx knows (use stdio, http, streamable-http or sse)`,
    ]);
    expect(messages(one({ type: 'http', transport: 'stdio', url: 'http://127.0.0.1/mcp' }))).toEqual([
      `config ${F}: mcpServers.remote.transport: "stdio" disagrees with "type" "http"`,
    ]);
    expect(one({ transport: 'Streamable-HTTP', url: 'http://127.0.0.1/mcp' }).errors).toEqual([]);
  });

  it('every wire of the transport table is a `type` a config may name, reached as the table says', () => {
    for (const wire of WIRES) {
      const caps = TRANSPORT_CAPABILITIES[wire];
      const entry = caps.processBound ? { type: wire, command: 'x' } : { type: wire, url: `${caps.urlSchemes[0]}//127.0.0.1/mcp` };
      const c = one(entry);
      expect(c.errors, wire).toEqual([]);
      const def = c.servers[0]!.definition;
      // The default URL wire keeps its fallback (no pinned transport); any other is used as declared.
      expect(wireOf(def), wire).toBe(wire);
      expect('transport' in def, wire).toBe(!caps.processBound && wire !== DEFAULT_URL_WIRE);
      expect(messages(one(caps.processBound ? { type: wire, url: 'http://127.0.0.1/mcp' } : { type: wire, command: 'x' }))[0], wire).toMatch(
        caps.processBound ? /needs "command", but this server has a "url"/ : /needs "url", but this server has a "command"/,
      );
    }
    expect(messages(one({ type: 'sse', url: 'ftp://127.0.0.1/mcp' }))).toEqual([
      `config ${F}: mcpServers.remote.url: "ftp://127.0.0.1/mcp" is not an http:// or https:// URL`,
    ]);
  });

  it('bad args, env, headers, url, cwd, disabled; env and header values never appear in messages', () => {
    const secret = { nested: 'hunter2-secret' };
    const stdio = one({ command: '', args: ['ok', { no: 1 }], env: { GOOD: 'x', BAD: secret }, cwd: 7, disabled: 'yes' });
    expect(messages(stdio)).toEqual([
      `config ${F}: mcpServers.remote.command: "" is not a command (a non-empty string, e.g. "npx")`,
      `config ${F}: mcpServers.remote.args[1]: {"no":1} is not a string`,
      `config ${F}: mcpServers.remote.env.BAD: must be a string (found object)`,
      `config ${F}: mcpServers.remote.cwd: 7 is not a folder path`,
      `config ${F}: mcpServers.remote.disabled: "yes" is not a boolean (use true or false)`,
    ]);
    const http = one({ url: 'ftp://user:hunter2-secret@host/x', headers: ['Authorization: x'] });
    expect(messages(http)).toEqual([
      `config ${F}: mcpServers.remote.url: "ftp://<redacted>@host/x" is not an http:// or https:// URL`,
      `config ${F}: mcpServers.remote.headers: must be an object of header names to string values`,
    ]);
    expect(JSON.stringify([stdio, http])).not.toContain('hunter2');
  });

  it('numbers and booleans in args and env are passed as text', () => {
    const c = one({ command: 'x', args: ['--port', 8080, true], env: { N: 1, B: false } });
    expect(c.errors).toEqual([]);
    expect(c.servers[0]?.definition).toMatchObject({ args: ['--port', '8080', 'true'], env: { N: '1', B: 'false' } });
  });

  it('all the errors of a file are collected, and good servers are still returned', () => {
    const c = parse(
      JSON.stringify(
        {
          mcpServers: {
            good: { command: 'ok' },
            a: { command: 'x', url: 'http://127.0.0.1/' },
            b: { command: 'x', protocol: 'nope', mcpx: { typo: 1 } },
            'odd.name': {},
          },
          pool: { max: 0 },
          upstream: { protocl: 'follow' },
        },
        null,
        2,
      ),
      F,
    );
    expect(c.servers.map((s) => s.name)).toEqual(['good']);
    expect(c.errors.map((e) => [e.server, e.key])).toEqual([
      [undefined, 'upstream.protocl'],
      [undefined, 'pool.max'],
      ['a', 'mcpServers.a'],
      ['b', 'mcpServers.b.protocol'],
      ['b', 'mcpServers.b.mcpx.typo'],
      ['odd.name', 'mcpServers["odd.name"]'],
    ]);
    expect(c.errors.every((e) => e.message.startsWith(`config ${F}: `) && e.file === F)).toBe(true);
    expect(c.errors[1]).toMatchObject({ message: `config ${F}: pool.max: 0 is not a whole number ≥ 1`, line: 20, column: 5 });
    expect(() => assertConfigOk(c)).toThrow(ConfigError);
    try {
      assertConfigOk(c);
    } catch (err) {
      expect((err as ConfigError).problems).toHaveLength(6);
      expect((err as Error).message.split('\n')).toEqual(messages(c));
    }
  });

  it('a file with both mcpServers and servers, or servers that are not an object', () => {
    expect(messages(parse('{"mcpServers": {}, "servers": {}}'))).toEqual([
      'config /cfg/.mcpx.json: servers: the file has both "mcpServers" and "servers"; keep one (mcpServers as Claude Desktop writes it, or servers as VS Code does)',
    ]);
    expect(messages(parse('{"mcpServers": []}'))[0]).toMatch(/^config \/cfg\/\.mcpx\.json: mcpServers: must be an object of servers by name/);
    expect(messages(parse('{"mcpServers": {"x": "npx foo"}}'))).toEqual([
      'config /cfg/.mcpx.json: mcpServers.x: must be an object with "command" (stdio) or "url" (Streamable HTTP)',
    ]);
  });

  it('unknown keys outside the mcpx block are ignored with a warning (the nearest key when one is close); other clients keys are accepted or pointed at mcpx own', () => {
    const c = one({ command: 'x', protocl: 'follow', alwaysAllow: ['t'], autoApprove: [], trust: true, description: 'd', someToolSetting: 1, enabled: false });
    expect(c.errors).toEqual([]);
    expect(c.servers[0]?.preference).toBeUndefined();
    expect(c.warnings.map((w) => w.message)).toEqual([
      `config ${F}: mcpServers.remote.protocl: is not a key mcpx reads and is ignored (did you mean protocol?)`,
      `config ${F}: mcpServers.remote.someToolSetting: is not a key mcpx reads and is ignored`,
      `config ${F}: mcpServers.remote.enabled: is another client's key, ignored by mcpx: mcpx reads "disabled": true`,
    ]);
    expect(Object.keys(c.servers[0] ?? {}).sort()).toEqual(['definition', 'disabled', 'limits', 'name', 'timeouts', 'transport']);
  });

  it('a server name given twice: the last definition is used, with a warning at the second', () => {
    const c = parse('{"mcpServers": {\n  "a": {"command": "first"},\n  "a": {"command": "second"}\n}}');
    expect(c.errors).toEqual([]);
    expect(c.servers.map((s) => (s.definition as { command: string }).command)).toEqual(['second']);
    expect(c.warnings).toEqual([
      {
        source: 'file',
        file: '/cfg/.mcpx.json',
        key: 'mcpServers.a',
        server: 'a',
        line: 3,
        column: 3,
        message: 'config /cfg/.mcpx.json: mcpServers.a: is defined more than once; the last definition is used',
      },
    ]);
  });

  it('dotted keys quote names that are not plain', () => {
    expect(dottedKey(['mcpServers', 'my-server', 'args', 2])).toBe('mcpServers.my-server.args[2]');
    expect(dottedKey(['mcpServers', 'a.b', 'env', 'X Y'])).toBe('mcpServers["a.b"].env["X Y"]');
  });
});

describe('server protocol key: every alias', () => {
  const all: [string, Preference][] = [...CANONICAL_PREFERENCES.map((c): [string, Preference] => [c, c]), ...Object.entries(PREFERENCE_ALIASES)];
  for (const [name, canonical] of all) {
    it(`"${name}" → ${canonical}, and it overrides upstream.protocol`, () => {
      const c = parse(JSON.stringify({ mcpServers: { s: { command: 'x', protocol: ` ${name.toUpperCase()}` } }, upstream: { protocol: 'force-legacy' } }));
      expect(c.errors).toEqual([]);
      expect(c.servers[0]?.preference).toBe(canonical);
      const settings = new Settings({ env: {}, file: c.settingsFile });
      expect(settings.get('upstream.protocol')).toBe('force-initialize');
      expect(resolvePoolConfigs(c, settings)[0]?.preference).toBe(canonical);
    });
  }
});

describe('cwd', () => {
  it('relative to the config file folder; absent means the config file folder; ~ is the home folder', async () => {
    const file = await put(join(root, 'proj/.mcp.json'), {
      mcpServers: {
        rel: { command: 'node', args: ['server.js'], cwd: 'tools/srv' },
        up: { command: 'node', cwd: '../elsewhere' },
        abs: { command: 'node', cwd: '/opt/x' },
        tilde: { command: 'node', cwd: '~/bin' },
        none: { command: 'node' },
      },
    });
    const c = await loadConfig({ cwd: join(root, 'proj/deeper'), env });
    expect(c.file).toBe(file);
    expect(Object.fromEntries(c.servers.map((s) => [s.name, (s.definition as { cwd?: string }).cwd]))).toEqual({
      rel: join(root, 'proj/tools/srv'),
      up: join(root, 'elsewhere'),
      abs: '/opt/x',
      tilde: join(home, 'bin'),
      none: join(root, 'proj'),
    });
  });

  it('the definitions feed the era-cache key (the same file gives the same key)', () => {
    const text = JSON.stringify({ mcpServers: { a: { command: 'x', args: ['1'], env: { K: 'v' } } } });
    const k1 = eraCacheKey(parse(text).servers[0]?.definition ?? {});
    const k2 = eraCacheKey(parse(text).servers[0]?.definition ?? {});
    expect(k1).toMatch(/^[0-9a-f]{64}$/);
    expect(k1).toBe(k2);
    expect(eraCacheKey(parse(text, '/elsewhere/.mcpx.json').servers[0]?.definition ?? {})).not.toBe(k1); // cwd differs
  });
});

describe('resolvePoolConfigs', () => {
  it("merges each server's mcpx block over pool.* and upstream.*, and skips disabled servers", () => {
    const c = parse(
      JSON.stringify({
        mcpServers: {
          plain: { command: 'a' },
          tuned: {
            url: 'http://127.0.0.1:9/mcp',
            protocol: 'legacy',
            mcpx: { scope: 'call', max: 8, sharing: 'exclusive', idleTimeout: '30s', probeTimeout: '5s', startTimeout: '10m', requestTimeout: 1000 },
          },
          off: { command: 'b', disabled: true },
        },
        pool: { scope: 'session', max: 3, idleTimeout: '2m' },
        upstream: { protocol: 'follow', probeTimeout: '1s' },
      }),
    );
    expect(c.errors).toEqual([]);
    expect(c.servers.find((s) => s.name === 'off')?.disabled).toBe(true);
    const settings = new Settings({ env: { HOME: '/h' }, file: c.settingsFile, flags: { '--pool-sharing': 'shared' } });
    expect(resolvePoolConfigs(c, settings)).toEqual([
      {
        name: 'plain',
        definition: { command: 'a', args: [], env: {}, cwd: '/cfg' },
        preference: 'follow',
        limits: { scope: 'session', max: 3, sharing: 'shared', idleTimeoutMs: 120_000 },
        probeTimeoutMs: 1_000,
        startTimeoutMs: 120_000,
        requestTimeoutMs: 300_000,
      },
      {
        name: 'tuned',
        definition: { url: 'http://127.0.0.1:9/mcp', headers: {} },
        preference: 'prefer-initialize',
        limits: { scope: 'call', max: 8, sharing: 'exclusive', idleTimeoutMs: 30_000 },
        probeTimeoutMs: 5_000,
        startTimeoutMs: 600_000,
        requestTimeoutMs: 1_000,
      },
    ]);
    settings.setRuntime('upstream.protocol', 'force-modern');
    settings.setRuntime('pool.max', 6);
    const [plain, tuned] = resolvePoolConfigs(c, settings);
    expect([plain?.preference, plain?.limits.max]).toEqual(['force-discover', 6]);
    expect([tuned?.preference, tuned?.limits.max]).toEqual(['prefer-initialize', 8]);
  });

  it('settingsFile feeds Settings as the file source, named in list()', async () => {
    const file = await put(join(root, '.mcpx.json'), { mcpServers: {}, upstream: { protocol: 'prefer-oldest', eraCache: false }, log: { level: 'warn' } });
    const c = await loadConfig({ cwd: root, env });
    const s = new Settings({ env, file: c.settingsFile, filePath: c.file });
    expect(s.entry('upstream.protocol')).toMatchObject({ value: 'prefer-initialize', source: 'file', from: file });
    expect(s.entry('upstream.eraCache')).toMatchObject({ value: false, source: 'file' });
    expect(s.entry('log.level')).toMatchObject({ value: 'warn', source: 'file' });
  });
});

describe('redaction', () => {
  const SECRETS = ['ghp_SECRET_1', 'Bearer SECRET_2', 'SECRET_3', 'SECRET_4', 'SECRET_5'];

  it('replaces every env and headers value, the URL password and secret-looking query values; keys and the rest stay', async () => {
    await put(join(root, '.mcpx.json'), {
      mcpServers: {
        gh: { command: 'docker', args: ['run', '-e', 'GITHUB_TOKEN'], env: { GITHUB_TOKEN: 'ghp_SECRET_1', DEBUG: '1' } },
        remote: { url: 'https://alice:SECRET_3@mcp.example.com/mcp?api_key=SECRET_4&region=eu', headers: { Authorization: 'Bearer SECRET_2' } },
        viaVar: { command: 'x', env: { FROM_VAR: '${MY_SECRET}' } },
      },
    });
    const c = await loadConfig({ cwd: root, env: { ...env, MY_SECRET: 'SECRET_5' } });
    expect(c.errors).toEqual([]);
    const before = JSON.stringify(c);
    const r = redactConfig(c);
    const text = JSON.stringify(r);
    for (const s of SECRETS) {
      expect(before).toContain(s.replace('Bearer ', ''));
      expect(text).not.toContain(s.replace('Bearer ', ''));
    }
    expect(r.servers[0]?.definition).toEqual({
      command: 'docker',
      args: ['run', '-e', 'GITHUB_TOKEN'],
      env: { GITHUB_TOKEN: '<redacted>', DEBUG: '<redacted>' },
      cwd: root,
    });
    expect(r.servers[1]?.definition).toEqual({
      url: 'https://<redacted>@mcp.example.com/mcp?api_key=<redacted>&region=eu',
      headers: { Authorization: '<redacted>' },
    });
    expect(r.servers[2]?.definition).toMatchObject({ env: { FROM_VAR: '<redacted>' } });
    // a deep copy: the original still works
    expect(JSON.stringify(c)).toBe(before);
  });

  it('works on a raw config object too', () => {
    const raw = { mcpServers: { a: { command: 'x', env: { K: 'SECRET_1' } }, b: { url: 'http://u:SECRET_2@h/', headers: { 'X-Key': 'SECRET_3' } } } };
    const text = JSON.stringify(redactConfig(raw));
    expect(text).not.toMatch(/SECRET/);
    expect(text).toContain('"K":"<redacted>"');
    expect(text).toContain('"X-Key":"<redacted>"');
    expect(raw.mcpServers.a.env.K).toBe('SECRET_1');
  });

  it('redactUrl', () => {
    // the whole userinfo: `https://TOKEN@host` carries its token as the user name (issue 12)
    expect(redactUrl('https://user:pw@host:8443/p?q=1#f')).toBe('https://<redacted>@host:8443/p?q=1#f');
    expect(redactUrl('https://tok3n-secret@host/mcp')).toBe('https://<redacted>@host/mcp');
    expect(redactUrl('https://host/mcp?token=abc&x=1')).toBe('https://host/mcp?token=<redacted>&x=1');
    expect(redactUrl('https://host/mcp')).toBe('https://host/mcp');
    expect(redactUrl('not a url //me:pw@x')).toBe('not a url //<redacted>@x');
  });
});

describe('oauth (Claude Code keys, read unchanged)', () => {
  const server = (oauth: unknown, extra: Record<string, unknown> = {}) =>
    JSON.stringify({ mcpServers: { r: { type: 'http', url: 'https://mcp.example.com/mcp', oauth, ...extra } } });

  it('reads clientId, callbackPort, authServerMetadataUrl and scopes as Claude Code writes them, plus clientSecret and clientMetadataUrl', () => {
    const c = parse(
      server({
        clientId: 'abc',
        clientSecret: '${SECRET}',
        callbackPort: 8765,
        authServerMetadataUrl: 'https://auth.example.com/.well-known/oauth-authorization-server',
        scopes: 'read  write',
        clientMetadataUrl: 'https://mcpx.example.com/client.json',
      }),
      '/cfg/.mcp.json',
      { HOME: '/users/u', SECRET: 'shh-its-a-secret' },
    );
    expect(c.errors).toEqual([]);
    expect(c.warnings).toEqual([]);
    expect(c.servers[0]?.definition).toMatchObject({
      url: 'https://mcp.example.com/mcp',
      oauth: {
        clientId: 'abc',
        clientSecret: 'shh-its-a-secret',
        callbackPort: 8765,
        authServerMetadataUrl: 'https://auth.example.com/.well-known/oauth-authorization-server',
        scopes: 'read write',
        clientMetadataUrl: 'https://mcpx.example.com/client.json',
      },
    });
    // The secret is a secret wherever it lands: never in the displayed config.
    expect(JSON.stringify(redactConfig(c))).not.toContain('shh-its-a-secret');
    expect(JSON.stringify(redactConfig(JSON.parse(server({ clientId: 'abc', clientSecret: 'literal-secret-1' }))))).not.toContain('literal-secret-1');
  });

  it('a ${VAR} in clientId or scopes is not a secret (they go to the browser in the authorization URL); in clientSecret it is', () => {
    const c = parse(server({ clientId: '${CLIENT_ID}', clientSecret: '${CLIENT_SECRET}', scopes: '${SCOPES}' }), '/cfg/.mcp.json', {
      HOME: '/users/u',
      CLIENT_ID: 'public-client-id',
      CLIENT_SECRET: 'private-client-secret',
      SCOPES: 'mcp:tools',
    });
    expect(c.errors).toEqual([]);
    expect(c.servers[0]?.expanded).toEqual(['private-client-secret']);
    const shown = JSON.stringify(redactConfig(c));
    expect(shown).toContain('public-client-id');
    expect(shown).not.toContain('private-client-secret');
  });

  it('`oauth: false` turns authorization off; absent, everything is discovered', () => {
    expect(parse(server(false)).servers[0]?.definition).toMatchObject({ oauth: false });
    expect(parse(JSON.stringify({ mcpServers: { r: { url: 'https://h/mcp' } } })).servers[0]?.definition).not.toHaveProperty('oauth');
  });

  it('a bad value names file, server and key, and never quotes a secret', () => {
    const c = parse(server({ callbackPort: 70000, clientSecret: 'no-client-id-secret', clientMetadataUrl: 'http://insecure.example.com/c.json', scopes: 3 }));
    expect(messages(c)).toEqual([
      'config /cfg/.mcpx.json: mcpServers.r.oauth.clientSecret: needs "clientId": a secret belongs to a pre-registered client',
      'config /cfg/.mcpx.json: mcpServers.r.oauth.callbackPort: 70000 is not a port (1–65535)',
      'config /cfg/.mcpx.json: mcpServers.r.oauth.scopes: 3 is not a non-empty string',
      'config /cfg/.mcpx.json: mcpServers.r.oauth.clientMetadataUrl: "http://insecure.example.com/c.json" must be an https:// URL',
    ]);
    expect(JSON.stringify(c.errors)).not.toContain('no-client-id-secret');
    expect(messages(parse(server('yes')))).toEqual([
      'config /cfg/.mcpx.json: mcpServers.r.oauth: must be an object with any of clientId, clientSecret, callbackPort, authServerMetadataUrl, scopes, clientMetadataUrl, or false to turn authorization off',
    ]);
  });

  it('unknown keys and a stdio server with oauth are warnings', () => {
    expect(parse(server({ clientID: 'x' })).warnings.map((w) => w.message)).toEqual([
      'config /cfg/.mcpx.json: mcpServers.r.oauth.clientID: is not an oauth key mcpx reads and is ignored (did you mean clientId?) (known: clientId, clientSecret, callbackPort, authServerMetadataUrl, scopes, clientMetadataUrl)',
    ]);
    expect(parse(JSON.stringify({ mcpServers: { s: { command: 'x', oauth: {} } } })).warnings.map((w) => w.message)).toEqual([
      'config /cfg/.mcpx.json: mcpServers.s.oauth: is for HTTP servers and is ignored on a stdio server',
    ]);
  });
});
