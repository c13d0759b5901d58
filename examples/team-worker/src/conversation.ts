// One conversation with an approval and one AI SDK workflow, in the same
// worker, against the scripted model server: the team's check that its
// worker, tools, approvals and both plugins work together. The AI SDK
// workflow runs while the conversation waits for its approval.
import { AgentClient } from 'durable-agent-worker/client';
import { startModelServer } from 'durable-agent-worker/testing';
import type { ConversationState } from 'durable-agent-worker/workflow';
import { lookedUpAccounts } from './activities';
import { closedAccounts } from './tools';
import { createWorker } from './worker';
import type { accountSummary } from './workflows';

async function main(): Promise<void> {
  const temporalAddress = process.env.TEMPORAL_ADDRESS ?? 'localhost:7233';
  const databaseUrl = process.env.DATABASE_URL ?? 'postgres://localhost/agent';
  const taskQueue = process.env.TASK_QUEUE ?? 'team-agent';

  const model = await startModelServer();
  const { worker, connection } = await createWorker({
    temporalAddress,
    taskQueue,
    databaseUrl,
    model: { name: 'scripted-model', apiKey: 'test-key', baseUrl: model.url },
  });
  const running = worker.run();
  const client = await AgentClient.connect({ temporalAddress, taskQueue, databaseUrl });
  try {
    const id = `team-${Date.now()}`;
    model.enqueue({
      toolCalls: [{ name: 'close_account', arguments: { account_id: 'acc_42', reason: 'customer asked' } }],
    });
    const messageId = await client.sendMessage(id, 'Please close account acc_42');
    let state: ConversationState = await client.state(id);
    while (state.pendingApprovals.length === 0) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      state = await client.state(id);
    }
    const waiting = state.pendingApprovals.map((p) => p.toolName);

    // The scripted model plays both workflows, one request at a time: the AI SDK
    // workflow's two, then the conversation's answer once its call is approved.
    model.enqueue(
      { toolCalls: [{ name: 'look_up_account', arguments: { account_id: 'acc_7' } }] },
      { content: 'Account acc_7 is active, on the team plan.' },
    );
    // Started by name: the workflows module is the sandbox's, so the client side imports only its types.
    const aiSdkRun = await client.temporal.workflow.start<typeof accountSummary>('accountSummary', {
      taskQueue,
      workflowId: `team-ai-sdk-${Date.now()}`,
      args: ['acc_7'],
    });
    const aiSdk = await aiSdkRun.result();
    // The activities its history scheduled: the model calls as the AI SDK plugin's, the tool as the team's.
    const aiSdkActivities = ((await aiSdkRun.fetchHistory()).events ?? []).flatMap((event) => {
      const name = event.activityTaskScheduledEventAttributes?.activityType?.name;
      return name ? [name] : [];
    });

    model.enqueue({ content: 'Account acc_42 is closed.' });
    await client.decide(id, { decision: 'approve', decidedBy: 'ops@team' });
    const turn = await client.waitForTurn(id, messageId, 60_000);
    const transcript = await client.transcript(id);
    process.stdout.write(
      `${JSON.stringify({
        waiting,
        outcome: turn.outcome,
        closedAccounts,
        roles: transcript.map((m) => m.message.role),
        answer: transcript.at(-1)?.message.content,
        aiSdk: { ...aiSdk, activities: aiSdkActivities, lookedUpAccounts },
        modelRequests: model.requests.length,
        invalidModelRequests: model.invalidRequests().length,
      })}\n`,
    );
  } finally {
    await client.close();
    worker.shutdown();
    await running;
    await connection.close();
    await model.close();
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exitCode = 1;
});
