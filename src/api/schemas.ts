/**
 * The HTTP API's request fields, with the same rule in the zod schema that
 * validates a request and in the OpenAPI document that describes it: a value
 * the document allows is never refused for its shape, and a value it refuses
 * is refused with 400 `invalid_request`.
 *
 * - Ids (conversation, message) are 1 to {@link ID_MAX_CHARS} characters.
 * - Integers in the query are plain decimal integers within stated bounds.
 * - Text from people may not hold what PostgreSQL cannot store (U+0000 and
 *   unpaired surrogates): refused naming the character and its offset
 *   (`describeUnstorableText`). The document states NUL as a `pattern`;
 *   unpaired surrogates cannot be written in a pattern every JSON Schema
 *   engine reads, so they are stated in the field's description.
 */
import { z } from 'zod';
import {
  describeOversizedDecision,
  type ApprovalDecision,
  AGENT_NAME_PATTERN,
  CONVERSATION_LIMITS,
  DECISION_FIELD_MAX_CHARS,
  EDITED_ARGUMENTS_MAX_BYTES,
  FUNCTION_NAME_PATTERN,
  OUTPUT_RETRIES,
  OUTPUT_SCHEMA_MAX_BYTES,
  PROVIDER_LIMITS,
  USER_MESSAGE_MAX_BYTES,
  describeUnsendableModelSettings,
} from '../contract';
import { describeUnusableOutputSchema } from '../common/typed-output';
import { describeUnstorableText } from '../contract/text';
import { GRANT_MAX_CALLS, GRANT_MAX_MS } from '../contract/grants';
import { NAME_THE_CALLS } from './decisions';

/** The longest conversation id and message id, in characters (Unicode code points, as JSON Schema counts them). */
export const ID_MAX_CHARS = 200;
/** The largest `after` of a transcript page: seqs are PostgreSQL `integer`s. */
export const SEQ_MAX = 2_147_483_647;
/** The largest `minAgeSeconds` of the approvals list: ten years. */
export const MIN_AGE_MAX_SECONDS = 10 * 365 * 24 * 60 * 60;
/** The longest a turn's events are followed by one request, and how long when the request does not say. */
export const EVENTS_WAIT_SECONDS = { default: 300, max: 3600 } as const;
/** The longest decision reason and cancel reason, in characters. */
export const REASON_MAX_CHARS = 2000;
/** The longest tool-call id or call key a decision names, in characters. */
export const CALL_NAME_MAX_CHARS = 1000;
/** The most calls one decision names. */
export const DECISION_MAX_CALLS = 128;
/** The longest system prompt, in characters. */
export const SYSTEM_PROMPT_MAX_CHARS = 65_536;

/** Any string without U+0000 (as a JSON Schema `pattern`). */
export const NO_NUL_PATTERN = '^[^\\x00]*$';
/**
 * JavaScript's white space and line terminators: what `String.prototype.trim`
 * removes and `\s` matches, spelled out because Python's and Rust's `\s`
 * (which schemathesis and its validator use) differ from it.
 */
const WHITE_SPACE = '\\t\\n\\x0b\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff';
/** A string without U+0000 with at least one character that is not white space (as a JSON Schema `pattern`). */
export const NON_BLANK_PATTERN = `^[^\\x00]*[^\\x00${WHITE_SPACE}][^\\x00]*$`;
/** A filter value holds no quotes or backslashes (the API's documented filter values; tool names never hold them). */
const FILTER_PATTERN = '^[^\\x00\'"\\\\]*$';

/** What every text field says about the characters it refuses. */
const REFUSED_CHARACTERS =
  'U+0000 (NUL) and unpaired UTF-16 surrogates (U+D800-U+DFFF not in a pair) cannot be stored and are refused with 400 invalid_request.';

/**
 * A string a person sends: `minChars` to `maxChars` characters (Unicode code
 * points, as JSON Schema's `minLength` and `maxLength` count them), none that
 * PostgreSQL cannot store, and (with `nonBlank`) some character that is not
 * white space. `field` names it in the refusal. With `maxBytes` the longest
 * is `maxChars` UTF-8 bytes, checked by the route (413), stated in the
 * description only: a `maxLength` that large makes schemathesis's generator
 * give up on the whole body.
 */
