/**
 * An approval policy written as JSON, for `npm start`: a file
 * (`AGENT_APPROVAL_POLICY_FILE`) or the text of a variable
 * (`AGENT_APPROVAL_POLICY`), holding a list of rules or `{"rules": [...]}`.
 * JSON holds everything a rule declares but `when`, a function: a rule that
 * needs one is declared in code.
 *
 * A policy is not a secret, so a file others may read is fine (unlike the
 * token and decision key files); a file others may write is refused, since
 * whoever writes it decides who approves what.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../common/errors';
import { approvalPolicy, type ApprovalPolicy, type ApprovalRule } from './approval-policy';

/** The variable naming a policy file. */
export const APPROVAL_POLICY_FILE_VARIABLE = 'AGENT_APPROVAL_POLICY_FILE';

/** The variable holding a policy's JSON itself. */
export const APPROVAL_POLICY_VARIABLE = 'AGENT_APPROVAL_POLICY';

/** Where a JSON policy is: a file, or the JSON itself; at most one of them. */
export interface ApprovalPolicySource {
  /** A file holding the JSON (relative to the working folder). */
  file?: string;
  /** The JSON itself. */
  inline?: string;
}

/**
 * Reads the approval policy of `source`: undefined when it names none. Throws a `ConfigError` saying what is wrong:
 * both a file and JSON given, a file that is missing, unreadable or writable by others, text that is not JSON (with
 * the parser's words), JSON that is not a list of rules or `{"rules": [...]}`, a rule with `when` (code only), or
 * what {@link approvalPolicy} finds wrong with a rule.
 */
export function readApprovalPolicy(source: ApprovalPolicySource): ApprovalPolicy | undefined {
  const { file, inline } = source;
  if (file !== undefined && inline !== undefined) {
    throw new ConfigError(
      `${APPROVAL_POLICY_FILE_VARIABLE} and ${APPROVAL_POLICY_VARIABLE} are both set: a worker has one approval policy. ` +
        `Unset one of them.`,
    );
  }
  if (file !== undefined) return policyOf(readPolicyFile(file), `${APPROVAL_POLICY_FILE_VARIABLE}=${file}`);
  if (inline !== undefined) return policyOf(inline, APPROVAL_POLICY_VARIABLE);
  return undefined;
}

/** The text of a policy file, refused when missing, unreadable or writable by others. */
function readPolicyFile(file: string): string {
  const where = `${APPROVAL_POLICY_FILE_VARIABLE}=${file}`;
  const resolved = path.resolve(file);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(resolved);
  } catch {
    throw new ConfigError(`${where}: there is no file ${resolved}. Write the policy there, or unset the variable.`);
  }
  if (!stat.isFile()) throw new ConfigError(`${where}: ${resolved} is not a file. Name the policy's JSON file.`);
  // Modes mean nothing on Windows, where every file reads as writable by all.
  if (process.platform !== 'win32' && (stat.mode & 0o002) !== 0) {
    throw new ConfigError(
      `${where}: anyone on this machine may write ${resolved} (mode ${(stat.mode & 0o777).toString(8)}), and so decide who approves what. ` +
        `Run \`chmod o-w ${resolved}\`.`,
    );
  }
  try {
    return fs.readFileSync(resolved, 'utf8');
  } catch (err) {
    throw new ConfigError(`${where}: cannot read ${resolved} (${(err as Error).message}).`);
  }
}

/** The policy of JSON text read from `where`. */
function policyOf(json: string, where: string): ApprovalPolicy {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (err) {
    throw new ConfigError(`${where}: the approval policy is not valid JSON: ${(err as Error).message}.`);
  }
  const rules = rulesOf(parsed, where);
  rules.forEach((rule, i) => {
    if (typeof rule === 'object' && rule !== null && Object.hasOwn(rule, 'when')) {
      const name =
        typeof (rule as { name?: unknown }).name === 'string' ? ` ("${(rule as { name: string }).name}")` : '';
      throw new ConfigError(
        `${where}: approval policy rule ${i + 1}${name} has "when", a predicate that only code can declare. ` +
          `Write its condition on the arguments with "where" (e.g. {"amount_cents": {"gt": 50000}}), ` +
          `or declare the policy in code: export it as "policy" from AGENT_TOOLS_MODULE, or give it to DurableAgentPlugin.`,
      );
    }
  });
  try {
    return approvalPolicy(rules as ApprovalRule[]);
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigError(`${where}: ${err.message}`);
    throw err;
  }
}

/** The list of rules of a parsed policy: the list itself, or its `rules`. */
function rulesOf(parsed: unknown, where: string): unknown[] {
  if (Array.isArray(parsed)) return parsed;
  if (typeof parsed === 'object' && parsed !== null) {
    const fields = Object.keys(parsed);
    const others = fields.filter((k) => k !== 'rules');
    const rules = (parsed as { rules?: unknown }).rules;
    if (others.length === 0 && Array.isArray(rules)) return rules;
    if (others.length > 0) {
      throw new ConfigError(
        `${where}: the approval policy has unknown field ${others.map((k) => `"${k}"`).join(', ')}: ` +
          'give a list of rules, or an object with "rules" only: {"rules": [{"name": …, "outcome": …}]}.',
      );
    }
  }
  throw new ConfigError(
    `${where}: the approval policy must be a list of rules or {"rules": [...]}, ` +
      'e.g. [{"name": "big-refunds", "outcome": "ask", "tools": ["issue_refund"], "where": {"amount_cents": {"gt": 50000}}}].',
  );
}
