/**
 * The LangGraph baseline's process: the same turn as a LangGraph JS graph, as
 * a user comparing runtimes would write it: `MessagesAnnotation` state, an
 * `agent` node calling `ChatOpenAI` (its default, not streamed; over HTTP to the bench's
 * scripted model server), a prebuilt `ToolNode` running the same no-op tool,
 * and `PostgresSaver` checkpointing every step into a database of its own.
 *
 * A child process of the bench, so `/proc` tells its CPU time apart. It
 * takes turns over IPC (`{ id, text, durability }`), answers
 * `{ id, modelCalls }` or `{ id, error }`, and prints its ready line once the
 * checkpointer's tables exist. Environment: `LANGGRAPH_DATABASE_URL`,
 * `OPENAI_BASE_URL`.
 */
import { tool } from '@langchain/core/tools';
import { AIMessage, HumanMessage, SystemMessage } from '@langchain/core/messages';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';
import { NOOP_TOOL } from './bench-tools';

/** A turn the bench asks for. */
export interface LangGraphTurnRequest {
  id: string;
  text: string;
  durability: 'sync' | 'async';
}

/** What the process answers for a turn. */
export type LangGraphTurnReply = { id: string; modelCalls: number } | { id: string; error: string };

/** The line printed once the process takes turns. */
export const LANGGRAPH_READY_LINE = 'bench langgraph worker is running';

async function main(): Promise<void> {
  const databaseUrl = process.env.LANGGRAPH_DATABASE_URL;
  const baseURL = process.env.OPENAI_BASE_URL;
  if (!databaseUrl || !baseURL) throw new Error('LANGGRAPH_DATABASE_URL and OPENAI_BASE_URL are required.');
  const checkpointer = PostgresSaver.fromConnString(databaseUrl);
  await checkpointer.setup();

  const noop = tool(({ i }: { i: number }) => JSON.stringify({ ok: true, i }), {
    name: NOOP_TOOL,
    description: 'Does nothing and answers at once.',
    schema: z.object({ i: z.number().int() }),
  });
  const model = new ChatOpenAI({
    model: 'scripted-model',
    apiKey: 'bench-key',
    configuration: { baseURL },
    // ChatOpenAI's default: one JSON answer per call. (Streamed, it counts tokens itself with a
    // tokenizer it downloads, which costs more and which this machine cannot fetch.)
    maxRetries: 0,
  }).bindTools([noop]);

  const graph = new StateGraph(MessagesAnnotation)
    .addNode('agent', async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addNode('tools', new ToolNode([noop]))
    .addEdge(START, 'agent')
    .addConditionalEdges(
      'agent',
      (state) => ((state.messages.at(-1) as AIMessage).tool_calls?.length ? 'tools' : END),
      ['tools', END],
    )
    .addEdge('tools', 'agent')
    .compile({ checkpointer });

  const runTurn = async (request: LangGraphTurnRequest): Promise<number> => {
    const result = await graph.invoke(
      {
        messages: [new SystemMessage('You are a benchmark. Call the tool when told.'), new HumanMessage(request.text)],
      },
      { configurable: { thread_id: request.id }, durability: request.durability, recursionLimit: 1_000 },
    );
    return result.messages.filter((m) => m instanceof AIMessage).length;
  };

  process.on('message', (request: LangGraphTurnRequest) => {
    runTurn(request).then(
      (modelCalls) => process.send?.({ id: request.id, modelCalls } satisfies LangGraphTurnReply),
      (err: unknown) =>
        process.send?.({
          id: request.id,
          error: err instanceof Error ? (err.stack ?? err.message) : String(err),
        } satisfies LangGraphTurnReply),
    );
  });
  process.once('disconnect', () => void checkpointer.end().finally(() => process.exit(0)));
  process.once('SIGTERM', () => void checkpointer.end().finally(() => process.exit(0)));
  process.stdout.write(`${LANGGRAPH_READY_LINE}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
