import { availableParallelism } from 'node:os';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { defineConfig } from 'vitest/config';

/**
 * The longest files (measured one file at a time), started before the rest so that none of them is left
 * running alone at the end of the run. The two conformance files keep both cores busy
 * by themselves (a CLI process per scenario); the others mostly wait on timers, browsers and child processes.
 * So the first conformance file runs next to files that wait, and the second starts about when it ends.
 */
const SLOW_FIRST = [
  'test/conformance-client.test.ts',
  'test/oauth/refresh-scope.test.ts',
  'test/oauth/mcpx-login.test.ts',
  'test/oauth/login-safety.test.ts',
  'test/ui/glance.test.ts',
  'test/serve/conformance-server.test.ts',
  'test/ui/browser.test.ts',
  'test/oauth/hostile-endpoints.test.ts',
  'test/reliability/unread-callers.test.ts',
  'test/serve/serve-restart.test.ts',
  'test/package/installed.test.ts',
];

/** Vitest's order (failed, then longest last time, else largest first), with SLOW_FIRST ahead of it in its own order. */
class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = SLOW_FIRST.indexOf(relative(f.project.config.root, f.moduleId).split('\\').join('/'));
      return i === -1 ? SLOW_FIRST.length : i;
    };
    return sorted
      .map((f, i) => ({ f, i }))
      .sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i)
      .map(({ f }) => f);
  }
}

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Real child processes and real sockets: give slow CI machines room, but not forever.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two files at a time at least (vitest's default is one fewer than the cores: one, on a 2-core machine).
    // Most files spend their time waiting on child processes, sockets and timers, and every file starts
    // what it needs on ports and in folders of its own.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    sequence: { sequencer: SlowFirst },
  },
});
