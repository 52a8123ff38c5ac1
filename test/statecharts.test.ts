/** The drawings in docs/statecharts must be what the machines draw today. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHARTS, renderChart } from '../src/machines/charts.js';

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
