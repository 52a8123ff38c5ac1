/**
 * `mcpx install` keeps what a person wrote, through the built binary in a temp HOME: `--import` adds the
 * imported servers to a hand-formatted mcpx config with the file's own indentation (2 spaces, 4 spaces,
 * tabs) and line ends (CRLF), one-liners beside one-liners; the overview names the clashes `--import`
 * would refuse; `uninstall` says the imported servers stay in mcpx's config and how to put them back.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanEnv, killAll, mcpx } from './helpers.js';
import { tempDir } from '../support/real.js';

afterAll(killAll);

const CURSOR = '.cursor/mcp.json';
const CONFIG = '.config/mcpx/config.json';

/** A temp HOME with Cursor's file and mcpx's config as given. */
async function home(cursor: string, config?: string) {
  const dir = await tempDir('mcpx-install-format-');
  const h = dir.path;
  mkdirSync(join(h, '.cursor'), { recursive: true });
  writeFileSync(join(h, CURSOR), cursor);
  if (config !== undefined) {
    mkdirSync(join(h, '.config', 'mcpx'), { recursive: true });
    writeFileSync(join(h, CONFIG), config);
  }
  return { h, env: cleanEnv(h), remove: dir.remove };
}

const CURSOR_FILE = '{\n  "mcpServers": {\n    "other": { "command": "node", "args": ["b.js"], "env": { "A": "1" } }\n  }\n}\n';

describe('mcpx install --import into a hand-formatted mcpx config', () => {
  const cases: Array<{ name: string; config: string; want: string }> = [
    {
      name: '2 spaces, one-liners and trailing commas',
      config: '{\n  "mcpServers": {\n    "mine": { "command": "node" },\n  },\n}\n',
      want: '{\n  "mcpServers": {\n    "mine": { "command": "node" },\n    "other": { "command": "node", "args": ["b.js"], "env": { "A": "1" } },\n  },\n}\n',
    },
    {
      name: '4 spaces, a setting block and a comment',
      config:
        '{\n    "pool": {\n        "max": 2\n    },\n    "mcpServers": {\n        "mine": {\n            "command": "node"\n        } // mine\n    }\n}\n',
      want: '{\n    "pool": {\n        "max": 2\n    },\n    "mcpServers": {\n        "mine": {\n            "command": "node"\n        }, // mine\n        "other": {\n            "command": "node",\n            "args": [\n                "b.js"\n            ],\n            "env": {\n                "A": "1"\n            }\n        }\n    }\n}\n',
    },
    {
      name: 'tabs, a comment after the last server',
      config: '{\n\t"mcpServers": {\n\t\t"mine": {\n\t\t\t"command": "node"\n\t\t} // mine\n\t}\n}\n',
      want: '{\n\t"mcpServers": {\n\t\t"mine": {\n\t\t\t"command": "node"\n\t\t}, // mine\n\t\t"other": {\n\t\t\t"command": "node",\n\t\t\t"args": [\n\t\t\t\t"b.js"\n\t\t\t],\n\t\t\t"env": {\n\t\t\t\t"A": "1"\n\t\t\t}\n\t\t}\n\t}\n}\n',
    },
    {
      name: 'CRLF, one server a line',
      config: '{\r\n  "mcpServers": {\r\n    "mine": { "command": "node" } // mine\r\n  }\r\n}\r\n',
      want: '{\r\n  "mcpServers": {\r\n    "mine": { "command": "node" }, // mine\r\n    "other": { "command": "node", "args": ["b.js"], "env": { "A": "1" } }\r\n  }\r\n}\r\n',
    },
    {
      name: 'one server a line',
      config: '{\n  "mcpServers": {\n    "mine": { "command": "node", "args": ["a.js"] }\n  }\n}\n',
      want: '{\n  "mcpServers": {\n    "mine": { "command": "node", "args": ["a.js"] },\n    "other": { "command": "node", "args": ["b.js"], "env": { "A": "1" } }\n  }\n}\n',
    },
    {
      name: 'no servers yet, tabs',
      config: '{\n\t"pool": {\n\t\t"max": 2\n\t}\n}\n',
      want: '{\n\t"pool": {\n\t\t"max": 2\n\t},\n\t"mcpServers": {\n\t\t"other": {\n\t\t\t"command": "node",\n\t\t\t"args": [\n\t\t\t\t"b.js"\n\t\t\t],\n\t\t\t"env": {\n\t\t\t\t"A": "1"\n\t\t\t}\n\t\t}\n\t}\n}\n',
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const { h, env, remove } = await home(CURSOR_FILE, c.config);
      try {
        const r = await mcpx(['install', '--client', 'cursor', '--import'], { env });
        expect(r.stderr).toBe('');
        expect(r.code).toBe(0);
        expect(readFileSync(join(h, CONFIG), 'utf8')).toBe(c.want);
      } finally {
        await remove();
      }
    });
  }
});

