/**
 * Issue 36, item 2: `mcpx doctor` checks that each server can start, through the built binary and the
 * real npm: a command not on the PATH (the running daemon's PATH when one runs), an `npx` package the
 * registry does not have and one it has (npm pointed at a loopback fake registry through the server's own
 * `env`, as a user's .npmrc or env would), one installed in the project's node_modules, a URL that
 * answers and a closed port, a name given twice and two names for one server. Nothing leaves loopback.
 */
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/real.js';
import { cleanEnv, ForegroundDaemon, killAll, mcpx } from './helpers.js';

const EXISTS = '@mcpx-test/exists';
const MISSING = '@mcpx-test/no-such-package';
const LOCAL = '@mcpx-test/installed-here';

async function listen(server: Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as { port: number }).port;
}

/** A loopback port that was free a moment ago (and so refuses connections). */
async function closedPort(): Promise<number> {
  const s = createServer();
  const port = await listen(s);
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('mcpx doctor: can each server start? (issue 36)', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let env: NodeJS.ProcessEnv;
  let config: string;
  let registryUrl: string;
  const asked: string[] = [];
  const servers: Server[] = [];

  beforeAll(async () => {
    dir = await tempDir('mcpx-doctor-servers-');
    // The registry: a packument for EXISTS, 404 for anything else (as registry.npmjs.org answers).
    const registry = createServer((req: IncomingMessage, res) => {
      const name = decodeURIComponent((req.url ?? '/').slice(1));
      asked.push(name);
      if (name === EXISTS) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            name,
            'dist-tags': { latest: '1.0.0' },
            versions: { '1.0.0': { name, version: '1.0.0', dist: { tarball: `http://127.0.0.1:1/${name}.tgz` } } },
          }),
        );
        return;
      }
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"error":"Not found"}');
    });
    const web = createServer((_req, res) => {
      res.writeHead(405, { allow: 'POST' });
      res.end();
    });
    servers.push(registry, web);
    registryUrl = `http://127.0.0.1:${await listen(registry)}/`;
    const webUrl = `http://127.0.0.1:${await listen(web)}/mcp`;
    const closed = `http://127.0.0.1:${await closedPort()}/mcp`;
    const project = join(dir.path, 'project');
    mkdirSync(join(project, 'node_modules', ...LOCAL.split('/')), { recursive: true });
    writeFileSync(join(project, 'node_modules', ...LOCAL.split('/'), 'package.json'), JSON.stringify({ name: LOCAL, version: '1.0.0' }));
    const npm = { npm_config_registry: registryUrl, npm_config_update_notifier: 'false' };
    config = join(dir.path, 'mcpx.json');
    // Written by hand: JSON.stringify cannot give a name twice.
    writeFileSync(
      config,
      `{
  "mcpServers": {
    "ghost": { "command": "mcpx-test-ghost" },
    "badpkg": { "command": "npx", "args": ["-y", "${MISSING}"], "env": ${JSON.stringify(npm)} },
    "goodpkg": { "command": "npx", "args": ["-y", "${EXISTS}@latest"], "env": ${JSON.stringify(npm)} },
    "localpkg": { "command": "npx", "args": ["-y", "${LOCAL}"], "cwd": ${JSON.stringify(project)}, "env": ${JSON.stringify(npm)} },
    "web": { "url": "${webUrl}" },
    "closed": { "url": "${closed}" },
    "tools": { "command": ${JSON.stringify(process.execPath)}, "args": ["tools.mjs"] },
    "twin": { "command": ${JSON.stringify(process.execPath)}, "args": ["tools.mjs"] },
    "daemon-only": { "command": "mcpx-test-daemon-only" },
    "tools": { "command": ${JSON.stringify(process.execPath)}, "args": ["tools.mjs"] }
  }
}
`,
    );
    env = cleanEnv(dir.path, { MCPX_STATE_DIR: join(dir.path, 'state'), MCPX_CONFIG: config });
  }, 60_000);
  afterAll(async () => {
    await killAll();
    for (const s of servers) s.closeAllConnections?.();
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    await dir?.remove();
  });

  it('names each server that cannot start, and why, and says so in words', async () => {
    const r = await mcpx(['doctor'], { env, timeoutMs: 120_000 });
    expect(r.code).toBe(1);
    const line = (server: string) => r.stdout.split('\n').filter((l) => new RegExp(`^(ok  |FAIL) server ${server}\\s`).test(l));
    expect(line('ghost')).toEqual([
      expect.stringMatching(
        /^FAIL server ghost\s+cannot start it: command not found: mcpx-test-ghost \(not on the PATH the daemon gives it, this shell's .*: \S+\)$/,
      ),
    ]);
    expect(line('ghost')[0]).toContain(env['PATH']);
    expect(line('badpkg')).toEqual([
      `FAIL server badpkg          npx cannot start it: the npm registry has no package ${MISSING} (Not Found - GET ${registryUrl}@mcpx-test%2fno-such-package - Not found)`,
    ]);
    expect(line('goodpkg')).toEqual([`ok   server goodpkg         npx runs ${EXISTS}@latest, which the registry ${registryUrl} has`]);
    expect(line('localpkg')).toEqual([
      expect.stringMatching(new RegExp(`^ok   server localpkg\\s+npx runs ${LOCAL}, installed in \\S+/project/node_modules/${LOCAL}$`)),
    ]);
    expect(line('web')).toEqual([expect.stringMatching(/^ok {3}server web\s+http:\/\/127\.0\.0\.1:\d+\/mcp answers \(HTTP 405\)$/)]);
    expect(line('closed')).toEqual([
      expect.stringMatching(/^FAIL server closed\s+cannot start it: http:\/\/127\.0\.0\.1:\d+\/mcp does not answer \(connect ECONNREFUSED/),
    ]);
    expect(line('tools')).toEqual([
      expect.stringMatching(/^FAIL server tools\s+defined 2 times in \S+mcpx\.json \(lines 9, 12\): only the last one is used; remove the others$/),
      expect.stringMatching(/^ok {3}server tools\s+\S+ is \S+node$/),
    ]);
    expect(line('twin')).toContainEqual(expect.stringMatching(/^FAIL server twin\s+the same server as "tools" \(same command, arguments, folder and env\)/));
    expect(r.stderr).toBe(
      'mcpx: doctor: server tools, server twin, server ghost, server badpkg, server closed and server daemon-only need attention (the FAIL lines above say why)\n',
    );
    // npm asked the loopback registry about the two registry packages, not about the installed one.
    expect(asked).toContain(MISSING);
    expect(asked).toContain(EXISTS);
    expect(asked).not.toContain(LOCAL);
  });

  it("with a daemon running, a command is looked up on that daemon's PATH", async () => {
    const bin = join(dir.path, 'daemon-bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, 'mcpx-test-daemon-only'), '#!/bin/sh\nexit 0\n');
    chmodSync(join(bin, 'mcpx-test-daemon-only'), 0o755);
    const d = await ForegroundDaemon.start(join(dir.path, 'state', 'daemon.sock'), [], { env: { ...env, PATH: `${bin}:${env['PATH']}` } });
    try {
      const r = await mcpx(['doctor', '--json'], { env, timeoutMs: 120_000 });
      expect(r.code).toBe(1);
      const checks = JSON.parse(r.stdout).checks as Array<{ check: string; ok: boolean; detail: string }>;
      expect(checks.find((c) => c.check === 'server daemon-only')).toEqual({
        check: 'server daemon-only',
        ok: true,
        detail: `mcpx-test-daemon-only is ${join(bin, 'mcpx-test-daemon-only')}`,
      });
      expect(checks.find((c) => c.check === 'server ghost')?.detail).toContain(`not on the PATH the daemon gives it, the running daemon's (pid ${d.pid}): `);
    } finally {
      await d.stop();
    }
  });
});

describe('mcpx doctor with the registry unreachable: the local cache decides (issue 36)', () => {
  let dir: { path: string; remove: () => Promise<void> };

  afterAll(async () => {
    await dir?.remove();
  });

  it('a package npx installed before is ok, said as from its cache; one it never installed cannot start', async () => {
    dir = await tempDir('mcpx-doctor-offline-');
    // What an earlier `npx -y @mcpx-test/cached` left in npm's cache (<HOME>/.npm/_npx/<hash>/node_modules).
    const cached = join(dir.path, '.npm', '_npx', '0123abcd', 'node_modules', '@mcpx-test', 'cached');
    mkdirSync(cached, { recursive: true });
    writeFileSync(join(cached, 'package.json'), JSON.stringify({ name: '@mcpx-test/cached', version: '1.0.0' }));
    const npm = { npm_config_registry: `http://127.0.0.1:${await closedPort()}/`, npm_config_update_notifier: 'false' };
    const config = join(dir.path, 'mcpx.json');
    writeFileSync(
      config,
      JSON.stringify({
        mcpServers: {
          cached: { command: 'npx', args: ['-y', '@mcpx-test/cached'], env: npm },
          uncached: { command: 'npx', args: ['-y', '@mcpx-test/never-installed'], env: npm },
        },
      }),
    );
    const env = cleanEnv(dir.path, { MCPX_STATE_DIR: join(dir.path, 'state'), MCPX_CONFIG: config });
    const r = await mcpx(['doctor', '--json'], { env, timeoutMs: 120_000 });
    expect(r.code).toBe(1);
    const checks = JSON.parse(r.stdout).checks as Array<{ check: string; ok: boolean; detail: string }>;
    expect(checks.find((c) => c.check === 'server cached')).toMatchObject({
      ok: true,
      detail: expect.stringMatching(
        new RegExp(
          `^npx runs @mcpx-test/cached from its cache \\(${cached.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\); the registry could not be asked \\(.*ECONNREFUSED`,
        ),
      ),
    });
    expect(checks.find((c) => c.check === 'server uncached')).toMatchObject({
      ok: false,
      detail: expect.stringMatching(
        /^npx cannot start it now: the registry could not be asked about @mcpx-test\/never-installed \(.*ECONNREFUSED.*\) and it is in no local cache$/,
      ),
    });
  });
});
