/**
 * The options of `handoff(agent, options)` where they run: in the model
 * call's activity. `isEnabled` decides which handoffs a call offers; a
 * handoff call's input is checked and `onHandoff` runs when the call is
 * planned, and the plan records both; the new agent's calls apply the input
 * filter the handoff's result carries to what they send.
 */
import { logger } from '../../common/logger';
import type { ToolCallPlan } from '../../contract/activities';
import { type HandoffInputFilter, type HandoffRecord } from '../../contract/handoffs';
import type { ChatMessage, ToolCall } from '../../contract/messages';
import { TOOL_DEFAULTS } from '../../contract/tool-defaults';
import type { Agent, AgentRegistry } from '../../tools/agents';
import type { ResolvedHandoff } from '../../tools/handoff';

/** What a handoff's options see of the model call. */
export interface HandoffCallContext {
  conversationId: string;
  agent?: string;
  signal: AbortSignal;
}

/** The largest JSON an `onHandoff` return value is recorded with; past it only its size is. */
const ON_HANDOFF_RECORD_LIMIT = 4096;

/**
 * The handoffs `speaker` offers this call: those whose `isEnabled` is true
 * now (a predicate that throws counts as false, and is logged).
 */
export async function enabledHandoffs(
  agents: AgentRegistry | undefined,
  speaker: Agent | undefined,
  context: HandoffCallContext,
): Promise<readonly ResolvedHandoff[]> {
  if (!agents || !speaker) return [];
  const all = agents.handoffsOf(speaker);
  const enabled = await Promise.all(all.map((h) => isEnabled(h, { ...context, agent: speaker.name })));
  return all.filter((_, i) => enabled[i]);
}

async function isEnabled(h: ResolvedHandoff, context: HandoffCallContext & { agent: string }): Promise<boolean> {
  const option = h.options.isEnabled;
  if (option === undefined || typeof option === 'boolean') return option ?? true;
  try {
    return Boolean(await option(context));
  } catch (err) {
    logger.warn(
      {
        conversationId: context.conversationId,
        agent: context.agent,
        tool: h.toolName,
        error: (err as Error)?.message ?? String(err),
      },
      'A handoff isEnabled check threw; the handoff is not offered',
    );
    return false;
  }
}

/**
 * The plan of a handoff call: its input checked against `inputType` (a
 * mismatch is settled as `invalid_arguments` and the conversation stays),
 * then `onHandoff` run, for the response's first handoff only (the workflow
 * refuses the others); one that throws refuses the handoff. What they did is
 * the plan's `handoffRecord`.
 */
export async function planHandoffCall(
  h: ResolvedHandoff,
  call: ToolCall,
  calls: readonly ToolCall[],
  handoffOf: (toolName: string) => ResolvedHandoff | undefined,
  context: HandoffCallContext,
): Promise<ToolCallPlan> {
  const base = {
    toolCallId: call.id,
    name: call.function.name,
    needsApproval: false,
    idempotent: true,
    timeoutMs: TOOL_DEFAULTS.timeoutMs,
    maxAttempts: 1,
  };
  const record: HandoffRecord = {
    toolName: call.function.name,
    ...(h.options.inputFilter ? { inputFilter: h.options.inputFilter } : {}),
  };
  const verdict = h.checkInput?.(call.function.arguments);
  if (verdict && !verdict.ok) {
    return {
      ...base,
      handoffRecord: record,
      problem: {
        reason: 'invalid_arguments',
        message: `${call.function.name} hands off to the ${h.target} agent with arguments matching its schema: ${verdict.problem} Call it again with arguments that match.`,
      },
    };
  }
  if (verdict) record.input = verdict.value;
  const earlier = calls.slice(0, calls.indexOf(call)).some((c) => {
    const other = handoffOf(c.function.name);
    return other !== undefined && other.checkInput?.(c.function.arguments).ok !== false;
  });
  if (h.options.onHandoff && !earlier) {
    const ran = await runOnHandoff(h, call, record.input, context);
    record.onHandoff = ran;
    if ('threw' in ran) {
      return {
        ...base,
        handoffRecord: record,
        problem: {
          reason: 'handoff_refused',
          message: `The handoff to the ${h.target} agent failed: ${ran.threw} The conversation stays with this agent.`,
        },
      };
    }
  }
  return { ...base, handoff: h.target, handoffRecord: record };
}

async function runOnHandoff(
  h: ResolvedHandoff,
  call: ToolCall,
  input: unknown,
  context: HandoffCallContext,
): Promise<NonNullable<HandoffRecord['onHandoff']>> {
  try {
    const returned: unknown = await h.options.onHandoff!(
      {
        conversationId: context.conversationId,
        agent: context.agent ?? '',
        signal: context.signal,
        target: h.target,
        toolCallId: call.id,
      },
      input,
    );
    if (returned === undefined) return {};
    const text = JSON.stringify(returned);
    if (text === undefined) return {};
    return text.length > ON_HANDOFF_RECORD_LIMIT
      ? { returned: { truncated: text.length } }
      : { returned: JSON.parse(text) };
  } catch (err) {
    return { threw: err instanceof Error ? err.message : String(err) };
  }
}

