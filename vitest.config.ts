import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['dist/**', 'node_modules/**'],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    // integration tests share one machine's tmux and /proc; files run in parallel, tests in a file serially
    fileParallelism: true,
  },
});
