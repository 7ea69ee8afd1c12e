import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // a redis-server of the run's own (unless REDIS_URL is set), checked empty of test keys at the end
    globalSetup: ['test/support/global-setup.ts'],
    // after each file, the Redis keys of every host its tests made are dropped
    setupFiles: ['test/support/per-file.ts'],
    exclude: ['dist/**', 'node_modules/**'],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    // integration tests share one machine's tmux and /proc; files run in parallel, tests in a file serially
    // (vitest's default is cores − 1 workers: on a 2-core box, one file at a time). test/chaos.test.ts, the
    // chaos suite's short form, sets its own bounded timeout (CHAOS_DEADLINE).
    fileParallelism: true,
  },
});