/** The messages a call sends, with their transcript seqs when known (see request.ts). */
interface Outgoing {
  messages: ChatMessage[];
  seqs?: number[];
}

/** What an input filter left of the conversation before the handoff, for the stored request report. */
export interface HandoffFilterNote {
  /** The agent the handoff moved the conversation to (the one answering). */
  agent: string;
  filter: HandoffInputFilter;
  /** Messages before the handoff that were not sent. */
  omitted: number;
  /** The seq of the first message after the system message that was sent, when the seqs are known. */
  firstSeq?: number;
}

/**
 * The messages the current agent sends after a handoff with an input filter
 * moved the conversation to it: the handoff's result in the transcript
 * carries the filter (so the same transcript is always sent the same way,
 * whatever the code declares now), applied to what came before it. The last
 * handoff counts; it must name `speaker`.
 */
export function filteredAfterHandoff<T extends Outgoing>(
  loaded: T,
  speaker: Agent | undefined,
): { outgoing: T; note?: HandoffFilterNote } {
  if (!speaker) return { outgoing: loaded };
  const found = lastHandoff(loaded.messages);
  if (!found || found.agent !== speaker.name || !found.filter) return { outgoing: loaded };
  const { messages } = loaded;
  // The response that handed off (its message and results) closes the part the filter applies to.
  let end = found.index + 1;
  while (messages[end]?.role === 'tool') end++;
  const callId = (messages[found.index] as Extract<ChatMessage, { role: 'tool' }>).tool_call_id;
  const madeIt = (m: ChatMessage) => m.role === 'assistant' && (m.tool_calls ?? []).some((c) => c.id === callId);
  let start = found.index;
  while (start > 0 && !madeIt(messages[start])) start--;
  const keep = keptBefore(messages, start, end, found.filter);
  const kept = new Set(keep.map((k) => k.index));
  const rewritten = new Map(keep.flatMap((k) => (k.message ? [[k.index, k.message] as const] : [])));
  const indexes = messages.flatMap((_, i) => (i >= end || kept.has(i) ? [i] : []));
  const outgoing = {
    ...loaded,
    messages: indexes.map((i) => rewritten.get(i) ?? messages[i]),
    seqs: loaded.seqs ? indexes.map((i) => loaded.seqs![i]) : undefined,
  };
  const firstIndex = indexes.find((i) => messages[i].role !== 'system');
  return {
    outgoing,
    note: {
      agent: found.agent,
      filter: found.filter,
      omitted: messages.length - indexes.length,
      ...(loaded.seqs && firstIndex !== undefined ? { firstSeq: loaded.seqs[firstIndex] } : {}),
    },
  };
}

/**
 * Which messages before `end` a filter keeps (the handoff's response is
 * `start` to `end`): their index, and the message when it was rewritten.
 * `keepLast` counts the messages before the handoff's response.
 */
function keptBefore(
  messages: readonly ChatMessage[],
  start: number,
  end: number,
  filter: HandoffInputFilter,
): { index: number; message?: ChatMessage }[] {
  const system = messages[0]?.role === 'system' ? [{ index: 0 }] : [];
  const pick = (from: number, to: number) => {
    const picked: { index: number; message?: ChatMessage }[] = [];
    for (let i = from; i < to; i++) {
      const m = messages[i];
      if (!filter.dropToolCalls || (m.role !== 'tool' && !(m.role === 'assistant' && m.tool_calls?.length))) {
        picked.push({ index: i });
      } else if (m.role === 'assistant' && typeof m.content === 'string' && m.content.trim() !== '') {
        const { tool_calls: _calls, ...text } = m;
        picked.push({ index: i, message: text });
      }
    }
    return picked;
  };
  let before = pick(system.length, Math.max(start, system.length));
  if (filter.keepLast !== undefined) {
    before = before.slice(Math.max(0, before.length - filter.keepLast));
    // A result whose call was cut cannot be sent alone.
    while (before.length > 0 && messages[before[0].index].role === 'tool') before.shift();
  }
  return [...system, ...before, ...pick(Math.max(start, system.length), end)];
}

/** The last taken handoff in `messages`: where its result is, the agent it names and the filter it carries. */
function lastHandoff(
  messages: readonly ChatMessage[],
): { index: number; agent: string; filter?: HandoffInputFilter } | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role !== 'tool') continue;
    const result = handoffResult(m.content);
    if (result) return { index: i, ...result };
  }
  return undefined;
}

/** A handoff's result: `{"assistant": "<agent>"}`, with `input` and `inputFilter` when its handoff had them. */
function handoffResult(content: unknown): { agent: string; filter?: HandoffInputFilter } | undefined {
  if (typeof content !== 'string' || !content.startsWith('{"assistant":')) return undefined;
  try {
    const parsed = JSON.parse(content) as Record<string, unknown>;
    const keys = Object.keys(parsed);
    if (typeof parsed.assistant !== 'string' || keys.some((k) => !['assistant', 'input', 'inputFilter'].includes(k)))
      return undefined;
    const filter = parsed.inputFilter;
    return {
      agent: parsed.assistant,
      ...(typeof filter === 'object' && filter !== null ? { filter: filter as HandoffInputFilter } : {}),
    };
  } catch {
    return undefined;
  }
}
