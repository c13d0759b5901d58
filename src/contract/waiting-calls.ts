/**
 * A tool call waiting for a person's decision: one shape, {@link WaitingCall},
 * and the views of it each place needs, derived from it: the state's own
 * calls ({@link PendingApproval}), the calls waiting below it in agents
 * called as tools ({@link PendingBelow}, also what such an agent reports to
 * its caller), the approvers' list as the workflow writes it
 * (`ApprovalRequest`, in `activities.ts`). Types only; workflow-safe.
 */
import type { DecisionKind } from './decisions';

/**
 * A tool call waiting for a person's decision, with where it waits. Every
 * other shape of a waiting call is this one narrowed. `When` is the type of
 * its time: ISO 8601 text wherever it crosses a boundary (the state query,
 * signals, the HTTP API's JSON), the default; a `Date` in `AgentClient`'s
 * list; milliseconds since the epoch (workflow time) where the workflow lists
 * it for approvers.
 */
export interface WaitingCall<When = string> {
  /** The conversation whose call waits: decide it there. */
  conversationId: string;
  /**
   * The top-level conversation the call serves: `conversationId` itself, unless it waits inside an agent called as a
   * tool.
   */
  rootConversationId: string;
  /**
   * The agents from the top-level conversation's down to the one asking, e.g. `["triage", "refunds", "auditor"]`; empty
   * for one unnamed agent.
   */
  agentPath: string[];
  /** The provider's id of the call. */
  toolCallId: string;
  /**
   * Effect key of this call instance: the tool's idempotency key, unique even where provider ids repeat. Name it in a
   * decision.
   */
  callKey: string;
  toolName: string;
  /** The arguments, parsed (or the raw text when they are not JSON). */
  arguments: unknown;
  /** When the model asked for it. */
  requestedAt: When;
  /** How long it has waited, as of when it was read (in the state: the workflow's current time). */
  ageMs: number;
  /**
   * Who sent the messages of the turn that asked for it (their `sentBy`): for a call inside an agent called as a tool,
   * the top-level turn's; empty when none said.
   */
  requestedBy: string[];
  /** What may be decided on it (its tool's `decisions`). Absent: approve or reject. */
  decisions?: DecisionKind[];
  /** Set when an approval policy's rule made it wait: who may decide it and how many approvals it still needs. */
  policy?: WaitingPolicy;
}

/** Who may decide a waiting call under an approval policy's rule, and where its approvals stand. */
export interface WaitingPolicy {
  /** The rule's name. */
  rule: string;
  /** Members of these groups may decide it; absent: any approver. */
  groups?: string[];
  /** How many different people must approve it. */
  approvals: number;
  /** Who approved it so far (fewer than `approvals`). */
  approvedBy: string[];
  /** Whether a sender of the turn's messages may approve it (four eyes off for this rule). */
  requesterMayApprove?: boolean;
  /** The rule's reason, for approvers. */
  reason?: string;
  /** How many steps of the rule's escalation ladder were taken (absent: none); `groups` includes the groups they added. */
  escalated?: number;
  /** How many steps the ladder has (absent: none). */
  escalationSteps?: number;
}

/**
 * A tool call waiting for a person in this conversation, as its state shows it (where it waits goes without saying).
 */
export type PendingApproval = Omit<WaitingCall, 'conversationId' | 'rootConversationId' | 'agentPath'>;

/**
 * A call waiting for a person inside an agent called as a tool (at any depth below), as its callers' states show it.
 */
export type PendingBelow = Omit<WaitingCall, 'rootConversationId'>;

/** What an agent called as a tool reports to its caller whenever the calls waiting in it (or below it) change. */
export interface SubAgentWaitingReport {
  /** The effect key of the caller's call that runs the reporting agent. */
  callKey: string;
  /** Every call waiting for a person in it and below it; empty when none waits. */
  waiting: PendingBelow[];
}
