/**
 * The offline demo model reads every request as Chat Completions would
 * carry it: a Responses API request (`OPENAI_API=responses`) is read back
 * into the same messages, tools and tool choice, so the demo plays both APIs
 * alike.
 */
import type { RecordedRequest } from '../testing/types';

/** A message as the demo reads it (the Chat Completions shape). */
export interface WireMessage {
  role: string;
  content?: unknown;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

/** What the demo reads of a request. */
export interface DemoRequest {
  messages: WireMessage[];
  /** Names of the tools offered. */
  tools: string[];
  toolChoice?: unknown;
}

type Item = Record<string, unknown>;

/** The text of a Responses message item's parts (`input_text`, `output_text`). */
function partsText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return (content as { text?: unknown }[]).map((p) => (typeof p.text === 'string' ? p.text : '')).join('');
}

/** A user's content as Chat Completions parts: text parts keep their text, files their kind. */
function userContent(content: unknown): unknown {
  if (!Array.isArray(content)) return content;
  return (content as { type?: string; text?: unknown }[]).map((p) =>
    p.type === 'input_text' ? { type: 'text', text: p.text } : { type: p.type },
  );
}

/** A Responses API request's `input` (and `instructions`) as Chat Completions messages. */
function messagesOfInput(body: { input?: unknown; instructions?: unknown }): WireMessage[] {
  const messages: WireMessage[] = [];
  if (typeof body.instructions === 'string') messages.push({ role: 'system', content: body.instructions });
  const items: Item[] =
    typeof body.input === 'string'
      ? [{ role: 'user', content: body.input }]
      : Array.isArray(body.input)
        ? (body.input as Item[])
        : [];
  for (const item of items) {
    const last = messages[messages.length - 1];
    if (item.type === 'function_call') {
      const call = {
        id: String(item.call_id),
        function: { name: String(item.name), arguments: String(item.arguments) },
      };
      // The calls of one answer follow its text item: they join the assistant message it began.
      if (last?.role === 'assistant') last.tool_calls = [...(last.tool_calls ?? []), call];
      else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
    } else if (item.type === 'function_call_output') {
      messages.push({ role: 'tool', tool_call_id: String(item.call_id), content: item.output });
    } else if (item.role === 'assistant') {
      messages.push({ role: 'assistant', content: partsText(item.content) });
    } else if (typeof item.role === 'string') {
      messages.push({ role: item.role, content: item.role === 'user' ? userContent(item.content) : item.content });
    }
    // Reasoning items carry nothing the demo reads.
  }
  return messages;
}

/** Reads a recorded request of either API as the demo's messages, tools and tool choice. */
export function demoRequestOf(request: RecordedRequest): DemoRequest {
  const body = (request.body ?? {}) as {
    messages?: WireMessage[];
    input?: unknown;
    instructions?: unknown;
    tools?: { name?: string; function?: { name: string } }[];
    tool_choice?: unknown;
  };
  const chat = Array.isArray(body.messages);
  return {
    messages: chat ? body.messages! : messagesOfInput(body),
    tools: (body.tools ?? []).flatMap((t) => {
      const name = chat ? t.function?.name : t.name;
      return typeof name === 'string' ? [name] : [];
    }),
    ...(body.tool_choice !== undefined ? { toolChoice: body.tool_choice } : {}),
  };
}
