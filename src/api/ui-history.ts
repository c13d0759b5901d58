/**
 * A conversation's history as the AI SDK's `UIMessage[]` (`ai` 7): what a
 * chat page starts from (`GET /v1/conversations/{id}/ui-messages`).
 *
 * Each turn is its user messages (`user-<seq>`), then one assistant message
 * under the id the live stream gives it (`turn-<seq of its first message>`),
 * whose parts are what the stream leaves on the page: the turn's facts are
 * projected as the stream projects them (`projectTurn`) and the chunks read
 * as `ai` reads them. So a page that loads the history and then resumes a
 * turn's stream replaces that message instead of adding a second one.
 *
 * Ended turns are read from the stored transcript (the running turn's user
 * messages before they are written, from where they came in:
 * `ui-unwritten.ts`); the turn running now as
 * the stream reads it (`TurnReader`: the workflow's state, stored responses
 * and the text streamed so far). A call shows its approval and decision when
 * a person decided it (the recorded decisions), when it was rejected, or
 * while it waits. The assistant message's metadata is the `finish` chunk's
 * (`outcome`, `error`, `guardrail`, typed `output`) when the turn's record
 * is still kept.
 */
import type { AgentClient } from '../client/client';
import { StreamView } from '../client/stream';
import type { ConversationState } from '../contract';
import type { ChatMessage } from '../contract/messages';
import type { MessageFile } from '../contract/message-files';
import { parseJsonOrText } from '../contract/text';
import { callInstanceKey } from '../core/effect-keys';
import type { CallDecisionRecord } from '../db/call-decisions';
import type { HistoryRow } from '../db/ui-history-reads';
import { decisionOf, type ChatViewer } from './chat-approvals';
import { callOutputOf, projectTurn, type CallFacts, type StepFacts, type TurnFacts, type UiChunk } from './ui-stream';
import { TurnReader } from './ui-turn';
import { unwrittenUserRows } from './ui-unwritten';

/** A part of a {@link UiMessage}, as `ai` 7's `UIMessagePart` (text, reasoning, step-start, dynamic-tool, file). */
export type UiPart = { type: string } & Record<string, unknown>;

/** A message as `ai` 7's `UIMessage`. */
export type UiMessage = {
  id: string;
  role: 'user' | 'assistant';
  parts: UiPart[];
  metadata?: Record<string, unknown>;
};

/** The items of a turn's projection (`projectTurn`). */
type Projection = ReturnType<typeof projectTurn>;

/** The start of an output check's note to the model (`src/core/turn.ts`): a user message no person wrote. */
const OUTPUT_CHECK_NOTE = '[output check] ';

/** One turn of the stored transcript: the user messages it took, then what it stored after them. */
interface StoredTurn {
  firstSeq: number;
  user: HistoryRow[];
  rest: HistoryRow[];
}

/**
 * The conversation's history, oldest first. `state` is the workflow's (undefined when it is gone: the transcript alone
 * is read then, without records); `viewer` reads it (what a waiting call's approval request lets them decide).
 */
export async function uiHistory(
  client: AgentClient,
  conversationId: string,
  state: ConversationState | undefined,
  viewer?: ChatViewer,
): Promise<UiMessage[]> {
  const source = await client.historySource(conversationId);
  const { decisions } = source;
  // The running turn's user messages not written yet (its first moment) stand at their seqs, from where they came in.
  const unwritten = await unwrittenUserRows(client, conversationId, state, source.rows);
  const rows = unwritten.length > 0 ? [...source.rows, ...unwritten].sort((a, b) => a.seq - b.seq) : source.rows;
  const messages: UiMessage[] = [];
  for (const turn of splitTurns(rows, state)) {
    for (const row of turn.user) messages.push(userMessage(conversationId, row));
    const facts =
      state?.currentTurn?.firstSeq === turn.firstSeq
        ? await runningTurnFacts(client, conversationId, state, viewer)
        : storedTurnFacts(conversationId, turn, state);
    withDecisions(facts, decisions);
    const answer = messageOfProjection(projectTurn(facts));
    if (answer.parts.length > 0 || answer.metadata) messages.push(answer);
  }
  return messages;
}

/**
 * Where each turn starts: at the first seqs of the turns the state keeps (exact); before the oldest of them, at a user
 * message that follows a message of another role (user messages taken together start one turn), unless it is an output
 * check's note.
 */
