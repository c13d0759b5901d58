/**
 * The conversation workflow's public surface: its signals, update, query and
 * search attributes, beside the contract's plain data types and validators
 * (the other modules of `src/contract`). Defined once, imported by the
 * workflow and by clients. Workflow-safe: no I/O, no Node imports.
 */
import type { GrantRevocation } from './grants';
import type { DeliveredEvent } from './events';
import type { ComeBackCancel, ComeBackRequest } from './comebacks';
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributeUpdatePair } from '@temporalio/common';
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ConversationState } from './conversation-state';
import type { ApprovalDecision, DecisionResult } from './decisions';
import { CONVERSATION_SEARCH_ATTRIBUTE_FIELDS, type ConversationSearchAttributes } from './search-attribute-names';
import type { RegenerateRequest, RegenerateResult } from './regenerate';
import type { CancelTurnRequest, UserMessage } from './user-messages';
import type { SubAgentWaitingReport } from './waiting-calls';

/** A user message. The client uses signal-with-start, so the first message also starts the conversation. */
export const userMessageSignal = defineSignal<[UserMessage]>('userMessage');

/**
 * A decision on tool calls awaiting approval. Invalid or stale decisions change nothing and are listed in the state's
 * `refusedDecisions`.
 */
export const decisionSignal = defineSignal<[ApprovalDecision]>('decision');

/**
 * The same decision as an update, for callers that want an answer: a decision
 * for an unknown, settled or not-awaiting call is refused with a clear error
 * and changes nothing; a decision id already applied returns `applied: false`.
 */
export const decisionUpdate = defineUpdate<DecisionResult, [ApprovalDecision]>('submitDecision');

/** Cancels the current turn: running calls are interrupted, the rest cancelled; finished results are kept. */
export const cancelTurnSignal = defineSignal<[CancelTurnRequest?]>('cancelTurn');

/** Asks for the last answer again ({@link RegenerateRequest}); a refused request is logged and kept as `lastError`. */
export const regenerateSignal = defineSignal<[RegenerateRequest?]>('regenerate');

/** The same request as an update: a refused one (a turn runs, nothing to regenerate, ending) fails with the reason. */
export const regenerateUpdate = defineUpdate<RegenerateResult, [RegenerateRequest]>('regenerateAnswer');

/** Revokes a standing grant (`src/contract/grants.ts`): calls it would have covered wait for a person again. */
export const revokeGrantSignal = defineSignal<[GrantRevocation]>('revokeGrant');

/**
 * An event (`src/contract/events.ts`): every call of the conversation waiting for its name and key (or the one its
 * `callKey` names) gets its payload as its result. `POST /v1/events` and `AgentClient.sendEvent` route events here.
 */
export const eventSignal = defineSignal<[DeliveredEvent]>('event');

/** Asks the conversation to come back at a time with a note (`src/contract/comebacks.ts`); a bad one is logged. */
export const comeBackSignal = defineSignal<[ComeBackRequest]>('comeBack');

/** Cancels a come-back by its id. */
export const cancelComeBackSignal = defineSignal<[ComeBackCancel]>('cancelComeBack');

/** Ends the conversation once the current turn and queued messages are done. */
export const endConversationSignal = defineSignal<[]>('endConversation');

/**
 * Sent by an agent called as a tool (a child conversation) to its caller
 * whenever the calls waiting for a person in it or below it change, so the
 * caller's state shows what it waits on.
 */
export const subAgentWaitingSignal = defineSignal<[SubAgentWaitingReport]>('subAgentWaiting');

/** The conversation's state. */
export const stateQuery = defineQuery<ConversationState>('state');

/** Search attribute with the conversation's {@link ConversationStatus}. */
export const AgentStatusAttribute = defineSearchAttributeKey('AgentStatus', SearchAttributeType.KEYWORD);

/** Search attribute with the number of tool calls waiting for a person's decision. */
export const PendingApprovalsAttribute = defineSearchAttributeKey('PendingApprovals', SearchAttributeType.INT);

/**
 * Search attribute with the number of tool calls whose effect is unknown
 * (`effect_unknown`), set once there is one: `UnknownEffects > 0` lists the
 * conversations someone should check.
 */
export const UnknownEffectsAttribute = defineSearchAttributeKey('UnknownEffects', SearchAttributeType.INT);

/**
 * Search attribute indexing the calls awaiting approval, for approvers'
 * lists and filters without a query per conversation: `call:<callKey>`,
 * `tool:<toolName>` and `requester:<sentBy>` for each call waiting (empty when
 * none waits). E.g. `PendingApprovalTags = 'tool:issue_refund'`. One
 * KeywordList holds all three, since SQL visibility offers only three lists.
 */
