/**
 * Following one turn as a UI message stream: reads what is durable (the
 * workflow's state, stored model responses and the transcript) and the live
 * text of the running model call (PostgreSQL NOTIFY), projects the turn
 * (`ui-stream.ts`) and sends what each projection adds, until the turn ends
 * or waits for a person.
 */
import type { AgentClient } from '../client/client';
import type { StreamView } from '../client/stream';
import { TurnWatch } from './turn-watch';
import { followedState } from './followed-state';
import { approvalAsk, decidedAs, decisionOf, type AskedCall, type ChatViewer } from './chat-approvals';
import { BelowCalls } from './ui-below';
import type { CallDecisionRecord } from '../db/call-decisions';
import { holdsFor, type Hold } from './ui-hold';
import type { AssistantMessage, ConversationState, MessageMeta } from '../contract';
import { parseJsonOrText } from '../contract/text';
import { callInstanceKey } from '../core/effect-keys';
import {
  callOutputOf,
  projectTurn,
  UiStreamEmitter,
  type CallFacts,
  type StepFacts,
  type TurnFacts,
  type UiChunk,
} from './ui-stream';

/** How often the state is read while a turn is followed (a live delta also wakes the follower). */
const POLL_MS = 250;

/** Which turn to follow, and from where. */
export interface UiTurnTarget {
  /** The turn that takes this message; else the turn running now. */
  messageId?: string;
  /**
   * Leave out what the turn showed up to now (what the client has), sending
   * only what comes next: a continuation after decisions. `prepare` runs
   * once that baseline is taken (the decisions are sent there).
   */
  continuing?: { prepare: () => Promise<UiChunk[]>; callKeys?: readonly string[] };
  /** Who reads the stream: what each approval request lets them decide (`chat-approvals.ts`). */
  viewer?: ChatViewer;
  /**
   * While every waiting call waits for someone other than the viewer, keep the response open this long (with
   * `keepAlive` every 15 s, `ui-hold.ts`) and stream the decision when it comes; then end it with `finish`
   * (`awaitingOthers` in its metadata) for the client to resume. 0 or unset: end at once.
   */
  holdForDecisionMs?: number;
  /**
   * With no `messageId` and no turn running: replay the last turn if it
   * ended at most this long ago (a client whose stream broke near the end
   * still reads how it ended).
   */
  endedWithinMs?: number;
}

/**
 * Sends the turn's chunks through `write` until its `finish` chunk (or an
 * `error` chunk when a retried model call replaced text already sent), or
 * until `signal` aborts. Resolves false when no such turn runs (nothing sent).
 */
