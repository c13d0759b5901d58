/**
 * Approvals in the chat, as the person reading it may act on them: what each
 * waiting call lets them decide and, when they may not, who can (four eyes,
 * the role, or the approval policy's rule the call waits under, named in the
 * approval request); the decisions an answer carries, each sent
 * to the conversation its call waits in (a call below, in an agent called as
 * a tool, is decided in that agent's conversation); and how a decision shows
 * once made (the AI SDK's approval response).
 */
import type { AgentClient } from '../client/client';
import type { WaitingPolicy } from '../contract';
import type { CallDecisionRecord } from '../db/call-decisions';
import { decideCalls, DECISION_WORKER_WAIT_MS, DecisionProblem, type DecisionPolicy } from './decisions';
import type { ApiPrincipal } from './tokens';
import { repeatedResponses } from './chat-repeats';
import type { CallOutput, UiChunk } from './ui-stream';
import type { ApprovalAsk, ApprovalResponse, CallDecided } from './ui-approvals';
import { decisionRefusal, whoMayDecide } from './who-decides';

/** Who reads a chat stream, and whether four eyes are off. */
export interface ChatViewer {
  subject: string;
  /** Has the role approver. */
  approver: boolean;
  /** The groups the viewer's token gave (an approval policy's rule may let only some groups decide); default none. */
  groups?: readonly string[];
  /** Whoever sent a turn's messages may approve its calls (four eyes off). */
  allowSelfApproval: boolean;
}

/** The viewer of a stream opened by `principal` under `policy`. */
export function viewerOf(principal: ApiPrincipal, policy: DecisionPolicy): ChatViewer {
  return {
    subject: principal.subject,
    approver: principal.roles.has('approver'),
    groups: [...principal.groups].sort(),
    allowSelfApproval: policy.allowSelfApproval === true,
  };
}

/** A waiting call as the chat asks about it. */
export interface AskedCall {
  requestedBy: readonly string[];
  /** Set when an approval policy's rule made it wait: who may decide it, and its approvals so far. */
  policy?: WaitingPolicy;
  /** Set for a call waiting below, in an agent called as a tool. */
  below?: { agentPath: string[]; conversationId: string };
}

/**
 * What `viewer` may decide on `call`, and, when not everything, who may: four eyes (the API's setting, or the rule's
 * `requesterMayApprove` for a call a rule made wait), the approver role, then the call's rule (its groups, an approval
 * the viewer gave already).
 */
export function approvalAsk(viewer: ChatViewer, call: AskedCall): ApprovalAsk {
  const where = call.below ? { agentPath: call.below.agentPath, conversationId: call.below.conversationId } : {};
  const approving = decisionRefusal(viewer, call, true, viewer.allowSelfApproval);
  if (approving?.code === 'four_eyes')
    return {
      reason: `Waits for an approver other than ${viewer.subject} (four eyes: whoever sent the request may not approve its calls)${viewer.approver ? `; ${viewer.subject} may reject it` : ''}.`,
      descriptor: { decide: viewer.approver ? ['reject'] : [], rule: 'four_eyes', ...where },
    };
  if (!viewer.approver)
    return {
      reason: `Waits for an approver (${viewer.subject} may not decide: it needs the role approver).`,
      descriptor: { decide: [], rule: 'role', ...where },
    };
  if (approving && call.policy) {
    const rejecting = decisionRefusal(viewer, call, false, viewer.allowSelfApproval);
    return {
      reason: `Waits for ${whoMayDecide(call.policy)} (the approval policy's rule "${call.policy.rule}"): ${approving.message}`,
      descriptor: { decide: rejecting ? [] : ['reject'], rule: 'policy', ...where },
    };
  }
  return { descriptor: { decide: ['approve', 'reject'], ...where } };
}

/** How a recorded decision shows: anything but a rejection approved the call (an edit too), with its reason. */
export function decidedAs(record: CallDecisionRecord): CallDecided {
  return { approved: record.decision !== 'reject', ...(record.reason ? { reason: record.reason } : {}) };
}

