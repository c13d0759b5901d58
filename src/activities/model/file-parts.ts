/**
 * A user message's files, as the Chat Completions API takes them: the
 * transcript stores a reference per file ({@link MessageFile}); just before
 * the request is sent, each becomes a content part after the message's
 * text, its bytes read from PostgreSQL (`message_files`). An image is an
 * `image_url` part (a `data:` URL of its bytes, or its `https:` address), a
 * PDF a `file` part with its bytes as a `data:` URL.
 */
import { ApplicationFailure } from '@temporalio/common';
import type {
  ChatCompletionContentPart,
  ChatCompletionCreateParamsNonStreaming,
} from 'openai/resources/chat/completions';
import { ActivityErrorType } from '../../contract/activities';
import { isMessageImageType, type MessageFile } from '../../contract/message-files';
import { readMessageFiles, type StoredMessageFile } from '../../db/message-files';
import type { AgentTables } from '../../db/schema';
import type { Pool } from 'pg';

type Outgoing = ChatCompletionCreateParamsNonStreaming['messages'][number];

/** The request with each user message's files as content parts (the same body when no message has any). */
export async function withFileParts(
  pool: Pool,
  tables: AgentTables,
  body: ChatCompletionCreateParamsNonStreaming,
): Promise<ChatCompletionCreateParamsNonStreaming> {
  const filesOf = (m: Outgoing): MessageFile[] =>
    m.role === 'user' ? ((m as { files?: MessageFile[] }).files ?? []) : [];
  const ids = body.messages.flatMap((m) => filesOf(m).flatMap((f) => (f.fileId ? [f.fileId] : [])));
  if (!body.messages.some((m) => filesOf(m).length > 0)) return body;
  const stored = await readMessageFiles(pool, tables, ids);
  const messages = body.messages.map((m): Outgoing => {
    const files = filesOf(m);
    if (files.length === 0) return m;
    const text = typeof m.content === 'string' ? m.content : '';
    const parts: ChatCompletionContentPart[] = [
      ...(text === '' ? [] : [{ type: 'text' as const, text }]),
      ...files.map((f) => filePart(f, stored)),
    ];
    return { role: 'user', content: parts };
  });
  return { ...body, messages };
}

function filePart(file: MessageFile, stored: Map<string, StoredMessageFile>): ChatCompletionContentPart {
  let url = file.url;
  if (file.fileId !== undefined) {
    const found = stored.get(file.fileId);
    if (!found) {
      // The message names bytes that are gone (deleted by hand): the request cannot be made as the user sent it.
      throw ApplicationFailure.create({
        message: `The file ${file.filename ?? file.fileId} (${file.mediaType}) of a user message is not in message_files (id ${file.fileId}): it was deleted, so the message cannot be sent to the model.`,
        type: ActivityErrorType.ModelRequestRejected,
        nonRetryable: true,
      });
    }
    url = `data:${file.mediaType};base64,${found.bytes.toString('base64')}`;
  }
  if (isMessageImageType(file.mediaType)) return { type: 'image_url', image_url: { url: url! } };
  return { type: 'file', file: { filename: file.filename ?? 'document.pdf', file_data: url! } };
}
