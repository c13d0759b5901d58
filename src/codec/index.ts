/**
 * Encrypted payloads: the codec, its keys, and the data converter that uses
 * them (payloads and failure messages alike).
 */
import path from 'node:path';
import type { DataConverter } from '@temporalio/common';
import { AesGcmPayloadCodec, KeylessPayloadCodec, type PayloadKey } from './aes-gcm';

export { AesGcmPayloadCodec, ENCRYPTED_ENCODING, parsePayloadKeys, type PayloadKey } from './aes-gcm';

const MODULE_EXTENSION = path.extname(__filename);

/**
 * Path of the module whose `failureConverter` puts a failure's message and stack into its (encrypted) encoded
 * attributes.
 */
const ENCRYPTING_FAILURE_CONVERTER_PATH = path.join(__dirname, `failure-converter${MODULE_EXTENSION}`);

/**
 * The data converter of a process that encrypts with `keys` (the first
 * encrypts). Without keys, payloads stay plain and an encrypted one is
 * refused with an `EncryptedPayloadError` naming the missing setting.
 */
export function encryptingDataConverter(keys: readonly PayloadKey[] | undefined): DataConverter {
  if (!keys || keys.length === 0) return { payloadCodecs: [new KeylessPayloadCodec()] };
  return { payloadCodecs: [new AesGcmPayloadCodec(keys)], failureConverterPath: ENCRYPTING_FAILURE_CONVERTER_PATH };
}
