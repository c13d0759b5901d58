/**
 * The client side, safe anywhere: {@link AgentClient} to send messages,
 * decide, follow and read conversations, the errors it throws, payload
 * encryption for the clients and workers of an encrypted deployment, and the
 * check of a webhook delivery's signature for receivers.
 *
 * @packageDocumentation
 */
export {
  AgentClient,
  NoWorkerAnsweredError,
  type AgentClientOptions,
  type AskOptions,
  type TurnAnswer,
  type WaitingCall,
} from './client';
export { StreamView } from './stream';
export type { StreamEvent } from '../db/stream-channel';
export {
  ChildConversationError,
  ConversationClosedError,
  DecisionRefusedError,
  EncryptedPayloadError,
  GoingBackRefusedError,
  InvalidConversationInputError,
  MessageTooLargeError,
  OutputMismatchError,
  UnstorableTextError,
} from '../common/errors';
export { encryptingDataConverter, parsePayloadKeys, type PayloadKey } from '../codec';
// A receiver of the worker's webhooks checks each delivery's signature (docs/notifications.md).
export { verifyWebhook } from '../common/webhook-signature';
