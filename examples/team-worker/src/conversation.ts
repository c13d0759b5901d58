// One conversation with an approval, against the scripted model server: the
// team's check that its worker, tools and approvals work together.
import { AgentClient } from 'durable-agent-worker/client';
import { startModelServer } from 'durable-agent-worker/testing';
import type { ConversationState } from 'durable-agent-worker/workflow';
import { closedAccounts } from './tools';
import { createWorker } from './worker';

async function main(): Promise<void> {
  const temporalAddress = process.env.TEMPORAL_ADDRESS ?? 'localhost:7233';
  const databaseUrl = process.env.DATABASE_URL ?? 'postgres://localhost/agent';
  const taskQueue = process.env.TASK_QUEUE ?? 'team-agent';

  const model = await startModelServer();
  model.enqueue(
    { toolCalls: [{ name: 'close_account', arguments: { account_id: 'acc_42', reason: 'customer asked' } }] },
    { content: 'Account acc_42 is closed.' },
  );
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
    const messageId = await client.sendMessage(id, 'Please close account acc_42');
    let state: ConversationState = await client.state(id);
    while (state.pendingApprovals.length === 0) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      state = await client.state(id);
    }
    const waiting = state.pendingApprovals.map((p) => p.toolName);
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
