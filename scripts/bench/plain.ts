/**
 * The plain loop: the same turn without Temporal, in this process. Each step
 * calls the scripted model server over HTTP with the `openai` SDK (the
 * project's `createOpenAIClient`, streamed like the project's model calls),
 * checks the arguments with the tool's schema and runs the tool function.
 * The second variant also writes every message to PostgreSQL, one INSERT
 * (committed on its own) per message, as a minimal durable transcript.
 */
import type { Pool } from 'pg';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { createOpenAIClient } from '../../src/activities/openai-client';
import { ToolRegistry } from '../../src/tools/registry';
import { noopTool, NOOP_TOOL } from './bench-tools';
import { checkModelRequests, type BenchContext } from './context';
import { runPhases, type RunTurn } from './measure';
import type { SystemFigures } from './phases';
import { turnMessage } from './responder';

/** The plain loop's figures, without and with a PostgreSQL commit per message. */
export interface PlainFigures {
  postgres: boolean;
  perLatency: SystemFigures[];
}

const TABLE = 'bench_plain_messages';

/** Measures the plain loop, without and with PostgreSQL, at every latency of the options. */
export async function benchPlain(ctx: BenchContext): Promise<PlainFigures[]> {
  const { stack, options, log } = ctx;
  await stack.pool.query(
    `CREATE TABLE IF NOT EXISTS ${TABLE} (conversation_id text NOT NULL, seq integer NOT NULL, message jsonb NOT NULL, PRIMARY KEY (conversation_id, seq))`,
  );
  const openai = createOpenAIClient({ apiKey: 'bench-key', baseUrl: stack.model.url });
  const registry = new ToolRegistry([noopTool]);
  const tools = registry.specsFor();
  const meter = { temporal: stack.temporalPid, postmaster: stack.postmasterPid };
  const results: PlainFigures[] = [];
  for (const withPostgres of [false, true]) {
    const pool = withPostgres ? stack.pool : undefined;
    const runTurn: RunTurn = async (id, steps, latencyMs) => {
      const started = Date.now();
      const made = await plainTurn({
        openai,
        pool,
        tools,
        conversationId: id,
        text: turnMessage({ steps, latencyMs, tool: NOOP_TOOL }),
      });
      if (made !== steps + 1) throw new Error(`plain turn ${id} made ${made} model calls, expected ${steps + 1}.`);
      return Date.now() - started;
    };
    const perLatency: SystemFigures[] = [];
    for (const latencyMs of options.latencies) {
      const prefix = `bench-${ctx.runTag}-plain${withPostgres ? 'pg' : ''}-l${latencyMs}`;
      const base = { runTurn, steps: options.steps, latencyMs, meter };
      const { single, medium, high } = await runPhases(base, prefix, options);
      checkModelRequests(ctx, 'plain loop');
      log(
        `plain loop${withPostgres ? ' + PostgreSQL' : ''}, model ${latencyMs} ms: ${single.msPerStep.toFixed(2)} ms/step (1), ` +
          `${medium.msPerStep.toFixed(2)} ms/step (${options.mediumConcurrency}), ${high.stepsPerSecond.toFixed(1)} steps/s (${options.highConcurrency})`,
      );
      perLatency.push({ latencyMs, single, medium, high });
    }
    results.push({ postgres: withPostgres, perLatency });
  }
  return results;
}

interface PlainTurn {
  openai: ReturnType<typeof createOpenAIClient>;
  pool?: Pool;
  tools: ReturnType<ToolRegistry['specsFor']>;
  conversationId: string;
  text: string;
}

interface AssembledCall {
  id: string;
  name: string;
  arguments: string;
}

/** One turn: model, tool, model, ... until an answer without tool calls. Returns the model calls made. */
async function plainTurn(turn: PlainTurn): Promise<number> {
  const messages: ChatCompletionMessageParam[] = [];
  const store = async (message: ChatCompletionMessageParam): Promise<void> => {
    messages.push(message);
    await turn.pool?.query(`INSERT INTO ${TABLE} (conversation_id, seq, message) VALUES ($1, $2, $3)`, [
      turn.conversationId,
      messages.length - 1,
      JSON.stringify(message),
    ]);
  };
  await store({ role: 'system', content: 'You are a benchmark. Call the tool when told.' });
  await store({ role: 'user', content: turn.text });
  for (let calls = 1; ; calls++) {
    const stream = await turn.openai.chat.completions.create({
      model: 'scripted-model',
      messages,
      tools: turn.tools,
      stream: true,
      stream_options: { include_usage: true },
    });
    let content = '';
    const toolCalls: AssembledCall[] = [];
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta;
      if (!delta) continue;
      content += delta.content ?? '';
      for (const part of delta.tool_calls ?? []) {
        const call = (toolCalls[part.index] ??= { id: '', name: '', arguments: '' });
        call.id ||= part.id ?? '';
        call.name ||= part.function?.name ?? '';
        call.arguments += part.function?.arguments ?? '';
      }
    }
    if (toolCalls.length === 0) {
      await store({ role: 'assistant', content });
      return calls;
    }
    await store({
      role: 'assistant',
      content: content || null,
      tool_calls: toolCalls.map((c) => ({
        id: c.id,
        type: 'function' as const,
        function: { name: c.name, arguments: c.arguments },
      })),
    });
    for (const call of toolCalls) {
      if (call.name !== NOOP_TOOL) throw new Error(`the model called ${call.name}`);
      const args = noopTool.parameters.parse(JSON.parse(call.arguments));
      const result = await noopTool.execute(args, undefined as never);
      await store({ role: 'tool', tool_call_id: call.id, content: JSON.stringify(result) });
    }
  }
}
