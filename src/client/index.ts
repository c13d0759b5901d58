/** Client side of the durable agent worker. */
export { ConversationClosedError, DecisionRefusedError, InvalidConversationInputError, MessageTooLargeError, UnstorableTextError } from '../errors';
export {
  AgentClient,
  NoWorkerAnsweredError,
  type AgentClientOptions,
  type PendingApprovalFilter,
  type PendingApprovalView,
  type SendMessageOptions,
  type TurnAnswer,
} from './client';
export { formatTranscript } from './format';
export { StreamView, subscribeToStream, type StreamedText, type Unsubscribe } from './stream';
export type { StreamEvent } from '../db/stream-channel';
export { AesGcmPayloadCodec, encryptingDataConverter, parsePayloadKeys, type PayloadKey } from '../codec';
