/**
 * The floor's worker process: a plain Temporal worker (`plain-worker.ts`)
 * with the floor workflow and its no-op activities.
 */
import { activities } from './floor-worker-activities';
import { runPlainWorker } from './plain-worker';

runPlainWorker('floor', { workflowsPath: require.resolve('./floor-workflows'), activities });
