/**
 * Inputs and results of the activities, shared with the workflow as types.
 * Type-only module: safe to import from workflow code.
 */
import type { ConversationBudget, ModelSettings, OutputSpec } from './conversation-input';
import type { ApprovalDecision, DecisionKind } from './decisions';
import type { GuardrailTrip, TokenUsage } from './turn-records';
import type { GuardrailResult } from './guardrail-results';
import type { ChatMessage } from './messages';
import type { WaitingCall } from './waiting-calls';
import type { HandoffRecord } from './handoffs';
import type { CallPolicy } from './policies';
import type { StandingGrant } from './grants';
import type { EscalationRecord } from './escalations';
import type { TurnEndNotice } from './turn-ends';
import type { EventWaitPlan, RegisterEventWaitInput, RegisterEventWaitResult } from './events';
import type { ComeBackPlan } from './comebacks';
export type { EscalationRecord } from './escalations';
export type { TurnEndNotice } from './turn-ends';
export { ActivityErrorType, type StoreRefusedDetails } from './activity-errors';

/** An assistant message as returned by the model. */
export type AssistantMessage = Extract<ChatMessage, { role: 'assistant' }>;

/** A model call, by reference: the activity reads the transcript from PostgreSQL. */
export interface ModelCallInput {
  conversationId: string;
  /** Read messages with seq 0..throughSeq. */
  throughSeq: number;
  /** Stored messages to leave out (transcript repair; normally empty). */
  omitSeqs: number[];
  /** Tool results to add after the results of an assistant message (transcript repair; normally empty). */
  synthesized: { afterSeq: number; toolCallId: string; content: string }[];
  settings: ModelSettings;
  /** Tool names offered to the model; every registered tool when unset. */
  tools?: string[];
  toolChoice: 'auto' | 'none';
  /**
   * Messages the activity stores first, exactly as `appendMessages` would
   * (upserts at their seqs), before it reads the transcript: the workflow
   * defers its transcript writes to the next model call instead of a round
   * trip of their own.
   */
  append?: AppendEntry[];
  /**
   * The turn's MCP tools, by reference (`discoverTools`): offered beside the
   * worker's own. Absent for conversations without MCP servers.
   */
  toolset?: string;
  /**
   * The agent that answers (see `ConversationInput.agent`): the worker applies
   * its instructions, model settings and tools. Absent for conversations of
   * one unnamed agent.
   */
  agent?: string;
  /** The conversation's typed output (`ConversationInput.output`); the agent's own `outputType` wins over it. */
  output?: OutputSpec;
  /**
   * Set on a turn's first model call: the seq of the turn's first message.
   * The worker's input guardrails check the user messages from there on
   * before the model is asked.
   */
  turnFromSeq?: number;
  /**
   * The seq the answer gets. A final answer (no tool calls) is written there
   * by the call itself, after the messages of `append`, so the turn's end
   * needs no write of its own; an answer with tool calls is written with its
   * results, as before. Absent from workflow code before the change: the
   * turn's end then writes the answer.
   */
  answerSeq?: number;
  /**
   * Set when the conversation has a budget: the budget it draws on, shared
   * with every conversation below its top-level one. The call counts its
   * spend there (in PostgreSQL), and is not made when that budget is spent.
   * Absent from workflow code before budgets covered agents called as tools.
   */
  budget?: SpendScope;
  /** Who asked for the turn, for the checks of its calls (`needsApproval`, tool guardrails). Absent in older code. */
  origin?: TurnOrigin;
}

/** Who asked for a turn and the conversation it belongs to, as the checks of its calls read them. */
export interface TurnOrigin {
  /** The senders of the turn's messages (and, in a child conversation, of the top-level turn's); absent when none. */
  requestedBy?: string[];
  /** Set in the child conversation of an agent called as a tool: the top-level conversation. */
  rootConversationId?: string;
  /**
   * Set there too: the calling agent (absent: the worker's default agent), the agent tool it called and the effect key
   * of that call.
   */
  calledAs?: { agent?: string; toolName: string; callKey: string };
}

