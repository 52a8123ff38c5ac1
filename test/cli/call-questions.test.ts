/**
 * `mcpx call` answering an upstream's questions: in a real pseudo-terminal (util-linux `script`), a
 * form asked field by field, Ctrl-C declining; without a terminal, `--answer` / `--answers` / `--roots`,
 * or a decline with a clear message. Upstreams of both eras (legacy: server-to-client requests;
 * modern: input_required rounds).
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeConfig } from '../server/helpers.js';
import { tempDir } from '../support/real.js';
import { cleanEnv, ForegroundDaemon, killAll, MCPX, mcpx, until } from './helpers.js';

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
    const write = (s: string) => child.stdin.write(s);
    const take = (c: Buffer) => {
      screen += c.toString();
      reply(screen, write);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, screen });
    });
  });
}

describe('mcpx call answers questions', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    dir = await tempDir('mcpx-call-questions-');
    const state = join(dir.path, 'state');
    const config = writeConfig(dir.path, {
      old: { fixture: 'asking-v2', protocol: 'force-initialize' },
      new: { fixture: 'asking-v2', protocol: 'force-discover' },
    });
    env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, MCPX_CONFIG: config });
    await ForegroundDaemon.start(join(state, 'daemon.sock'), [], { env });
  }, 60_000);
  afterAll(async () => {
    await killAll();
    await dir?.remove();
  });

  for (const [server, era] of [
    ['old', 'legacy'],
    ['new', 'modern'],
  ] as const) {
    it(`on a terminal: a ${era} upstream's form is asked field by field; Ctrl-C declines`, async () => {
      let answered = false;
      const r = await inTerminal(['call', server, 'ask_name'], env, (screen, write) => {
        if (!answered && screen.includes('> ')) {
          answered = true;
          write('Ada\r');
        }
      });
      expect(r.screen).toContain(`${server} asks: What is your name?`);
      expect(r.screen).toMatch(/name \(string, required\)/);
      expect(r.screen).toContain(`hello Ada era=${era}`);
      expect(r.code).toBe(0);

      let interrupted = false;
      const c = await inTerminal(['call', server, 'ask_name'], env, (screen, write) => {
        if (!interrupted && screen.includes('> ')) {
          interrupted = true;
          write('\x03');
        }
      });
      expect(c.screen).toContain('declined (Ctrl-C)');
      expect(c.screen).toContain(`ask_name decline era=${era}`);
    }, 60_000);

    it(`without a terminal: ${era} upstream — --answer, --answers, --roots, or a clear decline`, async () => {
      const declined = await mcpx(['call', server, 'ask_name'], { env });
      expect(declined.stdout).toBe(`ask_name decline era=${era}\n`);
      expect(declined.stderr).toMatch(
        /mcpx: \w+ asks: What is your name\?; declined: no terminal to ask on \(answer with --answer KEY=JSON or --answers FILE; fields: name\)/,
      );

      const given = await mcpx(['call', server, 'ask_name', '--answer', 'name="Bob"'], { env });
      expect(given.stdout).toBe(`hello Bob era=${era}\n`);
      expect(given.code).toBe(0);

      const file = join(dir.path, `answers-${server}.json`);
      writeFileSync(file, JSON.stringify({ name: 'Cy', colour: 'red' }));
      const two = await mcpx(['call', server, 'ask_two', '--answers', file], { env });
      expect(two.stdout).toMatch(new RegExp(`^name=Cy colour=red states=.* era=${era}\\n$`));

      // A modern request's roots are its caller's. A shared legacy session's are mcpx's own answer, the
      // same for every caller: with no mcpx.roots it has none and declares none (docs/serving.md), so the
      // server's own SDK does not ask.
      const mine = join(dir.path, 'mine');
      const roots = await mcpx(['call', server, 'ask_roots', '--roots', mine], { env });
      const none = await mcpx(['call', server, 'ask_roots'], { env });
      if (era === 'modern') {
        expect(roots.stdout).toBe(`roots file://${mine} era=${era}\n`);
        // Without --roots, mcpx call declares no roots: the upstream says it needs them (-32021).
        expect(none.code).toBe(1);
        expect(none.stderr).toMatch(/error -32021: Cannot request input 'roots' \(roots\/list\)/);
      } else {
        for (const r of [roots, none])
          expect(r.stdout + r.stderr).toMatch(/Cannot request input 'roots' \(roots\/list\): the client on this 2025-era connection did not declare/);
      }

      // sampling is not declared unless an answer is given: the daemon refuses it upstream, saying why
      const sample = await mcpx(['call', server, 'ask_sample'], { env });
      expect(sample.code).toBe(1);
      expect(sample.stderr).toMatch(/sampling/);
      writeFileSync(file, JSON.stringify({ $sampling: { role: 'assistant', content: { type: 'text', text: 'ok' }, model: 'cli' } }));
      const sampled = await mcpx(['call', server, 'ask_sample', '--answers', file], { env });
      expect(sampled.stdout).toBe(`sampled ok model=cli era=${era}\n`);
    }, 90_000);
  }

  it('the URL of a URL elicitation is printed, never opened', async () => {
    const r = await mcpx(['call', 'old', 'ask_url'], { env });
    expect(r.stderr).toContain('https://example.com/login?x=1');
    expect(r.stdout).toBe('url decline era=legacy\n');
    await until(() => true);
  }, 30_000);
});
