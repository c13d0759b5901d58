/**
 * Files for a user message: `AgentClient.storeMessageFiles` checks each
 * (type, size) and stores its bytes in PostgreSQL, returning the references
 * to send with the message (`SendMessageOptions.files`); only those cross
 * Temporal's history. `AgentClient.readMessageFile` reads a file back.
 */
import { MessageTooLargeError } from '../common/errors';
import {
  isMessageFileType,
  MESSAGE_DOCUMENT_TYPES,
  MESSAGE_FILE_MAX_BYTES,
  MESSAGE_FILES_MAX,
  MESSAGE_FILES_MAX_BYTES,
  MESSAGE_IMAGE_TYPES,
  type MessageFile,
} from '../contract';
import { readConversationFile, storeMessageFile, type StoredMessageFile } from '../db/message-files';
import type { ClientContext } from './context';

/** A file to store: its bytes, its media type and, when it has one, its name. */
export interface MessageFileUpload {
  mediaType: string;
  bytes: Uint8Array;
  filename?: string;
}

/** Says why `file` (the `index`th of a message) cannot be sent; undefined when it can. */
export function describeUnsendableFile(file: { mediaType: string; bytes: number }, index: number): string | undefined {
  if (!isMessageFileType(file.mediaType)) {
    return (
      `file ${index} is ${file.mediaType}, which the model does not read: send an image ` +
      `(${MESSAGE_IMAGE_TYPES.join(', ')}) or a document (${MESSAGE_DOCUMENT_TYPES.join(', ')}), ` +
      'or put the content in the text'
    );
  }
  if (file.bytes > MESSAGE_FILE_MAX_BYTES)
    return `file ${index} (${file.mediaType}) is ${file.bytes} bytes; a file may be at most ${MESSAGE_FILE_MAX_BYTES} bytes (MESSAGE_FILE_MAX_BYTES): make it smaller`;
  return undefined;
}

/**
 * Checks and stores `files` for a message of `conversationId`; returns their references, in order. Throws a
 * `TypeError` for a type the model does not read, a `MessageTooLargeError` over a size limit; nothing is stored then.
 */
export async function storeMessageFiles(
  context: ClientContext,
  conversationId: string,
  files: readonly MessageFileUpload[],
): Promise<MessageFile[]> {
  if (files.length > MESSAGE_FILES_MAX)
    throw new TypeError(
      `A message may carry at most ${MESSAGE_FILES_MAX} files; got ${files.length}. Nothing was sent.`,
    );
  let total = 0;
  for (const [i, file] of files.entries()) {
    const problem = describeUnsendableFile({ mediaType: file.mediaType, bytes: file.bytes.length }, i);
    if (problem && file.bytes.length > MESSAGE_FILE_MAX_BYTES)
      throw new MessageTooLargeError(`${problem}. Nothing was sent.`, file.bytes.length, MESSAGE_FILE_MAX_BYTES);
    if (problem) throw new TypeError(`${problem}. Nothing was sent.`);
    total += file.bytes.length;
  }
  if (total > MESSAGE_FILES_MAX_BYTES) {
    throw new MessageTooLargeError(
      `The files are ${total} bytes together; a message's files may be at most ${MESSAGE_FILES_MAX_BYTES} bytes (MESSAGE_FILES_MAX_BYTES). Nothing was sent.`,
      total,
      MESSAGE_FILES_MAX_BYTES,
    );
  }
  const pool = await context.database();
  const stored: MessageFile[] = [];
  for (const file of files) {
    const bytes = Buffer.from(file.bytes);
    const fileId = await storeMessageFile(pool, context.tables, { conversationId, mediaType: file.mediaType, bytes });
    stored.push({
      fileId,
      mediaType: file.mediaType,
      bytes: bytes.length,
      ...(file.filename ? { filename: file.filename } : {}),
    });
  }
  return stored;
}

/** The bytes of a file a message of `conversationId` carries, by its id; undefined when none of them names it. */
export async function readMessageFile(
  context: ClientContext,
  conversationId: string,
  fileId: string,
): Promise<StoredMessageFile | undefined> {
  return readConversationFile(await context.database(), context.tables, conversationId, fileId);
}
