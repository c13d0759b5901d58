/**
 * The server-sent events of one streamed reply, in the order a provider sends
 * them (role, reasoning, content, tool call fragments, finish, usage, done),
 * shaped by the reply's {@link StreamScript}.
 *
 * @packageDocumentation
 */

import type { CompletionPlan } from './completion';
import type { FinishReason, StreamScript } from './types';

/** One SSE event to write, tagged so faults can pick their cut point. */
export interface StreamEvent {
  part: 'role' | 'reasoning' | 'content' | 'tool_call' | 'finish' | 'usage' | 'done';
  data: string;
  /** The event after which a `cutAfterArgumentChars` script destroys the socket. */
  cutAfter?: boolean;
}

/** The events that stream `plan` under `script`: the `data` of each `data:` line. */
export function streamEvents(plan: CompletionPlan, script: StreamScript): StreamEvent[] {
  const chunk = (delta: Record<string, unknown>, finishReason: FinishReason | null = null): string =>
    JSON.stringify({
      id: plan.id,
      object: 'chat.completion.chunk',
      created: plan.created,
      model: plan.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    });

  const events: StreamEvent[] = [{ part: 'role', data: chunk({ role: 'assistant', content: '' }) }];
  for (const piece of textDeltas(plan.reasoningContent ?? '', script)) {
    events.push({ part: 'reasoning', data: chunk({ reasoning_content: piece }) });
  }
  for (const piece of textDeltas(plan.content ?? '', script)) {
    events.push({ part: 'content', data: chunk({ content: piece }) });
  }
  plan.toolCalls.forEach((call, index) => {
    const first: StreamEvent = {
      part: 'tool_call',
      data: chunk({
        tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }],
      }),
    };
    events.push(first);
    let pieces =
      script.argumentChunks !== undefined
        ? splitEvenly(call.arguments, script.argumentChunks)
        : splitText(call.arguments, call.arguments.length > 8 ? 3 : 2);
    // Only the first call can be cut; the cut point is clamped to its arguments.
    const cutAt =
      index === 0 && script.cutAfterArgumentChars !== undefined
        ? Math.min(Math.max(0, Math.floor(script.cutAfterArgumentChars)), call.arguments.length)
        : undefined;
    if (cutAt !== undefined) {
      pieces = splitPiecesAt(pieces, cutAt);
      if (cutAt === 0) first.cutAfter = true;
    }
    let sent = 0;
    for (const piece of pieces) {
      sent += piece.length;
      const fragment = script.emptyIdAndName
        ? { index, id: '', type: 'function', function: { name: '', arguments: piece } }
        : { index, function: { arguments: piece } };
      events.push({
        part: 'tool_call',
        data: chunk({ tool_calls: [fragment] }),
        cutAfter: cutAt !== undefined && cutAt > 0 && sent === cutAt,
      });
    }
  });
  if (!script.omitFinish) events.push({ part: 'finish', data: chunk({}, plan.finishReason) });
  if (plan.includeUsage) {
    events.push({
      part: 'usage',
      data: JSON.stringify({
        id: plan.id,
        object: 'chat.completion.chunk',
        created: plan.created,
        model: plan.model,
        choices: [],
        usage: plan.usage,
      }),
    });
  }
  if (!script.omitDone) events.push({ part: 'done', data: '[DONE]' });
  return events;
}

/**
 * The deltas a streamed text (content, reasoning, a Responses answer or summary) is sent in: three by default,
 * pieces of at most {@link StreamScript.textDeltaChars} characters when the script sets it.
 */
export function textDeltas(text: string, script: StreamScript): string[] {
  const size = script.textDeltaChars === undefined ? undefined : Math.max(1, Math.floor(script.textDeltaChars));
  return size === undefined ? splitText(text, 3) : splitText(text, Math.ceil(text.length / size));
}

/** Splits `text` into at most `pieces` deltas of (nearly) one size, as a provider streams it. */
export function splitText(text: string, pieces: number): string[] {
  if (text.length === 0) return [];
  const count = Math.min(pieces, text.length);
  const size = Math.ceil(text.length / count);
  const out: string[] = [];
  for (let start = 0; start < text.length; start += size) out.push(text.slice(start, start + size));
  return out;
}

/** Splits `text` into exactly `pieces` parts (at most one per character) whose lengths differ by at most one. */
function splitEvenly(text: string, pieces: number): string[] {
  if (text.length === 0) return [];
  const count = Math.min(Math.max(1, Math.floor(pieces)), text.length);
  const base = Math.floor(text.length / count);
  const longer = text.length % count;
  const out: string[] = [];
  let start = 0;
  for (let k = 0; k < count; k++) {
    const size = base + (k < longer ? 1 : 0);
    out.push(text.slice(start, start + size));
    start += size;
  }
  return out;
}

/** Splits the piece that spans character `at` of the joined pieces in two, so a piece ends exactly there. */
export function splitPiecesAt(pieces: string[], at: number): string[] {
  const out: string[] = [];
  let position = 0;
  for (const piece of pieces) {
    if (position < at && at < position + piece.length)
      out.push(piece.slice(0, at - position), piece.slice(at - position));
    else out.push(piece);
    position += piece.length;
  }
  return out;
}
