/**
 * Printing a turn as it unfolds in the terminal: the model's text as it
 * streams, tool calls and results from the transcript, the answer once, and
 * calls waiting for approval (asked about at the prompt, or listed).
 */
import type { AgentClient } from '../client/client';
import { StreamView } from '../client/stream';
import { decideCalls } from './decide';

/** Starts a turn other than by a message (a regeneration): its id, and the seq its messages are stored from. */
export type TurnStarter = () => Promise<{ messageId: string; fromSeq: number }>;

/**
 * Sends a message (or starts the turn with `text`, a {@link TurnStarter}) and prints the turn as it unfolds: the model's text as it
 * streams, tool calls, results, the answer. Calls that need approval are
 * asked about at the prompt (`ask`), or listed with the commands that decide
 * them when there is no prompt.
 */
export async function printTurn(
  client: AgentClient,
  conversationId: string,
  text: string | TurnStarter,
  ask?: (question: string) => Promise<string>,
): Promise<void> {
  let printedSeq = (await client.transcript(conversationId).catch(() => [])).length;
  const view = new StreamView();
  let midLine = false;
  let lastStreamed = '';
  /** Texts of responses streamed to the end: the answer is not printed again. */
  const streamed = new Set<string>();
  const write = (s: string): void => {
    process.stdout.write(s);
    midLine = !s.endsWith('\n');
  };
  const newline = (): void => {
    if (midLine) write('\n');
  };
  /** Prints the stored tool calls and results not printed yet. */
  const printNew = async (): Promise<void> => {
    const transcript = await client.transcript(conversationId);
    for (const { message } of transcript.slice(printedSeq)) {
      if (message.role === 'assistant' && message.tool_calls?.length) {
        newline();
        for (const call of message.tool_calls) write(`  ⚙ ${call.function.name}(${call.function.arguments})\n`);
      } else if (message.role === 'tool') {
        newline();
        write(`  ↳ ${message.content.slice(0, 200)}\n`);
      }
    }
    printedSeq = Math.max(printedSeq, transcript.length);
  };
  // Everything printed goes through one queue, in order: stream events, and the transcript's new messages.
  let queue: Promise<void> = Promise.resolve();
  const inOrder = (work: () => Promise<void> | void): Promise<void> => (queue = queue.then(work, work));
  const started = new Set<string>();
  let finished = false;
  const unsubscribe = await client.subscribe(conversationId, (event) => {
    void inOrder(async () => {
      if (finished) return;
      // A new response: the calls and results stored before it print first (its call wrote them before it began).
      if (!started.has(event.responseKey)) {
        started.add(event.responseKey);
        await printNew().catch(() => undefined);
      }
      const change = view.apply(event);
      if (!change) return;
      if (change.reset) {
        newline();
        write('  ↻ the model call was retried; its text starts over\n');
      }
      if (change.appended) {
        if (!midLine) write('agent> ');
        write(change.appended);
        lastStreamed = change.response.text;
      }
      if (change.response.done && change.response.ok) streamed.add(change.response.text);
    });
  });
  try {
    const started =
      typeof text === 'string' ? { messageId: await client.sendMessage(conversationId, text) } : await text();
    const messageId = started.messageId;
    // A regenerated turn stores its messages from the first seq it superseded.
    if ('fromSeq' in started) await inOrder(() => void (printedSeq = started.fromSeq));
    const asked = new Set<string>();
    for (;;) {
      const state = await client.state(conversationId);
      await inOrder(printNew);
      const turn = state.recentTurns.find((t) => t.messageIds.includes(messageId));
      if (turn) {
        if (turn.outcome === 'answered') {
          const answer = (await client.transcript(conversationId, turn.answerSeq)).find(
            (m) => m.seq === turn.answerSeq,
          )?.message;
          const content = answer?.role === 'assistant' ? (answer.content ?? '') : '';
          await queue; // the stream's events so far print before the answer is judged
          finished = true; // and any that come later print nothing
          if (streamed.has(content) || content === lastStreamed) newline();
          else if (lastStreamed !== '' && midLine && content.startsWith(lastStreamed))
            write(`${content.slice(lastStreamed.length)}\n`);
          else {
            newline();
            write(`agent> ${content}\n`);
          }
        } else {
          newline();
          write(`agent> (turn ${turn.outcome}: ${turn.error})\n`);
        }
        return;
      }
      for (const pending of state.pendingApprovals.filter((p) => !asked.has(p.toolCallId))) {
        asked.add(pending.toolCallId);
        newline();
        const call = `${pending.toolName}(${JSON.stringify(pending.arguments)})`;
        if (!ask) {
          write(
            `  ⏸ ${call} needs approval:\n` +
              `      npm run cli -- approve ${conversationId} ${pending.toolCallId}\n` +
              `      npm run cli -- reject ${conversationId} ${pending.toolCallId} --reason "..."\n`,
          );
          continue;
        }
        const answer = (await ask(`  ⏸ ${call} needs approval. Approve? [y/N, or a reason to reject] `)).trim();
        const approve = /^y(es)?$/i.test(answer);
        await decideCalls(
          conversationId,
          {
            decision: approve ? 'approve' : 'reject',
            toolCallId: pending.toolCallId,
            callKey: pending.callKey,
            reason: approve || answer === '' || /^no?$/i.test(answer) ? undefined : answer,
            decidedBy: process.env.USER ?? 'cli',
          },
          client,
        ).catch((err: Error) => write(`  (decision not applied: ${err.message})\n`));
      }
      if (!ask && asked.size > 0 && state.pendingApprovals.length > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  } finally {
    await unsubscribe();
  }
}
