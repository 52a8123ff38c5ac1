/**
 * `npm run build`'s second step: the `mcpx` binary as one bundle (esbuild), written over tsc's
 * dist/src/cli/main.js — the path users' MCP client configs name — with its lazily loaded parts in
 * dist/src/cli/chunks/; and what the binary reads at run time, so the npm package needs no
 * dependencies installed beside it (docs/packaging.md):
 *   dist/demo/           the demo config and its three servers, bundled with the SDKs they use
 *   dist/assets/         the live page's copy of Mermaid
 *
 * Why: every `mcpx` command, every `mcpx serve` and every daemon start is a new process, and node 20
 * resolves, reads and compiles each ES module and CommonJS file separately (no compile cache before
 * node 22). The daemon alone loaded about 350 files before its socket answered. Bundled, the same code
 * is a handful of files and each start costs about a third less (docs/decisions.md).
 *
 * Each dynamic `import()` in src stays a separate chunk loaded on first use, so what a command does not
 * run it does not load. The metafile (dist/src/cli/bundle-meta.json) maps every chunk to the source
 * modules in it: test/cli/lazy-loading.test.ts reads it to check what each process really loads.
 *
 *   node dist/scripts/bundle.js
 */
import { chmodSync, copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, join, relative, sep } from 'node:path';
import { readFile } from 'node:fs/promises';
import { build, type BuildOptions, type Metafile, type Plugin } from 'esbuild';
import { packageRoot } from '../src/package-info.js';

/** Where the bundle goes, beside tsc's output of the same modules (the benchmarks and scripts import those). */
const BUNDLE_DIR = join('dist', 'src', 'cli');
const BUNDLE_META = join(BUNDLE_DIR, 'bundle-meta.json');
/** The demo (examples/demo.json and the servers it names), as the package ships it. */
const DEMO_DIR = join('dist', 'demo');
const DEMO_SERVERS = ['dual', 'legacy-only', 'modern-only'];
/** Files the daemon serves as they are (the live page's Mermaid). */
const ASSETS_DIR = join('dist', 'assets');

/** What both bundles (the binary, the demo servers) are: split ES modules for node 20. */
const NODE_ESM = {
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // Bundled CommonJS packages (fastify, pino, …) call require() for node's modules.
  banner: { js: "import { createRequire as __mcpxRequire } from 'node:module'; const require = __mcpxRequire(import.meta.url);" },
  legalComments: 'none',
  logLevel: 'warning',
} as const satisfies BuildOptions;

/** The binary's builds (the main one and serve's own): NODE_ESM, and how the binary is bundled. */
const BINARY = {
  ...NODE_ESM,
  // Packages' ES builds: jsonc-parser's "main" is a UMD build whose require()s a bundler cannot follow.
  mainFields: ['module', 'main'],
  // Smaller files parse faster. Identifiers are not minified, so functions and classes keep the names
  // their source gives them, which stack traces and errors' `name` show.
  minifyWhitespace: true,
  minifySyntax: true,
  // Off: keepNames wraps every function a bundled module creates in a call that redefines its `name`,
  // closures made per request included; measured, that cost the daemon a fifth of its CPU per call
  // (about 290 → 230 µs at 16 in flight) and about 10 ms of its start. Without it esbuild still renames
  // a symbol that collides with another in its chunk, and a class that names itself inside its body
  // (`var X = class _X`), so mcpx's classes whose name shows (its errors) must do neither;
  // test/cli/bundle.test.ts holds the errors' names to their source.
  keepNames: false,
  sourcemap: 'linked',
  // fastify requires its JSON Schema compilers only when a route declares a schema (none does); bundled,
  // ajv would be parsed at every daemon start. light-my-request likewise: fastify requires it only for
  // inject(), which the daemon never calls. Left outside and not in the package (docs/packaging.md): the
  // package test runs the installed daemon without them.
  external: ['@fastify/ajv-compiler', '@fastify/fast-json-stringify-compiler', 'light-my-request', 'semver'],
  metafile: true,
} as const satisfies BuildOptions;

/**
 * Top-level require()s in packages' files, of modules only some code paths call, made lazy: each becomes
 * an object that requires the module on its first property read. Starts loaded them for nothing (about
 * 15 ms of the daemon's): fastify requires http2, https and dns for HTTP/2 and TLS servers and for
 * listening on a host name (the daemon listens on a socket path, or on TCP with an address), and semver to
 * check a plugin's declared fastify version (mcpx's plugins declare none); commander requires
 * child_process in every command, for executable subcommands (mcpx has none).
 *
 * Each listed require must be found as written, or the build fails: a package upgrade that changes one
 * is noticed, never silently bundled eagerly or, worse, half-rewritten.
 */
const LAZY_REQUIRES: Array<{ file: string; requires: string[] }> = [
  {
    file: 'node_modules/fastify/lib/server.js',
    requires: ["const https = require('node:https')", "const http2 = require('node:http2')", "const dns = require('node:dns')"],
  },
  { file: 'node_modules/fastify/lib/plugin-utils.js', requires: ["const semver = require('semver')"] },
  { file: 'node_modules/commander/lib/command.js', requires: ["const childProcess = require('node:child_process')"] },
];

const LAZY_MODULE =
  'function __mcpxLazy(load) { let m; return new Proxy({}, { get(_, k) { m ??= load(); const v = m[k]; return typeof v === "function" ? v.bind(m) : v; } }); }\n';