/** Whose budget a model call draws on: see {@link ModelCallInput.budget}. */
export interface SpendScope {
  /** The top-level conversation, whose budget covers every agent it calls at any depth. */
  rootConversationId: string;
  /** The top-level conversation's turn the call is part of: turn limits count what the whole tree spent in it. */
  rootTurn: number;
  /** The limits (the top-level conversation's, which every child inherits). */
  limits: ConversationBudget;
}

/**
 * How a final answer (one without tool calls) fared against the typed output
 * asked for: its value (inline when its JSON is short, else only
 * `inAnswer`), or what is wrong with it and how many re-asks the turn allows.
 */
export type OutputCheck =
  { ok: true; value?: unknown; inAnswer?: true } | { ok: false; problem: string; retries: number; schemaName: string };

/** How the worker will run one tool call, decided from its registry. */
export interface ToolCallPlan {
  toolCallId: string;
  name: string;
  /** Set when the call cannot run: it is settled as `tool_failed` without running. */
  problem?: { reason: 'unknown_tool' | 'invalid_arguments' | 'too_many_calls' | 'handoff_refused'; message: string };
  /** Set when a tool guardrail blocked the call: it is settled as `guardrail_blocked` without running, saying why. */
  blocked?: { guardrail: string; reason: string };
  /**
   * Set when the call is a handoff (`transfer_to_<agent>`): the agent it transfers the conversation to. No activity
   * runs it.
   */
  handoff?: string;
  /** Set for a call of a `handoff(agent, options)`: what its options did (src/contract/handoffs.ts). */
  handoffRecord?: HandoffRecord;
  /**
   * Set when the call runs another agent as a tool (`agent.asTool()`): the
   * agent it runs, as a child workflow whose final answer is the call's result.
   */
  subAgent?: string;
  /**
   * Set for such a call when its agent tool declares `parameters` or an `inputBuilder`: the agent's task, made from
   * the arguments when the call was planned. Absent: the task is the `input` argument.
   */
  task?: string;
  needsApproval: boolean;
  /**
   * Set when the worker's approval policy has a rule for the call: `deny` settles it as rejected by the rule without
   * running it, `allow` runs it without asking (unless a guardrail asks a person), `ask` makes it wait for the people
   * the rule names. Absent in plans of workers without a policy (and before policies).
   */
  policy?: CallPolicy;
  /**
   * What a person may decide on it when it waits for approval (its tool's `decisions`). Absent in plans of older
   * workers: approve or reject.
   */
  decisions?: DecisionKind[];
  /** Set for a call of a `waitForEvent()` tool: the event it waits for (no activity runs it). */
  wait?: EventWaitPlan;
  /** Set for a call of the `comeBackLater()` tool: when the conversation comes back, and why (no activity runs it). */
  comeBack?: ComeBackPlan;
  /**
   * Whether running the tool again is safe (it only reads, or writes through
   * `context.once`). A call of a tool that is not, whose run timed out or lost
   * its worker, settles as `effect_unknown`. Absent in plans of older workers.
   */
  idempotent?: boolean;
  /** Start-to-close timeout of one attempt. */
  timeoutMs: number;
  /** Attempts before the call is settled as failed (1 for tools that are not idempotent and have no ledger). */
  maxAttempts: number;
}

/** The model's answer: the message to append and a plan for each of its tool calls. */
export interface ModelCallResult {
  message: AssistantMessage;
  /** Key of the stored response in PostgreSQL, for appending it by reference. */
  responseKey: string;
  calls: ToolCallPlan[];
  finishReason: string | null;
  usage?: TokenUsage;
  /** What the call cost in US dollars, when the worker has a price for its model. */
  costUsd?: number;
  /** Set when a typed output was asked for and the answer is final (no tool calls). */
  output?: OutputCheck;
  /**
   * Set when a guardrail stopped the turn: `message` is then the note stored
   * in the answer's place (an input guardrail: no model was asked; an output
   * guardrail: the model's answer is withheld, kept in `model_responses`).
   */
  guardrail?: GuardrailTrip;
  /** What the input and output guardrails that ran in this call said, each with its `outputInfo`. */
  guardrails?: GuardrailResult[];
  /** The call wrote its final answer at the input's `answerSeq`: nothing is left for the turn's end to write. */
  answerWritten?: true;
  /**
   * Set on the final answer of an agent called as a tool whose agent tool has a `customOutputExtractor`: what it made
   * of the answer, the calling call's result.
   */
  extracted?: ExtractedAgentResult;
  /**
   * Set when this call had the model summarise earlier turns to fit the context window (`model.contextOverflow:
   * 'summarize'`): what those summary requests spent, counted in the turn's and conversation's usage. Absent otherwise.
   */
  summary?: SummarySpend;
}

