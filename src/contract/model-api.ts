/**
 * The model APIs a worker speaks. Pure module: imported by workflow code and
 * activities alike.
 */

/** The model APIs, for checks and schemas. */
export const MODEL_APIS = ['chat', 'responses'] as const;

/**
 * `chat`: Chat Completions (`POST /v1/chat/completions`), the default.
 * `responses`: the Responses API (`POST /v1/responses`), always with
 * `store: false`: the conversation stays whole in the transcript, reasoning
 * items are kept encrypted beside the answers and sent back (docs/model-apis.md).
 */
export type ModelApi = (typeof MODEL_APIS)[number];
