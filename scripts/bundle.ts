/**
 * `npm run build`'s second step: the `mcpx` binary as one bundle (esbuild), written over tsc's
 * dist/src/cli/main.js — the path users' MCP client configs name — with its lazily loaded parts in
 * dist/src/cli/chunks/.
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
import { rmSync, writeFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { packageRoot } from '../src/package-info.js';

/** Where the bundle goes, beside tsc's output of the same modules (the benchmarks and scripts import those). */
const BUNDLE_DIR = join('dist', 'src', 'cli');
const BUNDLE_META = join(BUNDLE_DIR, 'bundle-meta.json');

async function main(): Promise<void> {
  const root = packageRoot();
  const out = join(root, BUNDLE_DIR);
  rmSync(join(out, 'chunks'), { recursive: true, force: true });
  const result = await build({
    absWorkingDir: root,
    entryPoints: { main: 'src/cli/main.ts' },
    outdir: out,
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // Packages' ES builds: jsonc-parser's "main" is a UMD build whose require()s a bundler cannot follow.
    mainFields: ['module', 'main'],
    // Bundled CommonJS packages (fastify, pino, …) call require() for node's modules.
    banner: { js: "import { createRequire as __mcpxRequire } from 'node:module'; const require = __mcpxRequire(import.meta.url);" },
    // Smaller files parse faster; names are kept for error classes and stack traces.
    minifyWhitespace: true,
    minifySyntax: true,
    keepNames: true,
    legalComments: 'none',
    sourcemap: 'linked',
    // fastify requires its JSON Schema compilers only when a route declares a schema (none does); bundled,
    // ajv would be parsed at every daemon start. Left outside, they load from node_modules if ever needed.
    external: ['@fastify/ajv-compiler', '@fastify/fast-json-stringify-compiler'],
    metafile: true,
    logLevel: 'warning',
  });
  writeFileSync(join(root, BUNDLE_META), JSON.stringify(result.metafile));
  chmodSync(join(out, 'main.js'), 0o755);
}

await main();
