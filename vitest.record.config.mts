// Records the workflow histories replayed by test/replay.test.ts: `npm run fixtures:record`.
import { defineConfig } from 'vitest/config';
import { TEST_NODE_FLAGS } from './vitest.config.mjs';

export default defineConfig({
  test: {
    include: ['test/fixtures/record-histories.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 300_000,
    hookTimeout: 180_000,
    pool: 'forks',
    // The same Node flags as the integration tests: the recorded workers run the same code.
    execArgv: TEST_NODE_FLAGS,
  },
});
