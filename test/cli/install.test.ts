/**
 * `mcpx install --client X --import` through the built binary, for every client, in a temp HOME: the entry
 * is then started exactly as the client's file says, by a real MCP client (the SDK v1 client), which lists
 * and calls an imported stdio server through it; every other byte of the file is checked; uninstall gives
 * the original back. Also: a file that does not parse, a read-only file, collisions, --dry-run, doctor.
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseJsonc } from 'jsonc-parser';
import { parse as parseToml } from 'smol-toml';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { cleanEnv, killAll, mcpx, readJson, trackPid, until } from './helpers.js';
import { fixtureCommand } from '../fixtures/index.js';
import { isGone } from '../server/helpers.js';
import { tempDir } from '../support/real.js';

afterAll(killAll);

const DUAL = fixtureCommand('dual-v2');
const LEGACY = fixtureCommand('legacy-v1');
const j = (v: unknown) => JSON.stringify(v);
const dualJson = `{ "command": ${j(DUAL.command)}, "args": ${j(DUAL.args)} }`;
const legacyJson = `{ "command": ${j(LEGACY.command)}, "args": ${j(LEGACY.args)}, "disabled": true }`;
const toml = (v: unknown) => j(v); // JSON strings and arrays of strings are valid TOML

interface Case {
  client: string;
  extra?: string[];
  /** The file, relative to HOME (or the project folder). */
  file: string;
  /** The file is `pre + mid + post`; install changes `mid` only (TOML: cut out, the entry appended). */
  pre: string;
  mid: string;
  post: string;
  /** What `mid` holds after install (besides the entry). */
  kept?: string[];
  project?: boolean;
}

const CASES: Case[] = [
  {
    client: 'claude-desktop',
    file: '.config/Claude/claude_desktop_config.json',
    pre: '{\n  "globalShortcut": "Ctrl+Space",\n  "mcpServers": ',
    mid: `{\n    "dual": ${dualJson},\n    "legacy": ${legacyJson}\n  }`,
    post: ',\n  "preferences": { "menuBarEnabled": false }\n}\n',
  },
  {
    client: 'claude-code',
    file: '.claude.json',
    pre: '{\n  "numStartups": 12,\n  "projects": {\n    "/home/x/proj": { "mcpServers": { "local-one": { "command": "foo" } }, "allowedTools": [] }\n  },\n  "mcpServers": ',
    mid: `{\n    "dual": ${dualJson},\n    "remote": { "type": "http", "url": "http://127.0.0.1:9/mcp", "headers": { "X-Team": "a" } }\n  }`,
    post: ',\n  "tipsHistory": { "x": 1 }\n}\n',
  },
  {
    client: 'claude-code',
    extra: ['--project'],
    project: true,
    file: 'proj/.mcp.json',
    pre: '{\n  "mcpServers": ',
    mid: `{\n    "dual": ${dualJson},\n    "events": { "type": "sse", "url": "http://127.0.0.1:9/sse" }\n  }`,
    post: '\n}\n',
  },
  {
    client: 'cursor',
    file: '.cursor/mcp.json',
    pre: '// Cursor servers\n{\n  /* keep me */ "mcpServers": ',
    mid: `{\n    "dual": ${dualJson}, // the fixture\n    "legacy": ${legacyJson},\n    "remote": { "url": "http://127.0.0.1:9/mcp", "headers": { "A": "b" } },\n  }`,
    post: ',\n  "trailing": [1, 2,],\n}\n',
  },
  {
    client: 'vscode',
    file: '.config/Code/User/mcp.json',
    pre: '{\n\t// prompted secrets\n\t"inputs": [\n\t\t{ "type": "promptString", "id": "api-key", "description": "API key", "password": true }\n\t],\n\t"servers": ',
    mid: `{\n\t\t"dual": { "type": "stdio", "command": ${j(DUAL.command)}, "args": ${j(DUAL.args)} },\n\t\t"remote": { "type": "http", "url": "http://127.0.0.1:9/mcp" },\n\t\t"secret": { "type": "http", "url": "http://127.0.0.1:9/s", "headers": { "Authorization": "Bearer \${input:api-key}" } }\n\t}`,
    post: '\n}\n',
    kept: ['secret'],
  },
  {
    client: 'windsurf',
    file: '.codeium/windsurf/mcp_config.json',
    pre: '{\n  "mcpServers": ',
    mid: `{\n    "dual": ${dualJson},\n    "remote": { "serverUrl": "http://127.0.0.1:9/mcp" }\n  }`,
    post: '\n}\n',
  },
  {
    client: 'codex',
    file: '.codex/config.toml',
    pre: 'model = "o3"\napproval_policy = "on-request" # asked\n\n# servers below\n',
    mid: `[mcp_servers.dual]\ncommand = ${toml(DUAL.command)}\nargs = ${toml(DUAL.args)}\nstartup_timeout_sec = 20\n\n[mcp_servers.dual.env]\nFIXTURE_NOTE = "1"\n\n[mcp_servers.legacy]\ncommand = ${toml(LEGACY.command)}\nargs = ${toml(LEGACY.args)}\nenabled = false\n\n[mcp_servers.remote]\nurl = "http://127.0.0.1:9/mcp"\nbearer_token_env_var = "REMOTE_TOKEN"\n\n`,
    post: '[profiles.fast]\nmodel = "o4-mini"\n',
  },
];