export async function followTurnAsUi(
  client: AgentClient,
  conversationId: string,
  target: UiTurnTarget,
  signal: AbortSignal,
  write: (chunk: UiChunk) => void,
  keepAlive: () => void = () => undefined,
): Promise<boolean> {
  const watch = await TurnWatch.open(client, conversationId);
  const sleep = () => watch.sleep(POLL_MS, signal);
  try {
    const reader = new TurnReader(client, conversationId, watch.view, signal, target.viewer);
    let firstSeq: number | undefined;
    let messageId = target.messageId;
    for (;;) {
      if (signal.aborted) return true;
      const state = await followedState(client, conversationId, signal);
      firstSeq = turnStart(state, messageId);
      if (firstSeq !== undefined) break;
      if (messageId === undefined) {
        const last =
          target.endedWithinMs === undefined ? undefined : await endedRecently(client, state, target.endedWithinMs);
        if (!last && target.continuing) {
          // The decisions have nothing to continue: an error ends the client's automatic send (it would only repeat).
          write({
            type: 'error',
            errorText: `Nothing was decided: no turn of conversation ${conversationId} waits now (its calls were decided already, or timed out). Reload the chat.`,
          });
          return true;
        }
        if (!last) return false;
        [firstSeq, messageId] = [last.firstSeq, last.messageId];
        break;
      }
      await sleep();
    }
    const emitter = new UiStreamEmitter(write);
    const hold: Hold | undefined = holdsFor(target.holdForDecisionMs, keepAlive);
    if (target.continuing) {
      reader.asked(target.continuing.callKeys ?? []);
      const facts = await reader.read(firstSeq, messageId);
      // What became of the calls decided here is not in the client's message yet, even when already known; nor is
      // anything after their step (an answer sent again, after the turn went on).
      const decidedHere = new Set(target.continuing.callKeys ?? []);
      const holding = facts.steps.map((s) => [...s.calls, ...(s.below ?? [])].some((c) => decidedHere.has(c.callKey)));
      const step = holding.lastIndexOf(true);
      const steps = step < 0 ? facts.steps : facts.steps.slice(0, step + 1);
      const shown = projectTurn({ ...facts, steps, end: undefined }).filter(
        (i) => !/\/(decided|output)$/.test(i.key) || !decidedHere.has(i.key.slice(0, i.key.lastIndexOf('/'))),
      );
      emitter.baseline(shown);
      for (const chunk of await target.continuing.prepare()) write(chunk);
    }
    // A streamed piece wakes the loop: its text is in the watch, so the state is queried again only once per poll
    // (and at once on the first pass, after any decisions of a continuation were sent).
    for (let maxAgeMs = 0; !signal.aborted; maxAgeMs = POLL_MS) {
      const read = await reader.read(firstSeq, messageId, undefined, maxAgeMs);
      const facts = hold ? hold.shape(read, reader.viewerMayDecide()) : read;
      const items = projectTurn(facts);
      if (emitter.update(items) === 'conflict') {
        write({
          type: 'error',
          errorText: 'The model call was retried and its text changed; reconnect to read the turn as it stands.',
        });
        return true;
      }
      if (items.some((i) => i.key === 'finish')) return true;
      await (hold?.holding ? watch.sleep(hold.pollMs, signal) : sleep());
    }
    return true;
  } finally {
    await watch.close();
  }
}

/** The last turn, when its last message was written at most `withinMs` ago. */
async function endedRecently(
  client: AgentClient,
  state: ConversationState,
  withinMs: number,
): Promise<{ firstSeq: number; messageId: string } | undefined> {
  const last = state.recentTurns[state.recentTurns.length - 1];
  if (last?.firstSeq === undefined || last.messageIds.length === 0) return undefined;
  const [end] = await client.transcriptPage(state.conversationId, state.messageCount - 2, 1);
  if (!end || Date.now() - end.createdAt.getTime() > withinMs) return undefined;
  return { firstSeq: last.firstSeq, messageId: last.messageIds[0] };
}

/** The first seq of the turn that takes `messageId` (running or ended), else of the running turn. */
function turnStart(state: ConversationState, messageId: string | undefined): number | undefined {
  const current = state.currentTurn;
  if (current && (messageId === undefined || current.messageIds.includes(messageId))) return current.firstSeq;
  if (messageId === undefined) return undefined;
  return state.recentTurns.find((t) => t.messageIds.includes(messageId))?.firstSeq;
}

/**
 * Reads a turn's facts, keeping what does not change (stored responses, written messages); shared by both of the API's
 * streams.
 */
export class TurnReader {
  private readonly responses = new Map<string, AssistantMessage>();
  private readonly written = new Map<number, string>();
  /** Calls seen waiting for a person: their approval request stays in the stream once shown. */
  private readonly askedFor = new Set<string>();
  /**
   * Who sent the requests of the calls seen waiting (four eyes) and the approval policy's rule each waits under, as last
   * seen (its approvals so far change while it waits).
   */
  private readonly asks = new Map<string, AskedCall>();
  /** The turn's calls whose recorded decisions were read, and those decisions (a call decided before this stream). */
  private readonly checked = new Set<string>();
  private readonly recorded = new Map<string, CallDecisionRecord>();
  private readonly below: BelowCalls;
  /** The state of the last read, and when it was queried. */
  private last: { state: ConversationState; at: number } | undefined;

  constructor(
    private readonly client: AgentClient,
    private readonly conversationId: string,
    private readonly view: StreamView,
    /** The stream's end: until then, a worker outage is waited out ({@link followedState}). */
    private readonly signal: AbortSignal,
    /** Who reads the stream (what each approval request says to them); unset: no one in particular. */
    private readonly viewer?: ChatViewer,
  ) {
    const v = viewer;
    this.below = new BelowCalls(
      client,
      v &&
        ((call) =>
          approvalAsk(v, {
            requestedBy: call.requestedBy,
            ...(call.policy ? { policy: call.policy } : {}),
            below: call,
          })),
    );
  }

