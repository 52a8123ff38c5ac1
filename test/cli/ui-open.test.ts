/**
 * Issue 13: `mcpx ui --open` hands the browser no secret on a command line (the opener's argv is in
 * `/proc/<pid>/cmdline` for every local user). The opener (`xdg-open`, found on PATH: here a fake one
 * that records its argv) gets a file:// address; the file is 0600 and holds the one-time address; a
 * real fetch of it logs in, coming from a file page (Sec-Fetch-Site: cross-site) as a browser would.
 */
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/real.js';
import { cleanEnv, ForegroundDaemon, killAll, mcpx, until } from './helpers.js';

describe.skipIf(process.platform !== 'linux')('mcpx ui --open (issue 13)', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let env: NodeJS.ProcessEnv;
  let argvFile: string;

  beforeAll(async () => {
    dir = await tempDir('mcpx-ui-open-');
    const state = join(dir.path, 'state');
    const bin = join(dir.path, 'bin');
    mkdirSync(bin);
    argvFile = join(dir.path, 'opener-argv.json');
    // The fake opener: what it was given, as its command line shows it to anyone.
    writeFileSync(
      join(bin, 'xdg-open'),
      `#!/bin/sh\nexec "${process.execPath}" -e 'require("fs").writeFileSync(process.env.ARGV_FILE, JSON.stringify(require("fs").readFileSync("/proc/self/cmdline", "utf8").split("\\0").filter(Boolean)))' -- "$@"\n`,
      { mode: 0o755 },
    );
    env = cleanEnv(dir.path, { MCPX_STATE_DIR: state, PATH: `${bin}:${process.env['PATH']}`, ARGV_FILE: argvFile });
    await ForegroundDaemon.start(join(state, 'daemon.sock'), [], { env });
  }, 60_000);
  afterAll(async () => {
    await killAll();
    await dir?.remove();
  });

  it("the opener's argv holds no code, and the file it names logs the browser in", async () => {
    const r = await mcpx(['ui', '--open'], { env });
    expect(r.code, r.stderr).toBe(0);
    const printed = r.stdout.split('\n')[0]!;
    const code = new URL(printed).searchParams.get('code')!;
    expect(code.length).toBeGreaterThan(10);
    await until(() => existsSync(argvFile), 10_000, 'the opener');
    const argv = JSON.parse(readFileSync(argvFile, 'utf8')) as string[];
    // its own command line, as /proc shows it: node -e … -- <the one address it was handed>
    const handed = argv.at(-1)!;
    expect(argv.join(' ')).not.toContain(code);
    expect(argv.join(' ')).not.toContain('code=');
    expect(handed.startsWith('file://')).toBe(true);
    const file = fileURLToPath(handed);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const html = readFileSync(file, 'utf8');
    const target = /http-equiv="refresh" content="0;url=([^"]+)"/.exec(html)?.[1]?.replace(/&amp;/g, '&');
    expect(target).toBe(printed);

    // The browser follows the file's refresh: a navigation from a file page.
    const login = await fetch(target!, { redirect: 'manual', headers: { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' } });
    expect(login.status).toBe(200);
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    expect(await login.text()).toContain('content="0;url=/ui/"');
    const origin = new URL(target!).origin;
    const page = await fetch(`${origin}/ui/`, { headers: { cookie, 'sec-fetch-site': 'same-origin' } });
    expect(page.status).toBe(200);
    const state = await fetch(`${origin}/ui/api/state`, { headers: { cookie, 'sec-fetch-site': 'same-origin' } });
    expect(state.status).toBe(200);
    // One time: the code is spent.
    expect((await fetch(target!, { redirect: 'manual' })).status).toBe(401);
  });
});
