/**
 * Temporal's floor: the least a turn of the same shape costs on Temporal.
 * Bundled into the floor worker's sandbox (workflow code: deterministic, no I/O).
 *
 * With 4 activities per step it schedules what the issue (14) describes for
 * the project's turn, with no-ops: a transcript write for the user message,
 * then per step the model call, a write, the tool call, a write, and for the
 * final answer a model call and a write. With 2 per step: the model call and
 * the tool call per step, and the final model call (the project's shape
 * since it defers its transcript writes to the next model call: compare the
 * activities per step the bench reads from the project's history).
 */
import { proxyActivities } from '@temporalio/workflow';

/** The floor's activities: no-ops, the model one waiting the model's latency. */
export interface FloorActivities {
  floorModel(latencyMs: number): Promise<void>;
  floorAppend(): Promise<void>;
  floorTool(): Promise<void>;
}

/** A floor turn: how many steps, with how many activities each, and the model's latency. */
export interface FloorTurnInput {
  steps: number;
  activitiesPerStep: 2 | 4;
  latencyMs: number;
}

// Timeouts and retries as the conversation's: transcript writes 5 s; model calls and tools longer, with heartbeats.
const store = proxyActivities<FloorActivities>({
  startToCloseTimeout: '5 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});
const work = proxyActivities<FloorActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 5 },
});

/** Runs one turn of `steps` steps and the final model call; returns the activities it ran. */
export async function floorTurn(input: FloorTurnInput): Promise<number> {
  const full = input.activitiesPerStep === 4;
  let ran = 0;
  const append = async (): Promise<void> => {
    if (!full) return;
    await store.floorAppend();
    ran++;
  };
  await append();
  for (let i = 0; i < input.steps; i++) {
    await work.floorModel(input.latencyMs);
    ran++;
    await append();
    await work.floorTool();
    ran++;
    await append();
  }
  await work.floorModel(input.latencyMs);
  ran++;
  await append();
  return ran;
}
