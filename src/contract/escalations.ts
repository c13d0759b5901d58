/** A waiting call's escalation steps as the workflow records them. Types only; workflow-safe. */

/** A step of a waiting call's escalation ladder, taken: recorded for approvers' lists and announced to webhooks. */
export interface EscalationRecord {
  conversationId: string;
  /** The effect key of the waiting call. */
  callKey: string;
  toolCallId: string;
  toolName: string;
  /** The approval policy's rule the call waits under. */
  rule: string;
  /** Which step of the ladder this is, from 1. */
  step: number;
  /** The step is a reminder. */
  remind: boolean;
  /** The groups this step added. */
  addedGroups: string[];
  /** Who may decide the call from now on (absent: any approver). */
  groups?: string[];
  /** Workflow time of the step, ms since the epoch. */
  escalatedAt: number;
  /** When the next step is due, workflow ms; absent when none is left (the deadline's outcome comes next). */
  nextEscalationAt?: number;
  /** The call's approval deadline, workflow ms. */
  deadlineAt: number;
}