/** What the summary requests of one model call spent (see {@link ModelCallResult.summary}). */
export interface SummarySpend {
  usage: TokenUsage;
  /** US dollars, when the worker has a price for the model. */
  costUsd?: number;
  /** Summary requests made. */
  requests: number;
}

/**
 * What an agent tool's output extractor made of the final answer of its agent: the result, stored as a tool result
 * under `key` (`text` is a preview when long), or why it failed.
 */
export type ExtractedAgentResult = { ok: true; key: string; text: string } | { ok: false; error: string };

/** A message body already stored by an activity, appended by reference so its bytes cross history once. */
export type StoredMessageRef =
  | { kind: 'model_response'; key: string }
  | { kind: 'tool_result'; key: string; toolCallId: string }
  /** The final answer of an agent called as a tool (its model response `key`), as the calling call's result. */
  | { kind: 'agent_answer'; key: string; toolCallId: string };

/** One message to append: its body, or a reference to a body an activity stored. */
export type AppendEntry = { seq: number; message: ChatMessage } | { seq: number; ref: StoredMessageRef };

/** Messages to store, each at the seq the workflow assigned. Idempotent. */
export interface AppendMessagesInput {
  conversationId: string;
  messages: AppendEntry[];
  /**
   * The calls that wait for a person from now on, asked for by an assistant
   * message of this write: listed for approvers in the same transaction
   * (`src/db/approval-store.ts`). Absent from other writes, and from workflow
   * code before the list.
   */
  waiting?: ApprovalRequest[];
  /**
   * Regenerate: the messages stored at this seq and after it leave the live
   * transcript (kept as superseded, reason `regenerate`) in the statement that
   * stores `messages`, which may then be empty.
   */
  supersedeFrom?: number;
  /**
   * Why `supersedeFrom` takes messages out: `regenerate` (the default), or
   * `stopped` (a turn stopped while its model call ran: the final answer the
   * call may have written, unknown to the workflow, leaves the live transcript).
   */
  supersedeReason?: 'regenerate' | 'stopped';
  /**
   * What the approval policy's rules decided without a person (calls they allowed or denied), recorded in
   * `approval_decisions` in the same transaction as the message that asked for the calls. Absent from other writes.
   */
  ruled?: DecisionRecord[];
}

/**
 * A tool call waiting for a person's decision, as the workflow lists it for
 * approvers (`src/db/approval-store.ts`): a {@link WaitingCall} without what
 * the list reads from the transcript (the arguments) or works out when read
 * (the age), with its time in workflow milliseconds and where the message
 * that asked for it is stored. `rootConversationId` is absent for a call of
 * a top-level conversation, `agentPath` for a call of one unnamed agent.
 */
export type ApprovalRequest = Pick<
  WaitingCall<number>,
  'callKey' | 'toolCallId' | 'toolName' | 'requestedAt' | 'requestedBy' | 'decisions' | 'policy'
> &
  Partial<Pick<WaitingCall, 'rootConversationId' | 'agentPath'>> & {
    /** Seq of the assistant message that asked for it. */
    assistantSeq: number;
    /** Its position among that message's tool calls. */
    callIndex: number;
  };

