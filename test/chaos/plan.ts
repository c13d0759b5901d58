/**
 * What the chaos run will do, decided up front from the seed: the
 * conversations, their turns, and the "coverage" scenarios that make sure
 * every kind of fault happens at least once even in a small run.
 */
import type { ModelApi } from '../../src/contract/model-api';
import { Rng } from './random';

/** A tool call the scripted model can make. */
export type CallKind =
  | 'find_customer'
  | 'list_orders'
  | 'refund_small'
  | 'refund_large'
  | 'check_stock'
  | 'check_stock_fail_first'
  | 'unknown_tool'
  | 'malformed_arguments'
  /** `export_orders`, a result of megabytes (near and over Temporal's 2 MB payload limit). */
  | 'export_large'
  /** Arguments over `TOOL_ARGUMENTS_MAX_BYTES`. */
  | 'huge_arguments'
  /** A handoff to the conversation's other agent (`transfer_to_<agent>`), where one is offered. */
  | 'handoff'
  /**
   * The back desk agent called as a tool (`ask_backdesk`), where it is offered: a child conversation with its own calls
   * and approvals.
   */
  | 'sub_agent';

/**
 * The ways a decision reaches a conversation. Through the HTTP API (`api`),
 * the project's CLI talking to it (`cli`), or a service holding the signing
 * key (`signed_signal`), it is signed and applies. Around the API it is not
 * signed, and the workers (which hold the key) refuse it: `client_unsigned`
 * (`AgentClient.signalDecision`), `temporal_cli_unsigned` (`temporal workflow
 * signal`), `raw_malformed` (a signal whose payload is not a decision); the
 * person then decides through the API.
 */
export const DECISION_PATHS = [
  'api',
  'cli',
  'signed_signal',
  'client_unsigned',
  'temporal_cli_unsigned',
  'raw_malformed',
] as const;

export type DecisionPath = (typeof DECISION_PATHS)[number];

/** A fault the model injects on a conversation's first request. */
export type RequestFault = 'model_500' | 'model_slow' | 'model_429' | 'context_length_exceeded';

/** A user message at the size limit (accepted whole) or over it (refused by the client). */
export type UserMessageFault = 'near_limit' | 'over_limit';

/** `continueAsNewAfterEvents` of the conversations that continue as new between most turns. */
export const LOW_CONTINUE_AS_NEW_EVENTS = 40;

/** What the driver does with a batch of calls waiting for approval. */
export type ApprovalAction =
  'approve_all' | 'reject_all' | 'approve_one' | 'decide_twice' | 'cancel' | 'interrupt' | 'timeout';

/**
 * Where a reset goes back to, among the completed workflow tasks of the conversation's current run: the last one
 * (`last`, made while the conversation is idle after a turn), one of the turn in flight (`mid_turn`, before a model
 * call or a tool ran), any one of the run (`anywhere`, earlier turns included), or the last one while calls wait for a
 * person (`waiting`).
 */
export type ResetKind = 'last' | 'mid_turn' | 'anywhere' | 'waiting';

/** A reset the driver makes in a conversation: its kind, from which of the conversation's messages on. */
export interface PlannedReset {
  kind: ResetKind;
  /** The driver makes it during (or, for `last`, after) the turn of this message or a later one (1-based). */
  fromMessage: number;
}

/**
 * A fork the driver makes of a conversation: while calls wait for a person (at the last message), or after its
 * script (at a random seq or turn); the fork is then sent messages and settled like any conversation, and forked
 * again now and then.
 */
export type PlannedFork = 'while_waiting' | 'after';