export function splitTurns(rows: readonly HistoryRow[], state: ConversationState | undefined): StoredTurn[] {
  const known = new Set<number>();
  for (const t of state?.recentTurns ?? []) if (t.firstSeq !== undefined) known.add(t.firstSeq);
  if (state?.currentTurn) known.add(state.currentTurn.firstSeq);
  const oldestKnown = Math.min(Number.POSITIVE_INFINITY, ...known);
  const turns: StoredTurn[] = [];
  let turn: StoredTurn | undefined;
  for (const row of rows) {
    const m = row.message;
    if (m.role === 'system') continue;
    const starts =
      m.role === 'user' &&
      (known.has(row.seq) ||
        (row.seq < oldestKnown && (!turn || turn.rest.length > 0) && !m.content.startsWith(OUTPUT_CHECK_NOTE)));
    if (starts || !turn) {
      turn = { firstSeq: row.seq, user: [], rest: [] };
      turns.push(turn);
    }
    if (m.role === 'user' && turn.rest.length === 0) turn.user.push(row);
    else turn.rest.push(row);
  }
  return turns;
}

/** A user message: its text and its files. */
function userMessage(conversationId: string, row: HistoryRow): UiMessage {
  const m = row.message as Extract<ChatMessage, { role: 'user' }>;
  const parts: UiPart[] = [];
  if (m.content !== '') parts.push({ type: 'text', text: m.content, state: 'done' });
  for (const file of m.files ?? []) parts.push(filePart(conversationId, file));
  // `ai` refuses a user message without parts: an empty text stands for one that had none.
  if (parts.length === 0) parts.push({ type: 'text', text: '', state: 'done' });
  return { id: `user-${row.seq}`, role: 'user', parts };
}

/** A file of a user message as a file part: its address, or the API's route to its stored bytes. */
function filePart(conversationId: string, file: MessageFile): UiPart {
  const url =
    file.url ??
    `/v1/conversations/${encodeURIComponent(conversationId)}/files/${encodeURIComponent(file.fileId ?? '')}`;
  return { type: 'file', mediaType: file.mediaType, url, ...(file.filename ? { filename: file.filename } : {}) };
}

/** The running turn, as its live stream reads it (the text streamed so far included). */
async function runningTurnFacts(
  client: AgentClient,
  conversationId: string,
  state: ConversationState,
  viewer: ChatViewer | undefined,
): Promise<TurnFacts> {
  const view = new StreamView();
  for (const event of await client.streamedSoFar(conversationId)) view.apply(event);
  const reader = new TurnReader(client, conversationId, view, new AbortController().signal, viewer);
  return reader.read(state.currentTurn!.firstSeq, undefined, state);
}

/** An ended turn from its stored messages, with its record (how it ended) when the state still keeps it. */
function storedTurnFacts(conversationId: string, turn: StoredTurn, state: ConversationState | undefined): TurnFacts {
  // Call keys minted after a regeneration carry the count of regenerations so far: those of later turns are not yet.
  const laterRegenerations = (state?.recentTurns ?? []).filter(
    (t) => t.supersededBy !== undefined && t.firstSeq !== undefined && t.firstSeq > turn.firstSeq,
  ).length;
  const regenerations = Math.max(0, (state?.regenerations ?? 0) - laterRegenerations);
  const steps: StepFacts[] = [];
  for (const [i, row] of turn.rest.entries()) {
    const m = row.message;
    if (m.role !== 'assistant') continue;
    // The tool messages answering its calls follow it.
    const answers = turn.rest.slice(i + 1).flatMap((r) => (r.message.role === 'tool' ? [r.message] : []));
    const calls = (m.tool_calls ?? []).map((call, index): CallFacts => {
      const answer = answers.find((a) => a.tool_call_id === call.id);
      if (answer) answers.splice(answers.indexOf(answer), 1);
      return {
        callKey: callInstanceKey(conversationId, row.seq, index, regenerations),
        toolCallId: call.id,
        assistantSeq: row.seq,
        name: call.function.name,
        input: parseJsonOrText(call.function.arguments),
        approvalRequested: false,
        ...(answer ? { output: callOutputOf(answer.content) } : {}),
      };
    });
    steps.push({
      responseKey: row.refKey ?? `msg-${row.seq}`,
      text: m.content ?? '',
      ...(m.reasoning_content ? { reasoning: m.reasoning_content } : {}),
      stored: true,
      calls,
    });
  }
  const record = state?.recentTurns.find((t) => t.firstSeq === turn.firstSeq && t.supersededBy === undefined);
  return { messageId: `turn-${turn.firstSeq}`, steps, ...(record ? { end: { record } } : {}) };
}

