/**
 * The scripted model of the chaos run: for each conversation (found by the
 * tag that starts its first user message) random replies with 0–3 tool calls
 * or a final answer, and, as injected faults, HTTP 500s, 429s with
 * `Retry-After`, `context_length_exceeded` refusals, slow replies, answers of
 * megabytes, tool calls whose arguments are over the limit or whose results
 * are megabytes, and tool-call ids as some providers send them: restarted in
 * every response (`functions.NAME:0`) or repeated within one response. A
 * message with {@link PROBE_MARK} (the checks' last question) is answered
 * plainly. It reads requests of both APIs alike (`model-request.ts`); on the
 * Responses API most replies also carry reasoning, which the server sends as
 * an encrypted reasoning item the worker must keep and send back.
 */
import { TOOL_ARGUMENTS_MAX_BYTES } from '../../src/contract/activities';
import type { RecordedRequest, ScriptedReply } from '../../src/testing';
import type { ModelApi } from '../../src/contract/model-api';
import type { ScriptedToolCall } from '../../src/testing/types';
import { FAIL_FIRST_SKU } from './chaos-tools';
import { contextExceededBody, viewRequest, type RequestMessage } from './model-request';
import type { CallKind, ConversationPlan } from './plan';
import { Rng } from './random';

/** Orders the run inserts, with totals large enough that every refund fits. */
export const CHAOS_ORDERS = ['ord_chaos_1', 'ord_chaos_2', 'ord_chaos_3', 'ord_chaos_4'];

/** Faults the scripted model injected, by kind. */
export interface ModelFaultCounts {
  model_500: number;
  model_slow: number;
  unknown_tool: number;
  malformed_arguments: number;
  /** Responses whose tool-call ids restart at `functions.NAME:0`, as in every other response of the conversation. */
  reused_ids: number;
  /** Responses whose tool calls all share one id. */
  duplicate_ids: number;
  /** 429s with `Retry-After: 1`. */
  model_429: number;
  /** 400 `context_length_exceeded` for a request the worker believed fitted (the provider's window is smaller). */
  context_length_exceeded: number;
  /** Final answers of 1–3 MB. */
  huge_answer: number;
  /** Tool calls with arguments over `TOOL_ARGUMENTS_MAX_BYTES`. */
  huge_arguments: number;
  /** `export_orders` calls asking for megabytes. */
  large_result: number;
  /** Handoffs to the conversation's other agent (`transfer_to_<agent>`), beside other calls or alone. */
  handoff: number;
  /** Calls of the back desk agent as a tool (`ask_backdesk`): each runs a child conversation. */
  sub_agent: number;
}

/**
 * In the task of an agent called as a tool: the child's requests are scripted by its top-level conversation's script,
 * without its coverage scenario.
 */
const SUB_TASK_MARK = 'sub-task';

/** In a user message: the final checks' question whether the conversation still answers. */
export const PROBE_MARK = 'PROBE:';

/** A huge answer the model sent: the checks find it in the transcript, whole. */
export interface HugeAnswerSent {
  conversationId: string;
  /** Unique; the answer starts with it. */
  marker: string;
  length: number;
}

/**
 * The window a `context_length_exceeded` refusal states: the worker fits to three quarters of it and tries once more.
 */
const STATED_WINDOW_TOKENS = 16_000;
/** Sizes `export_orders` is asked for, in KB: under, near and over Temporal's 2 MB payload limit. */
const EXPORT_KILOBYTES = [600, 1_900, 2_200, 4_000];

/** How a conversation's scripted model names its tool calls. */
type IdScheme = 'unique' | 'per-response' | 'duplicated';
const ID_SCHEME_WEIGHTS: Record<IdScheme, number> = { unique: 5, 'per-response': 3, duplicated: 2 };

const CALL_WEIGHTS: Record<Exclude<CallKind, 'check_stock_fail_first' | 'handoff' | 'sub_agent'>, number> = {
  find_customer: 12,
  list_orders: 8,
  refund_small: 14,
  refund_large: 26,
  check_stock: 16,
  unknown_tool: 6,
  malformed_arguments: 6,
  export_large: 3,
  huge_arguments: 2,
};

