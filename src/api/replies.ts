/**
 * What the HTTP API answers, as zod schemas: they check each answer as it is
 * serialized and describe it in the OpenAPI document. Refusals share one
 * shape, `{"error": {"code", "message"}}`, whose codes are stable; each
 * operation lists every status it can answer.
 */
import { z } from 'zod';
import {
  GUARDRAIL_OUTPUT_INFO_MAX_CHARS,
  type ConversationState,
  type GrantView,
  type PendingApproval,
  type PendingBelow,
  type WaitingCall,
} from '../contract';
import type { StoredMessage } from '../db/transcript-store';
import type { DecisionOutcome } from './decisions';

/**
 * `schema`, typed as describing `T`: the answers whose schemas list only some
 * of their fields (the rest pass through as they are) are typed by the
 * project's own types.
 */
const describing = <T>(schema: z.ZodType): z.ZodType<T> => schema as z.ZodType<T>;

/** Stable codes of the API's refusals, in `{"error": {"code", "message"}}`, with their HTTP status. */
export const API_ERROR_CODES = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  four_eyes: 403,
  not_permitted: 403,
  not_found: 404,
  method_not_allowed: 405,
  conversation_closed: 409,
  child_conversation: 409,
  decision_refused: 409,
  regenerate_refused: 409,
  conversation_exists: 409,
  fork_point_outside: 409,
  event_id_conflict: 409,
  schedule_exists: 409,
  message_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  payload_undecodable: 422,
  internal: 500,
  payloads_unreadable: 500,
  codec_off: 501,
  identity_provider_unavailable: 503,
  no_worker: 503,
  event_undelivered: 503,
} as const;
/** One of {@link API_ERROR_CODES}. */
export type ApiErrorCode = keyof typeof API_ERROR_CODES;
/** A status the API refuses with. */
export type RefusalStatus = (typeof API_ERROR_CODES)[ApiErrorCode];

/** The name of the refusal's schema in the document's components. */
export const API_ERROR_COMPONENT = 'ApiError';

/** Every refusal's body. */
export const apiErrorBody = z.strictObject({
  error: z.strictObject({
    code: z
      .enum(Object.keys(API_ERROR_CODES) as [ApiErrorCode, ...ApiErrorCode[]])
      .describe('Stable: programs may rely on it.'),
    message: z.string().describe('What was wrong and how to fix it, for people.'),
  }),
});

/** What each refusal status means, for the document. */
const REFUSAL_MEANING: Record<RefusalStatus, string> = {
  400: 'The request is not valid (a field, a parameter, the JSON body, an encoding): the message names what and the limit.',
  401: 'No bearer token, or one that is not valid.',
  403: "The token's roles do not allow this (forbidden), whoever sent a turn's messages tries to approve its calls (four_eyes), or the approval policy's rule a call waits under does not let this person decide it (not_permitted: not a member of the rule's groups, or approved it already; the message names the rule, its groups and the caller's).",
  404: 'No such conversation (not_found), no such notification kept, or no such schedule.',
  405: 'The path takes other methods (listed in the Allow header).',
  409: 'The conversation has ended (conversation_closed) or runs an agent called as a tool and takes no messages (child_conversation: the message names the conversation to write to), a named call no longer waits for a decision or cannot take it as asked, e.g. a grant on a call whose rule needs several people, or a grant revoked already (decision_refused), a fork names a conversation id in use (conversation_exists) or a place not in the transcript of its source (fork_point_outside), or the conversation cannot regenerate now (regenerate_refused: a turn runs, nothing to regenerate, it is ending), or an event id was sent before with another name, key or payload (event_id_conflict), or a schedule with that id exists (schedule_exists).',
  413: 'The body, or the message in it, is over its limit.',
  414: 'A path parameter is far over its documented length.',
  415: 'The body is not application/json.',
  422: 'A payload could not be decoded.',
  500: 'The request failed inside the server (see its log).',
  501: 'Not available in this configuration.',
  503: "The identity provider or the conversation's worker did not answer in time, or an event was recorded but Temporal did not take its signals (event_undelivered: send it again with the same eventId); try again.",
};