/** One tool call to execute. */
export interface ToolCallInput {
  conversationId: string;
  /** The provider's id, for pairing only: providers reuse ids, so nothing is keyed by it. */
  toolCallId: string;
  name: string;
  /** The raw JSON arguments the model produced. */
  arguments: string;
  /**
   * The effect key of this call instance, minted by the workflow
   * (`${conversationId}/msg-${assistantSeq}/call-${index}`; calls scheduled
   * before that scheme keep `${conversationId}/${toolCallId}`). The same for
   * every attempt of this call, different for every other call.
   */
  idempotencyKey: string;
  /** The turn's MCP tools, by reference, when the call may be one of them. */
  toolset?: string;
  /**
   * Set when a person edited the arguments before approving (`arguments`
   * are theirs): the result says so, with the model's arguments and who
   * changed them, so the model sees what ran.
   */
  edited?: { by?: string; modelArguments: string };
}

/**
 * A tool's result. The full body is stored in PostgreSQL under `storedResultKey`; `content` is it, or a preview when
 * large.
 */
export interface ToolCallResult {
  content: string;
  storedResultKey?: string;
  /** True when the tool's effect was found in the ledger (applied by an earlier attempt) and not applied again. */
  fromLedger?: boolean;
}

/** Tool calls of one model response that run, unless the worker is configured otherwise. */
export const DEFAULT_MAX_PARALLEL_TOOL_CALLS = 16;

/** The highest limit a worker may set for tool calls per response (providers offer at most 128 tools). */
export const MAX_PARALLEL_TOOL_CALLS_LIMIT = 128;

/**
 * The largest tool call arguments, in UTF-8 bytes: a call over it is not run, and its arguments cross history as a
 * stub.
 */
export const TOOL_ARGUMENTS_MAX_BYTES = 256 * 1024;

/** How often long activities (model calls, tools) heartbeat: a cancelled turn reaches them within about this long. */
export const HEARTBEAT_EVERY_MS = 1_000;

/** A decision as applied by the workflow, for the `approval_decisions` records. */
export interface DecisionRecord {
  conversationId: string;
  decisionId: string;
  decision: DecisionKind;
  /** `edit`: the arguments the call ran with (JSON text), beside the model's (`modelArguments`). */
  arguments?: string;
  modelArguments?: string;
  /** `respond`: the person's answer, the call's result. */
  response?: string;
  toolCallIds: string[];
  /** Effect keys of the decided calls, in the order of `toolCallIds` (absent from older workflow code). */
  callKeys?: string[];
  reason?: string;
  decidedBy?: string;
  /** Workflow time of the decision, ms since the epoch. */
  decidedAt: number;
  /** How it arrived: a person's signal or update, or an approval policy's rule that decided without a person. */
  via: 'signal' | 'update' | 'policy' | 'grant';
  /** Whether `decidedBy` was authenticated by a valid signature (absent from workflow code before signed decisions). */
  authenticated?: boolean;
  /** The approval policy's rule the call was under: the one that decided it (`via: 'policy'`) or that let this person. */
  rule?: string;
  /** The groups the decider's signed token gave them, when the call's rule names groups. */
  deciderGroups?: string[];
  /**
   * An approval that does not decide the call yet: its rule needs more people (N of M). The call keeps waiting and
   * stays in approvers' lists.
   */
  callStillWaits?: boolean;
  /**
   * The decision as its sender signed it (`signature` set), kept so an audit can check the signature again later
   * (`src/common/decision-signing.ts`). Absent for unsigned decisions and the rules' own.
   */
  signedDecision?: ApprovalDecision;
  /** The grant this approval gave (recorded in `approval_grants`). */
  grant?: StandingGrant;
  /** `via: 'grant'`: the grant that let the call run without asking, and what the call counted against its amount. */
  grantId?: string;
  grantAmount?: number;
}

/** A grant revoked: recorded in `approval_grants`. */
export interface GrantRevocationRecord {
  conversationId: string;
  grantId: string;
  revokedBy?: string;
  reason?: string;
  /** Workflow time, ms since the epoch. */
  revokedAt: number;
}

/** What `verifyDecision` found: whether the decider is authenticated, or why the decision is refused. */
export interface DecisionVerification {
  authenticated: boolean;
  /** Set when the decision must not apply: what was wrong and how to decide instead. */
  refusal?: string;
}

