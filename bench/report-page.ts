/**
 * docs/benchmarks.md and docs/benchmarks.svg again from the run in bench/results.json, without
 * measuring: after a change to bench/report.ts, bench/notes.md or bench/profile.json. The targets are
 * computed again from the run's figures (their definitions live here, not in the file).
 *
 *   npm run build && node dist/bench/report-page.js
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './lib/knobs.js';
import { computeTargets, writeReport, type Results } from './report.js';

const results = JSON.parse(readFileSync(join(ROOT, 'bench', 'results.json'), 'utf8')) as Results;
results.targets = computeTargets(results);
const baseline = computeTargets(results, true);
if (baseline.length > 0) results.baselineTargets = baseline;
else delete results.baselineTargets;
writeReport(results);
console.log(`wrote docs/benchmarks.md and docs/benchmarks.svg from the run of ${results.generatedAt}`);
