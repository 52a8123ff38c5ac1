/**
 * What a process loads is paid at each start: `mcpx call` and `mcpx --version` are a process per use,
 * and a daemon answers nothing until its modules are loaded. These run the built CLI and daemon with a
 * preload that records every module they load (test/support/record-loads.mjs) and hold each to what
 * it runs (bench/notes.md): a static import that brings one of these back fails here.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-info.js';
import { tempDir } from '../support/real.js';
import { api, cleanEnv, ForegroundDaemon, killAll, mcpx } from './helpers.js';

const RECORDER = pathToFileURL(join(packageRoot(), 'test', 'support', 'record-loads.mjs')).href;
const DUAL = join(packageRoot(), 'examples', 'servers', 'dual.mjs');

afterAll(killAll);

/** The environment `env` with the recorder preloaded, writing to `file`. */
function recording(env: NodeJS.ProcessEnv, file: string): NodeJS.ProcessEnv {
  return { ...env, NODE_OPTIONS: `--import=${RECORDER}`, MCPX_TEST_LOADS: file };
}

/** The bundle's chunks (absolute paths) and the source files (absolute paths) each holds, from the build's metafile. */
const CHUNKS: Map<string, string[]> = (() => {
  const root = packageRoot();
  const meta = JSON.parse(readFileSync(join(root, 'dist', 'src', 'cli', 'bundle-meta.json'), 'utf8')) as {
    outputs: Record<string, { inputs: Record<string, unknown> }>;
  };
  return new Map(Object.entries(meta.outputs).map(([out, o]) => [join(root, out), Object.keys(o.inputs).map((i) => join(root, i))]));
})();

/**
 * Every file the recorded process loaded (paths; node's own modules left out). The binary is a bundle,
 * so a chunk it loaded stands for the source files bundled into it.
 */
function loaded(file: string): string[] {
  const lines = readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.length > 0 && !l.startsWith('node:'));
  const files = lines.map((l) => (l.startsWith('file:') ? fileURLToPath(l) : l));
  return [...new Set(files.flatMap((f) => CHUNKS.get(f) ?? [f]))];
}

/** Of `files`, those of these packages or of these modules of mcpx (`api/app.js`: src/api/app.ts, bundled). */
function among(files: string[], packages: string[], modules: string[] = []): string[] {
  const hits = new Set<string>();
  for (const f of files) {
    for (const p of packages) if (f.includes(`/node_modules/${p}/`)) hits.add(p);
    for (const m of modules) if (f.endsWith(join('src', m.replace(/\.js$/, '.ts')))) hits.add(m);
  }
  return [...hits].sort();
}

