/**
 * Calls waiting below a turn, inside agents its calls run as tools (the
 * state's `waitingBelow`), as the chat shows them: each as a tool part of
 * the step whose calls run those agents, titled with the agents down to the
 * one asking, with its approval request; once it no longer waits, its
 * decision and its output, read from the conversation it waited in (its
 * transcript, else its open calls).
 */
import type { AgentClient } from '../client/client';
import type { ConversationState, PendingBelow } from '../contract';
import { parseCallInstanceKey } from '../core/effect-keys';
import { decidedAs, decisionOf } from './chat-approvals';
import type { ApprovalAsk, CallDecided } from './ui-approvals';
import { callOutputOf, type CallFacts, type CallOutput } from './ui-stream';

/** One call seen waiting below, and what is known of it since. */
interface SeenBelow {
  call: PendingBelow;
  /** The step (its response key) whose calls run the agent it waits in. */
  stepKey: string;
  decided?: CallDecided;
  output?: CallOutput;
}

/** The calls a turn's stream saw waiting below it. */
export class BelowCalls {
  private readonly seen = new Map<string, SeenBelow>();

  constructor(
    private readonly client: AgentClient,
    /** What the approval request of a call below says to the stream's reader. */
    private readonly askOf?: (call: PendingBelow) => ApprovalAsk,
  ) {}

  /**
   * Takes in the calls waiting below now (under `stepKey`, the step of the turn's open calls), and reads how those
   * that no longer wait were decided.
   */
  async update(state: ConversationState, stepKey: string | undefined): Promise<void> {
    const waiting = new Map((state.waitingBelow ?? []).map((b) => [b.callKey, b]));
    if (stepKey !== undefined)
      for (const [key, call] of waiting) if (!this.seen.has(key)) this.seen.set(key, { call, stepKey });
    for (const [key, seen] of this.seen) if (!waiting.has(key) && !seen.output) await this.settle(seen);
  }

  /** True while a call seen below still waits in `state`. */
  waiting(state: ConversationState): boolean {
    return (state.waitingBelow ?? []).some((b) => this.seen.has(b.callKey));
  }

  /** The calls seen below the step `stepKey`, as its tool parts. */
  facts(stepKey: string): CallFacts[] {
    return [...this.seen.values()]
      .filter((s) => s.stepKey === stepKey)
      .map(({ call, decided, output }) => {
        const ask = this.askOf?.(call);
        return {
          callKey: call.callKey,
          toolCallId: call.toolCallId,
          assistantSeq: parseCallInstanceKey(call.callKey)?.assistantSeq ?? 0,
          name: call.toolName,
          input: call.arguments,
          approvalRequested: true,
          ...(ask ? { ask } : {}),
          ...(decided ? { decided } : {}),
          ...(output ? { output } : {}),
          ...(call.agentPath.length > 0 ? { title: call.agentPath.join(' › ') } : {}),
          toolMetadata: { agentPath: call.agentPath, conversationId: call.conversationId },
        };
      });
  }

  /**
   * Reads how a call that no longer waits below was decided: the decision recorded in its conversation, and its
   * answer there (else its open call's outcome); with no decision recorded (a timeout), from its answer alone.
   */
  private async settle(seen: SeenBelow): Promise<void> {
    const { call } = seen;
    const record = (await this.client.callDecisions(call.conversationId, [call.callKey]).catch(() => undefined))?.get(
      call.callKey,
    );
    const seq = parseCallInstanceKey(call.callKey)?.assistantSeq;
    let output: CallOutput | undefined;
    let running = false;
    if (seq !== undefined) {
      const page = await this.client.transcriptPage(call.conversationId, seq, 100).catch(() => []);
      const answer = page.find((m) => m.message.role === 'tool' && m.message.tool_call_id === call.toolCallId);
      if (answer?.message.role === 'tool') output = callOutputOf(answer.message.content);
    }
    if (!output) {
      const state = await this.client.state(call.conversationId).catch(() => undefined);
      const open = state?.openCalls?.find((c) => c.callKey === call.callKey);
      if (open?.outcome) output = callOutputOf(open.outcome.content, open.outcome.kind);
      running = open !== undefined && !open.outcome;
    }
    const known = decisionOf(output, running);
    if (record) seen.decided = decidedAs(record);
    else if (known) seen.decided = known.decided;
    if (known?.output) seen.output = known.output;
  }
}
