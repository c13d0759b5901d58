import { defineConfig } from 'vitest/config';

// Two projects: `unit` needs no server (the core, the validators, the scripted model server
// in-process, the layers and the public surface), `integration` runs against a real Temporal
// dev server and real PostgreSQL that test/support/global-setup.ts starts once per run.
// `npm test` runs both; `npm run test:unit` the first alone.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          pool: 'forks',
          maxWorkers: 2,
          testTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          pool: 'forks',
          maxWorkers: 2,
        },
      },
    ],
    reporters: ['default'],
  },
});