/**
 * The decision on a call that waited and no longer does, from how it settled (`output`) or, unsettled, whether it
 * runs; undefined while that is not known. A call whose wait timed out was not approved: it shows as denied.
 */
export function decisionOf(
  output: CallOutput | undefined,
  running: boolean,
): { decided: CallDecided; output?: CallOutput } | undefined {
  if (output?.kind === 'denied')
    return { decided: { approved: false, ...(output.reason ? { reason: output.reason } : {}) }, output };
  if (output?.kind === 'error' && output.text.startsWith('approval_timeout'))
    return { decided: { approved: false, reason: output.text }, output: { kind: 'denied', reason: output.text } };
  if (output) return { decided: { approved: true }, output };
  return running ? { decided: { approved: true } } : undefined;
}

/**
 * Sends each approval response as a decision by `principal`, in the conversation its call waits in (its own, or an
 * agent's below it); one that repeats a decision `principal` took already on its call is not sent again
 * (`chat-repeats.ts`). What was refused is said in the stream as text, once, and a refused call that still waits is
 * asked for again, naming who may decide: the answer then holds no approval response, so the AI SDK's automatic send
 * does not fire again.
 */
export async function decideFromChat(
  client: AgentClient,
  policy: DecisionPolicy,
  principal: ApiPrincipal,
  conversationId: string,
  responses: readonly ApprovalResponse[],
): Promise<UiChunk[]> {
  const notes: string[] = [];
  const waiting = await client.waitingCalls({
    conversationId,
    below: true,
    workerWaitMs: policy.workerWaitMs ?? DECISION_WORKER_WAIT_MS,
  });
  const { calls } = waiting;
  const refused = new Set<string>();
  if (!principal.roles.has('approver')) {
    notes.push(
      `${principal.subject} may not decide (it needs the role approver); the calls still wait for an approver (the inbox, or POST /v1/conversations/${conversationId}/decisions).`,
    );
    for (const r of responses) refused.add(r.approvalId);
  } else {
    // A decision taken already (the automatic send repeats an answer until its call shows an outcome) is not sent again.
    const repeated = await repeatedResponses(client, principal.subject, responses, waiting);
    for (const r of responses.filter((x) => !repeated.has(x.approvalId))) {
      const waitsIn = calls.find((c) => c.callKey === r.approvalId)?.conversationId ?? conversationId;
      try {
        await decideCalls(
          client,
          principal,
          waitsIn,
          {
            decision: r.approved ? 'approve' : 'reject',
            callKeys: [r.approvalId],
            ...(r.reason ? { reason: r.reason } : {}),
          },
          policy,
        );
      } catch (err) {
        if (!(err instanceof DecisionProblem)) throw err;
        const waits = calls.some((c) => c.callKey === r.approvalId);
        notes.push(waits ? `${err.message} The call still waits.` : err.message);
        refused.add(r.approvalId);
      }
    }
  }
  const viewer = viewerOf(principal, policy);
  const chunks: UiChunk[] = notes.flatMap((note, i) => {
    const id = `decision-note-${i}`;
    return [
      { type: 'text-start', id },
      { type: 'text-delta', id, delta: note },
      { type: 'text-end', id },
    ] satisfies UiChunk[];
  });
  for (const call of calls) {
    if (!refused.has(call.callKey)) continue;
    const below =
      call.conversationId === conversationId
        ? undefined
        : { agentPath: call.agentPath, conversationId: call.conversationId };
    const ask = approvalAsk(viewer, {
      requestedBy: call.requestedBy,
      ...(call.policy ? { policy: call.policy } : {}),
      ...(below ? { below } : {}),
    });
    chunks.push({
      type: 'tool-approval-request',
      approvalId: call.callKey,
      toolCallId: call.callKey,
      approvalDescriptor: ask.descriptor,
      ...(ask.reason ? { reason: ask.reason } : {}),
    });
  }
  return chunks;
}
