/**
 * The checks of a message's content given as an array of parts, as OpenAI's
 * Chat Completions API makes them: which part types each role may send, the
 * shape of a `text`, `image_url` and `file` part, and the form of the data
 * an image's or a file's `data:` URL holds (PROTOCOL.md, "Content parts").
 *
 * @packageDocumentation
 */
import { emptyArrayMessage, invalidTypeMessage, invalidValueMessage, missingParameterMessage } from './provider-errors';
import type { ValidationFailure } from './types';
import { fail, isObject } from './validate-fields';

/** The part types each role may send (a tool message's are checked with its message). */
export const CONTENT_PART_TYPES: Record<string, readonly string[]> = {
  system: ['text'],
  developer: ['text'],
  user: ['text', 'image_url', 'input_audio', 'file'],
  assistant: ['text', 'refusal'],
};

/** The image types OpenAI reads in a `data:` URL. */
const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];

/** The file types the scripted server reads in a `file` part's `data:` URL (OpenAI's Chat Completions: PDF). */
const FILE_TYPES = ['application/pdf'];

/** What an image's bytes start with, by type: other bytes are "an unsupported image". */
const IMAGE_SIGNATURES: Record<string, (b: Buffer) => boolean> = {
  'image/png': (b) => b.subarray(0, 4).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47])),
  'image/jpeg': (b) => b[0] === 0xff && b[1] === 0xd8,
  'image/gif': (b) => b.subarray(0, 4).toString('latin1') === 'GIF8',
  'image/webp': (b) =>
    b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP',
};

/** OpenAI's answer to image bytes it cannot read. */
export const UNSUPPORTED_IMAGE_MESSAGE = 'You uploaded an unsupported image. Please make sure your image is valid.';

/** OpenAI's message for an image URL it cannot take, `got` saying what it got instead. */
export function invalidImageUrlMessage(param: string, got: string): string {
  return `Invalid image URL: '${param}'. Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got ${got}.`;
}

/** OpenAI's message for a file's data it cannot take, `got` saying what it got instead. */
export function invalidFileDataMessage(param: string, mediaType: string, got: string): string {
  return `Invalid file data: '${param}'. Expected a base64-encoded data URL with an ${mediaType} MIME type (e.g. 'data:${mediaType};base64,SGVsbG8sIFdvcmxkIQ=='), but got ${got}.`;
}

/** Checks `content` (at `param`) of a message of `role` when it is an array of parts; null when valid or a string. */
export function checkContentParts(content: unknown, param: string, role: string): ValidationFailure | null {
  if (!Array.isArray(content)) return null;
  const allowed = CONTENT_PART_TYPES[role];
  if (!allowed) return null;
  if (content.length === 0) return fail(emptyArrayMessage(param), param, 'empty_array');
  for (let k = 0; k < content.length; k++) {
    const failure = checkPart(content[k], `${param}[${k}]`, allowed);
    if (failure) return failure;
  }
  return null;
}

function checkPart(part: unknown, at: string, allowed: readonly string[]): ValidationFailure | null {
  if (!isObject(part)) return fail(invalidTypeMessage(at, 'an object', part), at, 'invalid_type');
  if (part.type === undefined || part.type === null)
    return fail(missingParameterMessage(`${at}.type`), `${at}.type`, 'missing_required_parameter');
  if (typeof part.type !== 'string' || !allowed.includes(part.type))
    return fail(invalidValueMessage(part.type, allowed), `${at}.type`, 'invalid_value');
  const field = (name: string, expected: 'a string' | 'an object'): ValidationFailure | null => {
    const value = part[name] as unknown;
    if (value === undefined || value === null)
      return fail(missingParameterMessage(`${at}.${name}`), `${at}.${name}`, 'missing_required_parameter');
    const ok = expected === 'a string' ? typeof value === 'string' : isObject(value);
    return ok ? null : fail(invalidTypeMessage(`${at}.${name}`, expected, value), `${at}.${name}`, 'invalid_type');
  };
  switch (part.type) {
    case 'text':
      return field('text', 'a string');
    case 'refusal':
      return field('refusal', 'a string');
    case 'image_url':
      return field('image_url', 'an object') ?? checkImageUrl(part.image_url as Record<string, unknown>, at);
    case 'file':
      return field('file', 'an object') ?? checkFile(part.file as Record<string, unknown>, at);
    default:
      return field('input_audio', 'an object');
  }
}

