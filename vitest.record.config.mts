// Records the workflow histories replayed by test/replay.test.ts: `npm run fixtures:record`.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/fixtures/record-histories.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 300_000,
    hookTimeout: 180_000,
    pool: 'forks',
  },
});
