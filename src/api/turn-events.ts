/**
 * Following one turn as events, for the API's own server-sent events (the
 * CLI's): the model's text as it streams (`turn-watch.ts`, shared with the
 * UI message stream: what streamed before the client came is replayed
 * first), the calls it asks for, the approvals they wait on and the turn's
 * outcome (the conversation's state, read every half second while the turn
 * runs).
 */
import type { AgentClient } from '../client/client';
import { TurnWatch } from './turn-watch';
import type { ConversationState, TurnRecord } from '../contract';

/** One event of a turn, named like its SSE `event:` field. */
export type TurnEvent =
  | { event: 'delta'; data: { responseKey: string; attempt: number; text: string; reset: boolean } }
  | { event: 'tool_call'; data: { toolCallId: string; toolName: string; seq: number } }
  | { event: 'approval'; data: { toolCallId: string; toolName: string; arguments: unknown; callKey: string; requestedBy: string[] } }
  | { event: 'status'; data: { status: ConversationState['status']; pendingApprovals: number; runningToolCalls: string[] } }
  | { event: 'turn'; data: TurnRecord & { answer?: string } };

/** How often the state is read while following. */
export const TURN_EVENTS_POLL_MS = 500;

/**
 * Emits the events of the turn that takes `messageId` (or, without one, of
 * the next turn to finish) until it finishes or `signal` aborts. The last
 * event is `turn`, with the answer's text when it answered.
 */
export async function followTurn(
  client: AgentClient,
  conversationId: string,
  options: { messageId?: string; signal: AbortSignal },
  emit: (event: TurnEvent) => void,
): Promise<void> {
  // Everything is emitted through one queue, in order; a new response's text comes after the calls stored before it.
  let queue: Promise<void> = Promise.resolve();
  const inOrder = (work: () => Promise<void> | void): Promise<void> => (queue = queue.then(work, work));
  const started = new Set<string>();
  let emitFrom: ((state: ConversationState | undefined) => void) | undefined;
  const watch = await TurnWatch.open(client, conversationId, (changed) => {
    void inOrder(async () => {
      if (!started.has(changed.response.responseKey)) {
        started.add(changed.response.responseKey);
        // The calls of the response before this one were stored before this one began.
        if (emitFrom) emitFrom(await client.state(conversationId).catch(() => undefined));
      }
      if (changed.appended || changed.reset) {
        emit({
          event: 'delta',
          data: { responseKey: changed.response.responseKey, attempt: changed.response.attempt, text: changed.appended, reset: changed.reset },
        });
      }
    });
  });
  try {
    const first = await client.state(conversationId);
    const finishedBefore = new Set(first.recentTurns.map((t) => t.messageIds.join('\n')));
    // Calls of earlier turns are not this turn's; when the followed turn runs already, its calls so far are.
    const followed = first.currentTurn && (!options.messageId || first.currentTurn.messageIds.includes(options.messageId)) ? first.currentTurn : undefined;
    const since = followed ? followed.firstSeq : Number.POSITIVE_INFINITY;
    const seenCalls = new Set(first.messages.filter((m) => m.seq < since).flatMap((m) => (m.toolCalls ?? []).map((c) => `${m.seq}/${c.id}`)));
    const seenApprovals = new Set<string>();
    let lastStatus = '';
    emitFrom = (state) => {
      if (!state) return;
      for (const m of state.messages) {
        for (const call of m.toolCalls ?? []) {
          if (seenCalls.has(`${m.seq}/${call.id}`)) continue;
          seenCalls.add(`${m.seq}/${call.id}`);
          emit({ event: 'tool_call', data: { toolCallId: call.id, toolName: call.name, seq: m.seq } });
        }
      }
      for (const p of state.pendingApprovals) {
        if (seenApprovals.has(p.callKey)) continue;
        seenApprovals.add(p.callKey);
        emit({
          event: 'approval',
          data: { toolCallId: p.toolCallId, toolName: p.toolName, arguments: p.arguments, callKey: p.callKey, requestedBy: p.requestedBy },
        });
      }
      const status = { status: state.status, pendingApprovals: state.pendingApprovals.length, runningToolCalls: state.runningToolCalls };
      if (JSON.stringify(status) !== lastStatus) {
        lastStatus = JSON.stringify(status);
        emit({ event: 'status', data: status });
      }
    };
    for (let state = first; !options.signal.aborted;) {
      await inOrder(() => emitFrom!(state));
      const turn = options.messageId
        ? state.recentTurns.find((t) => t.messageIds.includes(options.messageId!))
        : state.recentTurns.find((t) => !finishedBefore.has(t.messageIds.join('\n')));
      if (turn) {
        let answer: string | undefined;
        if (turn.answerSeq !== undefined) {
          const [stored] = await client.transcriptPage(conversationId, turn.answerSeq - 1, 1);
          if (stored?.message.role === 'assistant') answer = stored.message.content ?? '';
        }
        await inOrder(() => emit({ event: 'turn', data: { ...turn, ...(answer === undefined ? {} : { answer }) } }));
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, TURN_EVENTS_POLL_MS));
      if (options.signal.aborted) return;
      state = await client.state(conversationId);
    }
  } finally {
    await watch.close();
  }
}
