import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Real child processes and real sockets: give slow CI machines room, but not forever.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
