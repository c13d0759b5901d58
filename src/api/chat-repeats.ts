/**
 * Approval responses the chat took already. The AI SDK's automatic send
 * (`lastAssistantMessageIsCompleteWithApprovalResponses`) sends an answer
 * again while its call shows no outcome, so a decision the server took
 * (applied and recorded, or queued while no worker runs) may come back in a
 * later request. The same decision by the same person is then a no-op: not
 * sent again, nothing said; the response streams what became of the call.
 */
import type { AgentClient } from '../client/client';
import type { ConversationState } from '../contract';
import type { ApprovalDecision } from '../contract/decisions';
import { parseCallInstanceKey } from '../core/effect-keys';
import { decisionSignal } from '../contract/workflow';
import { runSignals } from './run-signals';
import type { ApprovalResponse } from './ui-approvals';

/** Whether a decision of `kind` says what `response` says (anything but a rejection approves: an edit too). */
const sameWay = (kind: string | undefined, response: ApprovalResponse) => (kind !== 'reject') === response.approved;

/**
 * The approval ids of `responses` that repeat a decision `subject` made on the same call the same way: recorded
 * (applied), or, while no worker answers (`workerAnswered` false), sent as a signal its conversation has not applied.
 */
export async function repeatedResponses(
  client: AgentClient,
  subject: string,
  responses: readonly ApprovalResponse[],
  waiting: { calls: readonly { callKey: string; conversationId: string }[]; workerAnswered: boolean },
): Promise<Set<string>> {
  const repeated = new Set<string>();
  const byConversation = new Map<string, ApprovalResponse[]>();
  for (const r of responses) {
    const where =
      waiting.calls.find((c) => c.callKey === r.approvalId)?.conversationId ??
      parseCallInstanceKey(r.approvalId)?.conversationId;
    if (where !== undefined) byConversation.set(where, [...(byConversation.get(where) ?? []), r]);
  }
  for (const [conversationId, named] of byConversation) {
    const recorded = await client.callDecisions(
      conversationId,
      named.map((r) => r.approvalId),
    );
    for (const r of named) {
      const record = recorded.get(r.approvalId);
      if (record?.decidedBy === subject && sameWay(record.decision, r)) repeated.add(r.approvalId);
    }
    const queuedFor = named.filter(
      (r) => !recorded.has(r.approvalId) && waiting.calls.some((c) => c.callKey === r.approvalId),
    );
    if (waiting.workerAnswered || queuedFor.length === 0) continue;
    // No worker answers: a decision sent earlier waits in the run's history as a signal.
    const { signals } = await runSignals(client, conversationId, decisionSignal.name);
    for (const r of queuedFor)
      if (
        (signals as (Partial<ApprovalDecision> | undefined)[]).some(
          (d) => d?.callKey === r.approvalId && d.decidedBy === subject && sameWay(d.decision, r),
        )
      )
        repeated.add(r.approvalId);
  }
  return repeated;
}

/**
 * The id of the ended turn whose calls `callKeys` name (calls of `conversationId`'s own), for a continuation to
 * follow; undefined when they belong to the running turn, or to no turn the state keeps.
 */
export function endedTurnOf(
  state: ConversationState,
  conversationId: string,
  callKeys: readonly string[],
): string | undefined {
  const seqs = callKeys.flatMap((k) => {
    const call = parseCallInstanceKey(k);
    return call?.conversationId === conversationId ? [call.assistantSeq] : [];
  });
  if (seqs.length === 0) return undefined;
  const seq = Math.max(...seqs);
  if (state.currentTurn && state.currentTurn.firstSeq <= seq) return undefined;
  const turn = state.recentTurns
    .filter((t) => t.supersededBy === undefined && t.firstSeq !== undefined && t.firstSeq <= seq)
    .sort((a, b) => b.firstSeq! - a.firstSeq!)[0];
  return turn?.messageIds[0];
}