function checkImageUrl(image: Record<string, unknown>, at: string): ValidationFailure | null {
  const param = `${at}.image_url.url`;
  const url = image.url;
  if (url === undefined || url === null)
    return fail(missingParameterMessage(param), param, 'missing_required_parameter');
  if (typeof url !== 'string') return fail(invalidTypeMessage(param, 'a string', url), param, 'invalid_type');
  if (image.detail !== undefined && !['auto', 'low', 'high', 'original'].includes(image.detail as string)) {
    return fail(
      invalidValueMessage(image.detail, ['auto', 'low', 'high', 'original']),
      `${at}.image_url.detail`,
      'invalid_value',
    );
  }
  // An address is fetched by the provider; the scripted server takes it as is.
  if (/^https?:\/\//.test(url)) return null;
  const data = parseDataUrl(url);
  if (!data) return fail(invalidImageUrlMessage(param, "a value without the 'data:' prefix"), param, 'invalid_value');
  if (!IMAGE_TYPES.includes(data.mediaType))
    return fail(invalidImageUrlMessage(param, `unsupported MIME type '${data.mediaType}'`), param, 'invalid_value');
  const bytes = base64Bytes(data.base64);
  if (!bytes) return fail(invalidImageUrlMessage(param, 'an invalid base64-encoded value'), param, 'invalid_value');
  if (bytes.length === 0)
    return fail(invalidImageUrlMessage(param, 'empty base64-encoded bytes'), param, 'invalid_value');
  if (!IMAGE_SIGNATURES[data.mediaType](bytes)) return fail(UNSUPPORTED_IMAGE_MESSAGE, null, 'invalid_image_format');
  return null;
}

function checkFile(file: Record<string, unknown>, at: string): ValidationFailure | null {
  const param = `${at}.file.file_data`;
  if (file.file_id === undefined && file.file_data === undefined)
    return fail(missingParameterMessage(param), param, 'missing_required_parameter');
  if (file.file_data === undefined) return null;
  if (typeof file.file_data !== 'string')
    return fail(invalidTypeMessage(param, 'a string', file.file_data), param, 'invalid_type');
  const data = parseDataUrl(file.file_data);
  const mediaType = data && FILE_TYPES.includes(data.mediaType) ? data.mediaType : 'application/pdf';
  const bytes = data && FILE_TYPES.includes(data.mediaType) ? base64Bytes(data.base64) : undefined;
  if (!bytes || bytes.length === 0 || bytes.subarray(0, 5).toString('latin1') !== '%PDF-')
    return fail(invalidFileDataMessage(param, mediaType, 'an invalid base64-encoded value'), param, 'invalid_value');
  if (file.filename !== undefined && typeof file.filename !== 'string')
    return fail(
      invalidTypeMessage(`${at}.file.filename`, 'a string', file.filename),
      `${at}.file.filename`,
      'invalid_type',
    );
  return null;
}

/** A `data:<type>;base64,<data>` URL's parts; undefined for anything else. */
function parseDataUrl(url: string): { mediaType: string; base64: string } | undefined {
  const match = /^data:([^;,]+)((?:;[^;,]*)*);base64,(.*)$/s.exec(url);
  return match ? { mediaType: match[1].toLowerCase(), base64: match[3] } : undefined;
}

/** The bytes of strict base64; undefined when it is not. */
function base64Bytes(text: string): Buffer | undefined {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return undefined;
  return Buffer.from(text, 'base64');
}