function parseFile(text: string, isToml: boolean): any {
  return isToml ? parseToml(text) : parseJsonc(text, [], { allowTrailingComma: true });
}

async function stopDaemon(home: string): Promise<void> {
  const info = join(home, '.state', 'mcpx', 'daemon.json');
  if (!existsSync(info)) return;
  const pid = readJson(info).pid as number;
  trackPid(pid);
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    // gone
  }
  await until(() => isGone(pid), 15_000, 'the daemon to stop');
}

describe('mcpx install --import, per client, then the entry started as written', () => {
  for (const c of CASES) {
    it(`${c.client}${c.project ? ' --project' : ''}`, async () => {
      const dir = await tempDir('mcpx-install-');
      const home = dir.path;
      const env = cleanEnv(home, { REMOTE_TOKEN: 't0ken' });
      const file = join(home, c.file);
      const cwd = c.project ? dirname(file) : home;
      mkdirSync(dirname(file), { recursive: true });
      const original = c.pre + c.mid + c.post;
      writeFileSync(file, original, { mode: 0o640 });
      const isToml = c.client === 'codex';
      try {
        const r = await mcpx(['install', '--client', c.client, '--import', ...(c.extra ?? [])], { env, cwd });
        expect(r.stderr).toBe('');
        expect(r.code).toBe(0);
        expect(r.stdout).toContain('imported dual');
        const after = readFileSync(file, 'utf8');
        // Every byte outside the servers is as it was, and the mode too.
        let middle: string;
        if (isToml) {
          expect(after.startsWith(c.pre + c.post)).toBe(true);
          middle = after.slice((c.pre + c.post).length);
        } else {
          expect(after.startsWith(c.pre)).toBe(true);
          expect(after.endsWith(c.post)).toBe(true);
          middle = after.slice(c.pre.length, after.length - c.post.length);
        }
        const servers = isToml ? (parseToml(middle) as any).mcp_servers : parseJsonc(middle);
        expect(Object.keys(servers).sort()).toEqual(['mcpx', ...(c.kept ?? [])].sort());
        const entry = servers.mcpx;
        expect(entry.command).toBe(process.execPath);
        expect(entry.args[1]).toBe('serve');
        // Each client's tool strategy: every tool for a client that defers tools itself, auto for a capped one.
        expect(entry.args.slice(-2)).toEqual(['--tools', ['claude-code', 'codex'].includes(c.client) ? 'all' : 'auto']);
        if (c.client === 'vscode') expect(entry.type).toBe('stdio');
        expect(readdirSync(dirname(file)).some((f) => f.startsWith(`${c.file.split('/').pop()}.mcpx-backup-`))).toBe(true);
        // mcpx's config got the client's servers, disabled ones disabled.
        // (a project's entry: the project's own .mcpx.json)
        const config = readJson(c.project ? join(cwd, '.mcpx.json') : join(home, '.config', 'mcpx', 'config.json')).mcpServers;
        expect(config.dual.command).toBe(DUAL.command);
        if (c.mid.includes('"legacy"') || c.mid.includes('mcp_servers.legacy')) expect(config.legacy.disabled).toBe(true);
        if (c.client === 'windsurf') expect(config.remote.url).toBe('http://127.0.0.1:9/mcp');
        if (c.client === 'codex') {
          expect(config.dual.env).toEqual({ FIXTURE_NOTE: '1' });
          expect(config.remote.headers).toEqual({ Authorization: 'Bearer ${REMOTE_TOKEN}' });
        }

        // Start the entry exactly as written in the client's file.
        const written = parseFile(after, isToml)[isToml ? 'mcp_servers' : c.client === 'vscode' ? 'servers' : 'mcpServers'].mcpx;
        const transport = new StdioClientTransport({
          command: written.command,
          args: written.args,
          env: { ...(env as Record<string, string>), ...(written.env ?? {}) },
          cwd,
          stderr: 'pipe',
        });
        const client = new Client({ name: `${c.client}-as-written`, version: '1.0.0' }, { capabilities: {} });
        await client.connect(transport);
        try {
          const tools = await client.listTools();
          expect(tools.tools.map((t) => t.name)).toContain('dual__echo');
          const res = await client.callTool({ name: 'dual__echo', arguments: { text: 'hi' } });
          expect((res.content as Array<{ text: string }>)[0]!.text).toContain('hi');
        } finally {
          await client.close();
          await stopDaemon(home);
        }

        // Uninstall: the original, byte for byte.
        const u = await mcpx(['uninstall', '--client', c.client, ...(c.extra ?? [])], { env, cwd });
        expect(u.stderr).toBe('');
        expect(u.code).toBe(0);
        expect(readFileSync(file, 'utf8')).toBe(original);
      } finally {
        await stopDaemon(home);
        await dir.remove();
      }
    });
  }
});

