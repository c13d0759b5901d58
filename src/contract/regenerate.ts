/**
 * Regenerate: asking a conversation for its last answer again
 * ({@link RegenerateRequest}), what it answers ({@link RegenerateResult}), and
 * the check that says what is wrong with a request. Pure and workflow-safe.
 */
import { SENT_BY_MAX_CHARS } from './limits';
import { describeUnstorableFields } from './text';

/**
 * Asks the conversation to answer its last turn's user messages again: the
 * messages stored after them (the earlier answer, its calls and results) move
 * out of the live transcript as superseded (reason `regenerate`), and a new
 * turn asks the model again. Accepted only while the conversation is idle and
 * its last turn has ended.
 */
export interface RegenerateRequest {
  /**
   * Client-chosen id, also the id the new turn's record lists in `messageIds`
   * (how a client finds the new answer). A request whose id was already
   * received is ignored, so a client may resend safely. Default: a fresh id.
   */
  requestId?: string;
  /** Who asked, as the sender's authentication named them (the HTTP API sets the token's subject). */
  sentBy?: string;
}

/** What the `regenerate` update answers when the request is accepted. */
export interface RegenerateResult {
  /** The id of the new turn (its record's `messageIds`). */
  requestId: string;
  /** The first seq superseded: the new answer is stored from here on. */
  fromSeq: number;
  /** False when a request with this id was received before (nothing new was started). */
  started: boolean;
}

/** Says what is wrong with a regenerate request; undefined when it is valid. */
export function describeBadRegenerateRequest(request: unknown): string | undefined {
  if (request === undefined) return undefined;
  if (typeof request !== 'object' || request === null)
    return 'expected an object like {"requestId": "..."} (every field is optional)';
  const { requestId, sentBy } = request as Record<string, unknown>;
  if (requestId !== undefined && (typeof requestId !== 'string' || requestId === '' || requestId.length > 256))
    return '"requestId", when given, must be a non-empty string of at most 256 characters';
  if (sentBy !== undefined && (typeof sentBy !== 'string' || sentBy === '' || sentBy.length > SENT_BY_MAX_CHARS))
    return `"sentBy", when given, must be a non-empty string of at most ${SENT_BY_MAX_CHARS} characters`;
  return describeUnstorableFields(request as RegenerateRequest, ['requestId', 'sentBy']);
}
