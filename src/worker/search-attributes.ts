/**
 * The conversation's search attributes on a Temporal namespace. A
 * conversation upserts only attributes its namespace has (its input names
 * them), so a worker checks them before it polls and registers what is
 * missing where it may, within the namespace's limits: SQL visibility
 * (PostgreSQL, MySQL, SQLite, the dev server) takes 3 Int, 3 Double, 3
 * Datetime, 3 KeywordList and 10 Keyword attributes per namespace. See
 * docs/search-attributes.md.
 */
import type { OperatorService } from '@temporalio/client';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import { AgentError } from '../common/errors';
import { isTemporalNotReady, TEMPORAL_START_WAIT_MS, waitForServer } from '../common/wait-for-server';
import {
  type SearchAttributeOptions,
  CONVERSATION_SEARCH_ATTRIBUTES,
  describeBadSearchAttributePrefix,
  SEARCH_ATTRIBUTE_GROUP_ORDER,
  SEARCH_ATTRIBUTE_GROUPS,
  type SearchAttributeGroup,
} from '../contract';

/** A connection with the operator service: the client's `Connection` or the worker's `NativeConnection`. */
export interface OperatorConnection {
  readonly operatorService: OperatorService;
}

/** What {@link ensureSearchAttributes} found and did. */
export interface SearchAttributeRegistration {
  /** The names registered now. */
  added: string[];
  /** The groups whose attributes the namespace has, registered now or before. */
  on: SearchAttributeGroup[];
  /** The groups left off, each with why (a sentence for the log), and whether the configuration chose so. */
  off: { group: SearchAttributeGroup; why: string; chosen: boolean }[];
}

/** What each group's attributes let people do, for the log line of a group left off. */
export const SEARCH_ATTRIBUTE_GROUP_PURPOSE: Record<SearchAttributeGroup, string> = {
  status: 'visibility queries and the Temporal UI cannot filter conversations by AgentStatus',
  approvals:
    'visibility queries cannot filter by PendingApprovals, PendingApprovalTags or AwaitingApprovalSince, and the approval backlog metric counts from PostgreSQL; the approval lists work without them',
  unknownEffects:
    "AgentClient.withUnknownEffects and the CLI's unknown-effects cannot list conversations with tool calls whose effect is unknown",
  usage: 'visibility queries cannot filter conversations by AgentTokens or AgentCostUsd',
};

/**
 * A group the worker was asked to register does not fit in the namespace's visibility store; nothing of it was
 * registered.
 */
export class SearchAttributeLimitError extends AgentError {}

/** Where the groups are chosen, as messages name it. */
export const SEARCH_ATTRIBUTE_GROUPS_SETTING =
  "the plugin's searchAttributes.groups (AGENT_SEARCH_ATTRIBUTES for npm start)";

/** The CLI's names of the index types, by the number the operator service lists them with. */
const TYPE_NAMES: Record<number, string> = {
  1: 'Text',
  2: 'Keyword',
  3: 'Int',
  4: 'Double',
  5: 'Bool',
  6: 'Datetime',
  7: 'KeywordList',
};

/** An attribute of a group, under the name it has in the namespace. */
interface Wanted {
  name: string;
  /** The CLI's name of its type. */
  type: string;
  sdkType: (typeof CONVERSATION_SEARCH_ATTRIBUTES)[keyof typeof CONVERSATION_SEARCH_ATTRIBUTES]['type'];
}

/**
 * Registers the attributes of the groups `options` asks for where they are
 * missing, a group at a time (a group is registered whole or not at all).
 * A group the store has no room for is left off when the worker chooses,
 * and fails the start with a {@link SearchAttributeLimitError} when it was
 * asked for. A namespace that does not allow registering (Temporal Cloud, a
 * namespace without operator rights) gets an error that lists what is
 * missing and how to create it.
 */