/** Which codes a status carries, for the document. */
function codesOf(status: RefusalStatus): string {
  return (Object.entries(API_ERROR_CODES) as [ApiErrorCode, number][])
    .filter(([, s]) => s === status)
    .map(([code]) => code)
    .join(', ');
}

/** The `response` entries of the refusals an operation can answer, each with the shared error body. */
export function refusals(...statuses: RefusalStatus[]) {
  return Object.fromEntries(
    statuses.map((status) => [
      status,
      {
        description: `${codesOf(status)}: ${REFUSAL_MEANING[status]}`,
        content: { 'application/json': { schema: apiErrorBody } },
      },
    ]),
  ) as Record<RefusalStatus, { description: string; content: { 'application/json': { schema: typeof apiErrorBody } } }>;
}

/** The approval policy's rule a call waits under, and where its approvals stand. */
const waitingPolicy = z
  .object({
    rule: z.string().describe("The approval policy's rule that made it wait."),
    groups: z.array(z.string()).optional().describe('Members of these groups may decide it; absent: any approver.'),
    approvals: z.number().int().describe('How many different people must approve it.'),
    approvedBy: z.array(z.string()).describe('Who approved it so far.'),
    requesterMayApprove: z.boolean().optional().describe("Whether a sender of the turn's messages may approve it."),
    reason: z.string().optional().describe("The rule's reason, for approvers."),
    escalated: z
      .number()
      .int()
      .optional()
      .describe("How many steps of the rule's escalation ladder were taken; groups includes those they added."),
    escalationSteps: z.number().int().optional().describe("How many steps the rule's escalation ladder has."),
  })
  .describe("Set when an approval policy's rule made it wait: who may decide it, and how many approvals it needs.");

const pendingApproval = z.looseObject({
  toolCallId: z.string(),
  callKey: z.string().describe('Name the call by this key in a decision.'),
  toolName: z.string(),
  arguments: z.unknown().describe('The arguments, parsed (or the raw text when they are not JSON).'),
  requestedAt: z.string().describe('When the model asked for it (ISO 8601).'),
  ageMs: z.number(),
  requestedBy: z.array(z.string()).describe('Who sent the messages of the turn that asked for it.'),
  policy: waitingPolicy.optional(),
});

/** A call waiting inside an agent called as a tool, in its callers' states. */
const pendingBelow = pendingApproval.extend({ conversationId: z.string(), agentPath: z.array(z.string()) });

/** A call in the list of waiting calls (`GET /v1/approvals`). */
const waitingCall = pendingApproval.extend({
  conversationId: z.string().describe('Where the call waits: decide it there.'),
  rootConversationId: z
    .string()
    .describe(
      'The top-level conversation it serves: conversationId, unless it waits inside an agent called as a tool.',
    ),
  agentPath: z
    .array(z.string())
    .describe('The agents from the top-level conversation down to the one asking; empty for one unnamed agent.'),
});

/** A call as `GET /v1/approvals` lists it: a waiting call, and whether the caller may decide it. */
const listedCall = waitingCall.extend({
  mayDecide: z
    .boolean()
    .optional()
    .describe(
      "Whether the caller may approve it: has the role approver, is not kept out by four eyes, and the approval policy's rule it waits under (if any) lets them (its groups, not approved it already). Calls the caller may decide come first.",
    ),
});

/** A call as `GET /v1/approvals` lists it, with `mayDecide` for the caller. */
export type ApprovalListItem = WaitingCall & { mayDecide?: boolean };

/** The fields a loose schema lists, without the index signature through which the others pass. */
type Listed<T> = { [K in keyof T as string extends K ? never : K]: T[K] };
/** `true` when `A` and `B` are the same type. */
type Same<A, B> = (<V>() => V extends A ? 1 : 2) extends <V>() => V extends B ? 1 : 2 ? true : false;

/**
 * The schemas of a waiting call list every field of the contract's views of
 * it but `decisions`, which passes through as it is: `tsc` fails here when
 * a view and its schema part.
 */
