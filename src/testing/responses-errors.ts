/**
 * The error messages the scripted model server answers invalid Responses API
 * (`POST /v1/responses`) requests with. Where OpenAI's wording is known it is
 * kept word for word; the others are marked as this server's own, in
 * OpenAI's style (docs/provider-protocol.md lists which is which).
 *
 * @packageDocumentation
 */

/** OpenAI's message for a `function_call` item whose `call_id` no `function_call_output` answers. */
export function noToolOutputMessage(callId: string): string {
  return `No tool output found for function call ${callId}.`;
}

/** OpenAI's message for a `function_call_output` item with no `function_call` of its `call_id` before it. */
export function noToolCallMessage(callId: string): string {
  return `No tool call found for function call output with call_id ${callId}.`;
}

/** OpenAI's message for a reasoning item sent without the item that followed it in the model's output. */
export function reasoningWithoutFollowingItemMessage(id: string): string {
  return `Item '${id}' of type 'reasoning' was provided without its required following item.`;
}

/**
 * OpenAI's message for `encrypted_content` it did not issue or that was changed:
 * the content is shortened to its first and last four characters, as OpenAI does.
 */
export function encryptedContentNotVerifiedMessage(content: string): string {
  const shown = content.length > 8 ? `${content.slice(0, 4)}...${content.slice(-4)}` : content;
  return `The encrypted content ${shown} could not be verified.`;
}

/** OpenAI's message for an item referenced by id (no content) while `store` is false. */
export function itemNotPersistedMessage(id: string): string {
  return `Item with id '${id}' not found. Items are not persisted when \`store\` is set to false. Try again with \`store\` set to true, or remove this item from your input.`;
}

/** Message for an item referenced by id that the server does not have (it stores nothing). */
export function itemNotFoundMessage(id: string): string {
  return `Item with id '${id}' not found.`;
}

/** OpenAI's message for a `previous_response_id` it has not stored (with `store: false` nothing is stored). */
export function previousResponseNotFoundMessage(id: string): string {
  return `Previous response with id '${id}' not found.`;
}

/** This server's own message for two `function_call_output` items answering one call. */
export function duplicateCallOutputMessage(callId: string, first: number, second: number): string {
  return `Duplicate value for 'call_id' of '${callId}' in input[${first}] and input[${second}]: each function call is answered by exactly one function_call_output.`;
}

/** This server's own message for an item or tool type the Responses API knows but the scripted model does not play. */
export function typeNotPlayedMessage(what: string, type: string): string {
  return `The scripted model server does not play ${what} of type '${type}'; use function tools and message, function_call, function_call_output and reasoning items.`;
}

/** OpenAI's message for a Responses request over the model's context window. */
export const RESPONSES_CONTEXT_EXCEEDED_MESSAGE =
  'Your input exceeds the context window of this model. Please adjust your input and try again.';
