/** Regenerates docs/statecharts/*.md from the machines (`npm run statecharts`). */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CHARTS, renderChart } from '../src/machines/charts.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = join(root, 'docs', 'statecharts');
mkdirSync(dir, { recursive: true });
for (const chart of CHARTS) {
  writeFileSync(join(dir, chart.file), renderChart(chart));
  console.log(`wrote docs/statecharts/${chart.file}`);
}
