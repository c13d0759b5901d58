/**
 * A team's own workflows module, as a team using the plugin writes it: its
 * own workflow, and the conversation workflow re-exported in one line.
 */
import { proxyActivities } from '@temporalio/workflow';

export { agentConversation } from '../../src/workflows';

/** The team's own activity, under a name the agent's activities used before they had a prefix. */
const { callModel } = proxyActivities<{ callModel(question: string): Promise<string> }>({
  startToCloseTimeout: '10 seconds',
});

/** The team's own workflow. */
export async function teamReport(question: string): Promise<string> {
  return callModel(question);
}
