/**
 * Approvals as the AI SDK's UI messages carry them: what an approval request
 * says to the person reading it ({@link ApprovalAsk}), how a decision shows
 * once made ({@link CallDecided}), and the approval response a person's
 * answer brings back ({@link ApprovalResponse}). Types only: the rules that
 * fill them in are `chat-approvals.ts`'s, the stream that shows them
 * `ui-stream.ts`'s.
 */

/**
 * What an approval request says to its viewer: `reason` (the AI SDK's `approval.requestReason`) names who may decide
 * when the viewer may not approve, and `descriptor` (`approval.descriptor`) lists what the viewer may decide.
 */
export interface ApprovalAsk {
  reason?: string;
  descriptor: ApprovalDescriptor;
}

/** The `approval.descriptor` of a waiting call in the chat. */
export interface ApprovalDescriptor {
  /**
   * What the viewer may decide on it: both, only reject (four eyes, own request; or an approval policy's rule that
   * needs other people's approvals), or nothing.
   */
  decide: ('approve' | 'reject')[];
  /**
   * The rule that keeps the viewer from approving: `role` (not an approver), `four_eyes` (sent the request) or `policy`
   * (the approval policy's rule the call waits under: not in its groups, or approved it already).
   */
  rule?: 'role' | 'four_eyes' | 'policy';
  /** For a call waiting inside an agent called as a tool: the agents down to the one asking. */
  agentPath?: string[];
  /** For a call waiting inside an agent called as a tool: the conversation it waits in. */
  conversationId?: string;
}

/** How a decision on a call that waited shows: approved or not, and why (the AI SDK's approval response). */
export interface CallDecided {
  approved: boolean;
  reason?: string;
}

/** An approval response as `addToolApprovalResponse` leaves it on a tool part. */
export interface ApprovalResponse {
  approvalId: string;
  approved: boolean;
  reason?: string;
}
