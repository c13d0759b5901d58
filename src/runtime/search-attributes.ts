/**
 * The conversation's search attributes on a Temporal namespace. Without them
 * every status update would fail the conversation's workflow task, so a
 * worker checks them before it polls and registers what is missing where it
 * may.
 */
import type { OperatorService } from '@temporalio/client';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import { SEARCH_ATTRIBUTES } from '../workflows/api';

/** A connection with the operator service: the client's `Connection` or the worker's `NativeConnection`. */
export interface OperatorConnection {
  readonly operatorService: OperatorService;
}

/**
 * Registers the project's search attributes where they are missing. Returns
 * the names added. A namespace that does not allow it (Temporal Cloud, a
 * namespace without operator rights) gets an error that lists the attributes
 * and the commands that create them.
 */
export async function ensureSearchAttributes(connection: OperatorConnection, namespace: string): Promise<string[]> {
  const listed = await connection.operatorService.listSearchAttributes({ namespace });
  const existing = new Set([...Object.keys(listed.customAttributes ?? {}), ...Object.keys(listed.systemAttributes ?? {})]);
  const missing = SEARCH_ATTRIBUTES.filter((key) => !existing.has(key.name));
  if (missing.length === 0) return [];
  try {
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(missing.map((key) => [key.name, encodeSearchAttributeIndexedValueType(key.type)!])),
    });
  } catch (err) {
    const commands = missing.map((key) => `temporal operator search-attribute create --namespace ${namespace} --name ${key.name} --type ${typeName(key.type)}`);
    throw new Error(
      `Namespace "${namespace}" lacks the search attributes the conversation workflow sets (${missing.map((k) => k.name).join(', ')}), ` +
        `and the worker could not add them: ${(err as Error).message}. ` +
        `Create them once with an account that may (on Temporal Cloud: tcld namespace search-attributes add, or the Cloud UI):\n  ${commands.join('\n  ')}`,
    );
  }
  return missing.map((key) => key.name);
}

/** The CLI's name of a search attribute type. */
function typeName(type: string): string {
  return { KEYWORD: 'Keyword', INT: 'Int', TEXT: 'Text', BOOL: 'Bool', DOUBLE: 'Double', DATETIME: 'Datetime', KEYWORD_LIST: 'KeywordList' }[type] ?? type;
}
