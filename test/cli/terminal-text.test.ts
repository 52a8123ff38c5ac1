/**
 * Issue 14: `mcpx call` shows an upstream's text, never obeys it. A tool result with OSC 0 (title),
 * OSC 52 (clipboard), OSC 8 (a link), CSI colours and erases, a CR that overwrites its line and a C1
 * CSI reaches stdout with each control character escaped visibly (`\x1b`), newlines and tabs kept;
 * `--json` stays exact JSON. A URL elicitation on a real terminal (util-linux `script`) whose message
 * draws a fake "Open this address … https://github.com/login" shows the real address and host on
 * mcpx's own lines, the message quoted and escaped. Issue 37: a URL elicitation of an address that is not
 * https (or loopback http) is declined without being shown, its scheme and host named.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANSI_TEXT, SPOOF_URL } from '../fixtures/secrets-echo.mjs';
import { writeConfig } from '../server/helpers.js';
import { tempDir } from '../support/real.js';
import { cleanEnv, ForegroundDaemon, killAll, MCPX, mcpx } from './helpers.js';

/** The raw control bytes an upstream may not put on a terminal (the escaped forms are plain text). */
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

/** Runs `mcpx …` in a pseudo-terminal; `reply` answers what it prints. */
function inTerminal(
  args: string[],
  env: NodeJS.ProcessEnv,
  reply: (screen: string, write: (s: string) => void) => void,
): Promise<{ code: number | null; screen: string }> {
  return new Promise((resolve, reject) => {
    const cmd = [process.execPath, MCPX, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    const child = spawn('script', ['-qfec', cmd, '/dev/null'], { env: { ...env, TERM: 'dumb' }, stdio: ['pipe', 'pipe', 'pipe'] });
    let screen = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`mcpx ${args.join(' ')} did not finish in a terminal:\n${screen}`));
    }, 30_000);
    const take = (c: Buffer) => {
      screen += c.toString();
      reply(screen, (s) => child.stdin.write(s));
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, screen });
    });
  });
}

describe("an upstream's text on a terminal (issue 14)", () => {
  let dir: { path: string; remove: () => Promise<void> };
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    dir = await tempDir('mcpx-terminal-text-');
    const state = join(dir.path, 'state');
    const config = writeConfig(dir.path, { up: { fixture: 'secrets-echo' } });
    env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: config });
    await ForegroundDaemon.start(join(state, 'daemon.sock'), [], { env });
  }, 60_000);
  afterAll(async () => {
    await killAll();
    await dir?.remove();
  });

  it('mcpx call escapes control sequences visibly; plain text, newlines and tabs pass', async () => {
    const r = await mcpx(['call', 'up', 'ansi'], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toMatch(RAW);
    expect(r.stdout).toContain('plain\ttabbed\n');
    expect(r.stdout).toContain('OSC0:\\x1b]0;pwned-title\\x07');
    expect(r.stdout).toContain('OSC52:\\x1b]52;c;ZXZpbA==\\x07');
    expect(r.stdout).toContain('link:\\x1b]8;;https://evil.example/\\x1b\\click');
    expect(r.stdout).toContain('red:\\x1b[31mred\\x1b[0m');
    expect(r.stdout).toContain('fake line\\rREAL erased\\x1b[2K');
    expect(r.stdout).toContain('C1:\\x9b31mC1red');
  });

  it('--json stays exact JSON', async () => {
    const r = await mcpx(['call', 'up', 'ansi', '--json'], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toMatch(RAW);
    expect(JSON.parse(r.stdout).result.content[0].text).toBe(ANSI_TEXT);
  });

  it('a URL elicitation without a terminal names the real address, escaped', async () => {
    const r = await mcpx(['call', 'up', 'ask_url_spoof'], { env });
    expect(r.stderr).not.toMatch(RAW);
    expect(r.stderr).toContain(`up asks you to open ${SPOOF_URL} (`);
    expect(r.stdout).toContain('url decline');
  });

  it("a URL elicitation on a terminal: the real address and host on mcpx's lines, the message quoted", async () => {
    let answered = false;
    const t = await inTerminal(['call', 'up', 'ask_url_spoof'], env, (screen, write) => {
      if (!answered && screen.includes('Press Enter')) {
        answered = true;
        write('decline\r');
      }
    });
    expect(t.code, t.screen).toBe(0);
    // Nothing of the upstream's reaches the terminal raw: no OSC, no colour, no line erase or cursor-up.
    expect(t.screen).not.toContain('\x1b]');
    expect(t.screen).not.toContain('\x1b[1A');
    expect(t.screen).not.toContain('\x1b[2K');
    expect(t.screen).not.toContain('\u009b');
    expect(t.screen).toMatch(new RegExp(`\\n\\s*address: ${SPOOF_URL.replace(/[.]/g, '\\.')}\\r?\\n`));
    expect(t.screen).toMatch(/\n\s*host: +evil\.example\r?\n/);
    // The fake address is there only as the server's quoted words, its link sequence visible.
    expect(t.screen).toContain('  | Open this address yourself (mcpx opens nothing): \\x1b]8;;https://evil.example/phish\\x1b\\https://github.com/login');
    expect(t.screen).toContain('url decline');
  });

  // Issue 37: an address a browser must not be sent to is never put to the person, on a terminal or not.
  const REFUSED: Array<[string, string, string]> = [
    ['file:///etc/passwd', 'file:', 'none'],
    ['javascript:alert(document.cookie)', 'javascript:', 'none'],
    ['x-evil-scheme://run?cmd=id', 'x-evil-scheme:', '"run"'],
    ['http://evil.example/login', 'http:', '"evil.example"'],
  ];
  for (const [url, scheme, host] of REFUSED) {
    it(`a URL elicitation of ${url} is declined unshown, naming scheme ${scheme} and host ${host}`, async () => {
      let prompted = false;
      const t = await inTerminal(['call', 'up', 'ask_url_given', JSON.stringify({ url })], env, (screen, write) => {
        if (!prompted && screen.includes('Press Enter')) {
          prompted = true;
          write('\r');
        }
      });
      expect(t.code, t.screen).toBe(0);
      expect(prompted, t.screen).toBe(false);
      expect(t.screen).not.toContain('address:');
      expect(t.screen).toContain(`up asked you to open an address mcpx refuses:`);
      expect(t.screen).toContain(`scheme "${scheme}", host ${host}`);
      expect(t.screen).toContain('url decline');
    });
  }

  it('a URL elicitation of a loopback http address is shown as usual', async () => {
    let prompted = false;
    const t = await inTerminal(['call', 'up', 'ask_url_given', JSON.stringify({ url: 'http://127.0.0.1:9/callback' })], env, (screen, write) => {
      if (!prompted && screen.includes('Press Enter')) {
        prompted = true;
        write('decline\r');
      }
    });
    expect(prompted, t.screen).toBe(true);
    expect(t.screen).toMatch(/\n\s*address: http:\/\/127\.0\.0\.1:9\/callback\r?\n/);
  });
});
