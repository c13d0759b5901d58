import { defineConfig } from 'vitest/config';

// Three projects: `unit` needs no server (the core, the validators, the scripted model server
// in-process, the layers and the public surface), `integration` runs against a real Temporal
// dev server and real PostgreSQL that test/support/global-setup.ts starts once per run, and
// `cluster` runs a subset of the integration tests again against Temporal's own server
// binaries (built by scripts/ensure-temporal-server.sh) on PostgreSQL with 4 history shards
// and mutual TLS (docs/temporal-cluster.md).
// `npm test` runs all three; `npm run test:unit` the first alone, `npm run test:cluster` the last.

/** The integration tests that run against the cluster too: conversations, approvals, interruptions, crashes, MCP. */
const CLUSTER_SUBSET = [
  'user-messages',
  'approvals',
  'new-message-during-turn',
  'cancel-turn',
  'crash-recovery',
  'lost-worker',
  'worker-restart',
  'mcp-tools',
  'mcp-crash',
].map((name) => `test/integration/${name}.test.ts`);

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
      {
        test: {
          name: 'cluster',
          // test/cluster: what only the cluster has (its version, shards, stores, TLS).
          include: ['test/cluster/**/*.test.ts', ...CLUSTER_SUBSET],
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
