/**
 * What an audit export holds: one {@link AuditRecord} per line of JSON Lines,
 * for each decision on tool calls in a time range: a person's (`decision`) or
 * an approval policy's rule's own (`policy`), or a call a standing grant
 * covered (`grant`); a reader tells records apart by `kind`. A decision that
 * gave a grant carries it (`grantGiven`), with its revocation.
 *
 * Read from PostgreSQL by `src/db/audit.ts`, served by `GET /v1/audit`,
 * written by `cli audit export`, checked by `cli audit verify`
 * (`verify.ts`). The zod schema below is the same record for the API's
 * document and for the verifier's reading of each line.
 */
import { z } from 'zod';
import type { ApprovalDecision, DecisionKind } from '../contract/decisions';

/**
 * The kinds of audit record: a person's decision, a rule's own (`via = 'policy'`), or a call a standing grant covered
 * (`via = 'grant'`: decided by the grantor's grant, nobody asked).
 */
export const AUDIT_RECORD_KINDS = ['decision', 'policy', 'grant'] as const;

/** One of {@link AUDIT_RECORD_KINDS}. */
export type AuditRecordKind = (typeof AUDIT_RECORD_KINDS)[number];

/** One call a decision decided, with what the model asked for. */
export interface AuditCall {
  /** The provider's id of the call. */
  toolCallId: string;
  /** The call's key (`<conversation>/msg-<seq>/call-<index>`, maybe with `/regen-<n>`); null for decisions recorded before keys were kept. */
  callKey: string | null;
  /** The tool, from the assistant message that asked for the call; null when that message was not found. */
  toolName: string | null;
  /**
   * The model's arguments, parsed from the assistant message (the raw text when it is not JSON); null when that
   * message was not found.
   */
  arguments: unknown;
  /** `edit`: the arguments the person ran the call with instead; null otherwise. */
  editedArguments: unknown;
  /** Where the call was read from when not from the live transcript, or why it was not found; null otherwise. */
  note: string | null;
}

/** A decision on tool calls as exported: who, when, which calls with their arguments, the verdict, the rule, the signature. */
export interface DecisionAuditRecord {
  /** `policy` when a rule decided without a person (`decidedBy` is `rule:<name>`), else `decision`. */
  kind: AuditRecordKind;
  conversationId: string;
  decisionId: string;
  /** ISO 8601, UTC, to the millisecond: the workflow's time when the decision applied (or the rule decided). */
  decidedAt: string;
  /** The person's subject (the API's token's), or `rule:<name>`; null when the decision named nobody. */
  decidedBy: string | null;
  /** True when a valid signature of the API proved `decidedBy`; false for an unsigned decision; null before this was kept and for rules. */
  authenticated: boolean | null;
  /** The groups the person's signed token gave them, when the call's rule names groups. */
  deciderGroups: string[] | null;
  /** How it arrived: a signal, an update, the rule itself, or a standing grant. */
  via: 'signal' | 'update' | 'policy' | 'grant';
  verdict: DecisionKind;
  /** An approval that did not decide the call yet: its rule needs more people (N of M). */
  callStillWaits: boolean;
  /** The approval policy's rule the calls were under, or that decided them. */
  rule: string | null;
  reason: string | null;
  /** `respond`: the person's answer, which became the call's result. */
  response: string | null;
  calls: AuditCall[];
  /** True when a Temporal reset took the decided calls out of the live transcript after the decision. */
  superseded: boolean;
  /** When that reset superseded it (ISO 8601); null when it did not. */
  supersededAt: string | null;
  /** The workflow run that applied it; null before this was kept. */
  runId: string | null;
  /**
   * The decision exactly as its sender signed it, `signature` included (`src/common/decision-signing.ts`); null for
   * unsigned decisions, the rules' own, and decisions recorded before signatures were kept.
   */
  signedDecision: ApprovalDecision | null;
  /** `grant`: the grant that covered the call (the id of the decision that gave it), and what the call counted against its amount. */
  grantId: string | null;
  grantAmount: number | null;
  /** The standing grant this decision gave with its approval, with its revocation; null when it gave none. */
  grantGiven: AuditGrant | null;
}

