/**
 * What others see of a conversation: its status, the state query, the calls
 * listed for approvers, the workflow's current details and what the
 * conversation returns when it ends. Pure reads of the state.
 */
import type { ApprovalRequest, DecisionRecord } from '../contract/activities';
import type { StandingGrant } from '../contract/grants';
import type {
  ConversationState,
  ConversationStatus,
  ConversationSummary,
  GrantView,
  OpenCall,
  SubAgentTurn,
} from '../contract/conversation-state';
import { agentPath, waitingBelow } from './agents';
import { describePendingApproval, waitingPolicy, type BatchCall } from './batch';
import { grantedRecord, isLive } from './grants';
import type { ConversationUsage } from '../contract/turn-records';
import type { CoreState } from './state';
import { waitsForEvent } from './event-waits';
import { comeBackViews } from './comebacks';
import type { EventWaitView } from '../contract/events';
import { currentDetails as describeDetails } from './summaries';

/** Where the conversation stands. */
export function status(s: CoreState): ConversationStatus {
  return s.kept.phase === 'running' && pendingCount(s) > 0 ? 'awaiting_approval' : s.kept.phase;
}

/** The calls this conversation waits on a person for: its own, and those below its agents called as tools. */
export function pendingCount(s: CoreState): number {
  return (s.batch?.awaitingApproval().length ?? 0) + waitingBelow(s).length;
}

/** The calls of the open batch waiting for a person, as approvers' lists hold them. */
export function approvalRequests(s: CoreState): ApprovalRequest[] {
  const calls = s.batch?.all() ?? [];
  const path = agentPath(s);
  const caller = s.input.calledBy;
  return calls.flatMap((call, callIndex) =>
    call.phase === 'awaiting_approval'
      ? [
          {
            callKey: call.key,
            toolCallId: call.id,
            toolName: call.name,
            assistantSeq: s.answerSeq,
            callIndex,
            requestedAt: call.requestedAt,
            requestedBy: [...s.turn.requesters],
            ...(caller ? { rootConversationId: caller.rootConversationId } : {}),
            ...(path ? { agentPath: path } : {}),
            ...(call.decisions ? { decisions: [...call.decisions] } : {}),
            ...(call.policy?.outcome === 'ask' ? { policy: waitingPolicy(call, call.policy) } : {}),
          },
        ]
      : [],
  );
}

/** The decisions the approval policy's rules made on the open batch's calls without a person, to record. */
export function ruledRecords(s: CoreState): DecisionRecord[] {
  return (s.batch?.ruled() ?? []).flatMap((call) => {
    const d = call.decision;
    const granted = grantedRecord(s, call);
    if (granted) return [granted];
    if (!d?.rule) return [];
    return [
      {
        conversationId: s.id,
        decisionId: d.decisionId,
        decision: d.approved ? ('approve' as const) : ('reject' as const),
        toolCallIds: [call.id],
        callKeys: [call.key],
        ...(d.reason !== undefined ? { reason: d.reason } : {}),
        ...(d.decidedBy !== undefined ? { decidedBy: d.decidedBy } : {}),
        decidedAt: d.decidedAt,
        via: 'policy' as const,
        rule: d.rule,
      },
    ];
  });
}

/** The state shown to clients (the `state` query). */
export function conversationState(s: CoreState): ConversationState {
  const below = waitingBelow(s);
  const k = s.kept;
  const calls = s.batch?.all() ?? [];
  const waits = calls.filter(waitsForEvent);
  const now = s.env.now();
  return {
    conversationId: s.id,
    status: status(s),
    steps: k.steps,
    lastError: k.lastError,
    messages: s.messages.map((m) => ({ ...m })),
    messageCount: s.writes.nextSeq,
    runs: k.runs,
    ...(k.agent !== undefined ? { agent: k.agent } : {}),
    ...(s.input.calledBy ? { calledBy: { ...s.input.calledBy, task: s.input.calledBy.task.slice(0, 500) } } : {}),
    ...(s.input.forkedFrom ? { forkedFrom: { ...s.input.forkedFrom } } : {}),
    ...(k.regenerations > 0 ? { regenerations: k.regenerations } : {}),
    queuedMessages: s.inbox.length,
    // A call is shown waiting for a person once the message that asked for it is written: whoever sees it may read the
    // transcript.
    pendingApprovals: s.writes.inProgress
      ? []
      : (s.batch?.awaitingApproval() ?? []).map((call) => describePendingApproval(call, now, s.turn.requesters)),
    ...(below.length > 0 ? { waitingBelow: below.map((b) => ({ ...b, ageMs: now - Date.parse(b.requestedAt) })) } : {}),
    ...(s.batch ? { openCalls: calls.map(describeOpenCall) } : {}),
    ...(waits.length > 0 ? { eventWaits: waits.map(describeEventWait) } : {}),
    ...(k.comeBacks?.length ? { comeBacks: comeBackViews(s) } : {}),
    runningToolCalls: calls.filter((c) => c.phase === 'running' && !c.wait).map((c) => c.id),
    decisionsApplied: s.decisions.size,
    refusedDecisions: k.refusedDecisions.map((r) => ({ ...r })),
    ...(k.grants && k.grants.length > 0 ? { grants: k.grants.map((g) => grantView(g, now)) } : {}),
    recentTurns: k.recentTurns.map((t) => ({ ...t })),
    ...(s.turn.active ? { currentTurn: { messageIds: [...s.turn.messageIds], firstSeq: s.turn.firstSeq } } : {}),
    unknownEffects: k.unknownEffects.recent.map((u) => ({ ...u })),
    unknownEffectsCount: k.unknownEffects.count,
    transcriptRepairs: k.transcriptRepairs,
    usage: { ...k.usage },
    ...(Object.keys(k.usageByAgent).length > 0 ? { usageByAgent: copyUsage(k.usageByAgent) } : {}),
  };
}

