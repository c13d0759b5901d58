import { Client, Connection } from '@temporalio/client';
import { OpenTelemetryPlugin } from '@temporalio/interceptors-opentelemetry';
import { NativeConnection, Worker } from '@temporalio/worker';
import { Resource } from '@opentelemetry/resources';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentClient } from '../../src/client/client';
import { DurableAgentPlugin } from '../../src/worker/plugin';
import { backofficeTools } from '../../src/demo/tools';
import { startHarness, type Harness } from '../support/harness';

// Traces in a team's own worker: Temporal's OpenTelemetryPlugin beside
// DurableAgentPlugin traces the client, the workflow and its activities; the
// agent adds a span per model call and per tool run inside its activity's span.
// One turn with an approval makes one trace.

let h: Harness;
const exporter = new InMemorySpanExporter();
let provider: NodeTracerProvider;
let worker: Worker;
let running: Promise<void>;
let workerConnection: NativeConnection;
let clientConnection: Connection;
let agent: AgentClient;

beforeAll(async () => {
  h = await startHarness({ worker: false });
  const spanProcessor = new SimpleSpanProcessor(exporter);
  provider = new NodeTracerProvider();
  provider.addSpanProcessor(spanProcessor);
  provider.register();
  const tracing = new OpenTelemetryPlugin({
    resource: new Resource({ 'service.name': 'agent-tracing-test' }),
    spanProcessor,
  });
  const agentPlugin = new DurableAgentPlugin({
    tools: backofficeTools(),
    model: { name: 'scripted-model', apiKey: 'test-key', baseUrl: h.model.url },
    database: { pool: h.pool },
  });
  workerConnection = await NativeConnection.connect({ address: h.temporalAddress });
  // No prebuilt bundle: the worker bundles the conversation workflow with both plugins' workflow interceptors.
  worker = await Worker.create({
    connection: workerConnection,
    taskQueue: h.taskQueue,
    plugins: [agentPlugin, tracing],
  });
  running = worker.run();
  clientConnection = await Connection.connect({ address: h.temporalAddress });
  const client = new Client({ connection: clientConnection, plugins: [tracing] });
  agent = AgentClient.fromClient(client, { taskQueue: h.taskQueue, databaseUrl: h.databaseUrl });
}, 180_000);

afterAll(async () => {
  worker?.shutdown();
  await running;
  await agent?.close();
  await clientConnection?.close();
  await workerConnection?.close();
  await provider?.shutdown();
  await h?.stop();
});

/** The chain of span names from `span` up to its trace's root. */
function ancestry(span: ReadableSpan, all: readonly ReadableSpan[]): string[] {
  const byId = new Map(all.map((s) => [s.spanContext().spanId, s]));
  const names: string[] = [];
  for (let at: ReadableSpan | undefined = span; at; at = at.parentSpanId ? byId.get(at.parentSpanId) : undefined)
    names.push(at.name);
  return names;
}

describe('traces', () => {
  it('one turn with an approval is one trace: client, workflow, activities, and a span per model call and tool run', async () => {
    const id = h.newConversationId('traced');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_t1',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 12_000, reason: 'late delivery' },
          },
        ],
      },
      { content: 'Refunded 120.00.' },
    );
    const messageId = await agent.sendMessage(id, 'Refund 120 on ord_2001');
    await expect.poll(async () => (await agent.state(id)).pendingApprovals.length, { timeout: 30_000 }).toBe(1);
    await agent.decide(id, { decision: 'approve', toolCallId: 'call_t1', decidedBy: 'ops' });
    expect((await agent.waitForTurn(id, messageId, 30_000)).outcome).toBe('answered');

    // The workflow's span ends with the workflow: end the conversation.
    await agent.end(id);
    await agent.temporal.workflow.getHandle(id).result();
    const ours = () => exporter.getFinishedSpans().filter((s) => s.attributes['agent.conversation_id'] === id);
    await expect.poll(() => ours().length, { timeout: 10_000 }).toBe(3);
    await expect
      .poll(() => exporter.getFinishedSpans().filter((s) => s.name === 'RunWorkflow:agentConversation').length, {
        timeout: 10_000,
      })
      .toBeGreaterThan(0);
    const spans = exporter.getFinishedSpans();
    const models = ours().filter((s) => s.name === 'model call');
    const tools = ours().filter((s) => s.name === 'tool run');
    expect(models).toHaveLength(2);
    expect(tools).toHaveLength(1);
    for (const span of models) {
      expect(span.attributes).toMatchObject({
        'agent.model': 'scripted-model',
        'agent.attempt': 1,
        'agent.streamed': true,
        'agent.outcome': 'ok',
      });
      expect(span.attributes['agent.prompt_tokens']).toBeGreaterThan(0);
      expect(ancestry(span, spans).slice(0, 2)).toEqual(['model call', 'RunActivity:durableAgent.callModel']);
    }
    expect(models.map((s) => s.attributes['agent.tool_calls'])).toEqual([1, 0]);
    expect(tools[0].attributes).toMatchObject({
      'agent.tool': 'issue_refund',
      'agent.tool_call_id': 'call_t1',
      'agent.outcome': 'ok',
      'agent.from_ledger': false,
    });
    expect(ancestry(tools[0], spans).slice(0, 2)).toEqual(['tool run', 'RunActivity:durableAgent.runTool']);

    // One trace from the client's start of the conversation down to each of the agent's spans, through the workflow.
    const traceIds = new Set(ours().map((s) => s.spanContext().traceId));
    expect(traceIds.size).toBe(1);
    for (const span of ours()) {
      const chain = ancestry(span, spans);
      expect(chain.slice(2), chain.join(' < ')).toEqual([
        expect.stringMatching(/^StartActivity:durableAgent\./),
        'RunWorkflow:agentConversation',
        'SignalWithStartWorkflow:agentConversation',
      ]);
    }
  });
});
