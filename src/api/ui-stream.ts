/**
 * A turn as the AI SDK's UI message stream (protocol v1, as `ai` 7 reads
 * it): one assistant message whose parts are the turn's steps, each with
 * its text, its tool calls (input, approval request, output) and step
 * boundaries, ending with a `finish` chunk.
 *
 * The chunks are a projection of what is durable (the workflow's state, the
 * stored model responses, tool results and transcript) plus the live text
 * of the model call running now; {@link UiStreamEmitter} sends what a new
 * projection adds to what was sent. A step's parts are shown once the step
 * before it settled, so the order never changes; text only grows, and a
 * retried model call whose text does not extend what was sent ends the
 * stream with an `error` chunk (the client resumes and gets the attempt that
 * stands).
 */
import type { TurnRecord } from '../contract';
import { parseJsonOrText } from '../contract/text';
import type { ApprovalAsk, CallDecided } from './ui-approvals';

/** The chunks of the UI message stream this API sends (a subset of `ai` 7's `UIMessageChunk`). */
export type UiChunk =
  | { type: 'start'; messageId: string }
  | { type: 'start-step' }
  | { type: 'finish-step' }
  | { type: 'text-start' | 'text-end' | 'reasoning-start' | 'reasoning-end'; id: string }
  | { type: 'text-delta' | 'reasoning-delta'; id: string; delta: string }
  | {
      type: 'tool-input-available';
      toolCallId: string;
      toolName: string;
      input: unknown;
      dynamic: true;
      title?: string;
      toolMetadata?: { agentPath: string[]; conversationId: string };
    }
  | {
      type: 'tool-approval-request';
      approvalId: string;
      toolCallId: string;
      reason?: string;
      approvalDescriptor?: unknown;
    }
  | { type: 'tool-approval-response'; approvalId: string; approved: boolean; reason?: string }
  | { type: 'tool-output-available'; toolCallId: string; output: unknown; dynamic: true }
  | { type: 'tool-output-error'; toolCallId: string; errorText: string; dynamic: true }
  | { type: 'tool-output-denied'; toolCallId: string }
  | { type: 'error'; errorText: string }
  | {
      type: 'finish';
      finishReason: 'stop' | 'tool-calls' | 'error' | 'other';
      messageMetadata?: Record<string, unknown>;
    };

/** How a settled call shows in the stream. */
export type CallOutput =
  { kind: 'available'; value: unknown } | { kind: 'denied'; reason?: string } | { kind: 'error'; text: string };

/** One call of a step: its key (the stream's `toolCallId` and `approvalId`), input and, once settled, output. */
export interface CallFacts {
  callKey: string;
  /** The provider's id, and the seq of the assistant message that asked for it. */
  toolCallId: string;
  assistantSeq: number;
  name: string;
  input: unknown;
  /** It waited for a person while this stream was open (or waits now). */
  approvalRequested: boolean;
  /** What the approval request says to the stream's reader (`chat-approvals.ts`). */
  ask?: ApprovalAsk;
  /** Once it no longer waits: the decision (shown as the approval response before its output). */
  decided?: CallDecided;
  /** Shown on the tool part: for a call waiting below, the agents down to the one asking. */
  title?: string;
  toolMetadata?: { agentPath: string[]; conversationId: string };
  output?: CallOutput;
}

/** One model response of the turn: its text and reasoning, and its calls (known once it is stored). */
export interface StepFacts {
  responseKey: string;
  text: string;
  reasoning?: string;
  /** False while the model still speaks (live text): no calls known yet. */
  stored: boolean;
  calls: CallFacts[];
  /** Calls waiting (or that waited) inside agents this step's calls run as tools: shown, not awaited. */
  below?: CallFacts[];
}

/** What is known of a turn now. */
export interface TurnFacts {
  /** The assistant message's id in the stream: the same for every response of the turn. */
  messageId: string;
  steps: StepFacts[];
  /** The turn ended (with its record, written), or the response ends here because calls wait for a person. */
  end?: { record: TurnRecord } | { waiting: true; others?: true };
}

/** One item of a projection: a chunk, or a text part that may still grow. */
type Item =
  | { key: string; chunk: UiChunk }
  | { key: string; text: { id: string; kind: 'text' | 'reasoning'; text: string; done: boolean } };

/** The turn as stream items, in their fixed order: a step is shown once the one before it settled. */
export function projectTurn(facts: TurnFacts): Item[] {
  const items: Item[] = [{ key: 'start', chunk: { type: 'start', messageId: facts.messageId } }];
  let settledSoFar = true;
  for (const step of facts.steps) {
    if (!settledSoFar) break;
    const k = step.responseKey;
    items.push({ key: `${k}/start`, chunk: { type: 'start-step' } });
    if (step.reasoning)
      items.push({
        key: `${k}/reasoning`,
        text: { id: `${k}/reasoning`, kind: 'reasoning', text: step.reasoning, done: step.stored },
      });
    if (step.text)
      items.push({ key: `${k}/text`, text: { id: `${k}/text`, kind: 'text', text: step.text, done: step.stored } });
    for (const c of [...step.calls, ...(step.below ?? [])]) items.push(...callItems(c));
    for (const c of step.below ?? []) items.push(...settledItems(c));
    for (const c of step.calls) items.push(...settledItems(c));
    settledSoFar = step.stored && step.calls.every((c) => c.output);
    if (settledSoFar) items.push({ key: `${k}/finish`, chunk: { type: 'finish-step' } });
  }
  const end = facts.end;
  if (end && 'record' in end && settledSoFar) items.push({ key: 'finish', chunk: finishChunk(end.record) });
  if (end && 'waiting' in end)
    items.push({
      key: 'finish',
      chunk: {
        type: 'finish',
        finishReason: 'tool-calls',
        // awaitingOthers: the reader may decide none of the waiting calls; resume to see the decision.
        messageMetadata: { outcome: 'awaiting_approval', ...(end.others ? { awaitingOthers: true } : {}) },
      },
    });
  return items;
}