  /** Treats these calls as seen waiting (a continuation's decisions name them): their decision shows. */
  asked(callKeys: readonly string[]): void {
    for (const key of callKeys) this.askedFor.add(key);
  }

  /** Whether the viewer may decide any call waiting in the state last read (here or below). */
  viewerMayDecide(): boolean {
    const state = this.last?.state;
    const v = this.viewer;
    if (!state || !v) return true;
    return [...state.pendingApprovals, ...(state.waitingBelow ?? []).map((b) => ({ ...b, below: b }))].some(
      (call) => approvalAsk(v, call).descriptor.decide.length > 0,
    );
  }

  /**
   * The facts of the turn from `firstSeq` (that takes `messageId`, when
   * given), from `state` when given; else from the workflow's state as last
   * queried when that was less than `maxAgeMs` ago (live text comes from the
   * watch, not the state), else queried now.
   */
  async read(
    firstSeq: number,
    messageId: string | undefined,
    given?: ConversationState,
    maxAgeMs = 0,
  ): Promise<TurnFacts> {
    const fresh =
      given ??
      (this.last && Date.now() - this.last.at < maxAgeMs
        ? undefined
        : await followedState(this.client, this.conversationId, this.signal));
    if (fresh) this.last = { state: fresh, at: Date.now() };
    const state = this.last!.state;
    // A superseded turn's record shares its firstSeq with the turn that regenerated it: it is not this turn's.
    const record = state.recentTurns.find(
      (t) =>
        t.firstSeq === firstSeq &&
        (messageId === undefined ? t.supersededBy === undefined : t.messageIds.includes(messageId)),
    );
    // The turn's messages: from its first, up to the first of a turn after it (one may have begun since it ended).
    const later = [state.currentTurn?.firstSeq, ...state.recentTurns.map((t) => t.firstSeq)].filter(
      (seq): seq is number => seq !== undefined && seq > firstSeq,
    );
    const upTo = Math.min(Number.POSITIVE_INFINITY, ...later);
    const metas = state.messages.filter((m) => m.seq >= firstSeq && m.seq < upTo);
    const keys = metas.flatMap((m) => (m.responseKey && !this.responses.has(m.responseKey) ? [m.responseKey] : []));
    for (const [key, message] of await this.client.modelResponses(keys)) this.responses.set(key, message);
    await this.readWritten(metas);
    await this.readDecisions(metas, state);
    for (const p of state.pendingApprovals) {
      this.askedFor.add(p.callKey);
      this.asks.set(p.callKey, { requestedBy: p.requestedBy, ...(p.policy ? { policy: p.policy } : {}) });
    }
    const steps = this.steps(metas, state, firstSeq);
    // Calls waiting below hang on the step whose calls are open (the calls running their agents).
    const openKeys = new Set((state.openCalls ?? []).map((c) => c.callKey));
    const openStep = steps.find((s) => s.calls.some((c) => openKeys.has(c.callKey))) ?? steps[steps.length - 1];
    // New calls below are taken while the turn runs; those seen are settled on every read, the last one too (the
    // turn may have ended between two reads, right after the call below was decided).
    await this.below.update(state, state.currentTurn?.firstSeq === firstSeq ? openStep?.responseKey : undefined);
    for (const step of steps) {
      const below = this.below.facts(step.responseKey);
      if (below.length > 0) step.below = below;
    }
    const waiting =
      this.below.waiting(state) ||
      (state.pendingApprovals.length > 0 &&
        (state.openCalls ?? []).every((c) => c.outcome || this.askedFor.has(c.callKey)));
    const end: TurnFacts['end'] =
      record && this.allWritten(metas) ? { record } : !record && waiting ? { waiting: true } : undefined;
    return { messageId: `turn-${firstSeq}`, steps, ...(end ? { end } : {}) };
  }

