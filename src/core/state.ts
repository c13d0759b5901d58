/**
 * A conversation's state, as plain records: what continue-as-new carries
 * ({@link Kept}, the contract's `CarriedConversation` filled in), what one run
 * adds ({@link CoreState}), and what one turn adds ({@link TurnState}). The
 * rules that read and change it are free functions in the modules beside this
 * one, by concern; `ConversationCore` is their facade. Pure.
 */
import type { ExtractedAgentResult } from '../contract/activities';
import type { CarriedConversation } from '../contract/carried-conversation';
import type { ConversationInput } from '../contract/conversation-input';
import type { DecisionResult } from '../contract/decisions';
import type { ConversationSearchAttributes } from '../contract/search-attribute-names';
import type { TokenUsage } from '../contract/turn-records';
import type { WaitedCall } from '../contract/turn-ends';
import type { GuardrailResult } from '../contract/guardrail-results';
import type { PendingBelow } from '../contract/waiting-calls';
import type { ConversationStatus } from '../contract/conversation-state';
import { CONVERSATION_DEFAULTS, DEDUP_MEMORY } from '../contract/limits';
import type { TurnRecord } from '../contract/turn-records';
import type { MessageMeta } from '../contract/messages';
import type { ToolCallBatch } from './batch';
import { Inbox } from './inbox';
import type { CallLine } from './summaries';
import { TranscriptWrites } from './writes';
import type { CoreEnvironment, PublishedUsage } from './edge';

/** Where the conversation stands between its turns, and while one runs. */
export type Phase = 'idle' | 'running' | 'failed' | 'closed';

/**
 * What continue-as-new carries and the next run starts from, as this run
 * keeps it: the contract's `CarriedConversation`, with a value for every
 * field. The queue, the seqs, the decisions and a cancel waiting for its turn
 * are kept by their own rules ({@link CoreState.inbox}, `writes`,
 * `decisions`, `stopReason`) and added by {@link carryOver}.
 */
export type Kept = Required<Omit<CarriedConversation, KeptApart | KeptWhenSet | 'phase'>> &
  Pick<CarriedConversation, KeptWhenSet> & { phase: Phase };

/** Fields of {@link Kept} that have no value until something sets them. */
type KeptWhenSet = 'lastError' | 'agent' | 'lastInput' | 'regenerate' | 'grants' | 'comeBacks';

type KeptApart = 'nextSeq' | 'receivedMessageIds' | 'decisions' | 'inbox' | 'pendingCancel';

/** A conversation's first run starts from these. */
const FIRST_RUN: Kept = {
  steps: 0,
  transcriptRepairs: 0,
  phase: 'idle',
  recentTurns: [],
  refusedDecisions: [],
  unknownEffects: { count: 0, recent: [] },
  ending: false,
  runs: 0,
  turns: 0,
  usage: { promptTokens: 0, completionTokens: 0, costUsd: 0, unpricedCalls: 0 },
  usageByAgent: {},
  regenerations: 0,
};

/** Where a turn is: the core's next step follows from it ({@link TurnState.stage}). */
export type TurnStage = 'start' | 'next' | 'model' | 'answered' | 'calls' | 'running' | 'ended';

/** What one turn adds to the state, from its messages' taking to its end. */
export interface TurnState {
  /** The turn's messages are taken and not yet finished. */
  active: boolean;
  /** The turn has its record (it answered, failed or stopped) and only writes its end. */
  recorded: boolean;
  stage: TurnStage;
  /** The turn's record, once it has one and its end is the next step. */
  end: TurnRecord | undefined;
  messageIds: string[];
  /** Seq of the turn's first message. */
  firstSeq: number;
  /** Who sent the turn's messages (their `sentBy`), each once. */
  requesters: string[];
  steps: number;
  /** Answers asked for again because they did not match the typed output. */
  outputRetries: number;
  /** Handoffs made in the turn. */
  handoffs: number;
  /** The number, within the turn, of each call started. */
  callNumbers: Map<string, number>;
  usage: TokenUsage | undefined;
  /** Cost of the turn's priced calls, and how many calls had no price. */
  cost: { usd: number; unpriced: number };
  /** The turn's MCP tools, by reference, once discovered. */
  toolset: string | undefined;
  /** A regenerated turn, until its first step: the seq from which the stored messages are superseded. */
  supersedeFrom: number | undefined;
  /** The seq the model call under way was asked to write its final answer at, until it answers. */
  answerAt: number | undefined;
  /** What the input and output guardrails said so far (from the model calls' results), for the turn's record. */
  guardrails?: GuardrailResult[];
  /** The turn's calls that waited for a person, in the order they were asked for (its end is announced). */
  waited?: WaitedCall[];
}

/** The settings of a conversation, from its input with the defaults filled in. */
export interface Limits {
  maxSteps: number;
  approvalTimeoutMs: number;
  onNewMessage: 'interrupt' | 'queue';
  maxHandoffsPerTurn: number;
  maxAgentDepth: number;
  continueAsNewAfterEvents: number;
}

