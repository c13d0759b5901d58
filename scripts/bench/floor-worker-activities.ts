/** The floor's no-op activities; the model one waits the model's latency. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { FloorActivities } from './floor-workflows';

/** The floor workflow's activities. */
export const activities: FloorActivities = {
  async floorModel(latencyMs: number): Promise<void> {
    if (latencyMs > 0) await sleep(latencyMs);
  },
  async floorAppend(): Promise<void> {},
  async floorTool(): Promise<void> {},
};
