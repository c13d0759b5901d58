import { describe, expect, it } from 'vitest';

import { validateChatRequest } from '../../src/testing';
import {
  UNSUPPORTED_IMAGE_MESSAGE,
  invalidFileDataMessage,
  invalidImageUrlMessage,
} from '../../src/testing/validate-content-parts';

// The scripted model server checks content parts as OpenAI's Chat Completions
// API does: the part types each role may send, an image_url's shape and the
// data URL it holds, a file part's data; with OpenAI's wording.

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]).toString('base64');
const PDF = Buffer.from('%PDF-1.4 tiny').toString('base64');
const request = (...messages: Record<string, unknown>[]) => ({ model: 'm', messages });
const user = (...content: unknown[]) => ({ role: 'user', content });
const error = (body: unknown) => validateChatRequest(body)?.body.error;

describe('content parts on the scripted model server', () => {
  it('takes text, an image (data URL or address) and a PDF in a user message', () => {
    expect(
      validateChatRequest(
        request(
          user(
            { type: 'text', text: 'look' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}`, detail: 'low' } },
            { type: 'image_url', image_url: { url: 'https://example.com/a.jpg' } },
            { type: 'file', file: { filename: 'a.pdf', file_data: `data:application/pdf;base64,${PDF}` } },
          ),
        ),
      ),
    ).toBeNull();
  });

  it('refuses a part type the role may not send', () => {
    const image = { type: 'image_url', image_url: { url: 'https://example.com/a.png' } };
    expect(error(request({ role: 'system', content: [image] }))).toEqual({
      message: "Invalid value: 'image_url'. Supported values are: 'text'.",
      type: 'invalid_request_error',
      param: 'messages[0].content[0].type',
      code: 'invalid_value',
    });
    expect(error(request(user({ type: 'image', image: 'x' })))).toMatchObject({
      message: "Invalid value: 'image'. Supported values are: 'text', 'image_url', 'input_audio', and 'file'.",
      param: 'messages[0].content[0].type',
    });
    expect(error(request(user()))).toMatchObject({ param: 'messages[0].content', code: 'empty_array' });
  });

  it("refuses an image_url without its url, or whose data URL is not an image's base64", () => {
    expect(error(request(user({ type: 'image_url' })))).toMatchObject({
      message: "Missing required parameter: 'messages[0].content[0].image_url'.",
    });
    expect(error(request(user({ type: 'image_url', image_url: {} })))).toMatchObject({
      message: "Missing required parameter: 'messages[0].content[0].image_url.url'.",
    });
    const param = 'messages[0].content[0].image_url.url';
    const refused = (url: string) => error(request(user({ type: 'image_url', image_url: { url } })));
    expect(refused(PNG)).toEqual({
      message: invalidImageUrlMessage(param, "a value without the 'data:' prefix"),
      type: 'invalid_request_error',
      param,
      code: 'invalid_value',
    });
    expect(refused(`data:application/pdf;base64,${PDF}`)?.message).toBe(
      `Invalid image URL: '${param}'. Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got unsupported MIME type 'application/pdf'.`,
    );
    expect(refused('data:image/png;base64,')?.message).toBe(
      invalidImageUrlMessage(param, 'empty base64-encoded bytes'),
    );
    expect(refused('data:image/png;base64,@@@@')?.message).toBe(
      invalidImageUrlMessage(param, 'an invalid base64-encoded value'),
    );
    expect(refused(`data:image/png;base64,${PDF}`)).toMatchObject({
      message: UNSUPPORTED_IMAGE_MESSAGE,
      code: 'invalid_image_format',
    });
  });

  it("refuses a file part whose data is not a PDF's base64 data URL", () => {
    const param = 'messages[0].content[0].file.file_data';
    expect(error(request(user({ type: 'file', file: { filename: 'a.pdf', file_data: PDF } })))).toEqual({
      message: invalidFileDataMessage(param, 'application/pdf', 'an invalid base64-encoded value'),
      type: 'invalid_request_error',
      param,
      code: 'invalid_value',
    });
    expect(error(request(user({ type: 'file', file: { filename: 'a.pdf' } })))).toMatchObject({
      message: `Missing required parameter: '${param}'.`,
    });
  });
});
