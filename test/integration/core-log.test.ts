import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness';
import { startWorkerProcess } from '../support/worker-process';

// AGENT_CORE_LOG_LEVEL: what the Temporal SDK's core writes to the worker's
// log. At debug, an operator sees each workflow activation of a conversation
// (its jobs, whether it replays), the trace that tells why a workflow task
// timed out or was evicted; at the default (warn) none of it.

let h: Harness;

beforeAll(async () => {
  h = await startHarness({ worker: false });
});
afterAll(async () => {
  await h?.stop();
});

/** The JSON lines of `output` the SDK's core wrote (pino's `sdkComponent: "core"`). */
function coreLines(output: string): { level: number; target?: string; activation?: string; msg: string }[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map(
      (line) =>
        JSON.parse(line) as { level: number; sdkComponent?: string; target?: string; activation?: string; msg: string },
    )
    .filter((line) => line.sdkComponent === 'core');
}

describe("the SDK core's log", () => {
  it("at AGENT_CORE_LOG_LEVEL=debug shows a conversation's workflow activations with their jobs; at the default, no debug line", async () => {
    for (const level of ['debug', undefined] as const) {
      const worker = await startWorkerProcess({
        ...h.workerEnv(),
        LOG_LEVEL: 'debug',
        ...(level ? { AGENT_CORE_LOG_LEVEL: level } : {}),
      });
      try {
        const id = h.newConversationId(`core-log-${level ?? 'default'}`);
        h.model.enqueue({ content: 'Logged.' });
        expect((await h.client.ask(id, 'hello')).answer).toBe('Logged.');
        const lines = coreLines(worker.output());
        const activations = lines.filter(
          (line) => line.level === 20 && line.activation?.includes('InitializeWorkflow'),
        );
        if (level === 'debug') {
          expect(activations.length).toBeGreaterThan(0);
          expect(activations[0].target).toMatch(/^temporalio_sdk_core::/);
          expect(activations[0].activation).toContain('SignalWorkflow');
        } else {
          expect(lines.filter((line) => line.level < 40)).toEqual([]);
        }
      } finally {
        await worker.stop('SIGKILL');
      }
    }
  });
});