const _waitingCallSchemasMatch: [
  Same<Listed<z.infer<typeof pendingApproval>>, Omit<PendingApproval, 'decisions'>>,
  Same<Listed<z.infer<typeof pendingBelow>>, Omit<PendingBelow, 'decisions'>>,
  Same<Listed<z.infer<typeof waitingCall>>, Omit<WaitingCall, 'decisions'>>,
  Same<Listed<z.infer<typeof listedCall>>, Omit<ApprovalListItem, 'decisions'>>,
] = [true, true, true, true];

/** A standing grant as the state shows it (`GrantView`). */
export const grantView = z
  .strictObject({
    id: z.string().describe('The id of the decision that gave it; name it to revoke it.'),
    toolName: z.string().describe('The tool whose later calls it covers.'),
    rule: z
      .string()
      .optional()
      .describe("The approval policy's rule of the call it was given with: it covers calls under that rule only."),
    grantedBy: z.string().optional().describe("Who gave it (the approving decision's decider)."),
    authenticated: z.boolean().optional().describe('Whether a signature proved who gave it.'),
    callKey: z.string().describe('The call it was given with.'),
    grantedAt: z.string().describe('ISO 8601.'),
    expiresAt: z
      .string()
      .describe('When it ends, whatever else is left (ISO 8601): 30 days after it was given at most.'),
    maxCalls: z.number().int().optional().describe('How many calls it covers.'),
    callsUsed: z.number().int().describe('Calls it covered so far.'),
    amount: z
      .strictObject({ argument: z.string(), total: z.number(), used: z.number() })
      .optional()
      .describe(
        'Its amount limit: the argument summed, the most it may add up to, and what the covered calls added up to.',
      ),
    revokedAt: z.string().optional().describe('When it was revoked (ISO 8601).'),
    revokedBy: z.string().optional().describe('Who revoked it.'),
    live: z.boolean().describe('Whether it covers calls now: not revoked, not expired, within its limits.'),
  })
  .describe('A standing grant: later calls of its tool (under its rule) run without asking while it is live.');

/** The grant schema lists every field of the state's view of a grant: `tsc` fails here when they part. */
const _grantSchemaMatches: Same<Listed<z.infer<typeof grantView>>, Listed<GrantView>> = true;

const conversationStatus = z.enum(['idle', 'running', 'awaiting_approval', 'failed', 'closed']);

const turnRecord = z.looseObject({
  messageIds: z.array(z.string()),
  outcome: z.enum([
    'answered',
    'failed',
    'cancelled',
    'interrupted',
    'budget_exceeded',
    'invalid_output',
    'guardrail_tripped',
  ]),
  guardrail: z
    .strictObject({ on: z.enum(['input', 'output']), guardrail: z.string(), reason: z.string() })
    .optional()
    .describe('The guardrail that stopped the turn (guardrail_tripped).'),
  guardrails: z
    .array(
      z.strictObject({
        on: z.enum(['input', 'output', 'tool']),
        guardrail: z.string(),
        toolCallId: z.string().optional().describe('The call a tool guardrail checked.'),
        action: z
          .enum(['allow', 'block', 'require_approval'])
          .optional()
          .describe("A tool guardrail's decision on the call."),
        tripwire: z.boolean(),
        reason: z.string().optional(),
        outputInfo: z
          .unknown()
          .optional()
          .describe(
            `What the guardrail reported, as JSON (at most ${GUARDRAIL_OUTPUT_INFO_MAX_CHARS} characters of it).`,
          ),
        outputInfoDropped: z
          .string()
          .optional()
          .describe('Why an outputInfo it reported is not kept (too large, not JSON).'),
      }),
    )
    .optional()
    .describe(
      'What each input and output guardrail said in the turn (its latest verdict), tripped or not; and each tool guardrail that blocked a call, asked for a person or reported an outputInfo.',
    ),
  answerSeq: z.number().int().optional(),
  output: z
    .unknown()
    .optional()
    .describe("The typed output (input.output, or the agent's outputType), checked against its schema."),
  outputInAnswer: z
    .boolean()
    .optional()
    .describe('The typed output is too large for the record: parse the answer at answerSeq.'),
  error: z.string().optional(),
  steps: z.number().int(),
  requestedBy: z.array(z.string()).optional(),
});

/** `202` of `POST /v1/conversations/{id}/messages`. */
export const messageAccepted = z
  .strictObject({ conversationId: z.string(), messageId: z.string() })
  .describe('Taken: the conversation runs a turn for it.');

