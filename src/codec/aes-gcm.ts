/**
 * Payloads encrypted with AES-256-GCM before they reach Temporal: user text,
 * tool arguments and results, decisions and answers in workflow history are
 * ciphertext to anyone without a key. Runs wherever payloads are encoded or
 * decoded (worker, client, API, codec server); never in the workflow sandbox.
 *
 * Each payload is encrypted whole (its metadata too, as JSON with base64
 * fields) under the first key, and
 * names that key's id, so keys rotate: add a new key first, keep the old ones
 * while histories encrypted with them may still be read. Payloads that are not
 * encrypted (written before the codec was enabled) pass through, so running
 * conversations keep working when it is turned on.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { ConfigError, EncryptedPayloadError } from '../common/errors';

/** The encoding of an encrypted payload. */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
const KEY_ID = 'encryption-key-id';
const CIPHER = 'encryption-cipher';
const CIPHER_NAME = 'AES-256-GCM';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A key: its id (named in every payload it encrypts) and 32 bytes. */
export interface PayloadKey {
  id: string;
  key: Uint8Array;
}

const text = (value: string) => new TextEncoder().encode(value);
const read = (bytes: Uint8Array | null | undefined) => (bytes ? new TextDecoder().decode(bytes) : undefined);

/** A payload codec that encrypts with the first of `keys` and decrypts with whichever a payload names. */
export class AesGcmPayloadCodec implements PayloadCodec {
  private readonly keys: Map<string, Uint8Array>;
  private readonly current: PayloadKey;

  constructor(keys: readonly PayloadKey[]) {
    if (keys.length === 0) throw new ConfigError('The payload codec needs at least one key.');
    for (const k of keys) {
      if (k.key.length !== 32)
        throw new ConfigError(
          `Payload key "${k.id}" has ${k.key.length} bytes; AES-256 needs 32 (base64 of 32 random bytes: openssl rand -base64 32).`,
        );
    }
    this.keys = new Map(keys.map((k) => [k.id, k.key]));
    this.current = keys[0];
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', this.current.key, iv);
      const plain = Buffer.from(JSON.stringify(toEnvelope(payload)), 'utf8');
      const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
      return {
        metadata: { encoding: text(ENCRYPTED_ENCODING), [KEY_ID]: text(this.current.id), [CIPHER]: text(CIPHER_NAME) },
        data: sealed,
      };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      if (read(payload.metadata?.encoding) !== ENCRYPTED_ENCODING) return payload;
      const id = read(payload.metadata?.[KEY_ID]) ?? '';
      const key = this.keys.get(id);
      if (!key) {
        throw new EncryptedPayloadError(
          `A payload is encrypted with key "${id}", which this process does not hold (it holds ${[...this.keys.keys()].map((k) => `"${k}"`).join(', ')}). ` +
            'Add that key to AGENT_PAYLOAD_KEYS (after the current one) to read it.',
        );
      }
      const data = payload.data ?? new Uint8Array();
      if (data.length < IV_BYTES + TAG_BYTES)
        throw new EncryptedPayloadError(
          `An encrypted payload (key "${id}") is ${data.length} bytes, too short to be one.`,
        );
      const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      let plain: Buffer;
      try {
        plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
      } catch {
        throw new EncryptedPayloadError(
          `An encrypted payload (key "${id}") failed authentication: it was altered, or key "${id}" is not the key it was written with.`,
        );
      }
      return fromEnvelope(JSON.parse(plain.toString('utf8')) as Envelope);
    });
  }
}

/**
 * The codec of a process without keys: payloads pass as they are, and an
 * encrypted one is refused saying which setting is missing (the SDK's own
 * words would be "Unknown encoding").
 */
export class KeylessPayloadCodec implements PayloadCodec {
  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads;
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    for (const payload of payloads) {
      if (read(payload.metadata?.encoding) === ENCRYPTED_ENCODING) {
        throw new EncryptedPayloadError(
          "The conversation's payloads are encrypted, and this process has no key to read them. " +
            "Set AGENT_PAYLOAD_KEYS to the workers' keys (id:base64key[,id:base64key]).",
        );
      }
    }
    return payloads;
  }
}

/** A payload as the ciphertext holds it: metadata and data in base64. */
interface Envelope {
  m: Record<string, string>;
  d: string;
}

function toEnvelope(payload: Payload): Envelope {
  const metadata = Object.entries(payload.metadata ?? {}).map(([k, v]) => [
    k,
    Buffer.from(v ?? new Uint8Array()).toString('base64'),
  ]);
  return { m: Object.fromEntries(metadata), d: Buffer.from(payload.data ?? new Uint8Array()).toString('base64') };
}

function fromEnvelope(envelope: Envelope): Payload {
  const metadata = Object.entries(envelope.m).map(([k, v]) => [k, new Uint8Array(Buffer.from(v, 'base64'))]);
  return { metadata: Object.fromEntries(metadata), data: new Uint8Array(Buffer.from(envelope.d, 'base64')) };
}

/**
 * Reads keys written `id:base64[,id:base64…]` (the first encrypts). Throws a
 * `ConfigError` naming `variable` for anything else.
 */
export function parsePayloadKeys(value: string, variable = 'AGENT_PAYLOAD_KEYS'): PayloadKey[] {
  const entries = value
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  if (entries.length === 0)
    throw new ConfigError(
      `${variable} holds no key. Write id:base64key[,id:base64key] (openssl rand -base64 32 makes a key).`,
    );
  const seen = new Set<string>();
  return entries.map((entry) => {
    const at = entry.indexOf(':');
    const id = entry.slice(0, at).trim();
    const encoded = entry.slice(at + 1).trim();
    if (at <= 0 || !/^[A-Za-z0-9._-]+$/.test(id) || !/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) {
      throw new ConfigError(
        `${variable}: each key is id:base64 (an id of letters, digits, ".", "_" or "-"); write id:base64key[,id:base64key].`,
      );
    }
    if (seen.has(id))
      throw new ConfigError(`${variable}: key id "${id}" appears twice; each key needs an id of its own.`);
    seen.add(id);
    const key = Buffer.from(encoded, 'base64');
    if (key.length !== 32)
      throw new ConfigError(
        `${variable}: key "${id}" is ${key.length} bytes; AES-256 needs 32 (openssl rand -base64 32).`,
      );
    return { id, key };
  });
}
