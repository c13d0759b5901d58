/**
 * Scripted OpenAI-compatible model server for tests and the offline demo.
 *
 * Point the `openai` SDK at {@link ModelServer.url}; the server validates every
 * request like a real provider (exact 400 bodies; the rules are
 * {@link validateChatRequest}'s, and the Responses API's at `POST /v1/responses`),
 * records it, and answers with scripted replies.
 *
 * @packageDocumentation
 */
export type { ModelServer, ModelServerOptions, RecordedRequest, Responder, ScriptedReply, StreamScript } from './types';
export { startModelServer } from './server';
export { validateChatRequest } from './validate';