export const PendingApprovalTagsAttribute = defineSearchAttributeKey(
  'PendingApprovalTags',
  SearchAttributeType.KEYWORD_LIST,
);

/** Search attribute with the time the oldest call awaiting approval was asked for (unset when none waits). */
export const AwaitingApprovalSinceAttribute = defineSearchAttributeKey(
  'AwaitingApprovalSince',
  SearchAttributeType.DATETIME,
);

/**
 * Search attribute with the tokens the whole conversation used (prompt and
 * completion, all runs together), as of its last status change: at least
 * every turn's end. E.g. `AgentTokens > 100000`.
 */
export const AgentTokensAttribute = defineSearchAttributeKey('AgentTokens', SearchAttributeType.INT);

/**
 * Search attribute with what the whole conversation cost in US dollars (the
 * model calls whose model had a price; all runs together), updated with
 * {@link AgentTokensAttribute}. E.g. `AgentCostUsd > 1`.
 */
export const AgentCostUsdAttribute = defineSearchAttributeKey('AgentCostUsd', SearchAttributeType.DOUBLE);

/**
 * Every custom search attribute the workflow sets, under its own name (a
 * namespace may hold them under a prefix: {@link searchAttributeNames}).
 * The test run's dev server registers these at start; a worker registers
 * the missing ones of its groups before it polls (`ensureSearchAttributes`).
 */
export const SEARCH_ATTRIBUTES = [
  AgentStatusAttribute,
  PendingApprovalsAttribute,
  UnknownEffectsAttribute,
  PendingApprovalTagsAttribute,
  AwaitingApprovalSinceAttribute,
  AgentTokensAttribute,
  AgentCostUsdAttribute,
];

/** Each field of {@link ConversationSearchAttributes} with its attribute's own name and type. */
export const CONVERSATION_SEARCH_ATTRIBUTES = {
  status: AgentStatusAttribute,
  pendingApprovals: PendingApprovalsAttribute,
  unknownEffects: UnknownEffectsAttribute,
  pendingApprovalTags: PendingApprovalTagsAttribute,
  awaitingApprovalSince: AwaitingApprovalSinceAttribute,
  tokens: AgentTokensAttribute,
  costUsd: AgentCostUsdAttribute,
} as const satisfies Record<ConversationSearchAttributeField, unknown>;

/** The keys a conversation sets, by field (see {@link conversationSearchAttributeKeys}). */
export type ConversationSearchAttributeKeys = {
  [F in ConversationSearchAttributeField]?: (typeof CONVERSATION_SEARCH_ATTRIBUTES)[F];
};

/** A field of {@link ConversationSearchAttributes}. */
export type ConversationSearchAttributeField = (typeof CONVERSATION_SEARCH_ATTRIBUTE_FIELDS)[number];

/**
 * The search attributes in groups a deployment turns on or off together, in
 * the order a worker registers them when it chooses (the first ones are the
 * most useful): `status` (AgentStatus), `approvals` (PendingApprovals,
 * PendingApprovalTags, AwaitingApprovalSince), `unknownEffects`
 * (UnknownEffects), `usage` (AgentTokens, AgentCostUsd). See
 * docs/search-attributes.md.
 */
export const SEARCH_ATTRIBUTE_GROUPS = {
  status: ['status'],
  approvals: ['pendingApprovals', 'pendingApprovalTags', 'awaitingApprovalSince'],
  unknownEffects: ['unknownEffects'],
  usage: ['tokens', 'costUsd'],
} as const satisfies Record<string, readonly ConversationSearchAttributeField[]>;

/** A group of {@link SEARCH_ATTRIBUTE_GROUPS}. */
export type SearchAttributeGroup = keyof typeof SEARCH_ATTRIBUTE_GROUPS;

/** The groups, in the order a worker registers them. */
export const SEARCH_ATTRIBUTE_GROUP_ORDER = Object.keys(SEARCH_ATTRIBUTE_GROUPS) as SearchAttributeGroup[];

/**
 * The names the attributes of `groups` (default: all) have in a namespace
 * that registered them under `prefix` (default none): e.g. prefix `Support_`
 * gives `{ status: 'Support_AgentStatus', ... }`.
 */
export function searchAttributeNames(
  prefix = '',
  groups: readonly SearchAttributeGroup[] = SEARCH_ATTRIBUTE_GROUP_ORDER,
): ConversationSearchAttributes {
  const names: ConversationSearchAttributes = {};
  for (const group of groups)
    for (const field of SEARCH_ATTRIBUTE_GROUPS[group])
      names[field] = `${prefix}${CONVERSATION_SEARCH_ATTRIBUTES[field].name}`;
  return names;
}

/**
 * The longest prefix of the attributes' names: with it, the longest name (AwaitingApprovalSince) still has 61
 * characters.
 */