/** Probabilities of the model's faults on any request. */
const P_500 = 0.07;
const P_429 = 0.04;
const P_CONTEXT = 0.03;
const P_SLOW = 0.08;
/** Of final answers. */
const P_HUGE_ANSWER = 0.03;
/**
 * At most this many 500s and 429s in a row for one conversation, so faults do not use up every attempt of a model call.
 */
const MAX_CONSECUTIVE_500 = 2;
/** Model calls with tools per turn, at most (then a final answer). */
const MAX_TOOL_STEPS = 3;
/** Of replies on the Responses API: they carry reasoning (a reasoning item before the answer's first item). */
const P_REASONING = 0.8;

interface ConversationScript {
  plan: ConversationPlan;
  rng: Rng;
  calls: number;
  consecutive500: number;
  /** The last request was refused as too large: the next (the worker's tighter retry) is answered. */
  lastWasContext: boolean;
  hugeAnswerDone: boolean;
  forcedFaultDone: boolean;
  coverageCallsSent: boolean;
  idScheme: IdScheme;
  /** Whether a response of the agent conversation adds a handoff: a stream of its own. */
  handoffRng: Rng;
  /** The handoff tools the last request offered (none for a conversation of one unnamed agent). */
  handoffs: string[];
  /** Whether a response also calls the back desk as a tool: a stream of its own. */
  subAgentRng: Rng;
  /** Whether the last request offered `ask_backdesk`. */
  agentToolOffered: boolean;
  /**
   * Whether the scenario's `childCalls` were sent (in an agent called as a tool; again in later ones until its
   * `firstAction` is done).
   */
  childCoverageSent: boolean;
  /** Whether a reply on the Responses API carries reasoning: a stream of its own. */
  reasoningRng: Rng;
}

/** What each API's endpoint received for the run's conversations, as the scripted model saw it. */
export interface ApiUse {
  /** The run's conversations (forks and agents called as tools counted with theirs) with requests here. */
  conversations: Set<string>;
  /** Requests the scripted model answered (with a reply or an injected fault). */
  requests: number;
  /** Replies that carried reasoning (Responses API only). */
  reasoningReplies: number;
}

/** Builds the responder and counts what it injects. */
export class ChaosModel {
  readonly faults: ModelFaultCounts = {
    model_500: 0,
    model_slow: 0,
    unknown_tool: 0,
    malformed_arguments: 0,
    reused_ids: 0,
    duplicate_ids: 0,
    model_429: 0,
    context_length_exceeded: 0,
    huge_answer: 0,
    huge_arguments: 0,
    large_result: 0,
    handoff: 0,
    sub_agent: 0,
  };
  /** Per API, what the scripted model answered. */
  readonly apis: Record<ModelApi, ApiUse> = {
    chat: { conversations: new Set(), requests: 0, reasoningReplies: 0 },
    responses: { conversations: new Set(), requests: 0, reasoningReplies: 0 },
  };
  /** Requests of a conversation on the other API than the one its plan names (its forks and agents inherit it). */
  readonly wrongApi: string[] = [];
  /**
   * Call ids (unique to the run) of tool calls the model wrote right after reasoning: wherever such a call is sent
   * back, its reasoning item must come just before it.
   */
  readonly reasoningLed = new Set<string>();
  readonly hugeAnswers: HugeAnswerSent[] = [];
  /** Model requests answered per conversation id (valid ones). */
  readonly requestsByConversation = new Map<string, number>();
  private readonly scripts = new Map<string, ConversationScript>();

  constructor(seed: string, plans: readonly ConversationPlan[]) {
    for (const plan of plans) {
      this.scripts.set(plan.tag, {
        plan,
        rng: new Rng(seed, 'model', plan.index),
        calls: 0,
        consecutive500: 0,
        lastWasContext: false,
        hugeAnswerDone: false,
        forcedFaultDone: false,
        coverageCallsSent: false,
        // A stream of its own, so the other choices stay what the seed made them before ids varied.
        idScheme: plan.coverage?.ids ?? new Rng(seed, 'ids', plan.index).weighted(ID_SCHEME_WEIGHTS),
        handoffRng: new Rng(seed, 'handoffs', plan.index),
        handoffs: [],
        subAgentRng: new Rng(seed, 'sub-agents', plan.index),
        agentToolOffered: false,
        childCoverageSent: false,
        reasoningRng: new Rng(seed, 'reasoning', plan.index),
      });
    }
  }

