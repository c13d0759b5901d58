/**
 * What a user message sent to the API carries besides its text: files, as
 * the AI SDK's `FileUIPart` has them (`mediaType`, `url`: a `data:` URL of
 * the bytes or an `https:` address, `filename`), in the chat's message parts
 * and in the `files` of `POST /v1/conversations/{id}/messages`. Each is
 * taken whole or refused naming it (its index, its media type) and why,
 * before anything is sent: nothing is dropped. Taken files are stored in
 * PostgreSQL and travel on as references (`AgentClient.storeMessageFiles`).
 */
import type { AgentClient } from '../client/client';
import {
  isMessageFileType,
  isMessageImageType,
  MESSAGE_DOCUMENT_TYPES,
  MESSAGE_IMAGE_TYPES,
  MESSAGE_FILE_MAX_BYTES,
  MESSAGE_FILES_MAX,
  MESSAGE_FILES_MAX_BYTES,
  type MessageFile,
} from '../contract';
import { describeUnstorableText } from '../contract/text';
import { dataUrlPattern, HTTPS_FILE_URL } from './message-files-schema';
import { ApiError } from './refusals';

/**
 * The largest request body of a route that takes files: a message's files at most, as base64 (4 bytes per 3), with
 * room for its text and the rest of the body.
 */
export const FILES_BODY_LIMIT_BYTES = Math.ceil((MESSAGE_FILES_MAX_BYTES * 4) / 3) + 2 * 1024 * 1024;

/** A file as the AI SDK's `FileUIPart` (and the messages API's `files`) carries it. */
export interface IncomingFile {
  mediaType: string;
  url: string;
  filename?: string;
}

/** A chat message's parts as the model takes them: its text, and its files with their part index. */
export interface UserParts {
  text: string;
  files: { index: number; file: IncomingFile }[];
}

/**
 * The text and files of a user message's UI parts. Refuses (400, naming the part) a part that is neither text nor a
 * file, and a file part without its media type or url.
 */
export function userParts(parts: readonly Record<string, unknown>[]): UserParts {
  const texts: string[] = [];
  const files: UserParts['files'] = [];
  for (const [index, part] of parts.entries()) {
    if (part.type === 'text' && typeof part.text === 'string') texts.push(part.text);
    else if (part.type === 'file') {
      const { mediaType, url, filename } = part;
      if (typeof mediaType !== 'string' || typeof url !== 'string')
        throw new ApiError(
          'invalid_request',
          `Part ${index} of the message is a file without its mediaType and url (both strings): send it as the AI SDK's FileUIPart.`,
        );
      files.push({
        index,
        file: { mediaType, url, ...(typeof filename === 'string' && filename ? { filename } : {}) },
      });
    } else {
      throw new ApiError(
        'invalid_request',
        `Part ${index} of the message is of type ${JSON.stringify(part.type)}, which a user message here may not carry: send text and file parts only.`,
      );
    }
  }
  return { text: texts.join('\n'), files };
}

/**
 * Checks the files of a message and stores their bytes; returns their references, in order. Refuses the first file
 * that cannot go to the model (400 naming it: `what` and its index, its media type, why; 413 over a size limit).
 */
export async function storeIncomingFiles(
  client: AgentClient,
  conversationId: string,
  files: readonly { index: number; file: IncomingFile }[],
  what: 'Part' | 'File',
): Promise<MessageFile[]> {
  if (files.length > MESSAGE_FILES_MAX)
    throw new ApiError(
      'invalid_request',
      `The message carries ${files.length} files; a message may carry at most ${MESSAGE_FILES_MAX}: send the others in another message.`,
    );
  const byUrl: MessageFile[] = [];
  const uploads: { mediaType: string; bytes: Buffer; filename?: string }[] = [];
  const order: ('url' | 'upload')[] = [];
  let total = 0;
  for (const { index, file } of files) {
    const name = `${what} ${index} (${file.mediaType}${file.filename ? `, ${file.filename}` : ''})`;
    const refuse = (why: string) => new ApiError('invalid_request', `${name} cannot be sent to the model: ${why}.`);
    if (file.filename !== undefined) {
      const unstorable = describeUnstorableText('its filename', file.filename);
      if (unstorable) throw refuse(unstorable);
      const chars = [...file.filename].length;
      if (chars > 256) throw refuse(`its filename is ${chars} characters, over 256`);
    }
    if (!isMessageFileType(file.mediaType))
      throw refuse(
        `the model does not read ${file.mediaType}: send an image (${MESSAGE_IMAGE_TYPES.join(', ')}) or a document (${MESSAGE_DOCUMENT_TYPES.join(', ')}), or put the content in the text`,
      );
    if (file.url.startsWith('https://')) {
      if (!isMessageImageType(file.mediaType))
        throw refuse('a document must be sent as its bytes (a data: URL): the model API takes only images by address');
      if (!HTTPS_FILE_URL.test(file.url))
        throw refuse('its https: address must be printable ASCII without spaces, at most 2048 characters');
      byUrl.push({ url: file.url, mediaType: file.mediaType, ...(file.filename ? { filename: file.filename } : {}) });
      order.push('url');
      continue;
    }
    const again = await storedFileNamed(client, conversationId, file);
    if (again === 'foreign') throw refuse(`its url names a file no message of ${conversationId} carries`);
    if (again) {
      byUrl.push(again);
      order.push('url');
      continue;
    }
    if (!file.url.startsWith('data:'))
      throw refuse(
        `its url is neither a data: URL of its bytes nor an https: address (${file.url.slice(0, 16)}...): the worker fetches nothing, send the bytes`,
      );
    const bytes = dataUrlBytes(file.url, file.mediaType, name, refuse);
    if (bytes.length > MESSAGE_FILE_MAX_BYTES)
      throw new ApiError(
        'message_too_large',
        `${name} is ${bytes.length} bytes; a file may be at most ${MESSAGE_FILE_MAX_BYTES} bytes: make it smaller.`,
      );
    // The document's pattern for the type (message-files-schema.ts): the bytes start as the type's do.
    if (!new RegExp(dataUrlPattern(file.mediaType)).test(file.url))
      throw refuse(`its bytes do not start as a ${file.mediaType} does`);
    total += bytes.length;
    uploads.push({ mediaType: file.mediaType, bytes, ...(file.filename ? { filename: file.filename } : {}) });
    order.push('upload');
  }
  if (total > MESSAGE_FILES_MAX_BYTES)
    throw new ApiError(
      'message_too_large',
      `The message's files are ${total} bytes together; a message's files may be at most ${MESSAGE_FILES_MAX_BYTES} bytes: send some in another message.`,
    );
  const stored = uploads.length > 0 ? await client.storeMessageFiles(conversationId, uploads) : [];
  return order.map((kind) => (kind === 'url' ? byUrl.shift()! : stored.shift()!));
}