const usage = z.strictObject({
  promptTokens: z.number().int(),
  completionTokens: z.number().int(),
  costUsd: z.number().describe('US dollars, over the model calls whose model had a price.'),
  unpricedCalls: z.number().int().describe('Model calls whose model had no price (their cost is not in costUsd).'),
});

/** `200` of `GET /v1/conversations/{id}`: the `state` query's answer (more fields than listed here). */
export const conversationStateReply = describing<ConversationState>(
  z.looseObject({
    conversationId: z.string(),
    status: conversationStatus,
    steps: z.number().int(),
    messageCount: z.number().int(),
    agent: z.string().optional().describe('The agent that answers now; absent for conversations of one unnamed agent.'),
    forkedFrom: z
      .strictObject({ conversationId: z.string(), seq: z.number().int() })
      .optional()
      .describe('Set on a fork: the conversation and the seq its transcript was copied from.'),
    messages: z
      .array(
        z.looseObject({
          seq: z.number().int(),
          role: z.enum(['system', 'user', 'assistant', 'tool']),
          agent: z
            .string()
            .optional()
            .describe('Assistant messages of conversations with agents: the agent that wrote it.'),
        }),
      )
      .describe("The structure of this run's messages (bodies: the transcript)."),
    queuedMessages: z.number().int(),
    pendingApprovals: z.array(pendingApproval),
    waitingBelow: z
      .array(pendingBelow)
      .optional()
      .describe(
        'Calls waiting for a person inside agents this conversation called as tools (decide each in its conversationId); the conversation waits on them.',
      ),
    calledBy: z
      .looseObject({
        conversationId: z.string(),
        rootConversationId: z.string(),
        toolName: z.string(),
        path: z.array(z.string()),
      })
      .optional()
      .describe(
        'Set when this conversation runs an agent called as a tool: its caller, the top-level conversation and the path of agents.',
      ),
    runningToolCalls: z.array(z.string()),
    grants: z
      .array(grantView)
      .optional()
      .describe(
        'Standing grants given in this conversation (live, used up, expired or revoked); absent when none was given.',
      ),
    recentTurns: z.array(turnRecord).describe('The most recent turns, newest last.'),
    usage: usage.describe(
      'Tokens and cost of the whole conversation, with what the agents it called as tools spent: its budget covers them.',
    ),
    usageByAgent: z
      .record(z.string(), usage)
      .optional()
      .describe("The same by agent, the called agents' at any depth included; absent when no agent is named."),
  }),
).describe("The conversation's state.");

/** `200` of `GET /v1/conversations/{id}/transcript`. */
export const transcriptPageReply = describing<{ messages: StoredMessage[]; next: number | null }>(
  z.strictObject({
    messages: z.array(
      z.looseObject({
        seq: z.number().int(),
        message: z
          .looseObject({
            role: z.enum(['system', 'user', 'assistant', 'tool']),
            name: z
              .string()
              .optional()
              .describe(
                'Assistant messages of conversations with agents: the agent that wrote it (not sent to the model).',
              ),
          })
          .describe('The message as the model sees it.'),
        createdAt: z.date(),
      }),
    ),
    next: z
      .number()
      .int()
      .nullable()
      .describe('The seq to ask for after=, when there may be more; null on the last page.'),
  }),
).describe('A page of stored messages, in order.');

/** `200` of `GET /v1/approvals`. */
export const approvalsReply = describing<{ approvals: ApprovalListItem[] }>(
  z.strictObject({ approvals: z.array(listedCall) }),
).describe(
  'Tool calls waiting for a decision: first those the caller may decide (mayDecide), then the others; each part oldest first.',
);