/** A fixed start for a conversation, so a run covers every fault kind. */
export interface CoverageScenario {
  name: string;
  /**
   * Tool calls of the conversation's first model reply (and of later turns' first, until `firstAction` was performed).
   */
  firstCalls: CallKind[];
  /**
   * What the driver does with the first batch waiting for approval (its own, or inside an agent it called as a tool).
   */
  firstAction?: ApprovalAction;
  /** Tool calls of the first model reply inside the first agent it calls as a tool (`sub_agent`). */
  childCalls?: CallKind[];
  /** A fault on the conversation's first model request. */
  firstRequestFault?: RequestFault;
  /** Its first user message is at or over the size limit. */
  userMessage?: UserMessageFault;
  /** Its first final answer is megabytes long. */
  hugeAnswer?: boolean;
  /** It continues as new between most turns. */
  lowContinueAsNew?: boolean;
  /** How the conversation's model names its tool calls (random when unset). */
  ids?: 'per-response' | 'duplicated';
  /** The ways its first decisions are sent, in order (random after). */
  paths?: DecisionPath[];
  /** It is with the chaos run's agents (random when unset). */
  agent?: boolean;
  /**
   * Its own `approvalTimeoutMs` (the run's when unset), for a scenario whose
   * decision must be applied: long enough to outlast a worker kill between
   * the call's request and the driver's decision.
   */
  approvalTimeoutMs?: number;
  /** A reset the driver makes in it. */
  reset?: PlannedReset;
  /** A fork the driver makes of it. */
  fork?: PlannedFork;
}

/** One conversation of the run. */
export interface ConversationPlan {
  index: number;
  /** Workflow id. */
  id: string;
  /** First word of every user message; the model server routes on it. */
  tag: string;
  /** Planned user turns (an interrupt on the last one adds one). */
  turns: number;
  coverage?: CoverageScenario;
  /** The agent it starts with (`input.agent`), for the half of the conversations with the run's agents. */
  agent?: string;
  /** Set for the share of conversations that continue as new between most turns. */
  continueAsNewAfterEvents?: number;
  /** A user message at or over the size limit, sent before its first turn. */
  userMessage?: UserMessageFault;
  /**
   * Set by the driver once the scenario's `firstAction` was performed. Until
   * then the model opens every turn with the scenario's calls, and the driver
   * adds a turn if the planned ones ran out (a batch can time out unseen while
   * workers are down).
   */
  coverageActionDone?: boolean;
  /** A reset the driver makes in it (only in conversations without agents: none calls an agent as a tool). */
  reset?: PlannedReset;
  /** A fork the driver makes of it. */
  fork?: PlannedFork;
  /** For a fork: the conversation it was forked from. */
  forkOf?: string;
  /**
   * The model API it names at its start (`input.model.api`); its forks and the agents it calls as tools inherit it.
   */
  modelApi: ModelApi;
}

/**
 * The agent the chaos run's agent conversations start with (`test/chaos/chaos-tools.ts` declares it and the one it
 * hands off to).
 */
export const CHAOS_FIRST_AGENT = 'desk';

/** The coverage scenarios, spread over the run's conversations. */
export const COVERAGE: readonly CoverageScenario[] = [
  {
    name: 'reject through the CLI, model 429',
    firstCalls: ['refund_large'],
    firstAction: 'reject_all',
    firstRequestFault: 'model_429',
    paths: ['cli'],
    fork: 'after',
  },
  {
    name: 'approval timeout, context window exceeded',
    firstCalls: ['refund_large'],
    firstAction: 'timeout',
    firstRequestFault: 'context_length_exceeded',
    reset: { kind: 'waiting', fromMessage: 1 },
  },
  {
    name: 'duplicate decision, message over the limit',
    firstCalls: ['refund_large', 'refund_large'],
    firstAction: 'decide_twice',
    userMessage: 'over_limit',
    reset: { kind: 'anywhere', fromMessage: 1 },
  },
  {
    name: 'cancel while a sub-agent waits, beside a handoff, message at the limit',
    firstCalls: ['sub_agent', 'find_customer', 'handoff'],
    childCalls: ['refund_large'],
    firstAction: 'cancel',
    userMessage: 'near_limit',
    agent: true,
  },
  {
    name: 'interrupt while waiting, huge answer',
    firstCalls: ['refund_large'],
    firstAction: 'interrupt',
    hugeAnswer: true,
    fork: 'while_waiting',
  },
  {
    name: 'tool failure, unknown tool, bad arguments, model 500',
    firstCalls: ['check_stock_fail_first', 'unknown_tool', 'malformed_arguments', 'refund_large'],
    firstAction: 'approve_all',
    firstRequestFault: 'model_500',
    ids: 'duplicated',
    paths: ['client_unsigned'],
    reset: { kind: 'mid_turn', fromMessage: 1 },
  },
  {
    name: 'approve inside a sub-agent through the API, slow model, small refund, large result, huge arguments',
    firstCalls: ['refund_small', 'list_orders', 'export_large', 'huge_arguments', 'sub_agent'],
    childCalls: ['refund_large'],
    firstAction: 'approve_all',
    firstRequestFault: 'model_slow',
    paths: ['api'],
    agent: true,
    approvalTimeoutMs: 20_000,
  },
  {
    name: 'approve one of two around the API beside a handoff, continue as new',
    firstCalls: ['refund_large', 'refund_large', 'handoff', 'check_stock'],
    agent: true,
    firstAction: 'approve_one',
    ids: 'per-response',
    lowContinueAsNew: true,
    paths: ['temporal_cli_unsigned', 'raw_malformed'],
  },
];

