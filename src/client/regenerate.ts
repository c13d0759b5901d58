/**
 * Regenerating a conversation's last answer: the `regenerate` update, whose
 * validator refuses at once (and says why) when a turn runs, when there is
 * nothing to regenerate, or when the conversation is ending. Accepted, the
 * conversation supersedes what its last turn stored after its user messages
 * (readable as superseded messages) and answers them again in a new turn.
 * docs/operating.md, "Regenerate".
 */
import { randomUUID } from 'node:crypto';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { ConversationClosedError, GoingBackRefusedError, UnstorableTextError } from '../common/errors';
import { describeBadRegenerateRequest, regenerateUpdate, type RegenerateResult } from '../contract';
import { describeUnstorableText } from '../contract/text';
import type { ClientContext } from './context';

/** Options of `AgentClient.regenerate`. */
export interface RegenerateOptions {
  /** Id of the request and of the new turn (for deduplication and `waitForTurn`); a random UUID when unset. */
  requestId?: string;
  /** Who asks, as your authentication knows them; shown as `requestedBy` of the approvals the new turn asks for. */
  sentBy?: string;
}

/** The conversation refused to regenerate (a turn runs, nothing to regenerate, it is ending); nothing changed. */
export class RegenerateRefusedError extends GoingBackRefusedError {
  constructor(message: string) {
    super('regenerate_refused', message);
  }
}

/** Asks for the last answer again, as `AgentClient.regenerate` does. */
export async function regenerate(
  context: ClientContext,
  conversationId: string,
  options: RegenerateOptions = {},
): Promise<RegenerateResult> {
  const request = {
    requestId: options.requestId ?? randomUUID(),
    ...(options.sentBy === undefined ? {} : { sentBy: options.sentBy }),
  };
  const unstorable = describeUnstorableText('The conversation id', conversationId);
  if (unstorable) throw new UnstorableTextError(`${unstorable}. Nothing was sent.`);
  const bad = describeBadRegenerateRequest(request);
  if (bad) throw new TypeError(`Invalid regenerate request: ${bad}. Nothing was sent.`);
  const handle = context.temporal.workflow.getHandle(conversationId);
  try {
    return await handle.executeUpdate(regenerateUpdate, { args: [request] });
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError && err.cause) throw new RegenerateRefusedError(err.cause.message);
    // An update to a conversation that has ended is answered as if there were none: tell the two apart.
    if (err instanceof WorkflowNotFoundError && (await handle.describe().catch(() => undefined)))
      throw new ConversationClosedError(conversationId);
    throw err;
  }
}
