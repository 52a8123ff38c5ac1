/**
 * Issue 36, item 4: the progress line says in words what is happening, in a real pseudo-terminal
 * (util-linux `script`), through the built binary: waiting for a slow server's first answer, calling the
 * tool on a running server (not "ready"), the server's own progress message and ratio; the line is
 * cleared when the command ends, and Ctrl-C clears it and says "cancelled". What the terminal shows is
 * worked out from the bytes written (carriage return, erase-line, newline), as a terminal would.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_DIR } from '../fixtures/index.js';
import { writeConfig } from '../server/helpers.js';
import { tempDir } from '../support/real.js';
import { cleanEnv, ForegroundDaemon, killAll, MCPX, mcpx, until } from './helpers.js';

/** The lines a terminal shows after these bytes: `\r` returns to the line's start, `ESC[K` erases to its end. */
function screen(raw: string): string[] {
  const lines: string[] = [''];
  let col = 0;
  for (let i = 0; i < raw.length; i += 1) {
    const ch = raw[i]!;
    const row = lines.length - 1;
    if (ch === '\r') col = 0;
    else if (ch === '\n') {
      lines.push('');
      col = 0;
    } else if (raw.startsWith('\x1b[K', i)) {
      lines[row] = lines[row]!.slice(0, col);
      i += 2;
    } else if (ch === '\x1b') {
      const m = /^\x1b\[[0-9;?]*[A-Za-z]/.exec(raw.slice(i));
      if (m) i += m[0].length - 1;
    } else {
      const line = lines[row]!;
      lines[row] = line.slice(0, col) + ch + line.slice(col + 1);
      col += 1;
    }
  }
  return lines.filter((l, i) => l !== '' || i < lines.length - 1);
}

const terminals = new Set<ChildProcess>();

/** `mcpx …` in a pseudo-terminal: its raw output as it comes, a way to type, and its end. */
function inTerminal(args: string[], env: NodeJS.ProcessEnv) {
  const cmd = [process.execPath, MCPX, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const child = spawn('script', ['-qfec', cmd, '/dev/null'], { env: { ...env, TERM: 'xterm' }, stdio: ['pipe', 'pipe', 'pipe'] });
  terminals.add(child);
  const t = { raw: '', type: (s: string) => child.stdin.write(s), exited: new Promise<number | null>((r) => child.on('close', (code) => r(code))) };
  child.stdout.on('data', (c: Buffer) => (t.raw += c.toString()));
  child.stderr.on('data', (c: Buffer) => (t.raw += c.toString()));
  void t.exited.then(() => terminals.delete(child));
  return t;
}

const SPINNER = /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/;

describe('the progress line in words (issue 36)', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    dir = await tempDir('mcpx-progress-words-');
    const state = join(dir.path, 'state');
    const config = writeConfig(dir.path, {
      slow: { fixture: 'raw', mode: 'slow-modern', env: { SLOW_MS: '2000' }, mcpx: { probeTimeout: '30s', startTimeout: '60s' } },
      tools: { fixture: 'serve-tools' },
      pages: { command: process.execPath, args: [join(FIXTURE_DIR, 'slow-progress.mjs')] } as never, // a plain command entry
    });
    env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: config });
    await ForegroundDaemon.start(join(state, 'daemon.sock'), [], { env });
    // Running before the calls below: a call on a running server is what they show.
    for (const s of ['tools', 'pages']) expect((await mcpx(['tools', s], { env, timeoutMs: 60_000 })).code).toBe(0);
  }, 120_000);
  afterAll(async () => {
    for (const t of terminals) t.kill('SIGKILL');
    await killAll();
    await dir?.remove();
  });

  it('a server slow to answer: waiting for its first answer, in words; the line is gone at the end', async () => {
    const t = inTerminal(['call', 'slow', 'echo', '{"text":"hi"}'], env);
    expect(await t.exited).toBe(0);
    expect(t.raw).toMatch(/slow: waiting for its first answer \(\d+\.\ds\)/);
    expect(t.raw).not.toMatch(/connecting\.|discovering|racing/);
    expect(screen(t.raw)).toEqual(['hi era=modern']);
  });

  it('a call on a running server says it is calling the tool, not "ready"', async () => {
    const t = inTerminal(['call', 'tools', 'sleep', '{"ms":1500}'], env);
    expect(await t.exited).toBe(0);
    expect(t.raw).toMatch(/tools: calling sleep \(\d+\.\ds\)/);
    expect(t.raw).not.toContain('ready');
    expect(screen(t.raw)).toEqual(['slept 1500']);
  });

  it("the server's own progress: its message and ratio", async () => {
    const t = inTerminal(['call', 'pages', 'work', '{"steps":3,"ms":700}'], env);
    expect(await t.exited).toBe(0);
    expect(t.raw).toMatch(/pages: calling work: fetching page 1 \(1\/3\) \(\d+\.\ds\)/);
    expect(t.raw).toMatch(/pages: calling work: fetching page 2 \(2\/3\) \(\d+\.\ds\)/);
    expect(screen(t.raw)).toEqual(['worked 3']);
  });

  it('Ctrl-C clears the line and says "cancelled"', async () => {
    const t = inTerminal(['call', 'tools', 'sleep', '{"ms":60000}'], env);
    await until(() => /calling sleep \(\d/.test(t.raw), 30_000, 'the progress line');
    t.type('\x03');
    expect(await t.exited).toBe(130);
    const shown = screen(t.raw);
    expect(shown.join('\n')).not.toMatch(SPINNER);
    expect(shown[shown.length - 1]).toMatch(/mcpx: cancelled$/);
  });
});