/** The share of a run's conversations on the Responses API unless told otherwise. */
export const DEFAULT_RESPONSES_SHARE = 0.5;

/**
 * The conversations of a run. `responsesShare` (0..1) of them, rounded and chosen by the seed, name the Responses API;
 * the others name Chat Completions.
 */
export function planConversations(
  runId: string,
  seed: string,
  count: number,
  responsesShare = DEFAULT_RESPONSES_SHARE,
): ConversationPlan[] {
  if (!(responsesShare >= 0 && responsesShare <= 1))
    throw new RangeError(`responsesShare must be between 0 and 1, got ${responsesShare}; pass e.g. 0.5 for half.`);
  const rng = new Rng(seed, 'plan');
  const plans: ConversationPlan[] = [];
  for (let i = 0; i < count; i++) {
    const id = `chaos-${runId}-${String(i).padStart(3, '0')}`;
    plans.push({ index: i, id, tag: `[${id}]`, turns: rng.int(1, 3), modelApi: 'chat' });
  }
  // Exactly the share (a small run gets both APIs), which ones drawn from a stream of its own.
  const apis = new Rng(seed, 'plan-api');
  const order = plans.map((p) => ({ p, key: apis.float() })).sort((a, b) => a.key - b.key);
  for (const { p } of order.slice(0, Math.round(count * responsesShare))) p.modelApi = 'responses';
  const covered = Math.min(COVERAGE.length, count);
  for (let j = 0; j < covered; j++) plans[Math.floor((j * count) / covered)].coverage = COVERAGE[j];
  // Streams of their own, so the choices above stay what the seed made them before these faults existed.
  const sizes = new Rng(seed, 'plan-sizes');
  const renewals = new Rng(seed, 'plan-continue-as-new');
  const agents = new Rng(seed, 'plan-agents');
  const goingBack = new Rng(seed, 'plan-going-back');
  for (const plan of plans) {
    if (agents.chance(0.5) || plan.coverage?.agent) plan.agent = CHAOS_FIRST_AGENT;
    const size = sizes.weighted({ none: 92, near_limit: 4, over_limit: 4 });
    plan.userMessage = plan.coverage?.userMessage ?? (size === 'none' ? undefined : size);
    if (plan.coverage?.lowContinueAsNew || renewals.chance(0.25))
      plan.continueAsNewAfterEvents = LOW_CONTINUE_AS_NEW_EVENTS;
    const reset = goingBack.weighted({ none: 70, last: 8, mid_turn: 8, anywhere: 7, waiting: 7 });
    const fork = goingBack.weighted({ none: 80, while_waiting: 8, after: 12 });
    const fromMessage = goingBack.int(1, plan.turns);
    // Resets only where no agent is called as a tool (a reset would leave an abandoned run's child behind), and forks
    // only of conversations on the run's approval timeout (the checks know it).
    if (plan.coverage) {
      if (plan.coverage.reset) plan.agent = undefined;
      plan.reset = plan.coverage.reset;
      plan.fork = plan.coverage.fork;
    } else {
      if (reset !== 'none' && !plan.agent) plan.reset = { kind: reset, fromMessage };
      if (fork !== 'none') plan.fork = fork;
    }
  }
  return plans;
}