export const SEARCH_ATTRIBUTE_PREFIX_MAX_CHARS = 40;

/** Why `prefix` cannot prefix the attributes' names, or undefined when it can (the empty prefix can). */
export function describeBadSearchAttributePrefix(prefix: string): string | undefined {
  if (prefix === '' || new RegExp(`^[A-Za-z][A-Za-z0-9_]{0,${SEARCH_ATTRIBUTE_PREFIX_MAX_CHARS - 1}}$`).test(prefix))
    return undefined;
  return `"${prefix}" cannot prefix search attribute names: use a letter, then letters, digits or _, at most ${SEARCH_ATTRIBUTE_PREFIX_MAX_CHARS} characters in all, e.g. Support_`;
}

/**
 * Reads a list of groups as written in configuration: `auto` (or nothing)
 * is undefined (each group that fits), `none` is no group, else group names
 * separated by commas, e.g. `status,approvals`. Throws naming what it does
 * not know.
 */
export function parseSearchAttributeGroups(text: string): SearchAttributeGroup[] | undefined {
  const value = text.trim();
  if (value === '' || value === 'auto') return undefined;
  if (value === 'none') return [];
  const groups = value
    .split(',')
    .map((g) => g.trim())
    .filter(Boolean);
  const unknown = groups.filter((g) => !(SEARCH_ATTRIBUTE_GROUP_ORDER as string[]).includes(g));
  if (unknown.length > 0) {
    throw new TypeError(
      `${unknown.map((g) => JSON.stringify(g)).join(', ')} ${unknown.length === 1 ? 'is not a group' : 'are not groups'} of search attributes: ` +
        `write auto, none, or groups separated by commas among ${SEARCH_ATTRIBUTE_GROUP_ORDER.join(', ')}`,
    );
  }
  return [...new Set(groups)] as SearchAttributeGroup[];
}

/**
 * The keys a conversation sets, by field, as its input names them; absent
 * input: every attribute under its own name (conversations begun before the
 * field existed). Workflow-safe.
 */
export function conversationSearchAttributeKeys(
  names: ConversationSearchAttributes | undefined,
): ConversationSearchAttributeKeys {
  if (names === undefined) return { ...CONVERSATION_SEARCH_ATTRIBUTES };
  const keys: Record<string, unknown> = {};
  for (const field of CONVERSATION_SEARCH_ATTRIBUTE_FIELDS) {
    const name = names[field];
    if (name !== undefined) keys[field] = defineSearchAttributeKey(name, CONVERSATION_SEARCH_ATTRIBUTES[field].type);
  }
  return keys as ConversationSearchAttributeKeys;
}

/**
 * What `upsertSearchAttributes` takes for the core's updates, under the keys
 * the conversation sets (fields it does not set are left out; the core gives
 * `awaitingApprovalSince` in ms since the epoch, or null when unset).
 */
export function searchAttributeUpdates(
  keys: ConversationSearchAttributeKeys,
  updates: readonly { field: ConversationSearchAttributeField; value: unknown }[],
): SearchAttributeUpdatePair[] {
  return updates.flatMap(({ field, value }) => {
    const key = keys[field];
    if (!key) return [];
    return [
      {
        key,
        value: key.type === SearchAttributeType.DATETIME && typeof value === 'number' ? new Date(value) : value,
      } as SearchAttributeUpdatePair,
    ];
  });
}

/** Which search attributes a worker registers, and under which names. */
export interface SearchAttributeOptions {
  /**
   * Put before every name, e.g. `Support_` for `Support_AgentStatus`, to keep
   * them apart from a team's own attributes (a letter, then letters, digits or
   * `_`, at most 40 characters). Clients need the same prefix. Default none.
   */
  prefix?: string;
  /**
   * The groups to register, each one required: a group the namespace cannot
   * take fails the start with the reason. Unset: each group that fits, in the
   * order status, approvals, unknownEffects, usage; a group left off is
   * logged with why. `[]`: none.
   */
  groups?: readonly SearchAttributeGroup[];
}

/** Failure types the conversation workflow ends with, for clients and readers of the history. */
export const ConversationErrorType = {
  /** The conversation's input broke a rule of {@link describeInvalidInput}; it ended before doing anything. */
  InvalidConversationInput: 'InvalidConversationInput',
} as const;

/**
 * What a query gets when the workflow's interceptor declined its task (the
 * conversation had history no workflow task had handled yet): clients retry.
 */
export const STALE_QUERY_TASK_MESSAGE =
  'This query reached a worker while the conversation had history no workflow task has handled yet; ' +
  'the worker declined to apply it outside a workflow task. Retry the query in a moment.';

/** The workflow type name, for clients that start it by name. */
export const CONVERSATION_WORKFLOW_TYPE = 'agentConversation';
