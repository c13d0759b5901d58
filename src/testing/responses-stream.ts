/**
 * A scripted response streamed as the Responses API streams it: named
 * server-sent events (`event: response.created` then its `data:`), each with
 * a `sequence_number`, in OpenAI's order: `response.created`,
 * `response.in_progress`, per output item `response.output_item.added`, its
 * deltas (reasoning summary, `output_text`, function call arguments) and
 * `response.output_item.done`, then `response.completed` (or
 * `response.incomplete`, `response.failed`) with the usage. There is no `[DONE]`.
 *
 * The reply's {@link StreamScript} shapes it as for Chat Completions:
 * `chunkDelayMs`, `keepAlive`, `argumentChunks`, `cutAfterArgumentChars`,
 * `stallAfterChunks` (counting events), `textDeltaChars` and `omitDone` (no final
 * `response.completed`); `emptyIdAndName` and `omitFinish` have no Responses form.
 *
 * @packageDocumentation
 */

import type { Exchange } from './exchange';
import { responseObject, type OutputItem, type ResponsesPlan } from './responses-plan';
import { splitPiecesAt, splitText, textDeltas } from './stream-events';
import { pacedStream } from './stream-writer';
import type { StreamScript } from './types';

/** One event to write, tagged so faults can pick their cut point. */
interface ResponsesEvent {
  type: string;
  payload: Record<string, unknown>;
  part: 'lifecycle' | 'item' | 'text' | 'arguments' | 'reasoning' | 'final';
  cutAfter?: boolean;
}

/**
 * Streams `plan` on `exchange`. `drop` cuts the connection after the first
 * text delta (a provider failing mid-answer).
 */
export async function writeResponsesStream(
  exchange: Exchange,
  plan: ResponsesPlan,
  script: StreamScript = {},
  drop = false,
): Promise<void> {
  const events = responsesEvents(plan, script);
  const pace = pacedStream(exchange, script);
  if (!(await pace.start())) return;
  let sent = 0;
  let textDeltas = 0;
  for (const [sequence, event] of events.entries()) {
    if (pace.stallsAt(sent)) return pace.stall();
    if (!(await pace.beforeWrite())) return;
    const data = JSON.stringify({ type: event.type, sequence_number: sequence, ...event.payload });
    exchange.write(`event: ${event.type}\ndata: ${data}\n\n`);
    sent++;
    if (event.part === 'text') textDeltas++;
    if (event.cutAfter || (drop && textDeltas > 0)) return pace.cut();
  }
  if (pace.stallsAt(sent)) return pace.stall();
  return pace.end();
}

/** The events that stream `plan` under `script`, without their sequence numbers. */
function responsesEvents(plan: ResponsesPlan, script: StreamScript): ResponsesEvent[] {
  const events: ResponsesEvent[] = [
    { type: 'response.created', payload: { response: responseObject(plan, 'in_progress') }, part: 'lifecycle' },
    { type: 'response.in_progress', payload: { response: responseObject(plan, 'in_progress') }, part: 'lifecycle' },
  ];
  let firstCall = true;
  plan.output.forEach((item, outputIndex) => {
    events.push({
      type: 'response.output_item.added',
      payload: { output_index: outputIndex, item: startedItem(item) },
      part: 'item',
    });
    const at = { item_id: item.id, output_index: outputIndex };
    if (item.type === 'reasoning') {
      item.summary.forEach((summary, summaryIndex) => {
        const where = { ...at, summary_index: summaryIndex };
        events.push({
          type: 'response.reasoning_summary_part.added',
          payload: { ...where, part: { type: 'summary_text', text: '' } },
          part: 'reasoning',
        });
        for (const delta of textDeltas(summary.text, script))
          events.push({
            type: 'response.reasoning_summary_text.delta',
            payload: { ...where, delta },
            part: 'reasoning',
          });
        events.push({
          type: 'response.reasoning_summary_text.done',
          payload: { ...where, text: summary.text },
          part: 'reasoning',
        });
        events.push({
          type: 'response.reasoning_summary_part.done',
          payload: { ...where, part: summary },
          part: 'reasoning',
        });
      });
    } else if (item.type === 'message') {
      const [part] = item.content;
      const where = { ...at, content_index: 0 };
      events.push({
        type: 'response.content_part.added',
        payload: { ...where, part: { ...part, text: '' } },
        part: 'item',
      });
      for (const delta of textDeltas(part.text, script))
        events.push({ type: 'response.output_text.delta', payload: { ...where, delta, logprobs: [] }, part: 'text' });
      events.push({
        type: 'response.output_text.done',
        payload: { ...where, text: part.text, logprobs: [] },
        part: 'item',
      });
      events.push({ type: 'response.content_part.done', payload: { ...where, part }, part: 'item' });
    } else {
      const pieces = argumentPieces(item.arguments, script, firstCall);
      if (firstCall && pieces.cutAt === 0) events[events.length - 1].cutAfter = true;
      let sentChars = 0;
      for (const delta of pieces.pieces) {
        sentChars += delta.length;
        events.push({
          type: 'response.function_call_arguments.delta',
          payload: { ...at, delta },
          part: 'arguments',
          cutAfter: pieces.cutAt !== undefined && pieces.cutAt > 0 && sentChars === pieces.cutAt,
        });
      }
      events.push({
        type: 'response.function_call_arguments.done',
        payload: { ...at, name: item.name, arguments: item.arguments },
        part: 'arguments',
      });
      firstCall = false;
    }
    events.push({ type: 'response.output_item.done', payload: { output_index: outputIndex, item }, part: 'item' });
  });
  if (!script.omitDone) {
    events.push({
      type: `response.${plan.status}`,
      payload: { response: responseObject(plan) },
      part: 'final',
    });
  }
  return events;
}

/** An item as `response.output_item.added` shows it: in progress, with nothing generated yet. */
function startedItem(item: OutputItem): Record<string, unknown> {
  switch (item.type) {
    case 'reasoning':
      // The encrypted content is complete only in `response.output_item.done`.
      return { type: 'reasoning', id: item.id, summary: [] };
    case 'message':
      return { ...item, status: 'in_progress', content: [] };
    default:
      return { ...item, status: 'in_progress', arguments: '' };
  }
}

/** The argument deltas of one call, and where the first call is cut (characters sent) when the script cuts it. */
function argumentPieces(
  text: string,
  script: StreamScript,
  first: boolean,
): { pieces: string[]; cutAt: number | undefined } {
  let pieces =
    script.argumentChunks !== undefined
      ? splitText(text, Math.max(1, Math.floor(script.argumentChunks)))
      : splitText(text, text.length > 8 ? 3 : 2);
  const cutAt =
    first && script.cutAfterArgumentChars !== undefined
      ? Math.min(Math.max(0, Math.floor(script.cutAfterArgumentChars)), text.length)
      : undefined;
  if (cutAt !== undefined && cutAt > 0) pieces = splitPiecesAt(pieces, cutAt);
  return { pieces, cutAt };
}