describe('the overview and uninstall speak of what --import does', () => {
  it('mcpx install alone names the servers --import would refuse, and why', async () => {
    const cursor =
      '{\n  "mcpServers": {\n    "other": { "command": "node", "args": ["b.js"] },\n    "mine": { "command": "node", "args": ["c.js"] },\n    "same": { "command": "s" }\n  }\n}\n';
    const config = '{\n  "mcpServers": {\n    "mine": { "command": "node", "args": ["a.js"] },\n    "same": { "command": "s" }\n  }\n}\n';
    const { h, env, remove } = await home(cursor, config);
    try {
      const r = await mcpx(['install'], { env });
      expect(r.code).toBe(0);
      const configFile = join(h, CONFIG);
      expect(r.stdout).toContain(
        `install would: add the mcpx entry; with --import, move 1 server(s) into mcpx (other); take out same (in mcpx's config already, the same); but ${configFile} already has a different server named mine: --import refuses until --rename NAME=NEW or --skip NAME settles it`,
      );
      const json = JSON.parse((await mcpx(['install', '--json'], { env })).stdout) as Array<{ client: string; import?: unknown }>;
      expect(json.find((s) => s.client === 'cursor')?.import).toEqual({ move: ['other'], already: ['same'], kept: [], clashes: ['mine'] });
      // and --import does refuse exactly that name
      const refused = await mcpx(['install', '--client', 'cursor', '--import'], { env });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('already has a different server named mine');
    } finally {
      await remove();
    }
  });

  it('uninstall says the imported servers stay in mcpx config, which are back in the client, and how to put back the others', async () => {
    const { h, env, remove } = await home(CURSOR_FILE);
    try {
      expect((await mcpx(['install', '--client', 'cursor', '--import'], { env })).code).toBe(0);
      const configFile = join(h, CONFIG);
      // untouched since: the backup goes back, with the server in it
      const r = await mcpx(['uninstall', '--client', 'cursor'], { env });
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`the servers --import moved stay in ${configFile}: other (take them out there if mcpx should not run them)`);
      expect(r.stdout).toContain("other: in Cursor's file again too");
    } finally {
      await remove();
    }
  });

  it('uninstall with the backup gone: an imported server not back in the client gets the way back', async () => {
    const { h, env, remove } = await home(CURSOR_FILE);
    try {
      const installed = await mcpx(['install', '--client', 'cursor', '--import'], { env });
      expect(installed.code).toBe(0);
      const file = join(h, CURSOR);
      const backup = /^backup: (.*mcp\.json\.mcpx-backup-.*)$/m.exec(installed.stdout)?.[1];
      expect(backup).toBeDefined();
      rmSync(backup!);
      const r = await mcpx(['uninstall', '--client', 'cursor'], { env });
      expect(r.code).toBe(0);
      const configFile = join(h, CONFIG);
      expect(r.stdout).toContain(`the servers --import moved stay in ${configFile}: other`);
      expect(r.stdout).toContain(
        `other: not in Cursor's file; to run it from Cursor again, copy its entry from ${configFile} into ${file} (under "mcpServers")`,
      );
      expect(JSON.parse(readFileSync(file, 'utf8')).mcpServers).toEqual({});
      expect(JSON.parse(readFileSync(configFile, 'utf8')).mcpServers.other).toEqual({ command: 'node', args: ['b.js'], env: { A: '1' } });
    } finally {
      await remove();
    }
  });
});