  /** The model server's responder. */
  readonly responder = (request: RecordedRequest): ScriptedReply => {
    const view = viewRequest(request);
    const reply = this.play(request, view.messages, view.toolNames);
    const script = this.scriptOf(view.messages);
    if (!script) return reply;
    const use = this.apis[view.api];
    use.requests++;
    use.conversations.add(script.plan.id);
    if (view.api !== script.plan.modelApi && this.wrongApi.length < 20)
      this.wrongApi.push(
        `request #${request.index} of ${script.plan.id} (on ${script.plan.modelApi}) went to ${view.api}`,
      );
    // Reasoning before the answer's first item, from a stream of its own, so the other choices stay what they were.
    if (view.api !== 'responses' || !answers(reply) || !script.reasoningRng.chance(P_REASONING)) return reply;
    use.reasoningReplies++;
    const first = firstCall(reply);
    // Ids restarted in every response (`functions.NAME:0`) name many calls: only a call the run's id names alone counts.
    if (first?.id?.startsWith('call_c')) this.reasoningLed.add(first.id);
    return withReasoning(reply, `Reasoning of ${script.plan.tag} before reply ${use.reasoningReplies}.`);
  };

  /** The script of the conversation whose messages these are (by the tag its first user message starts with). */
  private scriptOf(messages: readonly RequestMessage[]): ConversationScript | undefined {
    const firstUser = messages.find((m) => m.role === 'user');
    return this.scripts.get(typeof firstUser?.content === 'string' ? firstUser.content.split(' ')[0] : '');
  }

  private play(request: RecordedRequest, messages: RequestMessage[], toolNames: readonly string[]): ScriptedReply {
    const firstUser = messages.find((m) => m.role === 'user');
    const script = this.scriptOf(messages);
    if (!script) return { content: 'This conversation is not part of the chaos run.' };
    const tag = script.plan.tag;
    const id = script.plan.id;
    this.requestsByConversation.set(id, (this.requestsByConversation.get(id) ?? 0) + 1);
    const { rng, plan } = script;
    script.handoffs = toolNames.filter((name) => name.startsWith('transfer_to_'));
    script.agentToolOffered = toolNames.includes('ask_backdesk');
    const inChild = typeof firstUser?.content === 'string' && firstUser.content.startsWith(`${tag} ${SUB_TASK_MARK}`);
    const isFirstRequest = !messages.some((m) => m.role === 'assistant');
    const last = messages[messages.length - 1];
    if (last?.role === 'user' && typeof last.content === 'string' && last.content.includes(PROBE_MARK)) {
      return { content: `Still here (${plan.tag}).` };
    }
    const afterContext = script.lastWasContext;
    script.lastWasContext = false;

    if (isFirstRequest && !inChild && plan.coverage?.firstRequestFault && !script.forcedFaultDone) {
      script.forcedFaultDone = true;
      switch (plan.coverage.firstRequestFault) {
        case 'model_500':
          return this.serverError(script);
        case 'model_429':
          return this.tooManyRequests(script);
        case 'context_length_exceeded':
          return this.overContext(script, request);
        case 'model_slow':
          return this.slow(rng, this.reply(script, messages, isFirstRequest, inChild));
      }
    }
    if (script.consecutive500 < MAX_CONSECUTIVE_500 && rng.chance(P_500)) return this.serverError(script);
    if (script.consecutive500 < MAX_CONSECUTIVE_500 && rng.chance(P_429)) return this.tooManyRequests(script);
    script.consecutive500 = 0;
    if (!afterContext && rng.chance(P_CONTEXT)) return this.overContext(script, request);
    const reply = this.reply(script, messages, isFirstRequest, inChild);
    return rng.chance(P_SLOW) ? this.slow(rng, reply) : reply;
  }

  private serverError(script: ConversationScript): ScriptedReply {
    script.consecutive500++;
    this.faults.model_500++;
    return { kind: 'http_error', status: 500 };
  }