export function personText(
  field: string,
  options: { maxChars: number; minChars?: number; nonBlank?: boolean; maxBytes?: boolean; description: string },
) {
  const { maxChars, minChars = 0, nonBlank = false } = options;
  return z
    .string()
    .superRefine((text, ctx) => {
      const chars = codePoints(text);
      if (chars < minChars || (!options.maxBytes && chars > maxChars)) {
        const limits = options.maxBytes
          ? `at least ${minChars} character${minChars === 1 ? '' : 's'}`
          : `${minChars} to ${maxChars} characters`;
        ctx.addIssue({ code: 'custom', message: `${field} must be ${limits} long, got ${chars}` });
        return;
      }
      const unstorable = describeUnstorableText(field, text);
      if (unstorable) ctx.addIssue({ code: 'custom', message: unstorable });
      else if (nonBlank && text.trim() === '')
        ctx.addIssue({ code: 'custom', message: `${field} needs a character other than white space` });
    })
    .meta({
      minLength: minChars,
      ...(options.maxBytes ? {} : { maxLength: maxChars }),
      pattern: nonBlank ? NON_BLANK_PATTERN : NO_NUL_PATTERN,
      description: `${options.description} ${REFUSED_CHARACTERS}`,
    });
}

/** Unicode code points in `text` (a pair of surrogates is one; an unpaired one counts alone). */
function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

/** An id: 1 to {@link ID_MAX_CHARS} characters that can be stored. */
export const idText = (field: string, description: string) =>
  personText(field, { minChars: 1, maxChars: ID_MAX_CHARS, description });

/**
 * An integer of the query string, `min` to `max`: only plain decimal digits
 * (an optional `-`) are read as a number, so `""`, `" 5"`, `"1e3"` or `"0x10"`
 * are refused as the document's `integer` refuses them.
 */
export function queryInteger(min: number, max: number) {
  const error = `must be an integer from ${min} to ${max}`;
  return z.preprocess(
    (value) => (typeof value === 'string' && /^-?[0-9]+$/.test(value) ? Number(value) : value),
    z.number({ error }).int(error).min(min, error).max(max, error),
  );
}

/** A filter value of the approval list: 1 to 256 characters, no quotes, backslashes or NUL. */
const filterValue = (field: string, description: string) =>
  personText(field, { minChars: 1, maxChars: 256, description })
    .regex(new RegExp(FILTER_PATTERN, 'u'), 'may not contain quotes or backslashes')
    .meta({
      pattern: FILTER_PATTERN,
      description: `${description} 1 to 256 characters; quotes and backslashes are refused. ${REFUSED_CHARACTERS}`,
    });

/** The path of every conversation route. */
export const conversationParams = z.object({ id: idText('id', 'The conversation id (its workflow id).') });

/** `GET /v1/conversations/{id}/transcript`. */
export const transcriptQuery = z.object({
  after: queryInteger(-1, SEQ_MAX)
    .optional()
    .meta({
      description: `Seq after which the page starts: -1 (the default) for the first page, else the previous page's next (at most ${SEQ_MAX}).`,
    }),
  limit: queryInteger(1, 500).optional().meta({ description: 'Messages in the page: 1 to 500, default 100.' }),
});

/** `GET /v1/approvals`. */
export const approvalsQuery = z.object({
  conversationId: filterValue('conversationId', 'Only calls of this conversation.').optional(),
  tool: filterValue('tool', 'Only calls of this tool.').optional(),
  requester: filterValue('requester', 'Only calls of turns this subject started.').optional(),
  minAgeSeconds: queryInteger(0, MIN_AGE_MAX_SECONDS)
    .optional()
    .meta({
      description: `Only calls waiting at least this long, in seconds (0 to ${MIN_AGE_MAX_SECONDS}, ten years).`,
    }),
});

/** `GET /v1/conversations/{id}/events`. */
export const eventsQuery = z.object({
  messageId: idText(
    'messageId',
    'Follow the turn that takes this message; without it, the next turn to finish.',
  ).optional(),
  waitSeconds: queryInteger(1, EVENTS_WAIT_SECONDS.max)
    .optional()
    .meta({
      description:
        `How long to follow, in seconds: 1 to ${EVENTS_WAIT_SECONDS.max}, default ${EVENTS_WAIT_SECONDS.default}. ` +
        'When the turn has not finished by then, the stream ends with a wait_ended event; ask again to go on following.',
    }),
});

const positiveInt = (max: number, description: string) =>
  z.number().int().min(1).max(max).describe(`${description} 1 to ${max}.`);
const INT32_MAX = 2_147_483_647;
const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * A conversation's start options as the API takes them (`ConversationInput`
 * without `carried`, which only the workflow sets): every field the client
 * checks, with upper bounds that keep durations and counts within what
 * Temporal and the providers take. Unknown fields are refused.
 */
