/**
 * The user messages of the running turn that the stored transcript does not
 * hold yet: a turn takes its messages at once, but they are written by its
 * first model call (or a flush before it), so a chat page reloaded in that
 * moment would lose the message it just sent. They are read from where the
 * conversation received them, its Temporal history (the `userMessage`
 * signal, or the queue a continue-as-new carried: `run-signals.ts`), and
 * stand at the seqs the turn gave them: once a message is written, its
 * stored row is read instead.
 */
import type { AgentClient } from '../client/client';
import { logger } from '../common/logger';
import type { ConversationState } from '../contract';
import type { MessageFile } from '../contract/message-files';
import { userMessageSignal } from '../contract/workflow';
import type { HistoryRow } from '../db/ui-history-reads';
import { runSignals } from './run-signals';

/** A received user message as its signal (and a carried queue) holds it. */
interface Received {
  messageId?: unknown;
  text?: unknown;
  files?: MessageFile[];
}

/**
 * The running turn's user messages missing from `rows`, as rows at the seqs the turn gave them (its first seq on, in
 * the order it took them). None when no turn runs or every one is stored.
 */
export async function unwrittenUserRows(
  client: AgentClient,
  conversationId: string,
  state: ConversationState | undefined,
  rows: readonly HistoryRow[],
): Promise<HistoryRow[]> {
  const turn = state?.currentTurn;
  if (!turn) return [];
  const stored = new Set(rows.map((r) => r.seq));
  const missing = turn.messageIds.map((id, i) => ({ id, seq: turn.firstSeq + i })).filter((m) => !stored.has(m.seq));
  if (missing.length === 0) return [];
  // Unreadable history (Temporal busy, the run just continued as new): the history shows what is stored, as before.
  const received = await receivedMessages(client, conversationId, new Set(missing.map((m) => m.id))).catch(
    (err: unknown) => {
      logger.warn({ conversationId, err }, "Could not read the running turn's user messages from Temporal's history");
      return new Map<string, Received>();
    },
  );
  return missing.flatMap(({ id, seq }) => {
    const m = received.get(id);
    if (!m || typeof m.text !== 'string') return []; // not a message (a regeneration's request): nothing to show
    const files = Array.isArray(m.files) && m.files.length > 0 ? { files: m.files } : {};
    return [{ seq, message: { role: 'user' as const, content: m.text, ...files } }];
  });
}

/** The messages named by `ids` as the conversation's current run received them (signals, a carried queue), by id. */
async function receivedMessages(
  client: AgentClient,
  conversationId: string,
  ids: ReadonlySet<string>,
): Promise<Map<string, Received>> {
  const { input, signals } = await runSignals(client, conversationId, userMessageSignal.name);
  const carried = (input as { carried?: { inbox?: unknown } } | undefined)?.carried?.inbox;
  const found = new Map<string, Received>();
  for (const m of [...(Array.isArray(carried) ? carried : []), ...signals] as (Received | undefined)[])
    if (typeof m?.messageId === 'string' && ids.has(m.messageId) && !found.has(m.messageId)) found.set(m.messageId, m);
  return found;
}
