import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BASE64_SIGNATURES, dataUrlPattern, messageFilesSchema } from '../../src/api/message-files-schema';

// The messages API's document states, per type, the data URL a file must be:
// the pattern holds exactly the files whose bytes start as their type does,
// so what the document allows the route takes, and what it forbids is refused.

const SIGNED: Record<string, () => Buffer> = {
  'image/png': () => Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  'image/jpeg': () => Buffer.from([0xff, 0xd8, 0xff]),
  'image/gif': () => Buffer.from(Math.random() < 0.5 ? 'GIF87a' : 'GIF89a'),
  'image/webp': () => Buffer.concat([Buffer.from('RIFF'), randomBytes(4), Buffer.from('WEBP')]),
  'application/pdf': () => Buffer.from('%PDF-'),
};
const dataUrl = (type: string, bytes: Buffer) => `data:${type};base64,${bytes.toString('base64')}`;

describe("the messages API's files", () => {
  it('a data URL matches its type exactly when its bytes start with the signature (any length after it, any padding)', () => {
    expect(Object.keys(BASE64_SIGNATURES).sort()).toEqual(Object.keys(SIGNED).sort());
    for (const [type, signature] of Object.entries(SIGNED)) {
      const pattern = new RegExp(dataUrlPattern(type));
      for (let n = 1; n <= 40; n++) {
        expect(pattern.test(dataUrl(type, Buffer.concat([signature(), randomBytes(n)]))), `${type} + ${n}`).toBe(true);
        const other = randomBytes(n + 12);
        other[0] = 0x00; // no signature starts with a zero byte
        expect(pattern.test(dataUrl(type, other)), `${type}, random`).toBe(false);
      }
      expect(pattern.test(dataUrl('image/x-other', Buffer.concat([signature(), randomBytes(9)])))).toBe(false);
      expect(pattern.test(`${dataUrl(type, Buffer.concat([signature(), randomBytes(9)]))}=`)).toBe(false);
    }
  });

  it('takes an image by https address or as its bytes, a PDF only as its bytes', () => {
    const png = Buffer.concat([SIGNED['image/png'](), randomBytes(20)]);
    const pdf = Buffer.concat([SIGNED['application/pdf'](), randomBytes(20)]);
    expect(
      messageFilesSchema.safeParse([
        { mediaType: 'image/jpeg', url: 'https://example.com/a.jpg' },
        { mediaType: 'image/png', url: dataUrl('image/png', png), filename: 'a.png' },
        { mediaType: 'application/pdf', url: dataUrl('application/pdf', pdf) },
      ]).success,
    ).toBe(true);
    for (const refused of [
      { mediaType: 'application/pdf', url: 'https://example.com/a.pdf' },
      { mediaType: 'image/png', url: 'http://example.com/a.png' },
      { mediaType: 'image/png', url: dataUrl('image/jpeg', png) },
      { mediaType: 'image/png', url: dataUrl('image/png', pdf) },
      { mediaType: 'text/plain', url: dataUrl('text/plain', Buffer.from('hi')) },
      { mediaType: 'image/png', url: dataUrl('image/png', png), filename: '' },
    ])
      expect(messageFilesSchema.safeParse([refused]).success, JSON.stringify(refused).slice(0, 80)).toBe(false);
  });
});
