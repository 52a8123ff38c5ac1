/**
 * How `mcpx install`, `uninstall` and `doctor` treat the files they touch, through the built binary in a
 * temp HOME (issue 37: 6, 13, 14, 15, 17, 19; issue 36: 5):
 *
 * - a shared (0777) project folder with symlinks planted under the names of the next temp files: the file
 *   they point at is untouched; another user's link as `.mcp.json` is refused;
 * - a minified `~/.claude.json` of 1 and 3 MB installs in time that grows with the size, not its square;
 * - a client rewriting its file in a loop during installs loses no update;
 * - `--import` from a 0600 file into a 0644 config narrows the config to 0600, and says so;
 * - a FIFO or `/dev/zero` as the client's file: install and doctor answer at once;
 * - servers named `constructor`/`toString`, a UTF-8 BOM, a duplicated `mcpServers`, parse errors in words.
 */
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, lchownSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanEnv, killAll, mcpx } from './helpers.js';
import { tempDir } from '../support/real.js';

afterAll(killAll);

const linux = process.platform === 'linux';
const isRoot = process.getuid?.() === 0;
const NOBODY = 65534;

async function home(prefix: string) {
  const dir = await tempDir(`mcpx-files-${prefix}-`);
  return { dir, home: dir.path, env: cleanEnv(dir.path) };
}

const mode = (f: string) => statSync(f).mode & 0o777;

describe.runIf(linux)('#6 a project folder others can write', () => {
  it('symlinks planted under the next pids temp names: the file they lead to is untouched, .mcp.json is a file of its own', async () => {
    const h = await home('shared');
    try {
      const project = join(h.home, 'shared');
      mkdirSync(project);
      chmodSync(project, 0o777);
      const mine = join(h.home, 'private.json');
      writeFileSync(mine, '{"mine": "secret"}\n', { mode: 0o600 });
      chmodSync(mine, 0o600);
      // Someone else's .mcp.json, 0666 as they left it; and links under every name the next mcpx could pick.
      const mcpJson = join(project, '.mcp.json');
      writeFileSync(mcpJson, '{\n  "mcpServers": {}\n}\n');
      chmodSync(mcpJson, 0o666);
      const last = Number(readFileSync('/proc/sys/kernel/ns_last_pid', 'utf8'));
      for (let pid = last + 1; pid <= last + 3000; pid++) {
        symlinkSync(mine, join(project, `..mcp.json.mcpx-${pid}.tmp`));
        symlinkSync(mine, join(project, `.mcp.json.mcpx-${pid}.tmp`));
      }
      const r = await mcpx(['install', '--client', 'claude-code', '--project'], { env: h.env, cwd: project, timeoutMs: 60_000 });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(readFileSync(mine, 'utf8')).toBe('{"mine": "secret"}\n');
      expect(mode(mine)).toBe(0o600);
      expect(lstatSync(mcpJson).isFile()).toBe(true);
      expect(JSON.parse(readFileSync(mcpJson, 'utf8')).mcpServers.mcpx.args).toContain('serve');
      expect(readdirSync(project).filter((f) => f.endsWith('.tmp') && lstatSync(join(project, f)).isFile())).toEqual([]);
    } finally {
      await h.dir.remove();
    }
  }, 120_000);

  it.runIf(isRoot)("another user's symlink as .mcp.json: refused, the file it points at untouched", async () => {
    const h = await home('link');
    try {
      const project = join(h.home, 'shared');
      mkdirSync(project);
      chmodSync(project, 0o777);
      const mine = join(h.home, '.claude.json');
      const text = '{\n  "numStartups": 3,\n  "mcpServers": {}\n}\n';
      writeFileSync(mine, text);
      const link = join(project, '.mcp.json');
      symlinkSync(mine, link);
      lchownSync(link, NOBODY, NOBODY);
      const r = await mcpx(['install', '--client', 'claude-code', '--project'], { env: h.env, cwd: project });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`${link} is a symbolic link another user (uid ${NOBODY}) made`);
      expect(readFileSync(mine, 'utf8')).toBe(text);
    } finally {
      await h.dir.remove();
    }
  });
});