export const conversationInputSchema = z
  .strictObject({
    systemPrompt: personText('input.systemPrompt', {
      maxChars: SYSTEM_PROMPT_MAX_CHARS,
      description: 'The system prompt, stored as message 0.',
    }).optional(),
    model: z
      .strictObject({
        model: personText('input.model.model', {
          minChars: 1,
          maxChars: 200,
          description: "Model name; the worker's OPENAI_MODEL when unset.",
        }).optional(),
        temperature: z
          .number()
          .meta({ minimum: PROVIDER_LIMITS.temperature.min, maximum: PROVIDER_LIMITS.temperature.max })
          .optional()
          .describe(
            `Sampling temperature, ${PROVIDER_LIMITS.temperature.min} to ${PROVIDER_LIMITS.temperature.max} (what the model APIs take).`,
          ),
        maxTokens: positiveInt(
          INT32_MAX,
          `Largest completion, in tokens; at least ${PROVIDER_LIMITS.minMaxTokens.responses} with "api": "responses" (the Responses API's least max_output_tokens).`,
        ).optional(),
        stream: z.boolean().optional().describe('Stream the response. Default true.'),
        streamFallbackAfterAttempts: positiveInt(100, 'Attempts that stream before a retry does not.').optional(),
        streamIdleMs: positiveInt(DAY_MS, 'A stream silent this long is retried, in ms.').optional(),
        contextWindow: positiveInt(INT32_MAX, "The model's context window in tokens.").optional(),
        contextOverflow: z
          .enum(['elide', 'summarize'])
          .optional()
          .describe('When earlier turns do not fit the window: leave them out (elide, default) or summarize them.'),
        api: z
          .enum(['chat', 'responses'])
          .optional()
          .describe("The model API: chat (Chat Completions, default) or responses. Default: the worker's."),
      })
      .superRefine((model, ctx) => {
        // What the provider would refuse, on the API the input names (the worker checks the one it resolves).
        for (const message of describeUnsendableModelSettings(model, model.api, 'input.model'))
          ctx.addIssue({ code: 'custom', message, path: [/^input\.model\.(\w+)/.exec(message)?.[1] ?? 'model'] });
      })
      .meta({
        if: { properties: { api: { const: 'responses' } }, required: ['api'] },
        then: { properties: { maxTokens: { minimum: PROVIDER_LIMITS.minMaxTokens.responses } } },
      })
      .optional(),
    tools: z
      .array(personText('input.tools[]', { minChars: 1, maxChars: 128, description: 'A tool name.' }))
      .max(128)
      .optional()
      .describe("Names of the worker's tools the model may call; all of them when unset."),
    mcpServers: z
      .array(z.string().regex(/^[a-zA-Z0-9-]{1,24}$/))
      .max(32)
      .optional()
      .describe("Names of the worker's MCP servers whose tools the model may call."),
    maxSteps: positiveInt(CONVERSATION_LIMITS.maxSteps, 'Model calls with tools in one turn.').optional(),
    agent: z
      .string()
      .regex(AGENT_NAME_PATTERN)
      .optional()
      .describe(
        "The agent that answers first: one of the worker's agents (docs/agents.md). Default: the worker's default agent, if it has one.",
      ),
    maxHandoffsPerTurn: positiveInt(CONVERSATION_LIMITS.maxHandoffsPerTurn, 'Handoffs one turn may make.').optional(),
    maxAgentDepth: positiveInt(
      CONVERSATION_LIMITS.maxAgentDepth,
      'How deep agents called as tools may nest.',
    ).optional(),
    timeouts: z
      .strictObject({
        modelCallMs: positiveInt(DAY_MS, 'Timeout of one model call attempt, in ms.').optional(),
        modelCallAttempts: positiveInt(100, 'Attempts of a model call.').optional(),
        heartbeatMs: positiveInt(DAY_MS, 'Heartbeat timeout of model calls and tools, in ms.').optional(),
      })
      .optional(),
    approvalTimeoutMs: positiveInt(365 * DAY_MS, 'How long calls wait for a decision, in ms.').optional(),
    onNewMessage: z.enum(['interrupt', 'queue']).optional(),
    localActivities: z
      .strictObject({ modelCalls: z.boolean().optional(), idempotentTools: z.boolean().optional() })
      .optional(),
    continueAsNewAfterEvents: positiveInt(
      50_000,
      'History events after which the conversation continues as new.',
    ).optional(),
    budget: z
      .strictObject({
        turnTokens: positiveInt(Number.MAX_SAFE_INTEGER, 'Tokens of one turn.').optional(),
        conversationTokens: positiveInt(Number.MAX_SAFE_INTEGER, 'Tokens of the conversation.').optional(),
        turnCostUsd: z.number().gt(0).max(1e9).optional().describe('US dollars one turn may cost.'),
        conversationCostUsd: z.number().gt(0).max(1e9).optional().describe('US dollars the conversation may cost.'),
      })
      .optional(),
    output: z
      .strictObject({
        schema: z
          .record(z.string(), z.unknown())
          .meta({
            required: ['type'],
            properties: {
              type: { const: 'object' },
              // Each property's schema is a JSON Schema: an object or a boolean.
              properties: { type: 'object', additionalProperties: { type: ['object', 'boolean'] } },
            },
          })
          .describe(
            `A JSON Schema (2020-12, or draft-07 when its $schema says so) of an object ("type": "object" at its root, as structured outputs require) the final answer must match; at most ${OUTPUT_SCHEMA_MAX_BYTES} bytes as JSON. One that does not compile is refused.`,
          ),
        name: z
          .string()
          .regex(FUNCTION_NAME_PATTERN)
          .optional()
          .describe('Its name in the model request. Default "output".'),
        retries: z
          .number()
          .int()
          .min(0)
          .max(OUTPUT_RETRIES.max)
          .optional()
          .describe(`Re-asks per turn after a mismatched answer. Default ${OUTPUT_RETRIES.default}.`),
      })
      .superRefine((output, ctx) => {
        for (const message of describeUnusableOutputSchema(output, 'input.output'))
          ctx.addIssue({ code: 'custom', message, path: ['schema'] });
      })
      .optional()
      .describe('A typed final answer (docs/typed-output.md): the turn record carries it as `output`.'),
  })
  .describe('ConversationInput: used when this message starts the conversation, ignored otherwise.');

