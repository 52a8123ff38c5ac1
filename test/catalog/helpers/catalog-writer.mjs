// Child process for the multi-process catalog test. It implements nothing itself: it drives the
// compiled CatalogStore (built by the test's beforeAll) the way a second daemon would.
//
//   node catalog-writer.mjs <catalog-store.js> <stateDir> <writerId> <count> <startAtEpochMs>
//
// Waits until startAtEpochMs so every writer starts together, then sets <count> distinct keys one
// after another (each set is its own locked read-merge-write), then prints a JSON summary.
import { pathToFileURL } from 'node:url';

const [modulePath, stateDir, writerId, countArg, startAtArg] = process.argv.slice(2);
const count = Number(countArg);
const startAt = Number(startAtArg);
const { CatalogStore } = await import(pathToFileURL(modulePath).href);

const store = await CatalogStore.open(stateDir, { logger: { warn: (obj, msg) => process.stderr.write(`${msg} ${JSON.stringify(obj)}\n`) } });
const wait = startAt - Date.now();
if (wait > 0) await new Promise((r) => setTimeout(r, wait));

const began = Date.now();
for (let i = 0; i < count; i++) {
  await store.set(`w${writerId}-${i}:own`, {
    at: new Date().toISOString(),
    era: i % 2 === 0 ? 'legacy' : 'modern',
    tools: [
      {
        name: `tool-${writerId}-${i}`,
        inputSchema: {
          $schema: 'https://json-schema.org/draft/2020-12/schema',
          type: 'object',
          properties: { n: { type: 'integer', const: i }, by: { const: `writer-${writerId}` } },
          required: ['n'],
        },
      },
    ],
  });
}
process.stdout.write(`${JSON.stringify({ writerId, count, ms: Date.now() - began, seen: store.entries().length })}\n`);
