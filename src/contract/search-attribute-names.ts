/**
 * The names a conversation's search attributes have in a namespace, as its
 * input gives them ({@link ConversationSearchAttributes}), and the rule for
 * such a name. The attributes' keys and types, which need Temporal, are in
 * `workflow.ts`. Pure and workflow-safe.
 */

/**
 * The name of each search attribute a conversation sets (see
 * {@link ConversationInput.searchAttributes}); an attribute left out is not set.
 */
export interface ConversationSearchAttributes {
  /** Keyword, the conversation's status (`AgentStatus`). */
  status?: string;
  /** Int, the calls waiting for a decision (`PendingApprovals`). */
  pendingApprovals?: string;
  /** KeywordList, the waiting calls' `call:`, `tool:` and `requester:` tags (`PendingApprovalTags`). */
  pendingApprovalTags?: string;
  /** Datetime, since when the oldest waiting call waits (`AwaitingApprovalSince`). */
  awaitingApprovalSince?: string;
  /** Int, the calls whose effect is unknown (`UnknownEffects`). */
  unknownEffects?: string;
  /** Int, the conversation's tokens (`AgentTokens`). */
  tokens?: string;
  /** Double, the conversation's cost in US dollars (`AgentCostUsd`). */
  costUsd?: string;
}

/** The fields of {@link ConversationSearchAttributes}, in the order the workflow sets them. */
export const CONVERSATION_SEARCH_ATTRIBUTE_FIELDS = [
  'status',
  'pendingApprovals',
  'unknownEffects',
  'pendingApprovalTags',
  'awaitingApprovalSince',
  'tokens',
  'costUsd',
] as const satisfies readonly (keyof ConversationSearchAttributes)[];

/**
 * What a search attribute name may look like here: a letter or `_`, then
 * letters, digits and `_`, at most 64 characters in all. Temporal accepts
 * more, but such names can be written in a visibility query without quoting.
 */
export const SEARCH_ATTRIBUTE_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** Lists what is wrong with {@link ConversationInput.searchAttributes}; empty when it is valid. */
export function describeBadSearchAttributeNames(value: unknown): string[] {
  if (value === undefined) return [];
  const example = '{"status": "AgentStatus", "pendingApprovals": "PendingApprovals"}';
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return [`searchAttributes must be an object such as ${example}`];
  const problems: string[] = [];
  const seen = new Map<string, string>();
  const known: readonly string[] = CONVERSATION_SEARCH_ATTRIBUTE_FIELDS;
  for (const [field, name] of Object.entries(value)) {
    if (!known.includes(field)) {
      problems.push(`searchAttributes.${field} is not an attribute the conversation sets (known: ${known.join(', ')})`);
    } else if (typeof name !== 'string' || !SEARCH_ATTRIBUTE_NAME_PATTERN.test(name)) {
      problems.push(
        `searchAttributes.${field} must be a search attribute name (a letter or _, then letters, digits or _, at most 64 characters), got ${JSON.stringify(name)}`,
      );
    } else if (seen.has(name)) {
      problems.push(
        `searchAttributes.${field} and searchAttributes.${seen.get(name)} both name ${name}; each attribute needs a name of its own`,
      );
    } else seen.set(name, field);
  }
  return problems;
}
