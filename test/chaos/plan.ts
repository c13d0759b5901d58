/**
 * What the chaos run will do, decided up front from the seed: the
 * conversations, their turns, and the "coverage" scenarios that make sure
 * every kind of fault happens at least once even in a small run.
 */
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
  | 'malformed_arguments';

/** What the driver does with a batch of calls waiting for approval. */
export type ApprovalAction = 'approve_all' | 'reject_all' | 'approve_one' | 'decide_twice' | 'cancel' | 'interrupt' | 'timeout';

/** A fixed start for a conversation, so a run covers every fault kind. */
export interface CoverageScenario {
  name: string;
  /** Tool calls of the conversation's first model reply (and of later turns' first, until `firstAction` was performed). */
  firstCalls: CallKind[];
  /** What the driver does with the first batch waiting for approval. */
  firstAction?: ApprovalAction;
  /** A fault on the conversation's first model request. */
  firstRequestFault?: 'model_500' | 'model_slow';
  /** How the conversation's model names its tool calls (random when unset). */
  ids?: 'per-response' | 'duplicated';
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
  /**
   * Set by the driver once the scenario's `firstAction` was performed. Until
   * then the model opens every turn with the scenario's calls, and the driver
   * adds a turn if the planned ones ran out (a batch can time out unseen while
   * workers are down).
   */
  coverageActionDone?: boolean;
}

/** The coverage scenarios, spread over the run's conversations. */
export const COVERAGE: readonly CoverageScenario[] = [
  { name: 'reject', firstCalls: ['refund_large'], firstAction: 'reject_all' },
  { name: 'approval timeout', firstCalls: ['refund_large'], firstAction: 'timeout' },
  { name: 'duplicate decision', firstCalls: ['refund_large', 'refund_large'], firstAction: 'decide_twice' },
  { name: 'cancel while waiting', firstCalls: ['refund_large', 'find_customer'], firstAction: 'cancel' },
  { name: 'interrupt while waiting', firstCalls: ['refund_large'], firstAction: 'interrupt' },
  {
    name: 'tool failure, unknown tool, bad arguments, model 500',
    firstCalls: ['check_stock_fail_first', 'unknown_tool', 'malformed_arguments', 'refund_large'],
    firstAction: 'approve_all',
    firstRequestFault: 'model_500',
    ids: 'duplicated',
  },
  { name: 'slow model, small refund', firstCalls: ['refund_small', 'list_orders'], firstRequestFault: 'model_slow' },
  { name: 'approve one of two', firstCalls: ['refund_large', 'refund_large', 'check_stock'], firstAction: 'approve_one', ids: 'per-response' },
];

/** The conversations of a run. */
export function planConversations(runId: string, seed: string, count: number): ConversationPlan[] {
  const rng = new Rng(seed, 'plan');
  const plans: ConversationPlan[] = [];
  for (let i = 0; i < count; i++) {
    const id = `chaos-${runId}-${String(i).padStart(3, '0')}`;
    plans.push({ index: i, id, tag: `[${id}]`, turns: rng.int(1, 3) });
  }
  const covered = Math.min(COVERAGE.length, count);
  for (let j = 0; j < covered; j++) plans[Math.floor((j * count) / covered)].coverage = COVERAGE[j];
  return plans;
}
