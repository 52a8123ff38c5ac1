import { defineConfig } from 'vitest/config';

/**
 * `npm run test:stress`: the long runs (test/**\/*.stress.ts — thousands of concurrent calls, every
 * upstream fault over stdio and HTTP, repeated). Loopback and temp folders only; each file bounds its own
 * count and time. `npm test` never picks these up (its include is *.test.ts).
 */
export default defineConfig({
  test: {
    include: ['test/**/*.stress.ts'],
    testTimeout: 600_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // one file at a time: each measures memory and counts processes for itself
    fileParallelism: false,
  },
});
