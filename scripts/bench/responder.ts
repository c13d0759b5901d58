/**
 * The bench's scripted model: every user message says how its turn should go
 * (`bench steps=10 latency=200 tool=bench_noop`); the model answers the first
 * `steps` calls of the turn with one tool call and the next one with a final
 * answer, each after `latency` ms. One model server serves every phase.
 */
import type { RecordedRequest, Responder, ScriptedReply } from '../../src/testing';

/** What a bench turn asks of the scripted model. */
export interface TurnScript {
  /** Model calls that answer with a tool call before the final answer. */
  steps: number;
  /** Milliseconds the model takes for every answer. */
  latencyMs: number;
  /** The tool it calls. */
  tool: string;
  /** A word that tells this turn's model requests apart (the model ignores it). */
  tag?: string;
}

/** Start of every final answer, so a finished turn can be recognised in the transcript. */
export const ANSWER_PREFIX = 'bench answer';

/** The user message that scripts a turn. */
export function turnMessage(script: TurnScript): string {
  return `bench steps=${script.steps} latency=${script.latencyMs} tool=${script.tool}${script.tag ? ` tag=${script.tag}` : ''}`;
}

/** Reads a {@link turnMessage}; undefined for any other text. */
export function parseTurnMessage(text: string): TurnScript | undefined {
  const m = /^bench steps=(\d+) latency=(\d+) tool=([\w-]+)(?: tag=([\w-]+))?$/.exec(text.trim());
  return m ? { steps: Number(m[1]), latencyMs: Number(m[2]), tool: m[3], ...(m[4] ? { tag: m[4] } : {}) } : undefined;
}

interface WireMessage {
  role: string;
  content?: unknown;
}

/**
 * What the scripted model answers to a Chat Completions request whose last
 * user message is a {@link turnMessage}: a tool call while fewer than `steps`
 * tool results follow that message, then the final answer.
 */
export function scriptedReply(messages: WireMessage[]): ScriptedReply {
  const lastUser = messages.map((m) => m.role).lastIndexOf('user');
  const script = parseTurnMessage(String(messages[lastUser]?.content ?? ''));
  if (!script) return { content: `${ANSWER_PREFIX}: not a bench message` };
  const done = messages.slice(lastUser + 1).filter((m) => m.role === 'tool').length;
  const reply: ScriptedReply =
    done < script.steps
      ? { toolCalls: [{ name: script.tool, arguments: { i: done } }] }
      : { content: `${ANSWER_PREFIX} after ${done} tool calls` };
  return script.latencyMs > 0 ? { kind: 'delay', ms: script.latencyMs, then: reply } : reply;
}

/** The model server's responder: {@link scriptedReply} of the request's messages. */
export const benchResponder: Responder = (request: RecordedRequest) =>
  scriptedReply(((request.body as { messages?: WireMessage[] }).messages ?? []) as WireMessage[]);