/** `200` (applied) and `202` (queued) of `POST /v1/conversations/{id}/decisions`. */
export const decisionOutcomeReply = describing<DecisionOutcome>(
  z.strictObject({
    decidedBy: z.string().describe("The token's subject."),
    queued: z
      .boolean()
      .describe("True when no worker answered in time: the signed decisions wait in the conversation's history."),
    results: z.array(
      z.looseObject({
        decisionId: z.string(),
        applied: z.boolean(),
        toolCallId: z.string(),
        callKey: z.string(),
        toolName: z.string(),
        arguments: z.unknown(),
        policy: waitingPolicy
          .optional()
          .describe(
            "Set when an approval policy's rule made the call wait: its approvals as they stood before this decision (an approval short of the number needed leaves the call waiting).",
          ),
        queued: z.boolean(),
        grant: z
          .strictObject({
            id: z.string().describe("The grant's id: this decision's id."),
            maxCalls: z.number().int().optional(),
            maxAmount: z.strictObject({ argument: z.string(), total: z.number() }).optional(),
            expiresInMs: z.number().int().optional(),
          })
          .optional()
          .describe(
            "The standing grant given with this approval, as asked for: given when the approval applies (when queued, once a worker applies it); the state's grants show it with its use.",
          ),
      }),
    ),
  }),
);

/** `200` (applied) and `202` (queued) of `POST /v1/conversations/{id}/grants/{grantId}/revoke`. */
export const grantRevokedReply = z
  .strictObject({
    conversationId: z.string(),
    grantId: z.string(),
    revokedBy: z.string().describe("The token's subject."),
    queued: z
      .boolean()
      .describe("True when no worker answered in time: the revocation waits in the conversation's history."),
    grant: grantView.optional().describe('The grant as it stands now, revoked (absent when queued).'),
  })
  .describe('Revoked: the calls it would have covered wait for a person again.');

/** `202` of `POST /v1/conversations/{id}/cancel`. */
export const cancelAccepted = z
  .strictObject({ cancelled: z.literal(true) })
  .describe('The cancel was sent; the running turn, if any, ends as cancelled.');

/** The data of each server-sent event of `GET /v1/conversations/{id}/events`, by event name. */
export const TURN_EVENT_DATA = {
  delta: z
    .strictObject({
      responseKey: z.string(),
      attempt: z.number().int(),
      offset: z.number().int().describe("Characters (UTF-16 code units) of this attempt's text before `text`."),
      text: z.string(),
      reset: z.boolean(),
    })
    .describe(
      "The model's text as it streams: `text` continues the attempt's text at `offset`. A stream opened again sends the running model call's text from offset 0; a newer `attempt` of a response replaces the text of the one before.",
    ),
  tool_call: z
    .strictObject({ toolCallId: z.string(), toolName: z.string(), seq: z.number().int() })
    .describe('A call the model asked for.'),
  approval: pendingApproval
    .pick({ toolCallId: true, toolName: true, arguments: true, callKey: true, requestedBy: true })
    .describe('A call that waits for a decision.'),
  status: z
    .strictObject({
      status: conversationStatus,
      pendingApprovals: z.number().int(),
      runningToolCalls: z.array(z.string()),
    })
    .describe("The conversation's status, when it changes."),
  turn: turnRecord
    .extend({ answer: z.string().optional() })
    .describe('Last: the turn finished, with its outcome and answer.'),
  wait_ended: z
    .strictObject({ waitSeconds: z.number().int(), messageId: z.string().optional() })
    .describe('Last: waitSeconds passed before the turn finished; ask again to go on following.'),
  error: apiErrorBody.shape.error.describe('Last: following failed inside the server.'),
} as const;
/** The name of a server-sent event. */
export type TurnEventName = keyof typeof TURN_EVENT_DATA;

/**
 * One server-sent event as the document describes it: its name and its data
 * (JSON, described by `contentSchema`). OpenAPI before 3.2 has a stream's
 * `schema` describe each of its events.
 */
export const serverSentEvent = z
  .union(
    (Object.entries(TURN_EVENT_DATA) as [TurnEventName, z.ZodType][]).map(([name, data]) =>
      z.strictObject({
        event: z.literal(name),
        data: z.string().meta({
          contentMediaType: 'application/json',
          contentSchema: z.toJSONSchema(data, { io: 'output', unrepresentable: 'any' }),
        }),
      }),
    ) as unknown as [z.ZodType, z.ZodType, ...z.ZodType[]],
  )
  .describe(
    'One event of the stream (its event: and data: lines), in this order: delta, tool_call, approval and status as they happen, then one of turn, wait_ended or error.',
  );
