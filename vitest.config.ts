import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Real child processes and real sockets: give slow CI machines room, but not forever.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
  },
});
