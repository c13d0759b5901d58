/**
 * Scripted OpenAI-compatible model server for tests and the offline demo.
 *
 * Point the `openai` SDK at {@link ModelServer.url}; the server validates every
 * request like a real provider (exact 400 bodies), records it, and answers
 * with scripted replies.
 *
 * @packageDocumentation
 */

export type {
  FinishReason,
  ModelServer,
  ModelServerDialect,
  ModelServerOptions,
  ProviderErrorBody,
  RecordedRequest,
  Responder,
  ScriptedDelay,
  ScriptedDrop,
  ScriptedHang,
  ScriptedHttpError,
  ScriptedMessageReply,
  ScriptedReply,
  ScriptedToolCall,
  StreamScript,
  ToolCallIdScheme,
  ValidationFailure,
} from './types';
export {
  DEFAULT_DROP_CONTENT,
  DEFAULT_SERVER_ERROR_MESSAGE,
  KEEP_ALIVE_LINE,
  NO_SCRIPTED_REPLY_MESSAGE,
  RESPONDER_FAILED_PREFIX,
  SCRIPTED_MODEL_ID,
  startModelServer,
} from './server';
export * from './validate';
export { readHistoryFile, type RecordedHistory } from './histories';
