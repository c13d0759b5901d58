/**
 * Message shapes of a conversation, in the OpenAI Chat Completions wire format.
 *
 * Pure module: imported by workflow code (deterministic sandbox) and by
 * activities alike, so it must not import anything that does I/O.
 */
import type { MessageFile } from './message-files';

/** The role of a message in the transcript. */
export type Role = 'system' | 'user' | 'assistant' | 'tool';

/** A tool call as the model requested it (arguments are the raw JSON text). */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** A message body, exactly as it is stored in PostgreSQL and sent to the model. */
export type ChatMessage =
  | { role: 'system'; content: string }
  | {
      role: 'user';
      content: string;
      /** Images and documents the user sent, by reference; the model call sends them as content parts. */
      files?: MessageFile[];
    }
  | {
      role: 'assistant';
      content: string | null;
      tool_calls?: ToolCall[];
      /** DeepSeek thinking mode: must travel back with its tool calls. */
      reasoning_content?: string;
      /** The agent that wrote it (conversations with named agents); not sent to the model. */
      name?: string;
    }
  | { role: 'tool'; tool_call_id: string; content: string };

/** What the workflow keeps of a tool call: enough for the pairing rules and for people. */
export interface ToolCallMeta {
  id: string;
  name: string;
  /** Size of the raw arguments text, in UTF-16 code units. */
  argumentsLength: number;
}

/**
 * The structure of one message, without its body. The workflow keeps only
 * this in memory (and so in its history); bodies live in PostgreSQL.
 */
export interface MessageMeta {
  /** Position in the conversation, from 0, assigned by the workflow. */
  seq: number;
  role: Role;
  /** Assistant messages: the calls it made, in order. */
  toolCalls?: ToolCallMeta[];
  /** Tool messages: the call this message answers. */
  toolCallId?: string;
  /** Size of the body's text content, in UTF-16 code units. */
  contentLength: number;
  /** Assistant messages of conversations with named agents: the agent that wrote it. */
  agent?: string;
  /**
   * Assistant messages: the key of the stored model response it is (its full
   * body in `model_responses`, readable before the transcript row is
   * written; the stream's events name it too).
   */
  responseKey?: string;
}

/** Describes a message body as the structure the workflow keeps. */
export function describeMessage(seq: number, message: ChatMessage): MessageMeta {
  switch (message.role) {
    case 'assistant': {
      const meta: MessageMeta = { seq, role: 'assistant', contentLength: message.content?.length ?? 0 };
      if (message.name !== undefined) meta.agent = message.name;
      if (message.tool_calls && message.tool_calls.length > 0) {
        meta.toolCalls = message.tool_calls.map((call) => ({
          id: call.id,
          name: call.function.name,
          argumentsLength: call.function.arguments.length,
        }));
      }
      return meta;
    }
    case 'tool':
      return { seq, role: 'tool', toolCallId: message.tool_call_id, contentLength: message.content.length };
    default:
      return { seq, role: message.role, contentLength: message.content.length };
  }
}
