/**
 * The README's commands are the built binary's: every `mcpx COMMAND …` the README shows (in code blocks and
 * inline code) names a command the binary has, and every option it shows is one that command's --help lists.
 * A renamed command or a dropped flag fails here rather than in a newcomer's terminal.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpdir } from 'node:os';
import { MCPX, cleanEnv, mcpx } from '../cli/helpers.js';

const README = readFileSync(join(import.meta.dirname, '..', '..', 'README.md'), 'utf8');

interface Shown {
  command: string;
  options: Set<string>;
  lines: string[];
}

/** Every `mcpx …` command line the README shows, by command. */
export function commandsShown(text: string): Map<string, Shown> {
  const lines: string[] = [];
  let inBlock = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) {
      inBlock = !inBlock;
      continue;
    }
    if (inBlock) {
      const m = /(?:^|\$ |npx )(mcpx [a-z].*)$/.exec(line.trim());
      if (m) lines.push(m[1]!.replace(/\s#.*$/, ''));
    } else for (const m of line.matchAll(/`(?:npx )?(mcpx [a-z][^`]*)`/g)) lines.push(m[1]!);
  }
  const shown = new Map<string, Shown>();
  for (const line of lines) {
    const words = line.replace(/\\\|/g, '|').split(/\s+/);
    const command = words[1]!;
    if (!/^[a-z][a-z-]*$/.test(command)) continue;
    const s = shown.get(command) ?? { command, options: new Set<string>(), lines: [] };
    s.lines.push(line);
    // Options as shown: `--flag`, `--flag=V`, `[--flag V]`, `-f` (quoted JSON arguments hold no options).
    for (const w of words.slice(2)) {
      const o = /^\[?(--?[a-z][a-z-]*)/.exec(w);
      if (o && !w.startsWith("'")) s.options.add(o[1]!);
    }
    shown.set(command, s);
  }
  return shown;
}

describe('the README shows the binary as it is', () => {
  const shown = commandsShown(README);
  const env = cleanEnv(mkdtempSync(join(tmpdir(), 'mcpx-readme-')));

  it('shows the commands a newcomer needs', () => {
    for (const c of ['install', 'serve', 'call', 'tools', 'status', 'doctor', 'logs', 'ui', 'stop']) expect(shown.has(c), c).toBe(true);
  });

  /** Whether `mcpx --help` lists `command` among its commands. */
  const listed = async (command: string) => new RegExp(`^  ${command}[ \\[<]`, 'm').test((await mcpx(['--help'], { env })).stdout);

  it.each([...commandsShown(README).keys()])('mcpx %s: the command exists and takes every option the README shows', async (command) => {
    const s = shown.get(command)!;
    expect(await listed(command), `README shows \`${s.lines[0]}\`, but mcpx --help lists no command ${command}`).toBe(true);
    const r = await mcpx([command, '--help'], { env });
    expect(r.code, `${MCPX} ${command} --help: ${r.stderr}`).toBe(0);
    const help = r.stdout;
    for (const o of s.options) {
      if (o === '--help') continue;
      expect(help, `README shows \`${s.lines.find((l) => l.includes(o))}\`, but \`mcpx ${command} --help\` has no ${o}`).toMatch(
        new RegExp(`(^|[\\s,])${o.replace(/[-]/g, '\\-')}([\\s,=[<]|$)`, 'm'),
      );
    }
  });

  it('the check itself finds a command or an option the binary does not have', async () => {
    const fake = commandsShown('Run `mcpx stauts` or `mcpx call --no-such-flag x y`.');
    expect([...fake.keys()]).toEqual(['stauts', 'call']);
    expect([...fake.get('call')!.options]).toEqual(['--no-such-flag']);
    expect(await listed('stauts')).toBe(false);
    expect(await listed('status')).toBe(true);
    expect((await mcpx(['call', '--help'], { env })).stdout).not.toMatch(/--no-such-flag/);
  });
});
