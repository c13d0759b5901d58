/**
 * Approvals on the example chat page: the buttons a reader may use (the
 * approval request's descriptor lists them), else who may decide (its
 * reason); the decision once made (the AI SDK's approval response); an
 * automatic send that sends each set of answers once; a resume while
 * the turn waits for someone else's decision, and whether the response is
 * held for it (the reader may still write).
 */
import type { ChatStatus, UIMessage } from 'ai';
import { useEffect } from 'react';

/** A tool part as this page reads it. */
export type ToolPart = {
  type: 'dynamic-tool';
  toolName: string;
  toolCallId: string;
  state: string;
  title?: string;
  input?: unknown;
  output?: unknown;
  errorText?: string;
  approval?: {
    id: string;
    approved?: boolean;
    reason?: string;
    requestReason?: string;
    descriptor?: { decide?: ('approve' | 'reject')[] };
  };
};

/**
 * The approval of a call: Approve and Reject where the reader may use them (as the server says; unsaid, both), who may
 * decide otherwise, and the decision once made.
 */
export function Approval({ tool, onDecide }: { tool: ToolPart; onDecide: (id: string, approved: boolean) => void }) {
  const approval = tool.approval;
  if (!approval) return null;
  if (tool.state === 'approval-requested') {
    const may = approval.descriptor?.decide ?? ['approve', 'reject'];
    return (
      <span className="approval">
        {may.includes('approve') && <button onClick={() => onDecide(approval.id, true)}>Approve</button>}
        {may.includes('reject') && <button onClick={() => onDecide(approval.id, false)}>Reject</button>}
        {approval.requestReason && <em data-testid="who-decides">{approval.requestReason}</em>}
      </span>
    );
  }
  if (approval.approved === undefined) return null;
  return (
    <em className="decided" data-testid="decided">
      {approval.approved ? 'approved' : 'rejected'}
      {approval.reason ? `: ${approval.reason}` : ''}
    </em>
  );
}

/**
 * `sendAutomaticallyWhen` that sends the answers once every waiting call of the last message has one, and each set of
 * answers once: a response that leaves them unanswered by the server (a refused decision) does not send them again.
 * Every tool runs on the server, so a call still running (an agent called as a tool, whose own call waits below it)
 * does not hold the answers back, as the AI SDK's `lastAssistantMessageIsCompleteWithApprovalResponses` would.
 */
export function sendOnceWhenAnswered(): (options: { messages: UIMessage[] }) => boolean {
  const sent = new Set<string>();
  return ({ messages }) => {
    const last = messages[messages.length - 1];
    if (last?.role !== 'assistant') return false;
    const tools = (last.parts as unknown as ToolPart[]).filter((p) => p.type === 'dynamic-tool' && p.approval);
    if (tools.some((p) => p.state === 'approval-requested')) return false;
    const answers = tools
      .filter((p) => p.state === 'approval-responded')
      .map((p) => `${p.approval!.id}=${p.approval!.approved}`)
      .join(',');
    if (answers === '' || sent.has(answers)) return false;
    sent.add(answers);
    return true;
  };
}

/**
 * Whether the response is open only because a call of the last answer waits for someone else (the server holds it:
 * `src/api/ui-hold.ts`): streaming, with a call asking for a decision.
 */
export function heldForOthers(messages: UIMessage[], status: ChatStatus): boolean {
  const last = messages[messages.length - 1];
  return (
    status === 'streaming' &&
    last?.role === 'assistant' &&
    (last.parts as unknown as ToolPart[]).some((p) => p.type === 'dynamic-tool' && p.state === 'approval-requested')
  );
}

/**
 * Resumes the stream when a response ended while the turn waits for someone else's decision (`awaitingOthers`): the
 * server holds the resumed stream open and sends the decision when it comes.
 */
export function useResumeWhileOthersDecide(
  messages: UIMessage[],
  status: ChatStatus,
  resumeStream: () => Promise<void>,
): void {
  const last = messages[messages.length - 1];
  const waits =
    status === 'ready' &&
    last?.role === 'assistant' &&
    (last.metadata as { awaitingOthers?: boolean } | undefined)?.awaitingOthers === true;
  useEffect(() => {
    if (!waits) return;
    const timer = setTimeout(() => void resumeStream(), 1_000);
    return () => clearTimeout(timer);
  }, [waits, last, resumeStream]);
}
