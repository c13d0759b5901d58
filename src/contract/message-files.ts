/**
 * Files a user message carries (images, PDFs): what crosses the workflow
 * boundary is a reference ({@link MessageFile}), never the bytes. The bytes
 * are stored in PostgreSQL (`message_files`, by the SHA-256 of their content)
 * before the message is sent, and read again by the model call that sends
 * them. Pure and workflow-safe.
 */
import { MESSAGE_FILE_MAX_BYTES, MESSAGE_FILES_MAX, MESSAGE_FILES_MAX_BYTES } from './limits';
import { describeUnstorableFields } from './text';

/** The image types the Chat Completions API reads (`image_url` content parts). */
export const MESSAGE_IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'] as const;

/** The other file types it reads (`file` content parts, as their bytes). */
export const MESSAGE_DOCUMENT_TYPES = ['application/pdf'] as const;

/**
 * A file of a user message, by reference. Exactly one of `fileId` (bytes
 * stored in PostgreSQL) and `url` (an image on the web, sent to the model as
 * its address).
 */
export interface MessageFile {
  /** The stored bytes' SHA-256, in hex (`message_files.file_id`). */
  fileId?: string;
  /** An `https:` address of an image, sent to the model as is (nothing is fetched by the worker). */
  url?: string;
  /** The IANA media type, one of {@link MESSAGE_IMAGE_TYPES} or {@link MESSAGE_DOCUMENT_TYPES}. */
  mediaType: string;
  /** The name the sender gave it. */
  filename?: string;
  /** Stored files: their size in bytes. */
  bytes?: number;
}

/** Whether `mediaType` is an image type the model reads. */
export function isMessageImageType(mediaType: string): boolean {
  return (MESSAGE_IMAGE_TYPES as readonly string[]).includes(mediaType);
}

/** Whether `mediaType` is a type the model reads at all. */
export function isMessageFileType(mediaType: string): boolean {
  return isMessageImageType(mediaType) || (MESSAGE_DOCUMENT_TYPES as readonly string[]).includes(mediaType);
}

/** Says what is wrong with the `files` of a user message; undefined when they are valid (or absent). */
export function describeBadMessageFiles(files: unknown): string | undefined {
  if (files === undefined) return undefined;
  if (!Array.isArray(files)) return '"files", when given, must be an array of file references';
  if (files.length > MESSAGE_FILES_MAX)
    return `"files" has ${files.length} files; a message may carry at most ${MESSAGE_FILES_MAX}`;
  let total = 0;
  for (const [i, file] of files.entries()) {
    const at = `"files[${i}]"`;
    if (typeof file !== 'object' || file === null) return `${at} must be an object like {"fileId", "mediaType"}`;
    const { fileId, url, mediaType, filename, bytes } = file as Record<string, unknown>;
    if (typeof mediaType !== 'string' || !isMessageFileType(mediaType))
      return `${at}.mediaType must be one of ${[...MESSAGE_IMAGE_TYPES, ...MESSAGE_DOCUMENT_TYPES].join(', ')}`;
    if ((fileId === undefined) === (url === undefined)) return `${at} must have exactly one of fileId and url`;
    if (fileId !== undefined && (typeof fileId !== 'string' || !/^[0-9a-f]{64}$/.test(fileId)))
      return `${at}.fileId must be the stored bytes' SHA-256 in lowercase hex`;
    if (url !== undefined) {
      if (typeof url !== 'string' || !url.startsWith('https://') || url.length > 2048)
        return `${at}.url must be an https: address of at most 2048 characters`;
      if (!isMessageImageType(mediaType)) return `${at} is a ${mediaType} by url: only images may be sent by address`;
    }
    if (filename !== undefined && (typeof filename !== 'string' || filename === '' || filename.length > 256))
      return `${at}.filename, when given, must be a non-empty string of at most 256 characters`;
    if (bytes !== undefined) {
      if (typeof bytes !== 'number' || !Number.isInteger(bytes) || bytes < 0 || bytes > MESSAGE_FILE_MAX_BYTES)
        return `${at}.bytes must be a whole number of at most ${MESSAGE_FILE_MAX_BYTES}`;
      total += bytes;
    }
    const unstorable = describeUnstorableFields(file, ['filename', 'url']);
    if (unstorable) return unstorable;
  }
  if (total > MESSAGE_FILES_MAX_BYTES)
    return `the files are ${total} bytes together; a message's files may be at most ${MESSAGE_FILES_MAX_BYTES} bytes`;
  return undefined;
}
