/**
 * The bytes of files user messages carry (`message_files`), keyed by their
 * SHA-256: a message names a file by that id ({@link MessageFile}), so the
 * bytes never travel through Temporal's history, the same file sent twice is
 * stored once, and a forked conversation's copy of a message still finds
 * its file. Written by the sender (the API, the client) before the message
 * is signalled; read by each model call that sends the message.
 */
import { createHash } from 'node:crypto';
import type { Pool } from 'pg';
import type { AgentTables } from './schema';

/** A stored file's bytes and type. */
export interface StoredMessageFile {
  mediaType: string;
  bytes: Buffer;
}

/** The id a file's bytes are stored under: their SHA-256, in lowercase hex. */
export function messageFileId(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Stores `bytes` (idempotent: the same bytes keep their first row) and returns their id. */
export async function storeMessageFile(
  pool: Pool,
  tables: AgentTables,
  file: { conversationId: string; mediaType: string; bytes: Buffer },
): Promise<string> {
  const fileId = messageFileId(file.bytes);
  await pool.query(
    `INSERT INTO ${tables.messageFiles} (file_id, media_type, bytes, conversation_id) VALUES ($1, $2, $3, $4)
     ON CONFLICT (file_id) DO NOTHING`,
    [fileId, file.mediaType, file.bytes, file.conversationId],
  );
  return fileId;
}

/** The stored files among `fileIds`, by id (an id with no row is absent from the map). */
export async function readMessageFiles(
  pool: Pool,
  tables: AgentTables,
  fileIds: readonly string[],
): Promise<Map<string, StoredMessageFile>> {
  const found = new Map<string, StoredMessageFile>();
  if (fileIds.length === 0) return found;
  const { rows } = await pool.query<{ file_id: string; media_type: string; bytes: Buffer }>(
    `SELECT file_id, media_type, bytes FROM ${tables.messageFiles} WHERE file_id = ANY($1::text[])`,
    [[...new Set(fileIds)]],
  );
  for (const row of rows) found.set(row.file_id, { mediaType: row.media_type, bytes: row.bytes });
  return found;
}

/**
 * The bytes of file `fileId` as a message of `conversationId` carries it: undefined when no user message of that
 * conversation (live or superseded) names it, or its bytes are gone.
 */
export async function readConversationFile(
  pool: Pool,
  tables: AgentTables,
  conversationId: string,
  fileId: string,
): Promise<StoredMessageFile | undefined> {
  const named = JSON.stringify([{ fileId }]);
  const { rows } = await pool.query<{ media_type: string; bytes: Buffer }>(
    `SELECT f.media_type, f.bytes FROM ${tables.messageFiles} f
      WHERE f.file_id = $2
        AND (EXISTS (SELECT 1 FROM ${tables.conversationMessages} m
                      WHERE m.conversation_id = $1 AND m.role = 'user' AND m.message->'files' @> $3::jsonb)
          OR EXISTS (SELECT 1 FROM ${tables.supersededMessages} s
                      WHERE s.conversation_id = $1 AND s.message->'files' @> $3::jsonb))`,
    [conversationId, fileId, named],
  );
  return rows[0] ? { mediaType: rows[0].media_type, bytes: rows[0].bytes } : undefined;
}
