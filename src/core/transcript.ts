/**
 * The run's messages: their seqs and structure, what is written when, and
 * what takes the place of a message PostgreSQL refused. Pure.
 */
import type { AppendEntry, DecisionRecord, ModelCallInput } from '../contract/activities';
import { describeMessage, type ChatMessage } from '../contract/messages';
import { toStorableText } from '../contract/text';
import { notStoredContent } from './outcomes';
import { planStoredRepair } from './pairing';
import { storeProblem } from './problems';
import type { StoreEntry } from './edge';
import type { CoreState } from './state';

/**
 * Gives messages the next seqs and queues them for writing (by reference when
 * an activity stored the body): the next model call writes them first, or the
 * next flush. Returns the first seq.
 */
export function store(s: CoreState, entries: readonly StoreEntry[]): number {
  const first = s.writes.nextSeq;
  s.writes.add(entries.map(({ message, ref }) => (ref ? { ref } : { message })));
  entries.forEach(({ message, ref }, i) => {
    const meta = describeMessage(first + i, message);
    s.messages.push(ref?.kind === 'model_response' ? { ...meta, responseKey: ref.key } : meta);
  });
  return first;
}

/** The system prompt to store first, in the conversation's first run only. */
export function systemMessage(s: CoreState): StoreEntry | undefined {
  return s.input.systemPrompt && !s.input.carried
    ? { message: { role: 'system', content: s.input.systemPrompt } }
    : undefined;
}

/**
 * PostgreSQL refused to store some of `entries` (a value no retry can fix).
 * Returns what to write next: notes in place of the refused messages, with
 * the same roles and tool-call ids so every call keeps its result; nothing
 * when `entries` were such notes already (the transcript then lacks them, and
 * `lastError` says so).
 */
export function writeRefused(
  s: CoreState,
  entries: readonly AppendEntry[],
  refusal: { message: string; refusedSeqs: readonly number[] },
): AppendEntry[] {
  const seqs = refusal.refusedSeqs.length > 0 ? [...refusal.refusedSeqs] : entries.map((e) => e.seq);
  if (seqs.every((seq) => s.notes.has(seq))) {
    const plural = seqs.length === 1 ? '' : 's';
    storeProblem(
      s,
      `PostgreSQL refused to store message${plural} ${seqs.join(', ')} and the notes in their place (${toStorableText(refusal.message)}); ` +
        'the stored transcript lacks them, so later model calls fail until they are stored',
    );
    return [];
  }
  return notesInPlace(s, seqs, refusal.message);
}

/** Notes with the same roles and tool-call ids as the refused messages at `seqs`, at their seqs. */
function notesInPlace(s: CoreState, seqs: readonly number[], error: string): { seq: number; message: ChatMessage }[] {
  const why = toStorableText(error);
  storeProblem(
    s,
    `PostgreSQL refused to store message${seqs.length === 1 ? '' : 's'} ${seqs.join(', ')}, stored a note in their place: ${why}`,
  );
  return seqs.flatMap((seq) => {
    const index = s.messages.findIndex((m) => m.seq === seq);
    if (index < 0) return [];
    const meta = s.messages[index];
    const content = notStoredContent(meta.role, why);
    const calls = meta.toolCalls?.map((c) => ({
      id: c.id,
      type: 'function' as const,
      function: { name: c.name, arguments: '{}' },
    }));
    const message: ChatMessage =
      meta.role === 'tool'
        ? { role: 'tool', tool_call_id: meta.toolCallId ?? '', content }
        : meta.role === 'assistant'
          ? { role: 'assistant', content, ...(calls ? { tool_calls: calls } : {}) }
          : { role: meta.role, content };
    s.messages[index] = describeMessage(seq, message);
    s.notes.add(seq);
    return [{ seq, message }];
  });
}

/**
 * PostgreSQL refused the record of an applied decision (the decision still applies; only the record for people is
 * missing).
 */
export function decisionNotRecorded(s: CoreState, record: DecisionRecord, error: string): void {
  storeProblem(
    s,
    `PostgreSQL refused the record of decision ${record.decisionId} (${record.decision} ${record.toolCallIds.join(', ')}); ` +
      `it applied, only its record is missing: ${toStorableText(error)}`,
  );
}

/** Checks the pairing rules on the transcript the model is about to see; repairs it if needed (it should never be). */
export function modelView(s: CoreState): Pick<ModelCallInput, 'omitSeqs' | 'synthesized'> {
  // Earlier runs ended settled, so checking this run's messages covers everything still open.
  const { problems, omitSeqs, synthesized } = planStoredRepair(s.messages);
  if (problems.length > 0) {
    s.kept.transcriptRepairs++;
    s.env.log.warn('Transcript broke the pairing rules before a model call; repaired it (this is a bug)', {
      conversationId: s.id,
      problems,
    });
  }
  return { omitSeqs, synthesized };
}