  private tooManyRequests(script: ConversationScript): ScriptedReply {
    script.consecutive500++;
    this.faults.model_429++;
    return { kind: 'http_error', status: 429, headers: { 'retry-after': '1' } };
  }

  /** The provider's refusal of a request over its (smaller than configured) window. */
  private overContext(script: ConversationScript, request: RecordedRequest): ScriptedReply {
    script.lastWasContext = true;
    this.faults.context_length_exceeded++;
    return { kind: 'http_error', status: 400, body: contextExceededBody(request, STATED_WINDOW_TOKENS) };
  }

  /** A final answer of 1–3 MB, starting with a marker the checks look for. */
  private hugeAnswer(script: ConversationScript): ScriptedReply {
    script.hugeAnswerDone = true;
    this.faults.huge_answer++;
    const marker = `HUGE-ANSWER-${script.plan.index}-${this.faults.huge_answer}`;
    const length = script.rng.int(1, 3) * 1024 * 1024;
    const line = `${script.plan.tag} a very long report line, as a model that does not stop might write it.\n`;
    const content = `${marker} ${line.repeat(Math.ceil(length / line.length))}`.slice(0, length);
    this.hugeAnswers.push({ conversationId: script.plan.id, marker, length });
    return { content };
  }

  private slow(rng: Rng, then: ScriptedReply): ScriptedReply {
    this.faults.model_slow++;
    return { kind: 'delay', ms: rng.int(1_000, 4_000), then };
  }

  private reply(
    script: ConversationScript,
    messages: RequestMessage[],
    isFirstRequest: boolean,
    inChild: boolean,
  ): ScriptedReply {
    const { rng, plan } = script;
    const last = messages[messages.length - 1];
    const coverageDue =
      !inChild && plan.coverage?.firstAction
        ? !plan.coverageActionDone && last?.role === 'user'
        : isFirstRequest && !script.coverageCallsSent;
    // Sent again in a later agent called as a tool while the scenario's action is not done (its call timed out unseen
    // while a worker was down).
    const childCoverageDue = plan.coverage?.firstAction ? !plan.coverageActionDone : !script.childCoverageSent;
    if (inChild && isFirstRequest && plan.coverage?.childCalls && childCoverageDue) {
      script.childCoverageSent = true;
      return {
        toolCalls: this.withIds(
          script,
          plan.coverage.childCalls.map((kind) => this.toolCall(script, kind)),
        ),
      };
    }
    if (plan.coverage && coverageDue) {
      script.coverageCallsSent = true;
      return {
        toolCalls: this.withIds(
          script,
          plan.coverage.firstCalls.map((kind) => this.toolCall(script, kind)),
        ),
      };
    }
    let lastUser = -1;
    messages.forEach((m, i) => {
      if (m.role === 'user') lastUser = i;
    });
    const stepsThisTurn = messages.slice(lastUser + 1).filter((m) => m.role === 'assistant').length;
    const pTools = stepsThisTurn >= MAX_TOOL_STEPS ? 0 : last?.role === 'tool' ? 0.3 : 0.7;
    if (rng.chance(pTools)) {
      const count = rng.int(1, 3);
      const calls = Array.from({ length: count }, () => this.toolCall(script, rng.weighted(CALL_WEIGHTS)));
      // Now and then the agent also hands the conversation on (twice, sometimes: the second is refused).
      if (script.handoffs.length > 0 && script.handoffRng.chance(0.25)) {
        calls.push(this.toolCall(script, 'handoff'));
        if (script.handoffRng.chance(0.2)) calls.push(this.toolCall(script, 'handoff'));
      }
      // Now and then it asks the back desk, as a tool, to do part of the work in a conversation of its own.
      if (script.agentToolOffered && script.subAgentRng.chance(0.2)) calls.push(this.toolCall(script, 'sub_agent'));
      return { toolCalls: this.withIds(script, calls) };
    }
    if ((plan.coverage?.hugeAnswer && !script.hugeAnswerDone) || rng.chance(P_HUGE_ANSWER))
      return this.hugeAnswer(script);
    return { content: `Done (${plan.tag}, step ${stepsThisTurn + 1} of this turn).` };
  }

