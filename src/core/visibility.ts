/**
 * What visibility indexes of a conversation (its search attributes), published
 * only when it changed since this run last published it. Pure.
 */
import {
  CONVERSATION_SEARCH_ATTRIBUTE_FIELDS,
  type ConversationSearchAttributes,
} from '../contract/search-attribute-names';
import { waitingBelow } from './agents';
import type { PublishedUsage, SearchAttributeValues } from './edge';
import type { CoreState } from './state';
import { pendingCount, status } from './views';

/**
 * The search attribute values, when they changed since the last call (which
 * counts as publishing them). The conversation's tokens and cost come only
 * beside another change: a model call alone never makes the edge upsert, a
 * turn's end always does.
 */
export function searchAttributeChanges(s: CoreState): SearchAttributeValues | undefined {
  const p = s.published;
  const approvals = approvalIndex(s);
  const now = { status: status(s), pending: pendingCount(s), approvals: JSON.stringify(approvals) };
  const unknown = s.kept.unknownEffects.count;
  const unknownChanged = unknown !== p.unknownEffects;
  const same =
    p.values?.status === now.status && p.values.pending === now.pending && p.values.approvals === now.approvals;
  if (same && !unknownChanged) return undefined;
  p.values = now;
  p.unknownEffects = unknown;
  const usage = usageChange(s);
  return {
    status: now.status,
    pendingApprovals: now.pending,
    ...(unknownChanged ? { unknownEffects: unknown } : {}),
    approvals,
    ...(usage ? { usage } : {}),
  };
}

/**
 * The search attributes to set now, by field: those the conversation's input
 * names (all of them when it names none) whose values changed since this run
 * last set them; empty when nothing changed. `awaitingApprovalSince` is ms
 * since the epoch (null: unset).
 */
export function searchAttributeUpdates(s: CoreState): { field: keyof ConversationSearchAttributes; value: unknown }[] {
  const changed = searchAttributeChanges(s);
  if (!changed) return [];
  const names = s.input.searchAttributes;
  const values: Record<keyof ConversationSearchAttributes, unknown> = {
    status: changed.status,
    pendingApprovals: changed.pendingApprovals,
    unknownEffects: changed.unknownEffects,
    pendingApprovalTags: changed.approvals?.tags,
    awaitingApprovalSince: changed.approvals?.since,
    tokens: changed.usage?.tokens,
    costUsd: changed.usage?.costUsd,
  };
  return CONVERSATION_SEARCH_ATTRIBUTE_FIELDS.flatMap((field) => {
    const value = values[field];
    if (value === undefined || (names !== undefined && names[field] === undefined)) return [];
    const json = JSON.stringify(value);
    if (s.published.upserted.get(field) === json) return [];
    s.published.upserted.set(field, json);
    return [{ field, value }];
  });
}

/**
 * The conversation's spending, when it differs from what this run last published (nothing, at a run's first publish).
 */
function usageChange(s: CoreState): PublishedUsage | undefined {
  const u = s.kept.usage;
  const now: PublishedUsage = { tokens: u.promptTokens + u.completionTokens, costUsd: u.costUsd };
  if (s.published.usage?.tokens === now.tokens && s.published.usage.costUsd === now.costUsd) return undefined;
  s.published.usage = now;
  return now;
}

/** What visibility indexes about the calls awaiting approval: see {@link SearchAttributeValues.approvals}. */
function approvalIndex(s: CoreState): { tags: string[]; since: number | null } {
  // Calls waiting inside agents called as tools count as this conversation's: it waits on them.
  const waiting = [
    ...(s.batch?.awaitingApproval() ?? []).map((c) => ({ key: c.key, name: c.name, requestedAt: c.requestedAt })),
    ...waitingBelow(s).map((b) => ({ key: b.callKey, name: b.toolName, requestedAt: Date.parse(b.requestedAt) })),
  ];
  if (waiting.length === 0) return { tags: [], since: null };
  const tags = new Set<string>();
  for (const call of waiting) tags.add(`call:${call.key}`);
  for (const call of waiting) tags.add(`tool:${call.name}`);
  for (const who of s.turn.requesters) tags.add(`requester:${who}`);
  return { tags: [...tags], since: Math.min(...waiting.map((call) => call.requestedAt)) };
}
