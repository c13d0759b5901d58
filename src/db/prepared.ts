/**
 * Named (prepared) statements for the queries every step runs. PostgreSQL
 * parses and analyses a named statement once per connection, and after a
 * few executions plans it once too, where an unnamed one is parsed, analysed
 * and planned at every execution: the transcript write of each model call is
 * a statement of a dozen parts. The name is a digest of the text, so the
 * same text always has the same name and no two texts share one.
 */
import { createHash } from 'node:crypto';
import type { QueryConfig } from 'pg';

/** Distinct texts named at most (a worker's statements come in a few dozen shapes); later texts run unnamed. */
const MAX_NAMED = 500;
const names = new Map<string, string>();

/** `text` with `values` as a query config that PostgreSQL prepares once per connection. */
export function prepared(text: string, values: unknown[]): QueryConfig<unknown[]> {
  let name = names.get(text);
  if (name === undefined && names.size < MAX_NAMED) {
    name = `agent_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
    names.set(text, name);
  }
  return name === undefined ? { text, values } : { name, text, values };
}