/**
 * A file already stored for this conversation, named as its history names it (`ui-history.ts`:
 * `/v1/conversations/{id}/files/{fileId}`): a page that sends such a message again (an edit) sends the same file.
 * Undefined for any other url; `foreign` when no message of the conversation carries that file (of that type).
 */
async function storedFileNamed(
  client: AgentClient,
  conversationId: string,
  file: IncomingFile,
): Promise<MessageFile | 'foreign' | undefined> {
  const named = /^\/v1\/conversations\/([^/]+)\/files\/([0-9a-f]{64})$/.exec(file.url);
  if (!named) return undefined;
  let id: string;
  try {
    id = decodeURIComponent(named[1]);
  } catch {
    return 'foreign';
  }
  const found = id === conversationId ? await client.readMessageFile(conversationId, named[2]) : undefined;
  if (!found || found.mediaType !== file.mediaType) return 'foreign';
  return {
    fileId: named[2],
    mediaType: file.mediaType,
    bytes: found.bytes.length,
    ...(file.filename ? { filename: file.filename } : {}),
  };
}

/** The bytes of a base64 `data:` URL of `mediaType`; refuses one of another form or type, or too large. */
function dataUrlBytes(url: string, mediaType: string, name: string, refuse: (why: string) => ApiError): Buffer {
  const header = `data:${mediaType};base64,`;
  if (!url.startsWith(header)) {
    const stated = /^data:([^;,]*)/.exec(url)?.[1];
    if (stated && stated !== mediaType) throw refuse(`its data: URL says ${stated}, not ${mediaType}`);
    throw refuse(`its data: URL must start with ${header} (base64, no parameters)`);
  }
  const data = url.slice(header.length);
  // At most a few bytes over the limit are decoded: a larger one is refused by its length alone.
  if (data.length > Math.ceil((MESSAGE_FILE_MAX_BYTES * 4) / 3) + 4)
    throw new ApiError(
      'message_too_large',
      `${name} is over ${MESSAGE_FILE_MAX_BYTES} bytes; a file may be at most ${MESSAGE_FILE_MAX_BYTES} bytes: make it smaller.`,
    );
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(data) || data.length % 4 !== 0) throw refuse('its data: URL is not valid base64');
  return Buffer.from(data, 'base64');
}

/**
 * Sends a chat's user message (its text parts joined, its file parts stored and sent by reference) as `sentBy`;
 * returns the message id. Refuses a message with neither text nor files.
 */
export async function sendUserParts(
  client: AgentClient,
  conversationId: string,
  message: { id: string; parts: readonly Record<string, unknown>[] },
  sentBy: string,
): Promise<string> {
  const { text, files } = userParts(message.parts);
  if (text.trim() === '' && files.length === 0)
    throw new ApiError(
      'invalid_request',
      'The last message has no text and no file: send a user message with a text part (or a file part).',
    );
  const stored = await storeIncomingFiles(client, conversationId, files, 'Part');
  return client.sendMessage(conversationId, text, {
    messageId: message.id,
    sentBy,
    ...(stored.length > 0 ? { files: stored } : {}),
  });
}

/** The `files` of a messages API body, checked and stored, as `SendMessageOptions` takes them (nothing when none). */
export async function filesOfBody(
  client: AgentClient,
  conversationId: string,
  files: readonly IncomingFile[] | undefined,
): Promise<{ files?: MessageFile[] }> {
  if (!files || files.length === 0) return {};
  const indexed = files.map((file, index) => ({ index, file }));
  return { files: await storeIncomingFiles(client, conversationId, indexed, 'File') };
}
