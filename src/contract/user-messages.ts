/**
 * What a user sends to a conversation: a message ({@link UserMessage}) or a
 * request to stop the current turn ({@link CancelTurnRequest}), and the
 * checks that say what is wrong with one. Pure and workflow-safe.
 */
import { SENT_BY_MAX_CHARS, USER_MESSAGE_MAX_BYTES, utf8Bytes } from './limits';
import { describeBadMessageFiles, type MessageFile } from './message-files';
import { describeUnstorableFields } from './text';

/** A message from the user. */
export interface UserMessage {
  text: string;
  /**
   * Client-chosen id. A message whose id was already received is ignored, so
   * a client may resend safely; also how a client finds the turn that answered it.
   */
  messageId?: string;
  /**
   * Who sent it, as the sender's authentication named them: the HTTP API sets
   * the token's subject. Shown as `requestedBy` of the approvals its turn asks
   * for (four eyes). A message signalled directly (not through the API) names
   * whom its sender chose; see "Trust boundary" in the README.
   */
  sentBy?: string;
  /** Images and documents it carries, by reference (their bytes are in PostgreSQL); the text may then be empty. */
  files?: MessageFile[];
}

/** Asks the current turn to stop, as the "Esc" of an interactive agent. */
export interface CancelTurnRequest {
  reason?: string;
}

/** Describes what is wrong with a user message payload; undefined when it is valid. */
export function describeBadUserMessage(message: unknown): string | undefined {
  if (typeof message !== 'object' || message === null) return 'expected an object like {"text": "..."}';
  const { text, messageId, files } = message as Record<string, unknown>;
  const badFiles = describeBadMessageFiles(files);
  if (badFiles) return badFiles;
  const withFiles = Array.isArray(files) && files.length > 0;
  if (typeof text !== 'string' || (text.trim() === '' && !withFiles))
    return withFiles ? '"text" must be a string' : '"text" must be a non-empty string';
  if (messageId !== undefined && (typeof messageId !== 'string' || messageId === '')) {
    return '"messageId", when given, must be a non-empty string';
  }
  const { sentBy } = message as Record<string, unknown>;
  if (sentBy !== undefined && (typeof sentBy !== 'string' || sentBy === '' || sentBy.length > SENT_BY_MAX_CHARS)) {
    return `"sentBy", when given, must be a non-empty string of at most ${SENT_BY_MAX_CHARS} characters`;
  }
  return undefined;
}

/** Says how much a user message is over {@link USER_MESSAGE_MAX_BYTES}; undefined when it is within. */
export function describeOversizedUserMessage(text: string): string | undefined {
  const bytes = utf8Bytes(text);
  if (bytes <= USER_MESSAGE_MAX_BYTES) return undefined;
  return `the message is ${bytes} bytes; a user message may be at most ${USER_MESSAGE_MAX_BYTES} bytes`;
}

/** Says which field of a user message holds a character PostgreSQL cannot store; undefined when none does. */
export function describeUnstorableUserMessage(message: UserMessage): string | undefined {
  return describeUnstorableFields(message, ['text', 'messageId', 'sentBy']);
}

/**
 * Says whether a cancel's reason holds a character PostgreSQL cannot store (it reaches the tool messages of the calls
 * it stops).
 */
export function describeUnstorableCancel(request: CancelTurnRequest | undefined): string | undefined {
  return describeUnstorableFields(request, ['reason']);
}