/** Input of `verifyDecision`. */
export interface VerifyDecisionInput {
  conversationId: string;
  decision: ApprovalDecision;
  /** For an `edit`: the call's tool (and the turn's MCP tools), whose schema the new arguments must fit. */
  edit?: { toolName: string; toolset?: string; agent?: string; toolCallId?: string; origin?: TurnOrigin };
}

/** Input of `discoverTools`: a conversation's MCP servers, for one turn. */
export interface ToolDiscoveryInput {
  conversationId: string;
  /** Names of the worker's MCP servers the conversation uses (`ConversationInput.mcpServers`). */
  servers: string[];
  /**
   * The worker's own tools the conversation offers (`ConversationInput.tools`), to count against the providers' limit.
   */
  tools?: string[];
}

/** What `discoverTools` found. */
export interface ToolDiscoveryResult {
  /** The reference of the stored list, passed to the turn's model and tool calls. */
  toolset: string;
  /** Tools the conversation is offered, its own and the servers' together. */
  offered: number;
  /** Tools by server. */
  fromServers: Record<string, number>;
  /** Tools not offered, and why (a name providers refuse, a clash). */
  skipped: string[];
}

/** The activities the conversation workflow schedules. Built by `createActivities`. */
export interface ConversationActivities {
  /** Stores messages at their seqs (upsert): safe to retry. */
  appendMessages(input: AppendMessagesInput): Promise<void>;
  /** Reads the transcript through `throughSeq`, calls the model, returns its message. */
  callModel(input: ModelCallInput): Promise<ModelCallResult>;
  /** Runs one tool call with its idempotency key. */
  runTool(input: ToolCallInput): Promise<ToolCallResult>;
  /** Records an applied decision (idempotent on its id). */
  recordDecision(record: DecisionRecord): Promise<void>;
  /** Records that a grant was revoked (idempotent). */
  recordGrantRevocation(record: GrantRevocationRecord): Promise<void>;
  /** Records a step of a waiting call's escalation ladder (idempotent on the call and step). */
  recordEscalation(record: EscalationRecord): Promise<void>;
  /** Announces the end of a turn that waited for a person (`turn.ended_after_wait`; idempotent on the turn's id). */
  announceTurnEnd(notice: TurnEndNotice): Promise<void>;
  /**
   * A call starts waiting for an event: takes an event kept for it or already delivered to it, or lists the call as
   * waiting (idempotent on the call).
   */
  registerEventWait(input: RegisterEventWaitInput): Promise<RegisterEventWaitResult>;
  /** Checks a decision's signature against the worker's decision keys (`decision-signing.ts`); no I/O. */
  verifyDecision(input: VerifyDecisionInput): Promise<DecisionVerification>;
  /** Lists the tools of a conversation's MCP servers and stores the list by reference. */
  discoverTools(input: ToolDiscoveryInput): Promise<ToolDiscoveryResult>;
}

/** What a conversation activity is called in code. */
export type ConversationActivityName = keyof ConversationActivities;

/** The names of the conversation activities, in code. */
export const CONVERSATION_ACTIVITY_NAMES = [
  'appendMessages',
  'callModel',
  'runTool',
  'recordDecision',
  'verifyDecision',
  'recordEscalation',
  'recordGrantRevocation',
  'announceTurnEnd',
  'registerEventWait',
  'discoverTools',
] as const satisfies readonly ConversationActivityName[];

/**
 * Prefix of the activity types the conversation workflow schedules
 * (`durableAgent.callModel`), so they cannot collide with a team's own
 * activities on the same worker.
 */
export const ACTIVITY_TYPE_PREFIX = 'durableAgent.';

/** The conversation activities under their registered activity types. */
export type PrefixedConversationActivities = {
  [Name in ConversationActivityName as `${typeof ACTIVITY_TYPE_PREFIX}${Name}`]: ConversationActivities[Name];
};

/** The activity type a conversation activity is scheduled and registered as: `durableAgent.<name>`. */
export function conversationActivityType(name: ConversationActivityName): string {
  return `${ACTIVITY_TYPE_PREFIX}${name}`;
}
