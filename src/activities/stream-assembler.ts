/**
 * Assembles a streamed Chat Completions response (SSE chunks) into one
 * assistant message, and says whether the stream ended properly. Pure.
 *
 * Tool calls arrive as `delta.tool_calls[]` fragments keyed by `index`: the
 * first fragment carries the id and name, later ones append to the
 * arguments. Some providers repeat `"id": ""` and `"name": ""` in later
 * fragments, so only a non-empty value overwrites a stored one.
 */
import type { TokenUsage } from '../contract';

/** The part of a streamed chunk the assembler reads. */
export interface StreamChunk {
  choices?: {
    index?: number;
    delta?: {
      content?: string | null;
      reasoning_content?: string | null;
      tool_calls?: {
        index: number;
        id?: string | null;
        type?: string | null;
        function?: { name?: string | null; arguments?: string | null } | null;
      }[];
    } | null;
    finish_reason?: string | null;
  }[];
  usage?: { prompt_tokens: number; completion_tokens: number } | null;
}

/** A tool call as assembled so far. */
export interface AssembledToolCall {
  index: number;
  id: string;
  name: string;
  arguments: string;
}

/** What the stream amounted to. */
export interface AssembledResponse {
  content: string;
  reasoningContent?: string;
  toolCalls: AssembledToolCall[];
  finishReason: string | null;
  usage?: TokenUsage;
  /** Why the response cannot be trusted (empty when it can). */
  problems: string[];
}

/** Collects chunks; {@link StreamAssembler.finish} tells whether the response is complete. */
export class StreamAssembler {
  private content = '';
  private reasoning: string | undefined;
  private readonly calls = new Map<number, AssembledToolCall>();
  private finishReason: string | null = null;
  private usage: AssembledResponse['usage'];
  private chunks = 0;

  /** Adds one chunk. Returns the text it added to the content, for delivery to people. */
  push(chunk: StreamChunk): string {
    this.chunks++;
    if (chunk.usage) {
      this.usage = { promptTokens: chunk.usage.prompt_tokens, completionTokens: chunk.usage.completion_tokens };
    }
    let text = '';
    for (const choice of chunk.choices ?? []) {
      if ((choice.index ?? 0) !== 0) continue;
      const delta = choice.delta ?? {};
      if (delta.content) {
        this.content += delta.content;
        text += delta.content;
      }
      if (delta.reasoning_content) this.reasoning = (this.reasoning ?? '') + delta.reasoning_content;
      for (const fragment of delta.tool_calls ?? []) {
        const call = this.calls.get(fragment.index) ?? { index: fragment.index, id: '', name: '', arguments: '' };
        if (fragment.id) call.id = fragment.id;
        if (fragment.function?.name) call.name = fragment.function.name;
        if (fragment.function?.arguments) call.arguments += fragment.function.arguments;
        this.calls.set(fragment.index, call);
      }
      if (choice.finish_reason) this.finishReason = choice.finish_reason;
    }
    return text;
  }

  /** Number of chunks seen. */
  get chunkCount(): number {
    return this.chunks;
  }

  /**
   * The assembled response. Problems make it untrustworthy: a stream that
   * ended without a finish_reason (cut), a `length` finish with tool calls
   * (truncated arguments), or a tool call without a name. A call without an
   * id is not a problem: the model activity gives it one. Arguments that
   * are not JSON in a properly finished response are the model's choice, not
   * a broken stream: they are answered with an error tool message instead.
   */
  finish(): AssembledResponse {
    const toolCalls = [...this.calls.values()].sort((a, b) => a.index - b.index);
    const problems: string[] = [];
    if (this.finishReason === null)
      problems.push('the stream ended without a finish_reason (connection cut mid-response)');
    if (this.finishReason === 'length' && toolCalls.length > 0) {
      problems.push('finish_reason "length" in the middle of tool calls: their arguments may be truncated');
    }
    for (const call of toolCalls) {
      if (!call.name) problems.push(`tool call #${call.index} has no function name`);
    }
    return {
      content: this.content,
      reasoningContent: this.reasoning,
      toolCalls,
      finishReason: this.finishReason,
      usage: this.usage,
      problems,
    };
  }
}