/**
 * `POST /v1/conversations/{id}/messages`. Strict: a field such as `sentBy` is refused, never used (the sender is the
 * token's subject).
 */
export const messageBody = z.strictObject({
  text: personText('text', {
    minChars: 1,
    maxChars: USER_MESSAGE_MAX_BYTES,
    maxBytes: true,
    nonBlank: true,
    description: `The message: some character other than white space, at most ${USER_MESSAGE_MAX_BYTES} bytes in UTF-8 (413 message_too_large above).`,
  }),
  messageId: idText(
    'messageId',
    'For deduplication: a message whose id the conversation has seen is ignored. A random one when absent.',
  ).optional(),
  input: conversationInputSchema.optional(),
});

const callNames = (field: string, description: string) =>
  z
    .array(personText(field, { minChars: 1, maxChars: CALL_NAME_MAX_CHARS, description }))
    .min(1)
    .max(DECISION_MAX_CALLS);
const reason = (field: string) =>
  personText(field, { maxChars: REASON_MAX_CHARS, description: 'Why; sent to the model with a rejection.' });

/**
 * The longest argument name (or dotted path) a grant's amount sums over, in characters: at most 200 UTF-16 code units
 * whatever the characters (the workflow's limit), so the document's `maxLength` and the worker agree.
 */
export const GRANT_ARGUMENT_MAX_CHARS = 100;

/**
 * A standing grant asked for with an approval (`GrantRequest`, docs/approval-policies.md#standing-grants): at least
 * one limit; it lasts 30 days at most, and by default.
 */
export const grantRequestSchema = z
  .strictObject({
    maxCalls: z
      .number()
      .int()
      .min(1)
      .max(GRANT_MAX_CALLS)
      .optional()
      .describe(`How many later calls it covers: 1 to ${GRANT_MAX_CALLS}.`),
    maxAmount: z
      .strictObject({
        argument: personText('grant.maxAmount.argument', {
          minChars: 1,
          maxChars: GRANT_ARGUMENT_MAX_CHARS,
          description: 'The numeric argument summed over the covered calls: its name, or a dotted path.',
        }),
        total: z
          .number()
          .gt(0)
          .max(Number.MAX_SAFE_INTEGER)
          .describe(
            'The most the covered calls may add up to: a call that would take the sum over it, or without a number there, waits for a person.',
          ),
      })
      .optional()
      .describe('An amount limit, summed over one numeric argument of the covered calls.'),
    expiresInMs: z
      .number()
      .int()
      .min(1)
      .max(GRANT_MAX_MS)
      .optional()
      .describe(`How long it lasts, in ms from the approval: 1 to ${GRANT_MAX_MS} (30 days, also the default).`),
  })
  .superRefine((grant, ctx) => {
    if (grant.maxCalls === undefined && grant.maxAmount === undefined && grant.expiresInMs === undefined)
      ctx.addIssue({ code: 'custom', message: '"grant" needs a limit: "maxCalls", "maxAmount" or "expiresInMs"' });
  })
  .meta({ minProperties: 1 })
  .describe(
    "approve of one call only: also let later calls of the same tool in this conversation, under the same approval policy rule, run without asking, within these limits (a standing grant, whose id is this decision's id). Refused (409 decision_refused) on a call whose rule needs several approvals, or that runs an agent.",
  );

