import { defineConfig } from 'vitest/config';

// The chaos suite's short form: `npm run chaos:short` (kept out of `npm test` until it runs in ≤ 2 minutes).
export default defineConfig({
  test: { include: ['chaos/**/*.test.ts'], testTimeout: 30 * 60_000, hookTimeout: 60_000 },
});
