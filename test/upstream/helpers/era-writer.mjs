// Child process for the multi-process era-cache test. It implements nothing itself: it drives the
// compiled EraCache (dist/, built by the test's beforeAll) the way a second daemon would.
//
//   node era-writer.mjs <stateDir> <writerId> <count> <startAtEpochMs>
//
// Waits until startAtEpochMs so every writer starts together, then sets <count> distinct keys one
// after another (each set is its own locked read-merge-write), then prints a JSON summary.
import { createHash } from 'node:crypto';
import { EraCache } from '../../../dist/src/upstream/era-cache.js';

const [stateDir, writerId, countArg, startAtArg] = process.argv.slice(2);
const count = Number(countArg);
const startAt = Number(startAtArg);

const cache = await EraCache.open(stateDir, { logger: { warn: (obj, msg) => process.stderr.write(`${msg} ${JSON.stringify(obj)}\n`) } });
const wait = startAt - Date.now();
if (wait > 0) await new Promise((r) => setTimeout(r, wait));

const began = Date.now();
for (let i = 0; i < count; i++) {
  const key = createHash('sha256').update(`${writerId}:${i}`).digest('hex');
  await cache.set(key, {
    era: i % 2 === 0 ? 'legacy' : 'modern',
    version: i % 2 === 0 ? '2025-11-25' : '2026-07-28',
    at: new Date().toISOString(),
    source: `writer-${writerId}`,
  });
}
process.stdout.write(`${JSON.stringify({ writerId, count, ms: Date.now() - began, seen: cache.entries().length })}\n`);