/**
 * Shows the approval of each call a person decided (the recorded decision: approved or not, and why), and of each call
 * whose result says it was rejected or its wait timed out. A decision is shown only where `ai` 7 takes it with the
 * call's state: a denied call was not approved, a call with an output was.
 */
function withDecisions(facts: TurnFacts, decisions: ReadonlyMap<string, CallDecisionRecord>): void {
  for (const step of facts.steps) {
    for (const call of [...step.calls, ...(step.below ?? [])]) {
      const recorded = decisions.get(call.callKey);
      const timedOut = call.output?.kind === 'error' && call.output.text.startsWith('approval_timeout');
      const settled = call.output?.kind === 'denied' || timedOut ? decisionOf(call.output, false) : undefined;
      const reason = recorded?.reason ? { reason: recorded.reason } : {};
      if (settled) {
        call.decided = { ...settled.decided, ...reason };
        if (settled.output) call.output = settled.output;
      } else if (recorded && (recorded.decision !== 'reject' || !call.output))
        call.decided = { approved: recorded.decision !== 'reject', ...reason };
      else continue;
      call.approvalRequested = true;
    }
  }
}

/** The message a turn's projection leaves on a page, as `ai` 7 reads its chunks (`processUIMessageStream`). */
export function messageOfProjection(items: Projection): UiMessage {
  const message: UiMessage = { id: '', role: 'assistant', parts: [] };
  const tools = new Map<string, UiPart>();
  for (const item of items) {
    if ('text' in item) {
      const { id, kind, text, done } = item.text;
      const state = done ? 'done' : 'streaming';
      message.parts.push(kind === 'text' ? { type: 'text', text, state } : { type: 'reasoning', id, text, state });
    } else read(message, tools, item.chunk);
  }
  return message;
}

/** What one chunk changes of the message. */
function read(message: UiMessage, tools: Map<string, UiPart>, chunk: UiChunk): void {
  switch (chunk.type) {
    case 'start':
      message.id = chunk.messageId;
      return;
    case 'start-step':
      message.parts.push({ type: 'step-start' });
      return;
    case 'tool-input-available': {
      const part: UiPart = {
        type: 'dynamic-tool',
        toolName: chunk.toolName,
        toolCallId: chunk.toolCallId,
        state: 'input-available',
        input: chunk.input,
        ...(chunk.title !== undefined ? { title: chunk.title } : {}),
        ...(chunk.toolMetadata !== undefined ? { toolMetadata: chunk.toolMetadata } : {}),
      };
      tools.set(chunk.toolCallId, part);
      message.parts.push(part);
      return;
    }
    case 'tool-approval-request': {
      const part = tools.get(chunk.toolCallId);
      if (!part) return;
      part.state = 'approval-requested';
      part.approval = {
        id: chunk.approvalId,
        ...(chunk.approvalDescriptor != null ? { descriptor: chunk.approvalDescriptor } : {}),
        ...(chunk.reason != null ? { requestReason: chunk.reason } : {}),
      };
      return;
    }
    case 'tool-approval-response': {
      const part = [...tools.values()].find(
        (p) => (p.approval as { id?: string } | undefined)?.id === chunk.approvalId,
      );
      if (!part) return;
      part.state = 'approval-responded';
      part.approval = {
        ...(part.approval as object),
        id: chunk.approvalId,
        approved: chunk.approved,
        ...(chunk.reason != null ? { reason: chunk.reason } : {}),
      };
      return;
    }
    case 'tool-output-available':
    case 'tool-output-error':
    case 'tool-output-denied': {
      const part = tools.get(chunk.toolCallId);
      if (!part) return;
      if (chunk.type === 'tool-output-available')
        Object.assign(part, { state: 'output-available', output: chunk.output });
      else if (chunk.type === 'tool-output-error')
        Object.assign(part, { state: 'output-error', errorText: chunk.errorText });
      else part.state = 'output-denied';
      return;
    }
    case 'finish':
      if (chunk.messageMetadata) message.metadata = { ...message.metadata, ...chunk.messageMetadata };
      return;
    case 'finish-step':
    case 'error':
    case 'text-start':
    case 'text-end':
    case 'reasoning-start':
    case 'reasoning-end':
    case 'text-delta':
    case 'reasoning-delta':
      // Text comes whole in the projection's text items; a step's end and an error change no part.
      return;
    default: {
      const unread: never = chunk;
      throw new Error(`a chunk the history does not read: ${JSON.stringify(unread)}`);
    }
  }
}