  /**
   * The decisions recorded on the turn's calls not checked yet: a call decided before this stream opened waited too,
   * and shows how it was decided.
   */
  private async readDecisions(metas: readonly MessageMeta[], state: ConversationState): Promise<void> {
    const keys = metas.flatMap((m) =>
      (this.responses.get(m.responseKey ?? '')?.tool_calls ?? []).map((_, index) =>
        callInstanceKey(this.conversationId, m.seq, index, state.regenerations),
      ),
    );
    const unchecked = keys.filter((k) => !this.checked.has(k));
    if (unchecked.length === 0) return;
    const found = await this.client.callDecisions(this.conversationId, unchecked).catch(() => undefined);
    if (!found) return; // read again next time
    for (const key of unchecked) this.checked.add(key);
    for (const [key, record] of found) {
      this.askedFor.add(key);
      this.recorded.set(key, record);
    }
  }

  /** The tool messages of the turn, once written (read in pages after the last one read). */
  private async readWritten(metas: readonly MessageMeta[]): Promise<void> {
    const missing = metas.filter((m) => m.role === 'tool' && !this.written.has(m.seq));
    if (missing.length === 0) return;
    const page = await this.client.transcriptPage(
      this.conversationId,
      missing[0].seq - 1,
      metas[metas.length - 1].seq - missing[0].seq + 1,
    );
    for (const m of page) if (m.message.role === 'tool') this.written.set(m.seq, m.message.content);
  }

  private allWritten(metas: readonly MessageMeta[]): boolean {
    return metas.every((m) => m.role !== 'tool' || this.written.has(m.seq));
  }

  private steps(metas: readonly MessageMeta[], state: ConversationState, firstSeq: number): StepFacts[] {
    const steps: StepFacts[] = [];
    const open = new Map((state.openCalls ?? []).map((c) => [c.callKey, c]));
    const pending = new Set(state.pendingApprovals.map((p) => p.callKey));
    for (const [i, meta] of metas.entries()) {
      if (meta.role !== 'assistant' || !meta.responseKey) continue;
      const body = this.responses.get(meta.responseKey);
      if (!body) break; // not readable yet: the steps after it wait
      // The tool messages answering its calls follow it, in call order.
      const answers = metas.slice(i + 1).filter((m) => m.role === 'tool');
      const calls: CallFacts[] = (body.tool_calls ?? []).map((call, index) => {
        const callKey = callInstanceKey(this.conversationId, meta.seq, index, state.regenerations);
        const answer = answers.find((m) => m.toolCallId === call.id);
        const text = answer ? this.written.get(answer.seq) : undefined;
        const settled = open.get(callKey)?.outcome;
        let output =
          text !== undefined ? callOutputOf(text) : settled ? callOutputOf(settled.content, settled.kind) : undefined;
        if (answer) answers.splice(answers.indexOf(answer), 1);
        const asked = this.askedFor.has(callKey);
        // A call that waited and no longer does was decided: how shows before its output (the approval response).
        const inferred = asked && !pending.has(callKey) ? decisionOf(output, open.has(callKey) && !settled) : undefined;
        const record = pending.has(callKey) ? undefined : this.recorded.get(callKey);
        const known = record ? { decided: decidedAs(record) } : inferred;
        if (inferred?.output) output = inferred.output;
        const v = this.viewer;
        return {
          callKey,
          toolCallId: call.id,
          assistantSeq: meta.seq,
          name: call.function.name,
          input: parseJsonOrText(call.function.arguments),
          approvalRequested: asked,
          ...(asked && v ? { ask: approvalAsk(v, this.asks.get(callKey) ?? { requestedBy: [] }) } : {}),
          ...(known ? { decided: known.decided } : {}),
          ...(output ? { output } : {}),
        };
      });
      steps.push({
        responseKey: meta.responseKey,
        text: body.content ?? '',
        ...(body.reasoning_content ? { reasoning: body.reasoning_content } : {}),
        stored: true,
        calls,
      });
    }
    const known = new Set(state.messages.flatMap((m) => (m.responseKey ? [m.responseKey] : [])));
    // The model call running now: its text as streamed, when its beginning was seen (else it shows once stored).
    const live = this.view.all().filter((r) => !known.has(r.responseKey) && r.text !== '' && r.ok !== false);
    const last = live[live.length - 1];
    if (last && state.currentTurn?.firstSeq === firstSeq)
      steps.push({ responseKey: last.responseKey, text: last.text, stored: false, calls: [] });
    return steps;
  }
}
