/**
 * The `files` of `POST /v1/conversations/{id}/messages`, as exact as the
 * route: what the document allows is taken (`message-parts.ts` checks the
 * same rules), what it forbids is refused. A file is an image by its
 * `https:` address, or an image or a PDF as a base64 `data:` URL of its own
 * type whose bytes start as that type does (a pattern per type: the base64
 * of each type's signature).
 */
import { z } from 'zod';
import { MESSAGE_FILE_MAX_BYTES, MESSAGE_FILES_MAX, MESSAGE_FILES_MAX_BYTES, MESSAGE_IMAGE_TYPES } from '../contract';
import { messageBody, personText } from './schemas';

/** An `https:` address the API takes for an image: printable ASCII without spaces, at most 2048 characters. */
export const HTTPS_FILE_URL = /^https:\/\/[!-~]{1,2040}$/;

/**
 * The base64 each type's bytes start with, in whole groups of four characters: the signature (PNG's eight bytes,
 * JPEG's FF D8 FF, GIF87a or GIF89a, RIFF….WEBP, %PDF-) and the bytes that share its last group.
 */
export const BASE64_SIGNATURES: Record<string, string> = {
  'image/png': 'iVBORw0KGg[o-r][A-Za-z0-9+/]',
  'image/jpeg': '/9j/',
  'image/gif': 'R0lGOD[dl]h',
  'image/webp': 'UklGR[g-v][A-Za-z0-9+/]{4}[BFJNRVZdhlptx159]XRUJQ',
  'application/pdf': 'JVBERi[0-3][A-Za-z0-9+/]',
};

/** The data URL of a file of `mediaType`, as a regular expression: its own type, base64, the type's signature. */
export function dataUrlPattern(mediaType: string): string {
  const rest = '(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?';
  return `^data:${mediaType.replace('/', '\\/')};base64,${BASE64_SIGNATURES[mediaType]}${rest}$`;
}

const filename = personText('filename', {
  minChars: 1,
  maxChars: 256,
  description: 'The name the model is told (documents) and the page shows.',
}).optional();

const byAddress = z.strictObject({
  mediaType: z.enum(MESSAGE_IMAGE_TYPES),
  url: z
    .string()
    .regex(HTTPS_FILE_URL)
    .describe('An https: address of the image (printable ASCII, at most 2048 characters); the model fetches it.'),
  filename,
});

const byBytes = Object.keys(BASE64_SIGNATURES).map((mediaType) =>
  z.strictObject({
    mediaType: z.literal(mediaType),
    url: z
      .string()
      .regex(new RegExp(dataUrlPattern(mediaType)))
      .describe(
        `The bytes as data:${mediaType};base64,…, starting as a ${mediaType} does; at most ${MESSAGE_FILE_MAX_BYTES} bytes (413 message_too_large above).`,
      ),
    filename,
  }),
);

/** The `files` field. */
export const messageFilesSchema = z
  .array(z.union([byAddress, ...byBytes]))
  .max(MESSAGE_FILES_MAX)
  .describe(
    `Images and PDFs the message carries (the AI SDK's FileUIPart: mediaType, url, filename): at most ${MESSAGE_FILES_MAX}, ${MESSAGE_FILES_MAX_BYTES} bytes together (413 message_too_large above). docs/http-api.md, "Files".`,
  );

/** The body of `POST /v1/conversations/{id}/messages`: {@link messageBody} with its files. */
export const messageWithFilesBody = messageBody.extend({ files: messageFilesSchema.optional() });