export async function ensureSearchAttributes(
  connection: OperatorConnection,
  namespace: string,
  options: SearchAttributeOptions = {},
): Promise<SearchAttributeRegistration> {
  const prefix = options.prefix ?? '';
  const badPrefix = describeBadSearchAttributePrefix(prefix);
  if (badPrefix) throw new TypeError(`Search attribute prefix: ${badPrefix}.`);
  const asked = options.groups;
  // A Temporal server that has just started, or whose database is down, may not know the namespace for a
  // moment: the worker's start waits for it (TEMPORAL_START_WAIT_MS) rather than failing.
  const listed = await waitForServer(
    `the search attributes of namespace "${namespace}"`,
    () => connection.operatorService.listSearchAttributes({ namespace }),
    isTemporalNotReady,
    TEMPORAL_START_WAIT_MS,
  );
  const existing = new Map(
    Object.entries(listed.customAttributes ?? {}).map(([name, type]) => [
      name,
      TYPE_NAMES[Number(type)] ?? String(type),
    ]),
  );
  for (const name of Object.keys(listed.systemAttributes ?? {})) existing.set(name, 'system');
  const wanted = (group: SearchAttributeGroup): Wanted[] =>
    SEARCH_ATTRIBUTE_GROUPS[group].map((field) => {
      const key = CONVERSATION_SEARCH_ATTRIBUTES[field];
      return { name: `${prefix}${key.name}`, type: typeName(key.type), sdkType: key.type };
    });
  const result: SearchAttributeRegistration = { added: [], on: [], off: [] };
  const leaveOff = (group: SearchAttributeGroup, why: string): void => {
    if (asked)
      throw new SearchAttributeLimitError(
        `Namespace "${namespace}" cannot take the search attribute group "${group}": ${why}`,
      );
    result.off.push({ group, why, chosen: false });
  };
  for (const group of SEARCH_ATTRIBUTE_GROUP_ORDER) {
    if (asked && !asked.includes(group)) {
      result.off.push({
        group,
        why: `it is not among the groups asked for (${asked.join(', ') || 'none'}: ${SEARCH_ATTRIBUTE_GROUPS_SETTING}).`,
        chosen: true,
      });
      continue;
    }
    const keys = wanted(group);
    const clash = keys.find((k) => existing.has(k.name) && existing.get(k.name) !== k.type);
    if (clash) {
      leaveOff(
        group,
        `${clash.name} exists there with type ${existing.get(clash.name)}, and the workflow sets ${/^[AEIOU]/.test(clash.type) ? 'an' : 'a'} ${clash.type}. ` +
          `Give the agent's attributes a prefix of their own (the plugin's searchAttributes.prefix, AGENT_SEARCH_ATTRIBUTE_PREFIX for npm start), or turn the group off (${SEARCH_ATTRIBUTE_GROUPS_SETTING}).`,
      );
      continue;
    }
    const missing = keys.filter((k) => !existing.has(k.name));
    if (missing.length > 0) {
      try {
        await connection.operatorService.addSearchAttributes({
          namespace,
          searchAttributes: Object.fromEntries(
            missing.map((k) => [k.name, encodeSearchAttributeIndexedValueType(k.sdkType)!]),
          ),
        });
      } catch (err) {
        const limit = storeLimit(err);
        if (!limit)
          throw cannotRegister(
            namespace,
            err,
            missingOfGroups(
              asked ?? SEARCH_ATTRIBUTE_GROUP_ORDER.slice(SEARCH_ATTRIBUTE_GROUP_ORDER.indexOf(group)),
              wanted,
              existing,
            ),
          );
        const taken = [...existing]
          .filter(([, type]) => type === limit.type)
          .map(([name]) => name)
          .sort();
        leaveOff(group, describeLimit(namespace, group, keys, limit, taken, asked));
        continue;
      }
      for (const k of missing) existing.set(k.name, k.type);
      result.added.push(...missing.map((k) => k.name));
    }
    result.on.push(group);
  }
  return result;
}

/** What an error of the operator service says about the store's limit: the most attributes of a type. */
function storeLimit(err: unknown): { max: number; type: string } | undefined {
  const found = /cannot have more than (\d+) search attributes? of type (\w+)/i.exec((err as Error)?.message ?? '');
  return found ? { max: Number(found[1]), type: found[2] } : undefined;
}

/**
 * Why a group does not fit, and the ways out (none of them a command that
 * cannot work): for a group asked for, the exact setting without it; for one
 * the worker chose, how to have it, or to leave it off without a warning.
 */
function describeLimit(
  namespace: string,
  group: SearchAttributeGroup,
  keys: readonly Wanted[],
  limit: { max: number; type: string },
  taken: readonly string[],
  asked: readonly SearchAttributeGroup[] | undefined,
): string {
  const needs = keys.map((k) => `${k.name} (${k.type})`).join(', ');
  const without = asked?.filter((g) => g !== group) ?? [];
  const free = `free ${/^[AEIOU]/.test(limit.type) ? 'an' : 'a'} ${limit.type} attribute no workflow uses`;
  const raise =
    "raise the limit on a self-hosted cluster: visibility.persistenceCustomSearchAttributes in the server's configuration (Temporal Server 1.30 and later), " +
    'with the matching columns added to the SQL visibility schema';
  return (
    `it needs ${needs}, and the namespace's visibility store allows ${limit.max} custom search attributes of type ${limit.type} per namespace; ` +
    `namespace "${namespace}" has ${taken.length} already (${taken.join(', ') || 'none listed'}). ` +
    (asked
      ? `Turn the group off (${SEARCH_ATTRIBUTE_GROUPS_SETTING}: AGENT_SEARCH_ATTRIBUTES=${without.join(',') || 'none'}, groups: [${without.map((g) => `'${g}'`).join(', ')}]), or ${free}, or ${raise}.`
      : `To have it, ${free}, or ${raise}; to leave it off without this warning, name the groups you want (${SEARCH_ATTRIBUTE_GROUPS_SETTING}).`) +
    ' What each group is for: docs/search-attributes.md.'
  );
}

/** The attributes of `groups` the namespace lacks (those with a clashing type left out). */
function missingOfGroups(
  groups: readonly SearchAttributeGroup[],
  wanted: (g: SearchAttributeGroup) => Wanted[],
  existing: ReadonlyMap<string, string>,
): Wanted[] {
  return groups.flatMap(wanted).filter((k) => !existing.has(k.name));
}

/** The error of a namespace that may not be changed from here, with what to create and how. */
function cannotRegister(namespace: string, err: unknown, missing: readonly Wanted[]): Error {
  const commands = missing.map(
    (k) => `temporal operator search-attribute create --namespace ${namespace} --name ${k.name} --type ${k.type}`,
  );
  return new Error(
    `Namespace "${namespace}" lacks search attributes the conversation workflow sets (${missing.map((k) => k.name).join(', ')}), ` +
      `and the worker could not add them: ${(err as Error).message}. ` +
      `Create them once with an account that may (on Temporal Cloud: tcld namespace search-attributes add, or the Cloud UI), ` +
      `or turn their groups off (${SEARCH_ATTRIBUTE_GROUPS_SETTING}):\n  ${commands.join('\n  ')}`,
  );
}

/** The CLI's name of a search attribute type. */
function typeName(type: string): string {
  return (
    {
      KEYWORD: 'Keyword',
      INT: 'Int',
      TEXT: 'Text',
      BOOL: 'Bool',
      DOUBLE: 'Double',
      DATETIME: 'Datetime',
      KEYWORD_LIST: 'KeywordList',
    }[type] ?? type
  );
}
