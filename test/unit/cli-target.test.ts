import { describe, expect, it } from 'vitest';
import { resolveCliTarget } from '../../src/cli/target';
import { loadConfig } from '../../src/app/config';
import type { RuntimeInfo } from '../../src/app/runtime-file';

// Where the CLI connects: the environment's settings win; what it leaves
// unset comes from the running `npm start` (its runtime file), task queue and
// namespace included, and only then from the defaults.

const RUNNING: RuntimeInfo = {
  temporalAddress: '127.0.0.1:7999',
  namespace: 'billing-ns',
  taskQueue: 'billing',
  databaseUrl: 'postgres://postgres:postgres@127.0.0.1:5999/agent',
  databaseSchema: 'billing_agent',
  searchAttributes: { prefix: 'Billing_' },
  pid: 1,
};
const resolve = (env: Record<string, string>, runtime: RuntimeInfo | undefined) =>
  resolveCliTarget(loadConfig(env), env, runtime);

describe('the CLI target', () => {
  it("uses a running npm start's server, namespace, task queue and schema when the environment names none", () => {
    expect(resolve({}, RUNNING)).toEqual({
      temporalAddress: '127.0.0.1:7999',
      databaseUrl: RUNNING.databaseUrl,
      namespace: 'billing-ns',
      taskQueue: 'billing',
      schema: 'billing_agent',
      searchAttributes: { prefix: 'Billing_' },
      embedded: true,
    });
  });

  it("takes the running npm start's search attribute prefix and groups unless the environment names them", () => {
    expect(resolve({ AGENT_SEARCH_ATTRIBUTES: 'status' }, RUNNING).searchAttributes).toEqual({ groups: ['status'] });
    expect(
      resolve({ TEMPORAL_ADDRESS: 'temporal.example:7233', DATABASE_URL: 'postgres://u:p@db:5432/agent' }, RUNNING)
        .searchAttributes,
    ).toEqual({});
  });

  it('lets the environment override the task queue of the running npm start', () => {
    expect(resolve({ TEMPORAL_TASK_QUEUE: 'other' }, RUNNING).taskQueue).toBe('other');
  });

  it("uses the environment's server with its own namespace and task queue (defaults when unset), not the runtime file's", () => {
    const target = resolve(
      { TEMPORAL_ADDRESS: 'temporal.example:7233', DATABASE_URL: 'postgres://u:p@db:5432/agent' },
      RUNNING,
    );
    expect(target).toMatchObject({
      temporalAddress: 'temporal.example:7233',
      namespace: 'default',
      taskQueue: 'agent',
      schema: 'durable_agent',
      embedded: false,
    });
  });

  it('says how to start a worker when neither the environment nor a running npm start says where the servers are', () => {
    expect(() => resolve({}, undefined)).toThrow(/No running worker found .* Start one with "npm start"/);
  });
});