/** A call's input and, when it waited, its approval request. */
function callItems(c: CallFacts): Item[] {
  const items: Item[] = [
    {
      key: `${c.callKey}/input`,
      chunk: {
        type: 'tool-input-available',
        toolCallId: c.callKey,
        toolName: c.name,
        input: c.input,
        dynamic: true,
        ...(c.title ? { title: c.title } : {}),
        ...(c.toolMetadata ? { toolMetadata: c.toolMetadata } : {}),
      },
    },
  ];
  if (c.approvalRequested)
    items.push({
      key: `${c.callKey}/approval`,
      chunk: {
        type: 'tool-approval-request',
        approvalId: c.callKey,
        toolCallId: c.callKey,
        ...(c.ask ? { approvalDescriptor: c.ask.descriptor } : {}),
        ...(c.ask?.reason ? { reason: c.ask.reason } : {}),
      },
    });
  return items;
}

/** A call's decision (the approval response), then its output. */
function settledItems(c: CallFacts): Item[] {
  const items: Item[] = [];
  if (c.approvalRequested && c.decided)
    items.push({
      key: `${c.callKey}/decided`,
      chunk: {
        type: 'tool-approval-response',
        approvalId: c.callKey,
        approved: c.decided.approved,
        ...(c.decided.reason ? { reason: c.decided.reason } : {}),
      },
    });
  if (c.output) items.push({ key: `${c.callKey}/output`, chunk: outputChunk(c.callKey, c.output) });
  return items;
}

function outputChunk(callKey: string, output: CallOutput): UiChunk {
  if (output.kind === 'denied') return { type: 'tool-output-denied', toolCallId: callKey };
  if (output.kind === 'error')
    return { type: 'tool-output-error', toolCallId: callKey, errorText: output.text, dynamic: true };
  return { type: 'tool-output-available', toolCallId: callKey, output: output.value, dynamic: true };
}

/** The `finish` chunk of an ended turn; its metadata says how it ended. */
function finishChunk(record: TurnRecord): UiChunk {
  const finishReason = record.outcome === 'answered' ? 'stop' : record.outcome === 'failed' ? 'error' : 'other';
  const messageMetadata: Record<string, unknown> = { outcome: record.outcome };
  if (record.error !== undefined) messageMetadata.error = record.error;
  if (record.guardrail) messageMetadata.guardrail = record.guardrail;
  if (record.output !== undefined) messageMetadata.output = record.output;
  return { type: 'finish', finishReason, messageMetadata };
}

/** Kinds of a call's result that say it did not produce one (`src/core/outcomes.ts`); `rejected` shows as denied. */
const FAILED_KINDS = new Set([
  'tool_failed',
  'approval_timeout',
  'cancelled',
  'interrupted',
  'effect_unknown',
  'repaired',
  'not_stored',
  'guardrail_blocked',
]);

/** How a call's result text shows: denied, an error naming how it ended, or the output (parsed when JSON). */
export function callOutputOf(content: string, kind?: string): CallOutput {
  const parsed: unknown = parseJsonOrText(content);
  const body =
    typeof parsed === 'object' && parsed !== null
      ? (parsed as { kind?: unknown; error?: unknown; reason?: unknown })
      : undefined;
  const said = kind ?? (typeof body?.kind === 'string' && typeof body.error === 'string' ? body.kind : undefined);
  if (said === 'rejected')
    return { kind: 'denied', ...(typeof body?.reason === 'string' && body.reason ? { reason: body.reason } : {}) };
  if (said !== undefined && FAILED_KINDS.has(said)) {
    const why = [
      typeof body?.error === 'string' ? body.error : undefined,
      typeof body?.reason === 'string' ? body.reason : undefined,
    ]
      .filter(Boolean)
      .join(' ');
    return { kind: 'error', text: `${said}: ${why || content}` };
  }
  return { kind: 'available', value: parsed };
}

/**
 * Sends what each new projection adds: items not sent yet, in order, and the
 * growth of text parts (a part that ends sends its `-end`). Says `conflict`
 * when a text sent no longer starts the text shown (a retried model call):
 * the caller then ends the stream with an error chunk.
 */
export class UiStreamEmitter {
  private readonly sent = new Map<string, { text: string; done: boolean } | true>();

  constructor(private readonly write: (chunk: UiChunk) => void) {}

  /** Marks everything of `items` as sent without sending it (what a client already has). */
  baseline(items: readonly Item[]): void {
    for (const item of items)
      this.sent.set(item.key, 'text' in item ? { text: item.text.text, done: item.text.done } : true);
  }

  /** Sends what `items` adds. */
  update(items: readonly Item[]): 'ok' | 'conflict' {
    for (const item of items) {
      const before = this.sent.get(item.key);
      if (!('text' in item)) {
        if (before === undefined) {
          this.write(item.chunk);
          this.sent.set(item.key, true);
        }
        continue;
      }
      const { id, kind, text, done } = item.text;
      const was = before === undefined || before === true ? { text: '', done: false } : before;
      if (before === undefined) this.write({ type: `${kind}-start`, id });
      if (!text.startsWith(was.text)) return 'conflict';
      if (text.length > was.text.length) this.write({ type: `${kind}-delta`, id, delta: text.slice(was.text.length) });
      if (done && !was.done) this.write({ type: `${kind}-end`, id });
      this.sent.set(item.key, { text, done });
    }
    return 'ok';
  }
}
