/**
 * What a model provider refuses for certain in a conversation's model
 * settings and typed output, said before anything is sent: the client, a
 * fork, the HTTP API and the worker (before each model call, and for its
 * agents' declarations) ask these, so that a request the provider would
 * refuse is refused at our door, naming the field, the limit and the fix,
 * rather than sent. The limits are OpenAI's (Chat Completions and the
 * Responses API), which DeepSeek shares where it speaks the same parameter;
 * docs/provider-protocol.md lists them beside the scripted model server's
 * checks. Pure and workflow-safe.
 */
import { MODEL_APIS, type ModelApi } from './model-api';

/** The values providers take, by parameter. */
export const PROVIDER_LIMITS = {
  /** `temperature`, on both APIs: OpenAI's range (DeepSeek's too). */
  temperature: { min: 0, max: 2 },
  /**
   * The smallest `maxTokens` by API: Chat Completions' `max_tokens` is at
   * least 1, the Responses API's `max_output_tokens` at least 16.
   */
  minMaxTokens: { chat: 1, responses: 16 },
} as const;

/**
 * What a provider would refuse in model settings sent on `api` (undefined:
 * not known here, so only what every API refuses): `temperature` outside 0
 * to 2, `maxTokens` below the API's least. `at` names the settings in the
 * words, e.g. `model` or `input.model`. Values of the wrong type are left to
 * the shape checks.
 */
export function describeUnsendableModelSettings(model: unknown, api: ModelApi | undefined, at = 'model'): string[] {
  if (typeof model !== 'object' || model === null || Array.isArray(model)) return [];
  const { temperature, maxTokens } = model as { temperature?: unknown; maxTokens?: unknown };
  const problems: string[] = [];
  const { min, max } = PROVIDER_LIMITS.temperature;
  if (typeof temperature === 'number' && !(temperature >= min && temperature <= max)) {
    problems.push(
      `${at}.temperature must be from ${min} to ${max}, the range the model APIs take (OpenAI and DeepSeek refuse any other), ` +
        `got ${JSON.stringify(temperature)}: give a number from ${min} (steadiest) to ${max}, or leave it out for the provider's default`,
    );
  }
  // Chat Completions' least, 1, is every positive integer: the shape checks see to it.
  const least = PROVIDER_LIMITS.minMaxTokens.responses;
  if (
    api === 'responses' &&
    Number.isInteger(maxTokens) &&
    (maxTokens as number) > 0 &&
    (maxTokens as number) < least
  ) {
    problems.push(
      `${at}.maxTokens must be at least ${least} on the Responses API (OpenAI refuses a max_output_tokens below ${least}), ` +
        `got ${String(maxTokens)}: give ${least} or more, or leave it out`,
    );
  }
  return problems;
}

/**
 * What a provider would refuse in a typed output's JSON Schema: a root that
 * is not `"type": "object"` (structured outputs take no other; OpenAI refuses
 * it). `at` names the schema, e.g. `output.schema`. Whether the schema keeps
 * the strict subset is the worker's choice of `strict` (only a schema that
 * keeps it is sent strict, and any other is taken with `strict: false`);
 * whether it compiles is checked where a JSON Schema compiler runs
 * (`src/common/typed-output.ts`).
 */
export function describeUnsendableOutputSchema(schema: unknown, at = 'output.schema'): string[] {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return [];
  const type = (schema as { type?: unknown }).type;
  if (type === 'object') return [];
  const got = type === undefined ? 'no "type"' : `"type": ${JSON.stringify(type)}`;
  return [
    `${at} must describe an object, with "type": "object" at its root (structured outputs take no other root; OpenAI refuses it), got ${got}: ` +
      'put the value in an object, e.g. {"type": "object", "properties": {"value": <this schema>}, "required": ["value"], "additionalProperties": false}',
  ];
}

/**
 * What a provider would refuse in a {@link ConversationInput}, by
 * {@link describeUnsendableModelSettings} (on the API the input names in
 * `model.api`; the worker checks the API it resolves before each call) and
 * {@link describeUnsendableOutputSchema}. Empty for anything else, shapes
 * included: those are `describeInvalidInput`'s.
 */
export function describeRefusedByProviders(input: unknown, at = ''): string[] {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return [];
  const { model, output } = input as { model?: unknown; output?: unknown };
  const named = (model as { api?: unknown } | undefined)?.api;
  const api = MODEL_APIS.includes(named as ModelApi) ? (named as ModelApi) : undefined;
  const problems = describeUnsendableModelSettings(model, api, `${at}model`);
  if (typeof output === 'object' && output !== null && !Array.isArray(output))
    problems.push(...describeUnsendableOutputSchema((output as { schema?: unknown }).schema, `${at}output.schema`));
  return problems;
}
