import { configDefaults, defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

// Four projects: `unit` needs no server (the core, the validators, the scripted model server
// in-process, the layers and the public surface), `integration` runs against a real Temporal
// dev server and real PostgreSQL that test/support/global-setup.ts starts once per run,
// `cluster` runs a subset of the integration tests again against Temporal's own server
// binaries (built by scripts/ensure-temporal-server.sh) on PostgreSQL with 4 history shards
// and mutual TLS (docs/temporal-cluster.md), and `fuzz` runs schemathesis against the HTTP API
// on the dev server and PostgreSQL, as `integration` does (about three minutes,
// docs/http-api-fuzzing.md).
// `npm test` runs `unit` and `integration` together, then `cluster`, then `fuzz`, each step
// printing its own duration; `npm run test:unit`, `test:cluster` and `test:fuzz` run one alone.

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

/**
 * Node flags of the test processes. Node 22.6+ strips types from a `.ts` file that `require()` loads without a hook,
 * and refuses one with `import` syntax in this CommonJS package; Temporal's SDK loads the encrypting failure converter
 * by path that way (`src/codec/failure-converter.ts` from the sources). Without the stripping, Node loads it as
 * Node 20 did, by module syntax detection. The worker, the API and the CLI run under tsx, whose hook loads it.
 */
export const TEST_NODE_FLAGS =
  Number(process.versions.node.split('.')[0]) >= 22 ? ['--no-experimental-strip-types'] : [];

/**
 * `expect.poll`'s defaults for the projects with servers: a poll with no timeout of its own waits up to 20 s (vitest's
 * default is 1 s), since on a loaded machine a worker process's exit, a workflow task or a visibility update can take
 * longer than that; a poll still ends as soon as its matcher passes.
 */
const POLL = { poll: { timeout: 20_000, interval: 50 } };

/** The fuzzer: a step of its own after the others, not part of `integration`. */
const FUZZ = ['test/integration/api-fuzz.test.ts'];

/**
 * The longest test files, longest first: 50 to 110 s each, measured one at a time on two cores busy with other
 * work (so only their order counts). They start before every other file of their project.
 */
const SLOW_FILES = [
  'npm-start',
  'package-install',
  'crash-recovery',
  'decision-deadline-crash',
  'chaos-small',
  'lost-worker',
  'npm-start-stop',
].map((name) => `test/integration/${name}.test.ts`);

/**
 * Vitest's order (on a fresh clone, larger files first; with the cache of an earlier run, failed and then
 * longer ones first), with {@link SLOW_FILES} moved to the front of their project. The two forks take files
 * from one queue: a two-minute file taken last keeps one fork busy while the other has nothing left to run,
 * and on a fresh clone nothing told vitest which files are long.
 */
class SlowFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification): number => {
      const at = SLOW_FILES.findIndex((file) => spec.moduleId.endsWith(`/${file}`));
      return at < 0 ? SLOW_FILES.length : at;
    };
    // The base order keeps each project's files together; only the order within a project changes.
    const projects = [...new Set(sorted.map((spec) => spec.project.name))];
    const project = (spec: TestSpecification): number => projects.indexOf(spec.project.name);
    return sorted
      .map((spec, index) => ({ spec, index }))
      .sort((a, b) => project(a.spec) - project(b.spec) || rank(a.spec) - rank(b.spec) || a.index - b.index)
      .map(({ spec }) => spec);
  }
}

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          pool: 'forks',
          execArgv: TEST_NODE_FLAGS,
          maxWorkers: 2,
          testTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...FUZZ],
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          expect: POLL,
          pool: 'forks',
          execArgv: TEST_NODE_FLAGS,
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
          expect: POLL,
          pool: 'forks',
          execArgv: TEST_NODE_FLAGS,
          maxWorkers: 2,
        },
      },
      {
        test: {
          name: 'fuzz',
          include: FUZZ,
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          expect: POLL,
          pool: 'forks',
          execArgv: TEST_NODE_FLAGS,
          maxWorkers: 2,
        },
      },
    ],
    reporters: ['default'],
    sequence: { sequencer: SlowFilesFirst },
  },
});