function lazyRequires(): Plugin {
  return {
    name: 'lazy-requires',
    setup(b) {
      const rewritten = new Set<string>();
      for (const { file, requires } of LAZY_REQUIRES) {
        // By the path's end: node_modules may be a link (a worktree's), and esbuild loads the real path.
        b.onLoad({ filter: new RegExp(`/${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) }, async (args) => {
          let text = await readFile(args.path, 'utf8');
          for (const line of requires) {
            const m = /^const (\w+) = require\(('[^']+')\)$/.exec(line);
            if (!m || !text.includes(line)) throw new Error(`lazy-requires: ${file} no longer has \`${line}\`; update LAZY_REQUIRES in scripts/bundle.ts`);
            text = text.replace(line, `const ${m[1]} = __mcpxLazy(() => require(${m[2]}))`);
          }
          rewritten.add(file);
          return { contents: LAZY_MODULE + text, loader: 'js' };
        });
      }
      b.onEnd(() => {
        const missed = LAZY_REQUIRES.filter((l) => !rewritten.has(l.file)).map((l) => l.file);
        if (missed.length > 0)
          throw new Error(`lazy-requires: not bundled from the expected path: ${missed.join(', ')}; update LAZY_REQUIRES in scripts/bundle.ts`);
      });
    },
  };
}

async function main(): Promise<void> {
  const root = packageRoot();
  const out = join(root, BUNDLE_DIR);
  rmSync(join(out, 'chunks'), { recursive: true, force: true });
  const result = await build({
    absWorkingDir: root,
    entryPoints: { main: 'src/cli/main.ts' },
    outdir: out,
    ...BINARY,
    plugins: [lazyRequires(), serveMainOutside()],
  });
  // The quick serve path (src/cli/serve-main.ts), a build of its own and one file: what a serve needs at
  // its start is one module, not 26. What it may load later (the daemon starter) stays lazy, in the main
  // build's chunks.
  const serve = await build({
    absWorkingDir: root,
    entryPoints: { [SERVE_MAIN]: 'src/cli/serve-main.ts' },
    outdir: out,
    ...BINARY,
    splitting: false,
    plugins: [lazyFromMainChunks(result.metafile, SERVE_LAZY)],
  });
  // One metafile for both (test/cli/bundle-chunks.test.ts holds every output to a path that loads it).
  const meta = {
    inputs: { ...result.metafile.inputs, ...serve.metafile.inputs },
    outputs: { ...result.metafile.outputs, ...serve.metafile.outputs },
  };
  writeFileSync(join(root, BUNDLE_META), JSON.stringify(meta));
  chmodSync(join(out, 'main.js'), 0o755);
  await buildDemo(root);
  copyAssets(root);
}

/** The quick serve path's own bundle, beside the chunks (the package ships chunks/*.js). */
const SERVE_MAIN = 'chunks/serve-main';

/** What the quick serve path imports lazily and rarely: kept out of its file, loaded from the main build's chunk. */
const SERVE_LAZY = ['src/daemon-client/client.ts', 'src/cli/progress.ts'];

/** A dynamic import of one of `sources` left to the main build's chunk of that module (a sibling in chunks/). */
function lazyFromMainChunks(main: Metafile, sources: string[]): Plugin {
  const chunkOf = new Map<string, string>();
  for (const [file, o] of Object.entries(main.outputs)) if (o.entryPoint && sources.includes(o.entryPoint)) chunkOf.set(o.entryPoint, basename(file));
  const missing = sources.filter((x) => !chunkOf.has(x));
  if (missing.length > 0) throw new Error(`serve-main: the main build has no chunk of ${missing.join(', ')} (is it still imported lazily?)`);
  return {
    name: 'lazy-from-main-chunks',
    setup(b) {
      b.onResolve({ filter: /\.js$/ }, async (args) => {
        if (args.kind !== 'dynamic-import' || args.pluginData === 'inner') return undefined;
        const r = await b.resolve(args.path, { resolveDir: args.resolveDir, kind: args.kind, importer: args.importer, pluginData: 'inner' });
        const chunk = chunkOf.get(
          relative(b.initialOptions.absWorkingDir ?? process.cwd(), r.path)
            .split(sep)
            .join('/'),
        );
        return chunk === undefined ? undefined : { path: `./${chunk}`, external: true };
      });
    },
  };
}

/** main.ts' import of ./serve-main.js left to the file the second build writes, not bundled into the chunks. */
function serveMainOutside(): Plugin {
  return {
    name: 'serve-main-outside',
    setup(b) {
      b.onResolve({ filter: /^\.\/serve-main\.js$/ }, (args) =>
        args.importer.endsWith(join('src', 'cli', 'main.ts')) ? { path: `./${SERVE_MAIN}.js`, external: true } : undefined,
      );
    },
  };
}

/**
 * The demo servers import the MCP SDKs (v1 for the legacy one, v2 for the others) and zod; bundled, the
 * package runs its demo with nothing installed beside it. Their config is copied unchanged: it names
 * them relative to its own folder.
 */
async function buildDemo(root: string): Promise<void> {
  const out = join(root, DEMO_DIR);
  rmSync(out, { recursive: true, force: true });
  await build({
    absWorkingDir: root,
    entryPoints: Object.fromEntries(DEMO_SERVERS.map((name) => [name, join('examples', 'servers', `${name}.mjs`)])),
    outdir: join(out, 'servers'),
    outExtension: { '.js': '.mjs' },
    ...NODE_ESM,
    minify: true,
  });
  copyFileSync(join(root, 'examples', 'demo.json'), join(out, 'demo.json'));
}

function copyAssets(root: string): void {
  const out = join(root, ASSETS_DIR);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  copyFileSync(createRequire(join(root, 'package.json')).resolve('mermaid/dist/mermaid.min.js'), join(out, 'mermaid.min.js'));
}

await main();
