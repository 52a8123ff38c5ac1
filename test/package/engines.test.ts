/**
 * The Node versions package.json declares are ones every locked package accepts, so `npm ci` on the oldest
 * declared Node prints no EBADENGINE (and nothing refuses to run there):
 *
 * - `engines.node` is what the package needs at run time (what `npm install -g` of it checks). The package
 *   has no dependencies, so every package it ships — the bundle's — is locked as dev; a non-dev package
 *   in the lock would be installed for users and has to accept this minimum.
 * - `devEngines.runtime` is what a checkout needs to build and test (vite, which vitest runs on, needs
 *   20.19): every package in the lock has to accept this minimum, and it is never below `engines.node`.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-info.js';

/** npm's own range grammar (`>= 10.x`, `6.* || >= 10.*`, `>=16 || 14 >=14.17`): semver, which npm uses, reads it as npm does. */
const semver = createRequire(import.meta.url)('semver') as {
  minVersion(range: string): { version: string } | null;
  satisfies(version: string, range: string): boolean;
  gte(a: string, b: string): boolean;
  validRange(range: string): string | null;
};

interface Locked {
  version?: string;
  dev?: boolean;
  devOptional?: boolean;
  engines?: { node?: string } | string[];
}

const ROOT = packageRoot();
const PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  engines: { node: string };
  devEngines: { runtime: { name: string; version: string; onFail: string } };
};
const LOCK = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, Locked> };

function minimum(range: string): string {
  const min = semver.minVersion(range);
  if (!min) throw new Error(`no Node version satisfies ${range}`);
  return min.version;
}

/** Every locked package whose engines.node does not admit `node`, as `path@version wants range`. */
function refusing(node: string, which: (p: Locked) => boolean): string[] {
  const out: string[] = [];
  for (const [path, p] of Object.entries(LOCK.packages)) {
    if (path === '' || !which(p) || !p.engines || Array.isArray(p.engines) || p.engines.node === undefined) continue;
    const range = p.engines.node;
    // A range npm cannot read is not enforced by npm either; still, say so rather than skip it.
    if (semver.validRange(range) === null || !semver.satisfies(node, range)) out.push(`${path}@${p.version} wants node ${range}`);
  }
  return out;
}

describe('the Node versions package.json declares', () => {
  const runtime = minimum(PKG.engines.node);
  const dev = minimum(PKG.devEngines.runtime.version);

  it('engines.node is 20.18.1 or later (undici 7, bundled, needs it) and the lock file records the same', () => {
    expect(semver.gte(runtime, '20.18.1')).toBe(true);
    expect(LOCK.packages['']?.engines).toEqual(PKG.engines);
  });

  it('devEngines names node, at or above engines.node, and refuses an older Node outright', () => {
    expect(PKG.devEngines.runtime.name).toBe('node');
    expect(PKG.devEngines.runtime.onFail).toBe('error');
    expect(semver.gte(dev, runtime)).toBe(true);
  });

  it('every locked package accepts the oldest Node a checkout declares (no EBADENGINE from npm ci there)', () => {
    expect(refusing(dev, () => true)).toEqual([]);
  });

  it('every package a user would install accepts engines.node (there are none: the package has no dependencies)', () => {
    const shipped = Object.entries(LOCK.packages).filter(([path, p]) => path !== '' && !p.dev && !p.devOptional);
    expect(shipped.map(([path]) => path)).toEqual([]);
    expect(refusing(runtime, (p) => !p.dev && !p.devOptional)).toEqual([]);
  });
});
