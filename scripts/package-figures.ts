/**
 * The package's figures in README.md and docs/packaging.md — files in the tarball, the tarball's size, the
 * unpacked size, Mermaid's share, and the README's count of test files — measured with `npm pack --dry-run` of the current build
 * (`npm run figures` writes them; test/package/figures.test.ts fails when the written ones drift).
 *
 * Sizes are written in MB of 10⁶ bytes (as npm prints them) rounded to 0.1 MB, and checked within
 * SIZE_TOLERANCE_MB of the build: a change of a few kB in the bundle (any merged source change) leaves the
 * docs true to the figure they state, a real change fails. The file count is exact: a file more or less
 * is a change to what the package holds, and the docs should say so.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Figures {
  /** Entries in the tarball. */
  files: number;
  /** Tarball and unpacked sizes, and dist/assets/mermaid.min.js, in bytes. */
  tarball: number;
  unpacked: number;
  mermaid: number;
  /** Test files `npm test` runs (vitest's include: every `.test.ts` under test/). */
  tests: number;
}

/** How far a stated size may be from the build's, in MB: its rounding (0.05) plus 0.1 MB of drift. */
export const SIZE_TOLERANCE_MB = 0.15;

export const DOCS = ['README.md', 'docs/packaging.md'] as const;

const MB = (bytes: number): string => (bytes / 1e6).toFixed(1);

/**
 * Every place a figure is written: a pattern whose groups are the figures, in `keys` order, and how to
 * write them. A doc that lost one of its spots is a failure (the test reads them all), not a silent pass.
 */
interface Spot {
  doc: (typeof DOCS)[number];
  pattern: RegExp;
  keys: Array<keyof Figures>;
  /** The group of the first figure (a table row's "before" cell is group 1, kept as written). */
  first: number;
  write: (f: Figures) => string;
}

export const SPOTS: Spot[] = [
  {
    doc: 'README.md',
    pattern: /(\d+) files, a ([\d.]+) MB tarball, ([\d.]+) MB installed/,
    keys: ['files', 'tarball', 'unpacked'],
    first: 1,
    write: (f) => `${f.files} files, a ${MB(f.tarball)} MB tarball, ${MB(f.unpacked)} MB installed`,
  },
  {
    doc: 'README.md',
    pattern: /included \((\d+) test files;/,
    keys: ['tests'],
    first: 1,
    write: (f) => `included (${f.tests} test files;`,
  },
  {
    doc: 'docs/packaging.md',
    pattern: /^\| files in the tarball \|([^|\n]*)\| (\d+) \|$/m,
    keys: ['files'],
    first: 2,
    write: (f) => `| files in the tarball |$1| ${f.files} |`,
  },
  {
    doc: 'docs/packaging.md',
    pattern: /^\| tarball \|([^|\n]*)\| ([\d.]+) MB \|$/m,
    keys: ['tarball'],
    first: 2,
    write: (f) => `| tarball |$1| ${MB(f.tarball)} MB |`,
  },
  {
    doc: 'docs/packaging.md',
    pattern: /^\| unpacked \|([^|\n]*)\| ([\d.]+) MB \|$/m,
    keys: ['unpacked'],
    first: 2,
    write: (f) => `| unpacked |$1| ${MB(f.unpacked)} MB |`,
  },
  {
    doc: 'docs/packaging.md',
    pattern: /^\| installed, with dependencies \|([^|\n]*)\| ([\d.]+) MB, (\d+) files \(no dependency\) \|$/m,
    keys: ['unpacked', 'files'],
    first: 2,
    write: (f) => `| installed, with dependencies |$1| ${MB(f.unpacked)} MB, ${f.files} files (no dependency) |`,
  },
  {
    doc: 'docs/packaging.md',
    pattern: /is Mermaid \(([\d.]+) MB\)/,
    keys: ['mermaid'],
    first: 1,
    write: (f) => `is Mermaid (${MB(f.mermaid)} MB)`,
  },
];

/** One stated figure: where, which, and the number as written (bytes for sizes). */
export interface Stated {
  doc: string;
  key: keyof Figures;
  value: number;
  text: string;
}

/** The figures a doc states, or an error naming the spot that is gone. */
export function readStated(doc: (typeof DOCS)[number], text: string): Stated[] {
  const out: Stated[] = [];
  for (const spot of SPOTS.filter((s) => s.doc === doc)) {
    const m = spot.pattern.exec(text);
    if (!m) throw new Error(`${doc} no longer states its package figures where ${spot.pattern} finds them`);
    spot.keys.forEach((key, i) => {
      const raw = m[spot.first + i]!;
      out.push({ doc, key, value: key === 'files' || key === 'tests' ? Number(raw) : Number(raw) * 1e6, text: m[0] });
    });
  }
  return out;
}

/** A doc with its figures replaced by the build's. */
export function writeFigures(doc: (typeof DOCS)[number], text: string, f: Figures): string {
  let out = text;
  for (const spot of SPOTS.filter((s) => s.doc === doc)) {
    if (!spot.pattern.test(out)) throw new Error(`${doc} no longer states its package figures where ${spot.pattern} finds them`);
    out = out.replace(spot.pattern, spot.write(f));
  }
  return out;
}

/** Whether a stated figure is true of the build (see SIZE_TOLERANCE_MB). */
export function agrees(stated: Stated, f: Figures): boolean {
  if (stated.key === 'files' || stated.key === 'tests') return stated.value === f[stated.key];
  return Math.abs(stated.value - f[stated.key]) <= SIZE_TOLERANCE_MB * 1e6;
}

interface PackJson {
  entryCount: number;
  size: number;
  unpackedSize: number;
  files: Array<{ path: string; size: number }>;
}

/** `npm pack --dry-run` of the build in `root` (which must be built: packing here does not build), with the npm beside this node. */
export function measure(root: string): Figures {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
  const out = execFileSync(join(dirname(process.execPath), 'npm'), ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: root,
    env: { ...env, npm_config_loglevel: 'error' },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pack = (JSON.parse(out) as PackJson[])[0]!;
  const mermaid = pack.files.find((f) => f.path === 'dist/assets/mermaid.min.js');
  if (!mermaid) throw new Error('the package holds no dist/assets/mermaid.min.js: run `npm run build` first');
  return { files: pack.entryCount, tarball: pack.size, unpacked: pack.unpackedSize, mermaid: mermaid.size, tests: countTests(join(root, 'test')) };
}

function countTests(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) n += countTests(join(dir, e.name));
    else if (e.name.endsWith('.test.ts')) n++;
  }
  return n;
}

async function main(): Promise<void> {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
  const f = measure(root);
  for (const doc of DOCS) {
    const path = join(root, doc);
    const before = readFileSync(path, 'utf8');
    const after = writeFigures(doc, before, f);
    if (after !== before) writeFileSync(path, after);
    console.log(`${doc}: ${after === before ? 'already current' : 'updated'}`);
  }
  console.log(`${f.files} files, tarball ${MB(f.tarball)} MB, unpacked ${MB(f.unpacked)} MB, Mermaid ${MB(f.mermaid)} MB; ${f.tests} test files`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