  /** Replaces the ids of one response's calls as the conversation's provider would send them. */
  private withIds(script: ConversationScript, calls: ScriptedToolCall[]): ScriptedToolCall[] {
    if (script.idScheme === 'per-response') {
      this.faults.reused_ids++;
      return calls.map((call, i) => ({ ...call, id: `functions.${call.name}:${i}` }));
    }
    if (script.idScheme === 'duplicated' && calls.length > 1) {
      this.faults.duplicate_ids++;
      return calls.map((call) => ({ ...call, id: calls[0].id }));
    }
    return calls;
  }

  private toolCall(script: ConversationScript, kind: CallKind): ScriptedToolCall {
    const { rng, plan } = script;
    const id = `call_c${plan.index}_${++script.calls}`;
    const order = rng.pick(CHAOS_ORDERS);
    switch (kind) {
      case 'find_customer':
        return { id, name: 'find_customer', arguments: { query: rng.pick(['Ada', 'Grace', 'chaos', 'nobody']) } };
      case 'list_orders':
        return { id, name: 'list_orders', arguments: { customer_id: rng.pick(['cus_chaos', 'cus_ada']) } };
      case 'refund_small':
        return {
          id,
          name: 'issue_refund',
          arguments: { order_id: order, amount_cents: rng.int(100, 10_000), reason: 'chaos: small refund' },
        };
      case 'refund_large':
        return {
          id,
          name: 'issue_refund',
          arguments: { order_id: order, amount_cents: rng.int(10_001, 60_000), reason: 'chaos: needs approval' },
        };
      case 'check_stock':
        return { id, name: 'check_stock', arguments: { sku: `gear-${rng.int(1, 99)}` } };
      case 'check_stock_fail_first':
        return { id, name: 'check_stock', arguments: { sku: FAIL_FIRST_SKU } };
      case 'unknown_tool':
        this.faults.unknown_tool++;
        return { id, name: rng.pick(['launch_rocket', 'delete_everything']), arguments: {} };
      case 'export_large':
        this.faults.large_result++;
        return { id, name: 'export_orders', arguments: { kilobytes: rng.pick(EXPORT_KILOBYTES) } };
      case 'huge_arguments':
        this.faults.huge_arguments++;
        // Over the limit by a little or by a lot: such a call is answered tool_failed, never run.
        return {
          id,
          name: 'find_customer',
          arguments: {
            query: 'Ada Lovelace '.repeat(Math.ceil((TOOL_ARGUMENTS_MAX_BYTES * rng.pick([1.01, 2])) / 13)),
          },
        };
      case 'handoff':
        if (script.handoffs.length === 0) return { id, name: 'transfer_to_desk', arguments: {} }; // not offered: an unknown tool
        this.faults.handoff++;
        return { id, name: rng.pick(script.handoffs), arguments: {} };
      case 'sub_agent':
        this.faults.sub_agent++;
        return {
          id,
          name: 'ask_backdesk',
          arguments: { input: `${plan.tag} ${SUB_TASK_MARK} ${script.calls}: look into the orders of this customer.` },
        };
      case 'malformed_arguments':
        this.faults.malformed_arguments++;
        return rng.chance(0.5)
          ? { id, name: 'find_customer', arguments: '{"query":' }
          : { id, name: 'issue_refund', arguments: `{"order_id": "${order}", "amount_cents": }` };
    }
  }
}

/** Whether the reply (after any delay) is an answer, not a fault. */
function answers(reply: ScriptedReply): boolean {
  if (reply.kind === 'delay') return answers(reply.then);
  return reply.kind === undefined || reply.kind === 'message';
}

/** The first tool call of the answer (after any delay), when the answer has no text before it. */
function firstCall(reply: ScriptedReply): ScriptedToolCall | undefined {
  if (reply.kind === 'delay') return firstCall(reply.then);
  if (reply.kind !== undefined && reply.kind !== 'message') return undefined;
  return reply.content ? undefined : reply.toolCalls?.[0];
}

/** The answer (after any delay) with `reasoning` before its first item. */
function withReasoning(reply: ScriptedReply, reasoning: string): ScriptedReply {
  if (reply.kind === 'delay') return { ...reply, then: withReasoning(reply.then, reasoning) };
  return reply.kind === undefined || reply.kind === 'message' ? { ...reply, reasoningContent: reasoning } : reply;
}