function copyUsage(byAgent: Record<string, ConversationUsage>): Record<string, ConversationUsage> {
  return Object.fromEntries(Object.entries(byAgent).map(([agent, u]) => [agent, { ...u }]));
}

/** A call waiting for its event, as the state shows it. */
function describeEventWait(call: BatchCall): EventWaitView {
  const since = call.waitStartedAt ?? call.requestedAt;
  return {
    callKey: call.key,
    toolCallId: call.id,
    toolName: call.name,
    event: call.wait!.event,
    key: call.wait!.key,
    since: new Date(since).toISOString(),
    deadlineAt: new Date(since + call.wait!.timeoutMs).toISOString(),
  };
}

/** A call of the open batch as the state shows it: settled ones with their outcome. */
function describeOpenCall(call: BatchCall): OpenCall {
  return {
    callKey: call.key,
    toolCallId: call.id,
    toolName: call.name,
    ...(call.outcome ? { outcome: { kind: call.outcome.kind, content: call.outcome.content } } : {}),
  };
}

/** The workflow's current details: what it does or waits for, and how the last calls ended. */
export function currentDetails(s: CoreState): string {
  const waiting = [
    ...(s.batch?.awaitingApproval() ?? []).map((c) => ({ name: c.name, id: c.id, since: c.requestedAt })),
    ...waitingBelow(s).map((b) => ({
      name: `${b.toolName} (in ${b.agentPath.join(' > ')})`,
      id: b.toolCallId,
      since: Date.parse(b.requestedAt),
    })),
  ];
  const label = {
    idle: 'Idle',
    running: 'Running a turn',
    awaiting_approval: 'Waiting for approval',
    failed: 'Last turn failed',
    closed: 'Ended',
  };
  return describeDetails({ status: label[status(s)], turn: s.kept.turns, waiting }, s.lastCalls);
}

/** For each of the calls, its tool and how long it has waited for a decision (ms, workflow time). */
export function approvalWaits(s: CoreState, ids: readonly string[]): { tool: string; waitedMs: number }[] {
  return ids.flatMap((id) => {
    const call = s.batch?.get(id);
    return call ? [{ tool: call.name, waitedMs: Math.max(s.env.now() - call.requestedAt, 0) }] : [];
  });
}

/** What the workflow returns when the conversation ends. */
export function summary(s: CoreState): ConversationSummary {
  const k = s.kept;
  const summary = {
    conversationId: s.id,
    steps: k.steps,
    messages: s.writes.nextSeq,
    transcriptRepairs: k.transcriptRepairs,
  };
  return s.input.calledBy ? { ...summary, ...subAgentTurn(s) } : summary;
}

/** How the one turn of an agent called as a tool ended, for its caller. */
function subAgentTurn(s: CoreState): { lastTurn?: SubAgentTurn } {
  const recent = s.kept.recentTurns;
  const last = recent[recent.length - 1];
  if (!last) return {};
  const answered = last.outcome === 'answered' && s.lastAnswer;
  return {
    lastTurn: {
      ...(s.kept.agent !== undefined ? { agent: s.kept.agent } : {}),
      outcome: last.outcome,
      ...(last.error !== undefined ? { error: last.error } : {}),
      ...(answered ? { answer: { ...s.lastAnswer! } } : {}),
      usage: { ...s.kept.usage },
      ...(Object.keys(s.kept.usageByAgent).length > 0 ? { usageByAgent: copyUsage(s.kept.usageByAgent) } : {}),
    },
  };
}

/** A grant as the state shows it. */
function grantView(g: StandingGrant, now: number): GrantView {
  const { grantedAt, expiresAt, revokedAt, ...rest } = g;
  return {
    ...rest,
    ...(g.amount ? { amount: { ...g.amount } } : {}),
    grantedAt: new Date(grantedAt).toISOString(),
    expiresAt: new Date(expiresAt).toISOString(),
    ...(revokedAt !== undefined ? { revokedAt: new Date(revokedAt).toISOString() } : {}),
    live: isLive(g, now),
  };
}
