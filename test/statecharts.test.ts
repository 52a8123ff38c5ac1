/**
 * The drawings in docs/statecharts must be what the machines draw today: the Markdown byte for byte,
 * and each SVG drawn from today's Mermaid text (its first line names that text's sha256; the drawing
 * itself depends on the fonts of the machine that rendered it, so it is not compared byte for byte).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHARTS, renderChart } from '../src/inspect/charts.js';
import { toMermaid } from '../src/machines/statechart-doc.js';
import { svgHeader, svgName } from '../scripts/gen-statecharts.js';

describe('docs/statecharts', () => {
  it.each(CHARTS.map((c) => [c.file, c] as const))('%s is up to date with its machine', (file, chart) => {
    const path = join(import.meta.dirname, '..', 'docs', 'statecharts', file);
    let committed = '';
    try {
      committed = readFileSync(path, 'utf8');
    } catch {
      // missing: falls through to the comparison below
    }
    expect(committed, `docs/statecharts/${file} is stale or missing — run \`npm run statecharts\` and commit it`).toBe(renderChart(chart));
  });

  it.each(CHARTS.map((c) => [svgName(c.file), c] as const))('%s was drawn from the current Mermaid text', (file, chart) => {
    const path = join(import.meta.dirname, '..', 'docs', 'statecharts', file);
    let committed = '';
    try {
      committed = readFileSync(path, 'utf8');
    } catch {
      // missing: falls through to the comparison below
    }
    const [first, ...rest] = committed.split('\n');
    expect(first, `docs/statecharts/${file} is stale or missing — run \`npm run statecharts\` and commit it`).toBe(
      svgHeader(chart.file, toMermaid(chart.machine, chart.options)),
    );
    const svg = rest.join('\n');
    expect(svg.startsWith('<svg ')).toBe(true);
    expect(svg).toContain('xmlns="http://www.w3.org/2000/svg"');
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    // a drawing, not an error message: every state's name is in it
    const walk = (node: { key: string; states: Record<string, unknown> }): void => {
      expect(svg).toContain(`>${node.key}<`);
      for (const child of Object.values(node.states)) walk(child as typeof node);
    };
    walk(chart.machine.root as unknown as { key: string; states: Record<string, unknown> });
  });

  it('every state of each machine appears in its drawing', () => {
    for (const chart of CHARTS) {
      const text = renderChart(chart);
      const walk = (node: { key: string; states: Record<string, unknown> }): void => {
        expect(text).toContain(`"${node.key}`);
        for (const child of Object.values(node.states)) walk(child as typeof node);
      };
      walk(chart.machine.root as unknown as { key: string; states: Record<string, unknown> });
    }
  });
});