describe('safety and the other paths', () => {
  async function home(text?: string, rel = '.cursor/mcp.json') {
    const dir = await tempDir('mcpx-install-');
    const file = join(dir.path, rel);
    mkdirSync(dirname(file), { recursive: true });
    if (text !== undefined) writeFileSync(file, text);
    return { dir, file, env: cleanEnv(dir.path) };
  }

  it('a file that does not parse is refused with line:column and left alone', async () => {
    const bad = '{\n  "mcpServers": {\n    "a": { "command": "x" }\n    "b": {}\n  }\n}\n';
    const h = await home(bad);
    try {
      const r = await mcpx(['install', '--client', 'cursor', '--import'], { env: h.env });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`${h.file}:4:5:`);
      expect(readFileSync(h.file, 'utf8')).toBe(bad);
      expect(readdirSync(dirname(h.file))).toEqual(['mcp.json']);
      expect(existsSync(join(h.dir.path, '.config', 'mcpx', 'config.json'))).toBe(false);
    } finally {
      await h.dir.remove();
    }
  });

  it('a read-only file is refused and left alone (mcpx config untouched too)', async () => {
    const text = `{ "mcpServers": { "dual": ${dualJson} } }\n`;
    const h = await home(text);
    chmodSync(h.file, 0o444);
    try {
      const r = await mcpx(['install', '--client', 'cursor', '--import'], { env: h.env });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/read-only/);
      expect(readFileSync(h.file, 'utf8')).toBe(text);
      expect(existsSync(join(h.dir.path, '.config', 'mcpx', 'config.json'))).toBe(false);
    } finally {
      chmodSync(h.file, 0o644);
      await h.dir.remove();
    }
  });

  it('collisions are refused until --rename or --skip; --config is passed on to mcpx serve', async () => {
    const text = `{ "mcpServers": { "dual": ${dualJson}, "other": { "command": "y" } } }\n`;
    const h = await home(text);
    const own = join(h.dir.path, 'own.json');
    writeFileSync(own, '{\n  // mine\n  "mcpServers": { "dual": { "command": "something-else" } }\n}\n');
    try {
      const r = await mcpx(['install', '--client', 'cursor', '--import', '--config', own], { env: h.env });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/already has a different server named dual.*--rename/);
      expect(readFileSync(h.file, 'utf8')).toBe(text);
      const dry = await mcpx(['install', '--client', 'cursor', '--import', '--config', own, '--rename', 'dual=dual2', '--dry-run'], { env: h.env });
      expect(dry.code).toBe(0);
      // Servers written on one line stay as written; the imported one goes beside them, spaced as they are.
      expect(dry.stdout).toContain(
        '\n-  "mcpServers": { "dual": { "command": "something-else" } }\n+  "mcpServers": { "dual": { "command": "something-else" }, "dual2": { "command":',
      );
      expect(readFileSync(h.file, 'utf8')).toBe(text);
      const ok = await mcpx(['install', '--client', 'cursor', '--import', '--config', own, '--rename', 'dual=dual2', '--skip', 'other'], { env: h.env });
      expect(ok.code).toBe(0);
      const mine = parseJsonc(readFileSync(own, 'utf8'));
      expect(Object.keys(mine.mcpServers)).toEqual(['dual', 'dual2']);
      expect(readFileSync(own, 'utf8').startsWith('{\n  // mine\n')).toBe(true);
      const entry = parseJsonc(readFileSync(h.file, 'utf8')).mcpServers.mcpx;
      expect(entry.args.slice(1)).toEqual(['serve', '--config', own, '--tools', 'auto']);
      expect(ok.stdout).toContain('other: skipped');
    } finally {
      await h.dir.remove();
    }
  });

  it('uninstall after the file changed: the entry out, the servers back, the change kept', async () => {
    const text = `{\n  "mcpServers": {\n    "dual": ${dualJson}\n  }\n}\n`;
    const h = await home(text);
    try {
      expect((await mcpx(['install', '--client', 'cursor', '--import'], { env: h.env })).code).toBe(0);
      const changed = readFileSync(h.file, 'utf8').replace('{\n', '{\n  "added": 1,\n');
      writeFileSync(h.file, changed);
      const u = await mcpx(['uninstall', '--client', 'cursor'], { env: h.env });
      expect(u.code).toBe(0);
      expect(u.stdout).toContain('servers put back from the backup: dual');
      const now = parseJsonc(readFileSync(h.file, 'utf8'));
      expect(now.added).toBe(1);
      expect(Object.keys(now.mcpServers)).toEqual(['dual']);
    } finally {
      await h.dir.remove();
    }
  });

  it('without --client: lists the clients and what install would do; doctor --json sees the entry', async () => {
    const h = await home(`{ "mcpServers": { "dual": ${dualJson} } }\n`);
    try {
      const list = await mcpx(['install'], { env: h.env });
      expect(list.code).toBe(0);
      expect(list.stdout).toMatch(/cursor\s+\S+mcp\.json\n\s+1 server\(s\): dual\n\s+install would: add the mcpx entry; with --import, move 1 server/);
      expect(list.stdout).toContain('codex');
      expect((await mcpx(['install', '--client', 'cursor'], { env: h.env })).code).toBe(0);
      const d = await mcpx(['doctor', '--json'], { env: h.env });
      const body = JSON.parse(d.stdout);
      expect(body.checks.find((x: any) => x.check === 'node').ok).toBe(true);
      const cursor = body.clients.find((x: any) => x.client === 'cursor');
      expect(cursor).toMatchObject({ installed: true, entryWorks: true, servers: ['dual'] });
      expect(body.daemon.running).toBe(false);
      // A config with errors: doctor says so and exits 1; a client's own file as mcpx's config is refused.
      mkdirSync(join(h.dir.path, '.config', 'mcpx'), { recursive: true });
      writeFileSync(join(h.dir.path, '.config', 'mcpx', 'config.json'), '{ "mcpServers": { "x": { } } }');
      const bad = await mcpx(['doctor'], { env: h.env });
      expect(bad.code).toBe(1);
      expect(bad.stdout).toMatch(/FAIL config/);
      const same = await mcpx(['install', '--client', 'cursor', '--config', h.file], { env: h.env });
      expect(same.code).toBe(1);
      expect(same.stderr).toMatch(/own file/);
      const unknown = await mcpx(['install', '--client', 'claude'], { env: h.env });
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toMatch(/not a client mcpx knows/);
    } finally {
      await h.dir.remove();
    }
  });
});
