/**
 * Where the package lives (its root holds package.json and examples/), whether this module runs
 * from src/ (tests), dist/src/ (tsc's output) or a chunk of the bundled binary (dist/src/cli/chunks/).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

/** The folder holding mcpx's package.json. */
export function packageRoot(): string {
  if (root !== undefined) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      try {
        const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown };
        if (pkg.name === 'mcpx') return (root = dir);
      } catch {
        // keep walking
      }
    }
    const up = dirname(dir);
    if (up === dir) throw new Error('cannot find the mcpx package root (package.json named "mcpx")');
    dir = up;
  }
}

let version: string | undefined;

/** package.json `version`. */
export function packageVersion(): string {
  if (version !== undefined) return version;
  const pkg = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version?: unknown };
  return (version = typeof pkg.version === 'string' ? pkg.version : '0.0.0');
}

/**
 * The demo config, used when no config file is found: the build's copy of examples/demo.json, beside
 * its servers bundled with the SDKs they import (what the npm package ships; scripts/bundle.ts).
 */
export function demoConfigPath(): string {
  return join(packageRoot(), 'dist', 'demo', 'demo.json');
}

/** The live page's Mermaid, copied by the build from the mermaid package (no CDN, no node_modules at run time). */
export function mermaidAssetPath(): string {
  return join(packageRoot(), 'dist', 'assets', 'mermaid.min.js');
}