/** A standing grant as the audit shows it (`approval_grants`). */
export interface AuditGrant {
  toolName: string;
  rule: string | null;
  expiresAt: string;
  maxCalls: number | null;
  maxAmount: { argument: string; total: number } | null;
  revokedAt: string | null;
  revokedBy: string | null;
  revokeReason: string | null;
}

/** One line of an audit export. Grants' records join this union, with their own `kind`, when grants land. */
export type AuditRecord = DecisionAuditRecord;

const text = z.string();
const call = z.object({
  toolCallId: text.describe("The provider's id of the call."),
  callKey: text.nullable().describe("The call's key; null for decisions recorded before keys were kept."),
  toolName: text.nullable().describe('The tool; null when the message that asked for the call was not found.'),
  arguments: z
    .unknown()
    .describe("The model's arguments, parsed (the raw text when not JSON); null when the message was not found."),
  editedArguments: z.unknown().describe('edit: the arguments the call ran with instead; null otherwise.'),
  note: text
    .nullable()
    .describe('Where the call was read from when not the live transcript, or why it was not found; null otherwise.'),
});

/**
 * The decision as signed, as far as the audit reads it: its fields pass through untouched (the signature covers them
 * as they are).
 */
const signedDecision = z.looseObject({
  decisionId: text,
  decision: z.enum(['approve', 'reject', 'edit', 'respond']),
  signature: text.optional(),
});

/** {@link AuditRecord} as a zod schema: the API's document of each line, and how `cli audit verify` reads one. */
export const auditRecordSchema = z
  .object({
    kind: z.enum(AUDIT_RECORD_KINDS).describe("policy: a rule decided without a person; decision: a person's."),
    conversationId: text,
    decisionId: text,
    decidedAt: text.describe('ISO 8601, UTC, to the millisecond.'),
    decidedBy: text.nullable().describe("The person's subject, or rule:<name>."),
    authenticated: z.boolean().nullable().describe('Whether a valid signature of the API proved decidedBy.'),
    deciderGroups: z.array(text).nullable().describe("The groups of the person's signed token."),
    via: z.enum(['signal', 'update', 'policy', 'grant']),
    verdict: z.enum(['approve', 'reject', 'edit', 'respond']),
    callStillWaits: z.boolean().describe('An approval that did not decide the call yet (N of M).'),
    rule: text.nullable().describe("The approval policy's rule."),
    reason: text.nullable(),
    response: text.nullable().describe("respond: the person's answer."),
    calls: z.array(call),
    superseded: z.boolean().describe('A Temporal reset took the decided calls out of the live transcript.'),
    supersededAt: text.nullable(),
    runId: text.nullable(),
    signedDecision: signedDecision
      .nullable()
      .describe('The decision exactly as its sender signed it, signature included; null when not signed.'),
    grantId: text.nullable().describe('grant: the standing grant that covered the call.'),
    grantAmount: z.number().nullable().describe("grant: what the call counted against the grant's amount."),
    grantGiven: z
      .object({
        toolName: text,
        rule: text.nullable(),
        expiresAt: text,
        maxCalls: z.number().int().nullable(),
        maxAmount: z.object({ argument: text, total: z.number() }).nullable(),
        revokedAt: text.nullable(),
        revokedBy: text.nullable(),
        revokeReason: text.nullable(),
      })
      .nullable()
      .describe('The standing grant this approval gave, with its revocation; null when it gave none.'),
  })
  .describe(
    "One line of the export: one decision on tool calls (a person's or a rule's), in order of decidedAt, then decisionId.",
  ) as unknown as z.ZodType<AuditRecord>;
