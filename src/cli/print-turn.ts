/**
 * Printing a turn as it unfolds in the terminal: the model's text as it
 * streams, tool calls and results from the transcript, the answer once, and
 * calls waiting for approval (asked about at the prompt, or listed).
 */
import type { AgentClient } from '../client/client';
import { StreamView } from '../client/stream';
import { decideCalls } from './decide';
import { policyLine } from './format';
import { TurnText } from './turn-text';
import type { StoredMessage } from '../db/transcript-store';

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
  const before = await client.transcript(conversationId).catch((): StoredMessage[] => []);
  /**
   * The messages stored before the turn started, by seq, with when each was stored. A regenerated turn stores its
   * messages at the seqs of the answer it replaces, once its first step moved that answer out of the live transcript:
   * a step of the workflow, later than the regeneration's answer to this command. Until then a message read at one of
   * those seqs is the old answer's (the same row: stored at the same time), not the new turn's.
   */
  const storedBefore = new Map(before.map((m) => [m.seq, m.createdAt.getTime()]));
  /** The first seq of the turn's messages: known once the turn started (a regenerated turn's from its answer). */
  let printFrom = typeof text === 'string' ? (before.at(-1)?.seq ?? -1) + 1 : undefined;
  const printedSeqs = new Set<number>();
  const view = new StreamView();
  const printer = new TurnText((s) => process.stdout.write(s));
  /** Prints the turn's stored tool calls and results not printed yet. */
  const printNew = async (): Promise<void> => {
    if (printFrom === undefined) return;
    const from = printFrom;
    for (const { seq, message, createdAt } of await client.transcript(conversationId)) {
      if (seq < from || printedSeqs.has(seq)) continue;
      if (storedBefore.get(seq) === createdAt.getTime()) break; // not superseded yet: the new turn wrote nothing here
      printedSeqs.add(seq);
      if (message.role === 'assistant' && message.tool_calls?.length) {
        printer.line(
          message.tool_calls.map((call) => `  ⚙ ${call.function.name}(${call.function.arguments})\n`).join(''),
        );
      } else if (message.role === 'tool') {
        printer.line(`  ↳ ${message.content.slice(0, 200)}\n`);
      }
    }
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
      if (!change) return; // a newer attempt without text yet still says the older one's text starts over
      const { responseKey, attempt, text: shown } = change.response;
      printer.piece(responseKey, attempt, shown.length - change.appended.length, change.appended);
    });
  });
  try {
    const started =
      typeof text === 'string' ? { messageId: await client.sendMessage(conversationId, text) } : await text();
    const messageId = started.messageId;
    // A regenerated turn stores its messages from the first seq it superseded.
    if ('fromSeq' in started) await inOrder(() => void (printFrom = started.fromSeq));
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
          printer.answer(content);
        } else {
          await queue;
          finished = true;
          printer.line(`agent> (turn ${turn.outcome}: ${turn.error})\n`);
        }
        return;
      }
      // By call key: a provider may give a later step's call the id of one decided before (ids restarting per response).
      for (const pending of state.pendingApprovals.filter((p) => !asked.has(p.callKey))) {
        asked.add(pending.callKey);
        // A call an approval policy's rule made wait: who may decide it and its approvals so far.
        const call = `${pending.toolName}(${JSON.stringify(pending.arguments)})${pending.policy ? ` [${policyLine(pending.policy)}]` : ''}`;
        if (!ask) {
          printer.line(
            `  ⏸ ${call} needs approval:\n` +
              `      npm run cli -- approve ${conversationId} ${pending.toolCallId}\n` +
              `      npm run cli -- reject ${conversationId} ${pending.toolCallId} --reason "..."\n`,
          );
          continue;
        }
        printer.newline();
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
        ).catch((err: Error) => printer.line(`  (decision not applied: ${err.message})\n`));
      }
      if (!ask && asked.size > 0 && state.pendingApprovals.length > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  } finally {
    await unsubscribe();
  }
}