/** A minified ~/.claude.json of about `bytes`: project history, and two servers of its own. */
function claudeJson(bytes: number): string {
  const projects: Record<string, unknown> = {};
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const p = {
      history: Array.from({ length: 20 }, (_, k) => ({ display: `prompt ${i} ${k} lorem ipsum dolor sit amet`, pastedContents: {} })),
      mcpServers: {},
    };
    projects[`/home/u/p${i}`] = p;
    size += JSON.stringify(p).length + 20;
  }
  return JSON.stringify({ numStartups: 3, projects, mcpServers: { a: { command: 'x' }, b: { command: 'y' } }, tipsHistory: {} });
}

describe('#13 a large minified ~/.claude.json', () => {
  it('1 MB and 3 MB install with --import in time linear in the size (the 3 MB one within a few times the 1 MB one)', async () => {
    const timeOne = async (bytes: number): Promise<number> => {
      const h = await home(`big${bytes}`);
      try {
        const file = join(h.home, '.claude.json');
        const text = claudeJson(bytes);
        writeFileSync(file, text);
        const t0 = performance.now();
        const r = await mcpx(['install', '--client', 'claude-code', '--import'], { env: h.env, timeoutMs: 120_000 });
        const ms = performance.now() - t0;
        expect(r.stderr).toBe('');
        expect(r.code).toBe(0);
        const after = readFileSync(file, 'utf8');
        // one line still, every other byte as it was
        expect(after.includes('\n')).toBe(false);
        const doc = JSON.parse(after);
        expect(Object.keys(doc.mcpServers)).toEqual(['mcpx']);
        expect(after.slice(0, after.indexOf('"mcpServers":{"mcpx"'))).toBe(text.slice(0, text.indexOf('"mcpServers":{"a"')));
        return ms;
      } finally {
        await h.dir.remove();
      }
    };
    const one = await timeOne(1024 * 1024);
    const three = await timeOne(3 * 1024 * 1024);
    console.log(`#13 install --import of a minified ~/.claude.json: 1 MB ${Math.round(one)} ms, 3 MB ${Math.round(three)} ms`);
    // Linear: 3 MB costs at most three times 1 MB (less, with the process start in both); quadratic was 9×.
    expect(three).toBeLessThan(one * 4);
  }, 300_000);
});

/** A client rewriting its file in a loop: read, n + 1, write a temp file, rename; until `stop` exists. */
const WRITER = `
const fs = require('node:fs');
const [file, stop] = process.argv.slice(1);
let count = 0;
const tick = () => {
  if (fs.existsSync(stop)) { process.stdout.write(String(count)); return; }
  const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  doc.n = (doc.n ?? 0) + 1;
  fs.writeFileSync(file + '.client.tmp', JSON.stringify(doc, null, 2) + '\\n');
  fs.renameSync(file + '.client.tmp', file);
  count++;
  setTimeout(tick, 10 + Math.random() * 40);
};
tick();
`;