/**
 * `POST /v1/conversations/{id}/decisions`: the calls named either by
 * tool-call id or by call key, never both (`oneOf` in the document). Strict:
 * a field such as `decidedBy` is refused, never used (the decider is the
 * token's subject).
 */
export const decisionBody = z
  .strictObject({
    decision: z
      .enum(['approve', 'reject', 'edit', 'respond'])
      .describe(
        "approve; reject; edit (run with `arguments` instead of the model's); respond (`response` is the result, the tool does not run). Edit and respond name one call, where its tool allows them.",
      ),
    arguments: z
      .record(z.string(), z.unknown())
      .optional()
      .describe(
        `edit only: the arguments the call runs with (a JSON object, checked against the tool's schema; at most ${EDITED_ARGUMENTS_MAX_BYTES} bytes).`,
      ),
    response: personText('response', {
      minChars: 1,
      maxChars: DECISION_FIELD_MAX_CHARS.response,
      description: "respond only: the call's result.",
    }).optional(),
    toolCallIds: callNames('toolCallIds[]', 'A tool-call id.').optional().describe('The calls, by tool-call id.'),
    callKeys: callNames('callKeys[]', 'A callKey of GET /v1/approvals.')
      .optional()
      .describe('Or the calls as listed by GET /v1/approvals (their callKey): the version the approver saw.'),
    reason: reason('reason').optional(),
    grant: grantRequestSchema.optional(),
  })
  .superRefine((body, ctx) => {
    if ((body.toolCallIds === undefined) === (body.callKeys === undefined))
      ctx.addIssue({ code: 'custom', message: NAME_THE_CALLS });
    if (
      body.grant !== undefined &&
      (body.decision !== 'approve' || (body.toolCallIds ?? body.callKeys ?? []).length !== 1)
    ) {
      ctx.addIssue({
        code: 'custom',
        message:
          '"grant" goes with an "approve" decision naming exactly one call (one toolCallIds or callKeys entry): approve the others without a grant.',
      });
    }
    if ((body.decision === 'edit') !== (body.arguments !== undefined)) {
      ctx.addIssue({
        code: 'custom',
        message: '"arguments" go with an "edit" decision, which needs them (the object the call runs with).',
      });
    }
    if ((body.decision === 'respond') !== (body.response !== undefined)) {
      ctx.addIssue({
        code: 'custom',
        message: '"response" goes with a "respond" decision, which needs it (the text that becomes the result).',
      });
    }
    // The worker's own limits (UTF-16 units, JSON bytes), checked here so an oversized decision is a 400, not a 500.
    const oversized = describeOversizedDecision(body as unknown as ApprovalDecision);
    if (oversized) ctx.addIssue({ code: 'custom', message: `${oversized}. Nothing was decided.` });
  })
  .meta({
    oneOf: [{ required: ['toolCallIds'] }, { required: ['callKeys'] }],
    // `arguments` with an edit (required there) and `response` with a respond (required there), never elsewhere.
    allOf: [
      {
        if: { properties: { decision: { const: 'edit' } } },
        then: { required: ['arguments'] },
        else: { not: { required: ['arguments'] } },
      },
      {
        if: { properties: { decision: { const: 'respond' } } },
        then: { required: ['response'] },
        else: { not: { required: ['response'] } },
      },
      // An edit and a response decide one call.
      {
        if: { properties: { decision: { enum: ['edit', 'respond'] } } },
        then: { properties: { toolCallIds: { maxItems: 1 }, callKeys: { maxItems: 1 } } },
      },
      // A grant goes with the approval of one call.
      {
        if: { required: ['grant'] },
        then: {
          properties: { decision: { const: 'approve' }, toolCallIds: { maxItems: 1 }, callKeys: { maxItems: 1 } },
        },
      },
    ],
  });

/** `POST /v1/conversations/{id}/cancel`. */
export const cancelBody = z.strictObject({ reason: reason('reason').optional() }).optional();
