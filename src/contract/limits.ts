/**
 * The numbers a conversation lives by: the defaults of its input, the upper
 * bounds on what it may ask for, the largest message, decision and typed
 * output it takes, how much it remembers and keeps in its state, the names
 * agents and tools may have, and how a text's size is measured. Pure and
 * workflow-safe.
 */

/** Defaults applied to a {@link ConversationInput}. */
export const CONVERSATION_DEFAULTS = {
  maxSteps: 10,
  modelCallMs: 5 * 60_000,
  modelCallAttempts: 5,
  heartbeatMs: 10_000,
  continueAsNewAfterEvents: 2000,
  approvalTimeoutMs: 7 * 24 * 60 * 60_000,
  onNewMessage: 'interrupt',
  maxHandoffsPerTurn: 5,
  maxAgentDepth: 3,
} as const;

/** Upper bounds on what a conversation may ask for; larger values are refused before anything starts. */
export const CONVERSATION_LIMITS = {
  /** The largest `maxSteps`: model calls with tools in one turn. */
  maxSteps: 100,
  /** The largest `maxHandoffsPerTurn`. */
  maxHandoffsPerTurn: 100,
  /** The largest `maxAgentDepth`. */
  maxAgentDepth: 10,
} as const;

/**
 * The largest user message, in UTF-8 bytes. A user message travels through
 * Temporal's history (as a signal, then as the input of the activity that
 * stores it), where a payload may not exceed 2 MB; larger documents belong
 * in a file or a table a tool reads.
 */
export const USER_MESSAGE_MAX_BYTES = 256 * 1024;

/**
 * The user messages one turn takes at once, in UTF-8 bytes (at least one
 * message): they are stored by one activity whose input must stay under
 * Temporal's payload limit. Messages beyond it wait for the next turn.
 */
export const TURN_INPUT_MAX_BYTES = 1024 * 1024;

/**
 * Queued user messages a conversation carries through continue-as-new, in UTF-8 bytes; with more it answers them first.
 */
export const CARRIED_INBOX_MAX_BYTES = 1024 * 1024;

/**
 * The largest file a user message carries (an image, a PDF), in bytes. Its
 * bytes are stored in PostgreSQL before the message is sent; only a reference
 * travels through Temporal's history. `MESSAGE_FILES_MAX_BYTES` bounds a
 * message's files together, `MESSAGE_FILES_MAX` their number.
 */
export const MESSAGE_FILE_MAX_BYTES = 4 * 1024 * 1024;

/** The most bytes of files one user message carries. */
export const MESSAGE_FILES_MAX_BYTES = 8 * 1024 * 1024;

/** The most files one user message carries. */
export const MESSAGE_FILES_MAX = 8;

/** The longest `sentBy` of a user message, in characters. */
export const SENT_BY_MAX_CHARS = 256;

/** The longest text each field of a decision may have, in characters. */
export const DECISION_FIELD_MAX_CHARS = {
  decisionId: 256,
  toolCallId: 256,
  callKey: 512,
  decidedBy: 256,
  reason: 4096,
  signature: 512,
  response: 32_768,
} as const;

/** The largest edited arguments of an `edit` decision, in bytes of JSON: as for the model's own arguments. */
export const EDITED_ARGUMENTS_MAX_BYTES = 256 * 1024;

/** The largest {@link OutputSpec.schema}, as JSON text in UTF-8 bytes: it travels with each model call's input. */
export const OUTPUT_SCHEMA_MAX_BYTES = 16 * 1024;

/** Re-asks for a typed output in one turn, unless the spec says otherwise, and the most it may say. */
export const OUTPUT_RETRIES = { default: 2, max: 10 } as const;

/** How many message ids and decisions a conversation remembers for deduplication across runs. */
export const DEDUP_MEMORY = 500;

/** How many finished turns {@link ConversationState.recentTurns} keeps. */
export const RECENT_TURNS_KEPT = 50;

/** How many refused decisions {@link ConversationState.refusedDecisions} keeps. */
export const REFUSED_DECISIONS_KEPT = 20;

/** How many calls {@link ConversationState.unknownEffects} keeps. */
export const UNKNOWN_EFFECTS_KEPT = 20;

/**
 * What an agent's name may be: 1-52 letters, digits, `_` or `-`, so that its
 * handoff tool `transfer_to_<name>` is a valid function name (at most 64).
 */
export const AGENT_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,52}$/;

/**
 * What a name the model reads may be (providers' rule for function names and
 * `json_schema.name`): a tool's, an agent tool's, a typed output's, a
 * guardrail's.
 */
export const FUNCTION_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

/** The UTF-8 length of `text`, in bytes (workflow-safe: no Buffer, no TextEncoder). */
export function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      bytes += 4; // a surrogate pair: one code point of four bytes
      i++;
    } else bytes += 3;
  }
  return bytes;
}
