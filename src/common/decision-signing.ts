/**
 * Signed decisions: the trust boundary between the people who decide and
 * everyone else who can signal a conversation.
 *
 * The HTTP API signs each decision it sends with a key it shares with the
 * workers (HMAC-SHA256 over the decision and its conversation id); a worker's
 * `verifyDecision` activity checks the signature before the workflow applies
 * the decision. A decision signalled around the API (`temporal workflow
 * signal`, a script with namespace access) has no valid signature: where the
 * worker holds keys it is refused, and where it holds none it is applied and
 * recorded as unauthenticated. Keys never enter workflow history; only the
 * signature and the verdict do.
 *
 * Runs in Node (the API and the worker), never in workflow code.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ApprovalDecision } from '../contract';
import type { DecisionVerification } from '../contract/activities';
import { ConfigError } from './errors';
import { readPrivateFile } from './private-file';

/** A shared secret that signs (the first of a list) and verifies decisions. */
export interface DecisionKey {
  /** Short name carried in each signature, so keys can rotate: `[A-Za-z0-9_-]{1,32}`. */
  id: string;
  /** At least {@link MIN_DECISION_SECRET_CHARS} characters. */
  secret: string;
}

/** How a worker treats decisions' signatures. */
export interface DecisionTrust {
  /** Keys that verify signatures (the API signs with the first of its own list). None: no decision is authenticated. */
  keys: readonly DecisionKey[];
  /**
   * Refuse a decision without a valid signature. Default: true when keys are
   * configured. With false, such a decision applies and is recorded as
   * unauthenticated (`authenticated = false` in `approval_decisions`).
   */
  requireSigned?: boolean;
}

/** The shortest secret accepted. */
export const MIN_DECISION_SECRET_CHARS = 32;

const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;

/**
 * The bytes a decision's signature covers: every field that changes what it does or whom it names, and the
 * conversation.
 */
export function decisionSigningPayload(conversationId: string, d: ApprovalDecision): string {
  const v1 = [
    conversationId,
    d.decisionId,
    d.decision,
    d.toolCallId ?? null,
    d.callKey ?? null,
    d.reason ?? null,
    d.decidedBy ?? null,
    d.sentAt ?? null,
  ];
  // A decider's groups (approval policies) are covered by the third format, which covers everything.
  if (d.deciderGroups !== undefined || d.grant !== undefined) {
    return JSON.stringify([
      'durable-agent-decision/3',
      ...v1,
      d.arguments === undefined ? null : canonicalJson(d.arguments),
      d.response ?? null,
      d.deciderGroups === undefined ? null : [...d.deciderGroups].sort(),
      d.grant === undefined ? null : canonicalJson(d.grant),
    ]);
  }
  // Approvals and rejections keep the first format (decisions queued in histories stay valid); an edit's
  // arguments and a response's text are covered by the second.
  if (d.decision === 'approve' || d.decision === 'reject') return JSON.stringify(['durable-agent-decision/1', ...v1]);
  return JSON.stringify([
    'durable-agent-decision/2',
    ...v1,
    d.arguments === undefined ? null : canonicalJson(d.arguments),
    d.response ?? null,
  ]);
}

/**
 * JSON with every object's keys sorted, so the same arguments always sign the same, whatever order they were written
 * in (and an audit compares them the same way).
 */
export function canonicalJson(value: unknown): string {
  const sorted = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sorted)
      : v !== null && typeof v === 'object'
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, sorted((v as Record<string, unknown>)[k])]),
          )
        : v;
  return JSON.stringify(sorted(value));
}

const mac = (secret: string, payload: string): Buffer => createHmac('sha256', secret).update(payload, 'utf8').digest();

/** Signs `decision` for `conversationId` with `key`: `<keyId>.<base64url HMAC>`. */
export function signDecision(key: DecisionKey, conversationId: string, decision: ApprovalDecision): string {
  return `${key.id}.${mac(key.secret, decisionSigningPayload(conversationId, decision)).toString('base64url')}`;
}

/** Checks a decision's signature against `keys`. */
export function checkDecisionSignature(
  keys: readonly DecisionKey[],
  conversationId: string,
  decision: ApprovalDecision,
): 'valid' | 'unsigned' | 'unknown_key' | 'invalid' {
  if (!decision.signature) return 'unsigned';
  const dot = decision.signature.indexOf('.');
  const key = keys.find((k) => k.id === decision.signature!.slice(0, dot));
  if (dot < 0 || !key) return 'unknown_key';
  const given = Buffer.from(decision.signature.slice(dot + 1), 'base64url');
  const expected = mac(key.secret, decisionSigningPayload(conversationId, decision));
  return given.length === expected.length && timingSafeEqual(given, expected) ? 'valid' : 'invalid';
}

/** Why a worker refuses a decision sent around the API. */
const UNSIGNED = 'it is not signed';

/**
 * True when `message` is a worker's refusal of an unsigned decision (one sent around the HTTP API), as {@link
 * verifyDecision} words it.
 */
export function isUnsignedRefusal(message: string): boolean {
  return message.includes(`Decision refused: ${UNSIGNED}.`);
}

/** Applies the worker's rule to a decision: authenticated, unauthenticated but accepted, or refused (with why). */
export function verifyDecision(
  trust: DecisionTrust,
  conversationId: string,
  decision: ApprovalDecision,
): DecisionVerification {
  const found = checkDecisionSignature(trust.keys, conversationId, decision);
  if (found === 'valid') return { authenticated: true };
  const required = trust.requireSigned ?? trust.keys.length > 0;
  if (!required) return { authenticated: false };
  const why = {
    unsigned: UNSIGNED,
    unknown_key: 'it is signed with a key this worker does not hold',
    invalid: 'its signature does not match its content',
  }[found];
  return {
    authenticated: false,
    refusal: `Decision refused: ${why}. This worker applies only decisions signed by the agent's HTTP API; decide through the API (POST /v1/conversations/${conversationId}/decisions) or the inbox page.`,
  };
}

/**
 * Parses keys written as `id:secret[,id:secret…]` (the `DECISION_KEYS`
 * variable, or the first line of `DECISION_KEYS_FILE`). The first signs.
 */
export function parseDecisionKeys(text: string, where: string): DecisionKey[] {
  const keys = text
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .map((part) => {
      const colon = part.indexOf(':');
      const id = colon < 0 ? '' : part.slice(0, colon);
      const secret = colon < 0 ? '' : part.slice(colon + 1);
      if (!KEY_ID.test(id))
        throw new ConfigError(
          `${where}: each key is "id:secret" with an id of letters, digits, "_" or "-" (at most 32); got "${id || part.slice(0, 8)}…".`,
        );
      if (secret.length < MIN_DECISION_SECRET_CHARS) {
        throw new ConfigError(
          `${where}: the secret of key "${id}" is shorter than ${MIN_DECISION_SECRET_CHARS} characters; make one with \`openssl rand -hex 32\`.`,
        );
      }
      return { id, secret };
    });
  const ids = new Set<string>();
  for (const key of keys) {
    if (ids.has(key.id)) throw new ConfigError(`${where}: key id "${key.id}" is used twice; give each key its own id.`);
    ids.add(key.id);
  }
  return keys;
}

/** Reads keys from a file only its owner may read (whoever reads it can sign decisions as anyone). */
export function readDecisionKeyFile(file: string): DecisionKey[] {
  return parseDecisionKeys(
    readPrivateFile(file, 'The decision key file').split('\n')[0] ?? '',
    `The decision key file ${file}`,
  );
}