/** Of `files`, mcpx's command modules other than these. */
function commandsBut(files: string[], ...allowed: string[]): string[] {
  return files.filter((f) => /\/src\/cli\/commands\//.test(f) && !allowed.some((a) => f.endsWith(`/src/cli/commands/${a}.ts`)));
}

/** A state folder and a config with one stdio server (`dual`) under `root`, and the environment naming them. */
function dualConfig(root: string): { state: string; env: NodeJS.ProcessEnv } {
  const state = join(root, 'state');
  const config = join(root, 'mcpx.json');
  writeFileSync(config, JSON.stringify({ mcpServers: { dual: { command: process.execPath, args: [DUAL] } } }));
  return { state, env: cleanEnv(root, { MCPX_STATE_DIR: state, MCPX_CONFIG: config }) };
}

/** What neither the CLI's light commands nor `mcpx call` need: the daemon's and the SDK's dependencies. */
const DAEMON_PACKAGES = [
  'zod',
  'fastify',
  'pino',
  'pino-pretty',
  'xstate',
  'undici',
  '@modelcontextprotocol/sdk',
  '@modelcontextprotocol/server',
  '@modelcontextprotocol/node',
  'ajv',
];

describe('what each process loads', () => {
  it('mcpx --version: commander and the command table, no command and no dependency of one', async () => {
    const dir = await tempDir('mcpx-loads-');
    try {
      const file = join(dir.path, 'loads.txt');
      const r = await mcpx(['--version'], { env: recording(cleanEnv(dir.path), file) });
      expect(r.code, r.stderr).toBe(0);
      const files = loaded(file);
      expect(among(files, ['commander'])).toEqual(['commander']);
      expect(among(files, [...DAEMON_PACKAGES, 'jsonc-parser'])).toEqual([]);
      expect(commandsBut(files, 'index')).toEqual([]);
    } finally {
      await dir.remove();
    }
  });

  it('mcpx config describes the config without loading the daemon (no controller, pools, zod, fastify)', async () => {
    const dir = await tempDir('mcpx-loads-');
    try {
      const file = join(dir.path, 'loads.txt');
      const r = await mcpx(['config', '--json'], { env: recording(cleanEnv(dir.path), file) });
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).demo).toBe(true);
      expect(among(loaded(file), DAEMON_PACKAGES, ['core/controller.js', 'daemon/daemon.js'])).toEqual([]);
    } finally {
      await dir.remove();
    }
  });

  it("mcpx call against a running daemon loads none of the daemon's dependencies (zod, fastify, undici, …); the daemon loads no undici (stdio upstreams only), no MCP SDK (no /mcp request), no ajv and no ui page", async () => {
    const dir = await tempDir('mcpx-loads-');
    try {
      const { state, env } = dualConfig(dir.path);
      const daemonFile = join(dir.path, 'daemon-loads.txt');
      const daemon = await ForegroundDaemon.start(join(state, 'daemon.sock'), [], { env: recording(env, daemonFile) });
      try {
        const cliFile = join(dir.path, 'call-loads.txt');
        const r = await mcpx(['call', 'dual', 'echo', '{"text":"hi"}'], { env: recording(env, cliFile) });
        expect(r.code, r.stderr).toBe(0);
        expect(r.stdout).toContain('hi');
        const cli = loaded(cliFile);
        expect(among(cli, DAEMON_PACKAGES, ['daemon/daemon.js', 'api/app.js'])).toEqual([]);
        expect(commandsBut(cli, 'index', 'call')).toEqual([]);
      } finally {
        expect((await daemon.stop()).code).toBe(0);
      }
      const files = loaded(daemonFile);
      expect(among(files, ['fastify', 'zod'])).toEqual(['fastify', 'zod']); // the recorder saw the daemon's own loads
      expect(among(files, [], ['api/schemas.js'])).toEqual(['api/schemas.js']); // the call was validated
      expect(
        among(
          files,
          [
            'undici',
            '@modelcontextprotocol/sdk',
            '@modelcontextprotocol/server',
            '@modelcontextprotocol/node',
            '@fastify/ajv-compiler',
            'ajv',
            'pino-pretty',
            '@statelyai/inspect',
          ],
          ['ui/page.js', 'api/openapi.js', 'api/response-contract.js', 'front/http-entry.js'],
        ),
      ).toEqual([]);
    } finally {
      await dir.remove();
    }
  });

  it('the daemon answers requests with nothing to validate without loading zod, its schemas or any session code; the state files are checked without zod; the first validated request loads the schemas', async () => {
    const dir = await tempDir('mcpx-loads-');
    try {
      const { state, env } = dualConfig(dir.path);
      const before = join(dir.path, 'daemon-loads-1.txt');
      const daemon = await ForegroundDaemon.start(join(state, 'daemon.sock'), [], { env: recording(env, before) });
      let beforeValidation: string[];
      try {
        expect((await api(join(state, 'daemon.sock'), 'GET', '/v1/status')).status).toBe(200);
        // ES modules are recorded as they load: this is what the daemon loaded up to now.
        beforeValidation = loaded(before);
        expect((await api(join(state, 'daemon.sock'), 'GET', '/v1/tools?bogus=1')).status).toBe(400); // validated: a 400 naming the field
      } finally {
        expect((await daemon.stop()).code).toBe(0);
      }
      expect(among(beforeValidation, ['fastify'], ['api/routes.js', 'state/record-checks.js', 'upstream/era-cache.js', 'catalog/catalog-store.js'])).toEqual([
        'api/routes.js',
        'catalog/catalog-store.js',
        'fastify',
        'state/record-checks.js',
        'upstream/era-cache.js',
      ]);
      expect(among(beforeValidation, [], ['api/schemas.js', 'api/openapi.js'])).toEqual([]);
      // `mcpx daemon` with nothing after it parses no command line: no commander, no command module (the table only).
      expect(among(beforeValidation, ['commander'])).toEqual([]);
      expect(commandsBut(beforeValidation, 'index')).toEqual([]);
      // Pools exist (status listed them) but none was called: no session chart, transport or wire schema, no zod.
      expect(
        among(
          beforeValidation,
          ['zod'],
          [
            'upstream/session.js',
            'machines/session.machine.js',
            'transports/jsonrpc.js',
            'transports/stdio.js',
            'asks/answer-schemas.js',
            'ui/statechart-view.js',
          ],
        ),
      ).toEqual([]);
      expect(among(loaded(before), [], ['api/schemas.js'])).toEqual(['api/schemas.js']);
      // fastify's requires of what only HTTP/2, TLS, inject() and plugin version checks use stay unloaded (scripts/bundle.ts).
      expect(among(loaded(before), ['semver', 'light-my-request'])).toEqual([]);
    } finally {
      await dir.remove();
    }
  });

  it("mcpx serve loads nothing that answers its client (no MCP SDK, zod, fastify, pino, xstate, undici or node:http), nor commander for a client's command line; its daemon loads the front with the first stream", async () => {
    const dir = await tempDir('mcpx-loads-');
    try {
      const { state, env } = dualConfig(dir.path);
      const daemonFile = join(dir.path, 'daemon-loads.txt');
      const daemon = await ForegroundDaemon.start(join(state, 'daemon.sock'), [], { env: recording(env, daemonFile) });
      const init = `${JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'loads', version: '1' } } })}\n`;
      try {
        for (const [args, level] of [
          [['serve'], 'silent'],
          [['serve', '--config', join(dir.path, 'mcpx.json')], 'debug'],
        ] as const) {
          const file = join(dir.path, `serve-${level}.txt`);
          const r = await mcpx([...args], { env: recording({ ...env, MCPX_LOG_LEVEL: level }, file), input: init });
          expect(r.code, r.stderr).toBe(0);
          expect(JSON.parse(r.stdout.split('\n')[0]!)).toMatchObject({ id: 0, result: { serverInfo: { name: 'mcpx' } } }); // served, by the daemon
          const files = loaded(file);
          expect(among(files, [...DAEMON_PACKAGES, 'commander'], ['front/front.js', 'front/stdin-gate.js'])).toEqual([]);
          expect(among(files, [], ['serve/pipe.js'])).toEqual(['serve/pipe.js']); // the recorder saw serve's own loads
          expect(readFileSync(file, 'utf8').split('\n')).not.toContain('node:http'); // a daemon answered: no HTTP client
        }
      } finally {
        expect((await daemon.stop()).code).toBe(0);
      }
      expect(among(loaded(daemonFile), ['@modelcontextprotocol/server'], ['front/socket-entry.js', 'front/front.js'])).toEqual([
        '@modelcontextprotocol/server',
        'front/front.js',
        'front/socket-entry.js',
      ]);
    } finally {
      await dir.remove();
    }
  });
});