/** One run's state of a conversation: what it keeps across runs, and what it holds for this run only. */
export interface CoreState {
  readonly id: string;
  readonly input: ConversationInput;
  readonly env: CoreEnvironment;
  readonly limits: Limits;
  /** What the next run starts from (with the inbox, seqs, decisions and waiting cancel: {@link carryOver}). */
  readonly kept: Kept;
  readonly inbox: Inbox;
  /** The run's messages between their seqs and PostgreSQL. */
  readonly writes: TranscriptWrites;
  /** Applied decisions by id (deduplication). */
  readonly decisions: Map<string, DecisionResult>;
  /** Structure of the run's messages (earlier runs' are stored and settled). */
  readonly messages: MessageMeta[];
  /** Seqs of notes stored in place of messages PostgreSQL refused. */
  readonly notes: Set<number>;
  /** Changes with every come-back asked for, cancelled or taken: the wait between turns starts again on it. */
  comeBackVersion: number;
  turn: TurnState;
  /** The calls of the last assistant message, until their results are stored. */
  batch: ToolCallBatch | undefined;
  /** The open batch was asked for after the turn reached maxSteps: none of it ran, and the turn fails. */
  batchOverLimit: boolean;
  /** Seq of the last assistant message stored. */
  answerSeq: number;
  /** The agent a handoff of the open batch moves the conversation to, once the batch closes. */
  nextAgent: string | undefined;
  /** Why the current (or the next, when set before it starts) turn stops. */
  stopReason: string | undefined;
  /** A cancel that came while the turn wrote its end, with a message waiting: its turn starts cancelled. */
  cancelNextTurn: string | undefined;
  /** Decisions whose signature an activity is checking now (each was sent in time for its calls). */
  verifying: number;
  /** What the database refused to store during the current turn; kept as `lastError` even when the turn answers. */
  storeProblem: string | undefined;
  /** Calls waiting for a person below the running calls of agents as tools, by the calling call's key. */
  readonly below: Map<string, PendingBelow[]>;
  /** What this conversation (an agent called as a tool) last reported to its caller, as JSON. */
  reported: string | undefined;
  /** The last final answer: its model response and text. */
  lastAnswer: { responseKey: string; text: string; extracted?: ExtractedAgentResult } | undefined;
  /** The calls of the last batch stored, for the workflow's current details. */
  lastCalls: CallLine[];
  /** What this run last published to visibility, to publish only changes. */
  readonly published: Published;
}

/** What a run last published: the values compared, and each search attribute's last value (JSON). */
export interface Published {
  values: { status: ConversationStatus; pending: number; approvals: string | undefined } | undefined;
  unknownEffects: number;
  /** The spending last published; unset until the run's first publish. */
  usage: PublishedUsage | undefined;
  readonly upserted: Map<keyof ConversationSearchAttributes, string>;
}

/** A turn not yet taken. */
export function noTurn(): TurnState {
  return {
    active: false,
    recorded: false,
    stage: 'ended',
    end: undefined,
    messageIds: [],
    firstSeq: 0,
    requesters: [],
    steps: 0,
    outputRetries: 0,
    handoffs: 0,
    callNumbers: new Map(),
    usage: undefined,
    cost: { usd: 0, unpriced: 0 },
    toolset: undefined,
    supersedeFrom: undefined,
    answerAt: undefined,
  };
}

/** A run's state, from the conversation's input and what the previous run carried (none in its first run). */
export function newState(id: string, input: ConversationInput, env: CoreEnvironment): CoreState {
  const carried = input.carried;
  const kept: Kept = copy({ ...FIRST_RUN, ...keptFields(carried) });
  kept.runs++;
  kept.agent = carried?.agent ?? input.agent;
  return {
    id,
    input,
    env,
    limits: {
      maxSteps: input.maxSteps ?? CONVERSATION_DEFAULTS.maxSteps,
      approvalTimeoutMs: input.approvalTimeoutMs ?? CONVERSATION_DEFAULTS.approvalTimeoutMs,
      onNewMessage: input.onNewMessage ?? CONVERSATION_DEFAULTS.onNewMessage,
      maxHandoffsPerTurn: input.maxHandoffsPerTurn ?? CONVERSATION_DEFAULTS.maxHandoffsPerTurn,
      maxAgentDepth: input.maxAgentDepth ?? CONVERSATION_DEFAULTS.maxAgentDepth,
      continueAsNewAfterEvents: input.continueAsNewAfterEvents ?? CONVERSATION_DEFAULTS.continueAsNewAfterEvents,
    },
    kept,
    inbox: new Inbox(carried),
    writes: new TranscriptWrites(carried?.nextSeq ?? 0),
    decisions: new Map((carried?.decisions ?? []).map((d) => [d.decisionId, d])),
    messages: [],
    notes: new Set(),
    comeBackVersion: 0,
    turn: noTurn(),
    batch: undefined,
    batchOverLimit: false,
    answerSeq: -1,
    nextAgent: undefined,
    stopReason: carried?.pendingCancel,
    cancelNextTurn: undefined,
    verifying: 0,
    storeProblem: undefined,
    below: new Map(),
    reported: undefined,
    lastAnswer: undefined,
    lastCalls: [],
    published: { values: undefined, unknownEffects: 0, usage: undefined, upserted: new Map() },
  };
}

/** The state the next run starts from. Called only between turns: no call is pending. */
export function carryOver(s: CoreState): CarriedConversation {
  const { agent, phase, ...kept } = copy(s.kept);
  return {
    ...kept,
    nextSeq: s.writes.nextSeq,
    phase: phase === 'failed' ? 'failed' : 'idle',
    ...s.inbox.carry(),
    decisions: [...s.decisions.values()].slice(-DEDUP_MEMORY),
    pendingCancel: s.stopReason,
    ...(agent !== s.input.agent ? { agent } : {}),
  };
}

/**
 * The fields of {@link Kept} that the previous run carried with a value (a run begun by an older version lacks some).
 */
function keptFields(carried: CarriedConversation | undefined): Partial<Kept> {
  const names = new Set<string>([
    ...Object.keys(FIRST_RUN),
    'lastError',
    'lastInput',
    'regenerate',
    'grants',
    'comeBacks',
  ]);
  return Object.fromEntries(
    Object.entries(carried ?? {}).filter(([name, value]) => names.has(name) && value !== undefined),
  ) as Partial<Kept>;
}

/** A deep copy of plain data (the sandbox may lack `structuredClone`). */
function copy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
