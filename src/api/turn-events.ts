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
import { TurnReader } from './ui-turn';
import { followedState } from './followed-state';
import type { ConversationState, TurnRecord } from '../contract';

/** One event of a turn, named like its SSE `event:` field. */
export type TurnEvent =
  | { event: 'delta'; data: { responseKey: string; attempt: number; offset: number; text: string; reset: boolean } }
  | { event: 'tool_call'; data: { toolCallId: string; toolName: string; seq: number } }
  | {
      event: 'approval';
      data: { toolCallId: string; toolName: string; arguments: unknown; callKey: string; requestedBy: string[] };
    }
  | {
      event: 'status';
      data: { status: ConversationState['status']; pendingApprovals: number; runningToolCalls: string[] };
    }
  | { event: 'turn'; data: TurnRecord & { answer?: string } };

/** How often the state is read while following. */
export const TURN_EVENTS_POLL_MS = 500;

/**
 * Emits the events of the turn that takes `messageId` (or, without one, of
 * the next turn to finish) until it finishes or `signal` aborts. The last
 * event is `turn`, with the answer's text when it answered. The calls come
 * from the same facts as the UI message stream's (`TurnReader`).
 */
export async function followTurn(
  client: AgentClient,
  conversationId: string,
  options: { messageId?: string; signal: AbortSignal },
  emit: (event: TurnEvent) => void,
): Promise<void> {
  // Everything is emitted through one queue, in order; a new response's text comes after the calls stored before it.
  // It opens once the calls can be read: text replayed at the start waits for the calls before it.
  let openQueue!: () => void;
  let queue = new Promise<void>((resolve) => (openQueue = resolve));
  const inOrder = (work: () => Promise<void> | void): Promise<void> => (queue = queue.then(work, work));
  const started = new Set<string>();
  let emitNow: ((state: ConversationState) => Promise<void>) | undefined;
  const watch = await TurnWatch.open(client, conversationId, (changed) => {
    const { responseKey, attempt } = changed.response;
    // Where the piece starts, now: the response's text grows with the pieces after it before the queue sends this one.
    const offset = changed.response.text.length - changed.appended.length;
    void inOrder(async () => {
      if (!started.has(responseKey)) {
        started.add(responseKey);
        // The calls of the response before this one were stored before this one began.
        const state = emitNow && (await client.state(conversationId).catch(() => undefined));
        if (state) await emitNow!(state).catch(() => undefined);
      }
      if (changed.appended || changed.reset) {
        emit({
          event: 'delta',
          data: { responseKey, attempt, offset, text: changed.appended, reset: changed.reset },
        });
      }
    });
  });
  try {
    const reader = new TurnReader(client, conversationId, watch.view, options.signal);
    const first = await followedState(client, conversationId, options.signal);
    const finishedBefore = new Set(first.recentTurns.map((t) => t.messageIds.join('\n')));
    const isFollowed = (messageIds: readonly string[]) =>
      options.messageId ? messageIds.includes(options.messageId) : !finishedBefore.has(messageIds.join('\n'));
    const seenCalls = new Set<string>();
    const seenApprovals = new Set<string>();
    let lastStatus = '';
    emitNow = async (state) => {
      // The followed turn's calls so far: running (its first seq), or just ended (its record's).
      const current =
        state.currentTurn && isFollowed(state.currentTurn.messageIds) ? state.currentTurn.firstSeq : undefined;
      const firstSeq = current ?? state.recentTurns.find((t) => isFollowed(t.messageIds))?.firstSeq;
      if (firstSeq !== undefined) {
        for (const step of (await reader.read(firstSeq, options.messageId, state)).steps) {
          for (const call of step.calls) {
            if (seenCalls.has(call.callKey)) continue;
            seenCalls.add(call.callKey);
            emit({
              event: 'tool_call',
              data: { toolCallId: call.toolCallId, toolName: call.name, seq: call.assistantSeq },
            });
          }
        }
      }
      for (const p of state.pendingApprovals) {
        if (seenApprovals.has(p.callKey)) continue;
        seenApprovals.add(p.callKey);
        emit({
          event: 'approval',
          data: {
            toolCallId: p.toolCallId,
            toolName: p.toolName,
            arguments: p.arguments,
            callKey: p.callKey,
            requestedBy: p.requestedBy,
          },
        });
      }
      const status = {
        status: state.status,
        pendingApprovals: state.pendingApprovals.length,
        runningToolCalls: state.runningToolCalls,
      };
      if (JSON.stringify(status) !== lastStatus) {
        lastStatus = JSON.stringify(status);
        emit({ event: 'status', data: status });
      }
    };
    openQueue();
    for (let state = first; !options.signal.aborted;) {
      await inOrder(() => emitNow!(state));
      const turn = state.recentTurns.find((t) => isFollowed(t.messageIds));
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
      state = await followedState(client, conversationId, options.signal);
    }
  } finally {
    await watch.close();
  }
}
