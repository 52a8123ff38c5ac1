/**
 * What README.md and docs/packaging.md say the package holds and weighs is what `npm pack` of this build
 * gives: the file count exactly, each size within its rounding plus 0.1 MB (scripts/package-figures.ts says
 * why); and the README's count of test files is the number npm test runs. When they drift, `npm run figures`
 * writes the current figures into both.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-info.js';
import { agrees, DOCS, measure, readStated, SIZE_TOLERANCE_MB, writeFigures, type Figures } from '../../scripts/package-figures.js';

const ROOT = packageRoot();

describe("the package's figures in the docs", () => {
  let built: Figures;

  it.each(DOCS)(
    '%s states what npm pack of this build gives',
    (doc) => {
      built ??= measure(ROOT);
      const stated = readStated(doc, readFileSync(join(ROOT, doc), 'utf8'));
      expect(stated.length).toBeGreaterThan(0);
      const wrong = stated.filter((s) => !agrees(s, built)).map((s) => `${s.key}: "${s.text}"`);
      expect(wrong, `${doc} against ${JSON.stringify(built)} — run \`npm run figures\` and commit the docs`).toEqual([]);
    },
    60_000,
  );

  it('npm run figures writes what the check reads, and the check tells a stale figure from a rounded one', () => {
    const f: Figures = { files: 123, tarball: 2_115_850, unpacked: 8_022_176, mermaid: 3_572_661, tests: 120 };
    for (const doc of DOCS) {
      const text = writeFigures(doc, readFileSync(join(ROOT, doc), 'utf8'), f);
      const stated = readStated(doc, text);
      expect(stated.every((s) => agrees(s, f))).toBe(true);
      expect(new Set(stated.map((s) => s.key))).toEqual(
        new Set(doc === 'README.md' ? ['files', 'tarball', 'unpacked', 'tests'] : ['files', 'tarball', 'unpacked', 'mermaid']),
      );
      // One file more, or a size off by more than the tolerance, is a figure the docs no longer state.
      expect(stated.filter((s) => s.key === 'files').every((s) => !agrees(s, { ...f, files: f.files + 1 }))).toBe(true);
      expect(stated.filter((s) => s.key === 'tests').every((s) => !agrees(s, { ...f, tests: f.tests + 1 }))).toBe(true);
      const grown = { ...f, tarball: f.tarball + (SIZE_TOLERANCE_MB + 0.01) * 1e6, unpacked: f.unpacked + (SIZE_TOLERANCE_MB + 0.01) * 1e6 };
      expect(stated.filter((s) => s.key === 'tarball' || s.key === 'unpacked').every((s) => !agrees(s, grown))).toBe(true);
      // A few kB more (any merged source change) is still the figure stated.
      expect(stated.every((s) => agrees(s, { ...f, tarball: f.tarball + 20_000, unpacked: f.unpacked + 40_000 }))).toBe(true);
    }
  });
});