describe('#14 a client writing its file during install', () => {
  it('installs and uninstalls against a writer rewriting ~/.claude.json: every one of its writes is in the file at the end', async () => {
    const h = await home('race');
    try {
      const file = join(h.home, '.claude.json');
      writeFileSync(file, `${JSON.stringify({ numStartups: 1, n: 0, mcpServers: { a: { command: 'x' } } }, null, 2)}\n`);
      const stop = join(h.home, 'stop');
      const writer = spawn(process.execPath, ['-e', WRITER, file, stop], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      writer.stdout.on('data', (c: Buffer) => (out += c.toString()));
      const ended = new Promise<number | null>((r) => writer.on('close', r));
      const results: Array<{ code: number | null; stdout: string; stderr: string }> = [];
      try {
        for (let i = 0; i < 10; i++) {
          results.push(await mcpx(['install', '--client', 'claude-code'], { env: h.env, timeoutMs: 60_000 }));
          results.push(await mcpx(['uninstall', '--client', 'claude-code'], { env: h.env, timeoutMs: 60_000 }));
        }
      } finally {
        writeFileSync(stop, '');
      }
      expect(await ended).toBe(0);
      const count = Number(out);
      expect(count).toBeGreaterThan(0);
      const n = JSON.parse(readFileSync(file, 'utf8')).n as number;
      const raced = results.filter((r) => `${r.stdout}${r.stderr}`.includes('by another program')).length;
      console.log(
        `#14 writer: ${count} writes, n = ${n} in the file; ${results.filter((r) => r.code === 0).length}/${results.length} mcpx runs done, ${raced} said the client wrote meanwhile`,
      );
      // Every write the writer made before mcpx's last look at the file is kept. One that lands in the few
      // microseconds between that look and mcpx's rename cannot be seen from outside the writer (Node has no
      // exchanging rename; docs/reliability.md #14): on a loaded machine one such write was lost once in a
      // run (179 of 180). The code before the fix, which looked before writing and syncing its temp file,
      // lost about 1 in 50 (449 of 459), several per run.
      expect(n).toBeLessThanOrEqual(count);
      expect(count - n).toBeLessThanOrEqual(1);
      expect(results.some((r) => r.code === 0 && r.stdout.includes('wrote the mcpx entry'))).toBe(true);
      // a run that gave up says why, never something else
      for (const r of results) if (r.code !== 0) expect(r.stderr).toMatch(/MCPX_INSTALL_RACE|by another program/);
    } finally {
      await h.dir.remove();
    }
  }, 600_000);
});

describe.runIf(process.platform !== 'win32')('#15 --import keeps secrets as private as they were', () => {
  it('a token from a 0600 Cursor file into an existing 0644 config: the config is made 0600, and it says so', async () => {
    const h = await home('secret');
    try {
      const file = join(h.home, '.cursor', 'mcp.json');
      mkdirSync(join(h.home, '.cursor'));
      writeFileSync(file, JSON.stringify({ mcpServers: { gh: { command: 'gh-mcp', env: { GITHUB_TOKEN: 'ghp_secret123' } } } }), { mode: 0o600 });
      chmodSync(file, 0o600);
      const config = join(h.home, '.config', 'mcpx', 'config.json');
      mkdirSync(join(h.home, '.config', 'mcpx'), { recursive: true });
      writeFileSync(config, '{\n  "mcpServers": {}\n}\n');
      chmodSync(config, 0o644);
      const r = await mcpx(['install', '--client', 'cursor', '--import'], { env: h.env });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(readFileSync(config, 'utf8')).toContain('ghp_secret123');
      expect(mode(config)).toBe(0o600);
      expect(r.stdout).toContain(`${config} was mode 0644, readable by every user; made 0600 as ${file} (0600) is`);
    } finally {
      await h.dir.remove();
    }
  });
});

describe.runIf(linux)('#17 a client file that is not a regular file', () => {
  for (const kind of ['fifo', '/dev/zero'] as const) {
    it(`${kind} as ~/.cursor/mcp.json: install and doctor answer at once, naming it`, async () => {
      const h = await home('fifo');
      try {
        mkdirSync(join(h.home, '.cursor'));
        const file = join(h.home, '.cursor', 'mcp.json');
        if (kind === 'fifo') execFileSync('mkfifo', [file]);
        else symlinkSync('/dev/zero', file);
        const what = kind === 'fifo' ? 'a FIFO (named pipe)' : 'a character device';
        const r = await mcpx(['install', '--client', 'cursor'], { env: h.env, timeoutMs: 30_000 });
        expect(r.code).toBe(1);
        expect(r.stderr).toContain(`${file} is ${what}, not a regular file`);
        const d = await mcpx(['doctor'], { env: h.env, timeoutMs: 30_000 });
        expect(d.code).toBe(1);
        expect(d.stdout).toMatch(new RegExp(`FAIL client cursor +${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} is ${what.replace(/[()]/g, '\\$&')}`));
        const list = await mcpx(['install', '--json'], { env: h.env, timeoutMs: 30_000 });
        expect(list.code).toBe(0);
      } finally {
        await h.dir.remove();
      }
    }, 120_000);
  }
});

describe('#19 names, BOMs and duplicated keys', () => {
  it('servers named constructor, toString and hasOwnProperty import like any other', async () => {
    const h = await home('proto');
    try {
      const file = join(h.home, '.cursor', 'mcp.json');
      mkdirSync(join(h.home, '.cursor'));
      writeFileSync(
        file,
        JSON.stringify({ mcpServers: { constructor: { command: 'a' }, toString: { command: 'b' }, hasOwnProperty: { command: 'c' } } }, null, 2),
      );
      const r = await mcpx(['install', '--client', 'cursor', '--import'], { env: h.env });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const config = JSON.parse(readFileSync(join(h.home, '.config', 'mcpx', 'config.json'), 'utf8'));
      expect(Object.keys(config.mcpServers).sort()).toEqual(['constructor', 'hasOwnProperty', 'toString']);
      expect(Object.keys(JSON.parse(readFileSync(file, 'utf8')).mcpServers)).toEqual(['mcpx']);
    } finally {
      await h.dir.remove();
    }
  });

  it('a UTF-8 BOM: installed, the BOM kept; uninstall gives the file back byte for byte', async () => {
    const h = await home('bom');
    try {
      const file = join(h.home, '.cursor', 'mcp.json');
      mkdirSync(join(h.home, '.cursor'));
      const text = '\uFEFF{\r\n  "mcpServers": {\r\n    "a": { "command": "x" }\r\n  }\r\n}\r\n';
      writeFileSync(file, text);
      const r = await mcpx(['install', '--client', 'cursor'], { env: h.env });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const after = readFileSync(file, 'utf8');
      expect(after.startsWith('\uFEFF{\r\n  "mcpServers": {\r\n    "a": { "command": "x" },')).toBe(true);
      expect(JSON.parse(after.slice(1)).mcpServers.mcpx.args).toContain('serve');
      expect((await mcpx(['doctor', '--json'], { env: h.env })).stdout).toContain('"installed": true');
      expect((await mcpx(['uninstall', '--client', 'cursor'], { env: h.env })).code).toBe(0);
      expect(readFileSync(file, 'utf8')).toBe(text);
    } finally {
      await h.dir.remove();
    }
  });

  it('"mcpServers" written twice: refused, naming the line, the file untouched', async () => {
    const h = await home('dup');
    try {
      const file = join(h.home, '.cursor', 'mcp.json');
      mkdirSync(join(h.home, '.cursor'));
      const text = '{\n  "mcpServers": { "a": { "command": "x" } },\n  "mcpServers": { "b": { "command": "y" } }\n}\n';
      writeFileSync(file, text);
      const r = await mcpx(['install', '--client', 'cursor'], { env: h.env });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`${file}:3:3: "mcpServers" is written twice`);
      expect(readFileSync(file, 'utf8')).toBe(text);
    } finally {
      await h.dir.remove();
    }
  });

  it('a syntax error in words: "expected `,`" with its line and column, not CommaExpected', async () => {
    const h = await home('words');
    try {
      const file = join(h.home, '.cursor', 'mcp.json');
      mkdirSync(join(h.home, '.cursor'));
      writeFileSync(file, '{\n  "mcpServers": {\n    "a": { "command": "x" }\n');
      const r = await mcpx(['install', '--client', 'cursor'], { env: h.env });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`${file}:4:1: expected \`}\` (line 4, column 1)`);
      expect(r.stderr).not.toContain('CloseBraceExpected');
    } finally {
      await h.dir.remove();
    }
  });
});
