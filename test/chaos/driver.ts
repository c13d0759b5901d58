/**
 * Plays the chaos run's conversations through the project's client: sends
 * each turn's message, watches the state, and acts on calls waiting for
 * approval (approve, reject, decide twice, cancel, interrupt, or let them
 * time out). Every client call is retried with backoff, since the Temporal
 * server may be restarting and workers may be down.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { signDecision, type DecisionKey } from '../../src/common/decision-signing';
import type { ApprovalDecision } from '../../src/contract';
import type { AgentClient, DecisionInput } from '../../src/client/client';
import { USER_MESSAGE_MAX_BYTES } from '../../src/contract';
import type { ConversationInput, ConversationState, PendingApproval } from '../../src/contract';

/**
 * A call waiting for a person: in the conversation itself, or inside an agent it called as a tool (decided in that
 * conversation).
 */
type Target = PendingApproval & { conversationId: string };
import { runCli } from '../support/cli';
import { forkConversation, resetConversation } from './going-back';
import type { ApprovalAction, ConversationPlan, DecisionPath, ResetKind } from './plan';
import { Rng } from './random';
import { retrying } from './retrying';
import type { ConversationRecord, DecisionSent, RunLog } from './run-log';

/** Where decisions go: the HTTP API and its approvers' tokens, the key it signs with, and the CLIs' settings. */
export interface DecisionRoutes {
  apiUrl: string;
  /** Bearer tokens of approvers; the API records their subjects. */
  approverTokens: string[];
  /** The token the project's CLI decides with. */
  cliToken: string;
  /** The key the API signs with, also held by a trusted service of the run (signed signals). */
  key: DecisionKey;
  /**
   * The standard variables that reach the run's Temporal server (TEMPORAL_ADDRESS, and TEMPORAL_TLS_* on the cluster).
   */
  temporalEnv: Record<string, string>;
  /** The Temporal CLI, for `temporal workflow signal`. */
  temporalCli: string;
}

const PATH_WEIGHTS: Record<DecisionPath, number> = {
  api: 50,
  cli: 6,
  signed_signal: 14,
  client_unsigned: 10,
  temporal_cli_unsigned: 10,
  raw_malformed: 10,
};
/** Who the key-holding service decides as. */
const SERVICE_IDENTITY = 'ops-bot@chaos.example';

/** What the driver needs. */
export interface DriverContext {
  client: AgentClient;
  runLog: RunLog;
  seed: string;
  /** Start options of every conversation. */
  input: ConversationInput;
  decisions: DecisionRoutes;
  /** Give up on a turn (the final checks will then find the conversation stuck) after this long. */
  turnTimeoutMs: number;
  /** How often the state is read while a turn runs. */
  pollMs: number;
  /** Aborted at the run's hard stop. */
  signal: AbortSignal;
  log: (line: string) => void;
}

const ACTION_WEIGHTS: Record<ApprovalAction, number> = {
  approve_all: 30,
  reject_all: 14,
  approve_one: 14,
  decide_twice: 10,
  cancel: 10,
  interrupt: 10,
  timeout: 12,
};

/** Plays one conversation's script to its end (or until it gives up). */
export async function playConversation(plan: ConversationPlan, ctx: DriverContext): Promise<void> {
  const record = ctx.runLog.conversations.get(plan.id)!;
  try {
    const player = new ConversationPlayer(plan, record, ctx);
    await player.play();
    await player.goBack();
  } catch (err) {
    record.inFlight = false;
    record.gaveUp ??= `driver error: ${(err as Error).message}`;
    ctx.log(`${plan.id}: ${record.gaveUp}`);
  }
}

class ConversationPlayer {
  private readonly rng: Rng;
  private plannedTurns: number;
  private messagesSent = 0;
  /** Calls already acted on (decided, or deliberately left to time out). */
  private readonly handledCalls = new Set<string>();
  /** Decisions to send after their calls' approval timeout (they must be refused, changing nothing). */
  private lateDecisions: { at: number; targets: Target[] }[] = [];

  /** Chooses decisions' paths, a stream of its own so the other choices stay what the seed made them. */
  private readonly paths: Rng;
  /** The coverage scenario's paths not used yet. */
  private readonly scriptedPaths: DecisionPath[];
  /** Resets and forks: a stream of its own, so the other choices stay what the seed made them. */
  private readonly goingBack: Rng;
  private resetDone = false;
  /** Forks made of this conversation, played after its own script. */
  private readonly forkIds: string[] = [];

  constructor(
    private readonly plan: ConversationPlan,
    private readonly record: ConversationRecord,
    private readonly ctx: DriverContext,
  ) {
    this.rng = new Rng(ctx.seed, 'driver', plan.index);
    this.paths = new Rng(ctx.seed, 'paths', plan.index);
    this.scriptedPaths = [...(plan.coverage?.paths ?? [])];
    this.plannedTurns = plan.turns;
    this.goingBack = new Rng(ctx.seed, 'going-back', plan.index);
  }

  /** Whether the planned reset is of one of `kinds` and due in the turn now. */
  private resetDue(...kinds: ResetKind[]): boolean {
    const planned = this.plan.reset;
    return !this.resetDone && !!planned && kinds.includes(planned.kind) && this.messagesSent >= planned.fromMessage;
  }

  /** Makes the planned reset now, as `kind`. */
  private async reset(kind: ResetKind): Promise<void> {
    this.resetDone = true;
    await resetConversation(this.ctx, this.plan.id, kind, this.goingBack);
  }

  /** Forks this conversation now (at its last message, or at a random seq or turn); the fork is played later. */
  private async fork(atEnd: boolean, whileWaiting: boolean): Promise<void> {
    const forkId = `${this.plan.id}-f${this.forkIds.length + 1}`;
    const done = await forkConversation(this.ctx, this.plan.id, forkId, this.goingBack, { atEnd, whileWaiting });
    if (done) this.forkIds.push(forkId);
  }

  /**
   * Plays each fork made of this conversation: sends it 1 or 2 messages and
   * settles them like any conversation's (now and then forking it again).
   */
  private async playForks(): Promise<void> {
    const depth = (this.plan.id.match(/-f\d+/g) ?? []).length;
    for (const [k, forkId] of this.forkIds.entries()) {
      const copied = await retrying(this.ctx, () => this.ctx.client.transcript(forkId)).catch(() => []);
      const copiedMessageIds = copied.flatMap(({ message: m }) =>
        m.role === 'user' ? [/\((chaos-[^)]+-m\d+)\)/.exec(m.content)?.[1] ?? '?'] : [],
      );
      const plan: ConversationPlan = {
        index: 100_000 * (depth + 1) + this.plan.index * 10 + k,
        id: forkId,
        tag: this.plan.tag,
        turns: this.goingBack.int(1, 2),
        forkOf: this.plan.id,
        modelApi: this.plan.modelApi,
        ...(depth < 1 && this.goingBack.chance(0.3) ? { fork: 'after' as const } : {}),
      };
      this.ctx.runLog.addConversation(plan, copiedMessageIds);
      await playConversation(plan, this.ctx);
    }
  }

  /**
   * After a reset made once the script ended: waits until the conversation is
   * idle again (the new run may redo turns), approving what it asks for.
   */
  private async settleAfterReset(): Promise<void> {
    const deadline = Date.now() + this.ctx.turnTimeoutMs;
    while (Date.now() < deadline && !this.ctx.signal.aborted) {
      const state = await this.readState();
      if (state) {
        const waiting: Target[] = [
          ...state.pendingApprovals.map((p) => ({ ...p, conversationId: this.plan.id })),
          ...(state.waitingBelow ?? []),
        ];
        const fresh = waiting.filter((p) => !this.handledCalls.has(p.callKey));
        for (const p of fresh) this.handledCalls.add(p.callKey);
        if (fresh.length > 0) await this.decide({ decision: 'approve' }, fresh);
        else if (state.status === 'idle' && waiting.length === 0) return;
      }
      await sleep(this.ctx.pollMs, undefined, { signal: this.ctx.signal }).catch(() => undefined);
    }
  }

  /** At most this many messages per conversation, interrupts included. */
  private get maxMessages(): number {
    return this.plan.turns + (this.plan.coverage ? 4 : 2);
  }

  /** The conversation's start options: the run's, with its own continue-as-new threshold and model API. */
  private get input(): ConversationInput {
    const low = this.plan.continueAsNewAfterEvents;
    return {
      ...this.ctx.input,
      // Named even for Chat Completions, so the split holds whatever API the workers default to.
      model: { ...this.ctx.input.model, api: this.plan.modelApi },
      ...(low ? { continueAsNewAfterEvents: low } : {}),
      ...(this.plan.agent ? { agent: this.plan.agent } : {}),
      ...(this.plan.coverage?.approvalTimeoutMs ? { approvalTimeoutMs: this.plan.coverage.approvalTimeoutMs } : {}),
    };
  }

  async play(): Promise<void> {
    if (this.plan.continueAsNewAfterEvents) this.ctx.runLog.faults.low_continue_as_new++;
    if (this.plan.userMessage === 'over_limit') await this.sendOverLimit();
    while (this.messagesSent < this.plannedTurns && !this.ctx.signal.aborted) {
      let current = await this.sendMessage();
      this.record.inFlight = true;
      // A coverage conversation's turns are left alone until its scenario has played.
      const coveragePending =
        this.plan.coverage &&
        (this.messagesSent === 1 || (this.plan.coverage.firstAction && !this.plan.coverageActionDone));
      // A scenario's cancel or interrupt that found nothing waiting in its first turn (its call timed out while a
      // worker was down)
      // is sent into a later turn while it runs, so the fault is still injected.
      const firstAction = this.plan.coverage?.firstAction;
      const fallback =
        this.messagesSent > 1 &&
        !this.plan.coverageActionDone &&
        (firstAction === 'cancel' || firstAction === 'interrupt')
          ? firstAction
          : undefined;
      const spontaneous =
        fallback ?? (coveragePending ? 'none' : this.rng.weighted({ none: 78, cancel: 12, interrupt: 10 }));
      const spontaneousAt = Date.now() + (fallback ? 100 : this.rng.int(200, 2_500));
      let spontaneousDone = spontaneous === 'none';
      let resetAt = this.resetDue('mid_turn', 'anywhere') ? Date.now() + this.goingBack.int(300, 2_500) : Infinity;
      const deadline = Date.now() + this.ctx.turnTimeoutMs;
      for (;;) {
        if (this.ctx.signal.aborted) return;
        if (Date.now() > deadline) {
          this.record.gaveUp = `the turn for message ${current} did not finish within ${this.ctx.turnTimeoutMs} ms`;
          this.record.inFlight = false;
          this.ctx.log(`${this.plan.id}: ${this.record.gaveUp}`);
          return;
        }
        await this.sendDueLateDecisions();
        if (Date.now() >= resetAt) {
          resetAt = Infinity;
          await this.reset(this.plan.reset!.kind);
        }
        const state = await this.readState();
        if (state) {
          if (state.recentTurns.some((t) => t.messageIds.includes(current))) break;
          // By call key: providers reuse tool-call ids, so a new call may wait under an id already handled.
          // Its own calls, and those waiting inside the agents it called as tools: one inbox for every level.
          const waiting: Target[] = [
            ...state.pendingApprovals.map((p) => ({ ...p, conversationId: this.plan.id })),
            ...(state.waitingBelow ?? []),
          ];
          const fresh = waiting.filter((p) => !this.handledCalls.has(p.callKey));
          if (fresh.length > 0) {
            // Going back while calls wait for a person: the new run waits on them too, and they are decided there.
            if (this.resetDue('waiting')) await this.reset('waiting');
            if (this.plan.fork === 'while_waiting' && this.forkIds.length === 0) await this.fork(true, true);
            const coverage =
              this.plan.coverage?.firstAction && !this.plan.coverageActionDone
                ? this.plan.coverage.firstAction
                : undefined;
            const action = coverage ?? this.rng.weighted(ACTION_WEIGHTS);
            this.plan.coverageActionDone ||= coverage !== undefined;
            for (const p of fresh) this.handledCalls.add(p.callKey);
            current = (await this.act(action, fresh, coverage !== undefined)) ?? current;
            spontaneousDone = true;
          } else if (
            !spontaneousDone &&
            Date.now() >= spontaneousAt &&
            state.status === 'running' &&
            waiting.length === 0
          ) {
            spontaneousDone = true;
            this.plan.coverageActionDone ||= fallback !== undefined;
            current = (await this.act(spontaneous as 'cancel' | 'interrupt', [])) ?? current;
          }
        }
        await sleep(this.ctx.pollMs, undefined, { signal: this.ctx.signal }).catch(() => undefined);
      }
      this.record.inFlight = false;
      this.record.turnsFinished++;
      if (this.resetDue('last')) await this.reset('last');
      while (this.lateDecisions.length > 0 && !this.ctx.signal.aborted) {
        await sleep(Math.max(0, Math.min(...this.lateDecisions.map((d) => d.at)) - Date.now()), undefined, {
          signal: this.ctx.signal,
        }).catch(() => undefined);
        await this.sendDueLateDecisions();
      }
      const coverageMissing = this.plan.coverage?.firstAction && !this.plan.coverageActionDone;
      if (coverageMissing && this.messagesSent >= this.plannedTurns && this.messagesSent < this.maxMessages)
        this.plannedTurns++;
    }
  }

  /**
   * After the script: the planned reset not made yet (its moment never came:
   * the turn ended first, or no call waited), then the planned fork, then the
   * forks' own scripts.
   */
  async goBack(): Promise<void> {
    if (this.ctx.signal.aborted || this.record.gaveUp) return;
    if (this.plan.reset && !this.resetDone) {
      await this.reset(this.plan.reset.kind === 'waiting' ? 'last' : this.plan.reset.kind);
      await this.settleAfterReset();
    }
    if (this.plan.fork && this.forkIds.length === 0) await this.fork(false, false);
    await this.playForks();
  }

  private async readState(): Promise<ConversationState | undefined> {
    try {
      return await retrying(this.ctx, () => this.ctx.client.state(this.plan.id), 15_000);
    } catch {
      return undefined; // keep polling until the turn deadline
    }
  }

  /**
   * Sends a message over the size limit, as a person pasting a document
   * would: the client must refuse it, saying why, and send nothing.
   */
  private async sendOverLimit(): Promise<void> {
    const messageId = `${this.plan.id}-over`;
    const text = padded(
      `${this.plan.tag} message (${messageId}): please read this export. `,
      USER_MESSAGE_MAX_BYTES + this.rng.int(1, 64 * 1024),
    );
    const sent = {
      conversationId: this.plan.id,
      messageId,
      bytes: Buffer.byteLength(text),
      overLimit: true,
      refusal: undefined as string | undefined,
    };
    this.ctx.runLog.sizedMessages.push(sent);
    this.ctx.runLog.faults.user_message_over_limit++;
    try {
      await retrying(
        this.ctx,
        () => this.ctx.client.sendMessage(this.plan.id, text, { input: this.input, messageId }),
        30_000,
      );
      // Accepted: the checks count it; follow its turn like any other.
      this.record.messageIds.push(messageId);
    } catch (err) {
      sent.refusal = `${(err as Error).name}: ${(err as Error).message}`;
    }
  }

  /** Sends the next message; returns its id. */
  private async sendMessage(): Promise<string> {
    this.messagesSent++;
    const messageId = `${this.plan.id}-m${this.messagesSent}`;
    let text = `${this.plan.tag} message ${this.messagesSent} (${messageId}): please look into my orders.`;
    if (this.plan.userMessage === 'near_limit' && this.messagesSent === 1) {
      // Just under the limit: it must be accepted and stored whole.
      text = padded(`${text} The export follows. `, USER_MESSAGE_MAX_BYTES - this.rng.int(0, 4 * 1024));
      this.ctx.runLog.sizedMessages.push({
        conversationId: this.plan.id,
        messageId,
        bytes: Buffer.byteLength(text),
        overLimit: false,
      });
      this.ctx.runLog.faults.user_message_near_limit++;
    }
    try {
      await retrying(
        this.ctx,
        () => this.ctx.client.sendMessage(this.plan.id, text, { input: this.input, messageId }),
        90_000,
      );
      this.record.messageIds.push(messageId);
    } catch (err) {
      this.record.unacknowledgedMessageIds.push(messageId);
      throw new Error(`could not send message ${messageId}: ${(err as Error).message}`, { cause: err });
    }
    return messageId;
  }

  /**
   * Performs an action on the turn; returns the id of a message it sent (an interrupt), which the turn now waits for.
   */
  private async act(action: ApprovalAction, pending: Target[], coverage = false): Promise<string | undefined> {
    const { faults } = this.ctx.runLog;
    switch (action) {
      case 'approve_all':
        await this.decide({ decision: 'approve' }, pending);
        return undefined;
      case 'reject_all':
        faults.reject++;
        await this.decide({ decision: 'reject', reason: 'chaos: rejected' }, pending);
        return undefined;
      case 'approve_one': {
        const [first, ...rest] = pending;
        await this.decide({ decision: 'approve' }, [first]);
        if (rest.length > 0) {
          faults.reject++;
          await this.decide({ decision: 'reject', reason: 'chaos: only the first one' }, rest);
        }
        return undefined;
      }
      case 'decide_twice': {
        // One signed decision sent twice, as a retrying sender would: the second must change nothing.
        const [first, ...rest] = pending;
        const decision = this.rng.chance(0.5) ? 'approve' : 'reject';
        if (decision === 'reject') faults.reject++;
        const twice = this.signed(
          { decision, toolCallId: first.toolCallId, callKey: first.callKey },
          first.conversationId,
        );
        await this.signal(twice, [first], 'signed_signal');
        if (await this.signal(twice, [first], 'signed_signal', true)) faults.duplicate_decision++;
        if (rest.length > 0) await this.decide({ decision: 'approve' }, rest);
        return undefined;
      }
      case 'timeout': {
        faults.approval_timeout++;
        // Now and then a person decides too late: the decision must be refused and change nothing.
        if (coverage || this.rng.chance(0.4)) {
          const deadline =
            Math.max(...pending.map((p) => Date.parse(p.requestedAt))) + (this.input.approvalTimeoutMs ?? 0);
          this.lateDecisions.push({ at: deadline + this.rng.int(500, 1_500), targets: pending });
        }
        return undefined;
      }
      case 'cancel':
        faults.cancel++;
        await this.intervene('cancel', () => this.ctx.client.cancelTurn(this.plan.id, 'chaos'));
        return undefined;
      case 'interrupt': {
        if (this.messagesSent >= this.maxMessages) return this.act('cancel', pending);
        faults.interrupt++;
        if (this.messagesSent >= this.plannedTurns) this.plannedTurns++;
        const entry = {
          conversationId: this.plan.id,
          kind: 'interrupt' as const,
          sentAt: Date.now(),
          ackAt: undefined as number | undefined,
        };
        this.ctx.runLog.interventions.push(entry);
        const messageId = await this.sendMessage();
        entry.ackAt = Date.now();
        return messageId;
      }
    }
  }

  private async sendDueLateDecisions(): Promise<void> {
    const due = this.lateDecisions.filter((d) => d.at <= Date.now());
    this.lateDecisions = this.lateDecisions.filter((d) => d.at > Date.now());
    for (const late of due) {
      const [first] = late.targets;
      // Signed, so only its lateness can make the conversation refuse it.
      const decision = this.signed(
        { decision: 'approve', toolCallId: first.toolCallId, callKey: first.callKey },
        first.conversationId,
        `${SERVICE_IDENTITY} (late)`,
      );
      if (await this.signal(decision, [first], 'signed_signal')) this.ctx.runLog.faults.late_decision++;
    }
  }

  /**
   * Decides `targets` by a path chosen at random (or the coverage scenario's
   * next): through the API or the CLI, as a signed signal, or first around
   * the API, unsigned (refused by the workers), and then through the API as
   * the person would after seeing nothing happen. Returns whether a decision
   * was acknowledged.
   */
  private async decide(decision: Pick<DecisionInput, 'decision' | 'reason'>, all: Target[]): Promise<boolean> {
    const path = this.scriptedPaths.shift() ?? this.paths.weighted(PATH_WEIGHTS);
    // Each conversation's calls are decided in it (a sub-agent's in its own conversation).
    let acknowledged = false;
    for (const conversationId of new Set(all.map((t) => t.conversationId))) {
      acknowledged =
        (await this.decideIn(
          path,
          decision,
          all.filter((t) => t.conversationId === conversationId),
        )) || acknowledged;
    }
    return acknowledged;
  }

  private async decideIn(
    path: DecisionPath,
    decision: Pick<DecisionInput, 'decision' | 'reason'>,
    targets: Target[],
  ): Promise<boolean> {
    switch (path) {
      case 'api':
        return this.throughApi(decision, targets);
      case 'cli':
        return this.throughCli(decision, targets);
      case 'signed_signal': {
        let acknowledged = false;
        for (const t of targets)
          acknowledged =
            (await this.signal(
              this.signed({ ...decision, toolCallId: t.toolCallId, callKey: t.callKey }, t.conversationId),
              [t],
              path,
            )) || acknowledged;
        return acknowledged;
      }
      default:
        await this.aroundTheApi(path, decision, targets);
        return this.throughApi(decision, targets);
    }
  }

  /** `decision` completed and signed with the run's key, as the API (or a service holding its key) would. */
  private signed(
    decision: Omit<DecisionInput, 'decisionId' | 'decidedBy' | 'sentAt'>,
    conversationId: string,
    decidedBy = SERVICE_IDENTITY,
  ): ApprovalDecision {
    const full: ApprovalDecision = {
      ...decision,
      decisionId: randomUUID(),
      decidedBy,
      sentAt: new Date().toISOString(),
    };
    return { ...full, signature: signDecision(this.ctx.decisions.key, conversationId, full) };
  }

  /** The record of a decision about to be sent. */
  private sending(
    decisionId: string,
    decision: DecisionInput['decision'],
    targets: Target[],
    path: DecisionPath,
    extra: Partial<DecisionSent> = {},
  ): DecisionSent {
    const sent: DecisionSent = {
      conversationId: targets[0]?.conversationId ?? this.plan.id,
      decisionId,
      decision,
      targets: targets.map((t) => ({
        toolCallId: t.toolCallId,
        callKey: t.callKey,
        requestedAt: Date.parse(t.requestedAt),
      })),
      sentAt: Date.now(),
      ackAt: undefined,
      duplicate: false,
      path,
      ...extra,
    };
    this.ctx.runLog.decisions.push(sent);
    return sent;
  }

  /** Sends a decision as a signal; returns whether the server acknowledged it. */
  private async signal(
    decision: ApprovalDecision,
    targets: Target[],
    path: DecisionPath,
    duplicate = false,
  ): Promise<boolean> {
    const sent = this.sending(decision.decisionId, decision.decision, targets, path, {
      toolCallId: decision.toolCallId,
      duplicate,
    });
    this.ctx.runLog.decisionPaths[path]++;
    try {
      await retrying(this.ctx, () => this.ctx.client.signalDecision(sent.conversationId, decision));
      sent.ackAt = Date.now();
      return true;
    } catch (err) {
      this.ctx.log(`${this.plan.id}: decision ${decision.decisionId} not acknowledged: ${(err as Error).message}`);
      return false;
    }
  }

  /** POSTs the decision of `targets` (by their keys) to the HTTP API as an approver; records the decisions it made. */
  private async throughApi(decision: Pick<DecisionInput, 'decision' | 'reason'>, targets: Target[]): Promise<boolean> {
    const { apiUrl, approverTokens } = this.ctx.decisions;
    this.ctx.runLog.decisionPaths.api += targets.length;
    const token = this.paths.pick(approverTokens);
    const body = JSON.stringify({
      decision: decision.decision,
      callKeys: targets.map((t) => t.callKey),
      ...(decision.reason ? { reason: decision.reason } : {}),
    });
    const sentAt = Date.now();
    const deadline = sentAt + 60_000;
    let delay = 200;
    for (;;) {
      let status: number;
      let answer:
        | {
            results?: { decisionId: string; toolCallId: string; callKey: string }[];
            error?: { code: string; message: string };
          }
        | undefined;
      try {
        const response = await fetch(
          `${apiUrl}/v1/conversations/${encodeURIComponent(targets[0].conversationId)}/decisions`,
          {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body,
            signal: AbortSignal.any([this.ctx.signal, AbortSignal.timeout(20_000)]),
          },
        );
        status = response.status;
        answer = (await response.json().catch(() => undefined)) as typeof answer;
      } catch {
        status = 0; // no answer (the run's hard stop, or a timeout)
      }
      if (status === 200 || status === 202) {
        this.recordDecided(decision.decision, targets, answer?.results ?? [], 'api', sentAt);
        return true;
      }
      if (status === 409 && answer?.error?.code === 'decision_refused') {
        this.ctx.runLog.apiRefusals++; // the calls no longer wait (timed out, cancelled, decided): nothing was decided
        return false;
      }
      if ((status === 0 || status >= 500) && Date.now() + delay < deadline && !this.ctx.signal.aborted) {
        this.ctx.runLog.clientRetries++;
        await sleep(delay, undefined, { signal: this.ctx.signal }).catch(() => undefined);
        delay = Math.min(Math.round(delay * 1.6), 3_000);
        continue;
      }
      if (!this.ctx.signal.aborted)
        this.ctx.runLog.apiErrors.push(
          `${this.plan.id}: POST decisions answered ${status}: ${JSON.stringify(answer)?.slice(0, 300)}`,
        );
      return false;
    }
  }

  /**
   * Decides each of `targets` with the project's CLI (`npm run cli -- approve <id> --key <callKey> --json`) through the
   * API.
   */
  private async throughCli(decision: Pick<DecisionInput, 'decision' | 'reason'>, targets: Target[]): Promise<boolean> {
    const { apiUrl, cliToken, temporalEnv } = this.ctx.decisions;
    const env = { AGENT_API_URL: apiUrl, AGENT_API_TOKEN: cliToken, ...temporalEnv };
    let acknowledged = false;
    for (const target of targets) {
      const args = [
        decision.decision,
        target.conversationId,
        '--key',
        target.callKey,
        '--json',
        ...(decision.reason ? ['--reason', decision.reason] : []),
      ];
      this.ctx.runLog.decisionPaths.cli++;
      const sentAt = Date.now();
      for (let attempt = 1; ; attempt++) {
        try {
          const { stdout } = await runCli(args, env);
          const printed = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
            calls: { decisionId: string; toolCallId: string; callKey: string }[];
          };
          this.recordDecided(decision.decision, [target], printed.calls, 'cli', sentAt);
          acknowledged = true;
        } catch (err) {
          const stderr = String((err as { stderr?: unknown }).stderr ?? (err as Error).message);
          if (stderr.includes('(decision_refused)')) this.ctx.runLog.apiRefusals++;
          else if (attempt < 3 && !this.ctx.signal.aborted) continue;
          else
            this.ctx.runLog.apiErrors.push(
              `${this.plan.id}: the CLI failed to ${decision.decision} ${target.callKey}: ${stderr.trim().split('\n').at(-1)?.slice(0, 300)}`,
            );
        }
        break;
      }
    }
    return acknowledged;
  }

  /** Records the decisions the API made (one per call), acknowledged now. */
  private recordDecided(
    decision: DecisionInput['decision'],
    targets: Target[],
    results: { decisionId?: string; toolCallId: string; callKey?: string }[],
    path: DecisionPath,
    sentAt: number,
  ): void {
    for (const r of results) {
      const target = targets.find((t) => t.callKey === r.callKey);
      if (!r.decisionId || !target) {
        this.ctx.runLog.apiErrors.push(
          `${this.plan.id}: the ${path} answered a decision without its id or call: ${JSON.stringify(r).slice(0, 200)}`,
        );
        continue;
      }
      const sent = this.sending(r.decisionId, decision, [target], path, { toolCallId: r.toolCallId, sentAt });
      sent.ackAt = Date.now();
    }
  }

  /** Sends the decision around the API, unsigned (or not a decision at all): the workers must refuse it. */
  private async aroundTheApi(
    path: DecisionPath,
    decision: Pick<DecisionInput, 'decision' | 'reason'>,
    targets: Target[],
  ): Promise<void> {
    const { faults } = this.ctx.runLog;
    const [first] = targets;
    const unsigned: ApprovalDecision = {
      decisionId: randomUUID(),
      decision: decision.decision,
      toolCallId: first.toolCallId,
      callKey: first.callKey,
      ...(decision.reason ? { reason: decision.reason } : {}),
      decidedBy: 'someone with namespace access',
      sentAt: new Date().toISOString(),
    };
    const sent = this.sending(unsigned.decisionId, decision.decision, [first], path, {
      toolCallId: first.toolCallId,
      unsigned: true,
    });
    this.ctx.runLog.decisionPaths[path]++;
    try {
      if (path === 'client_unsigned') {
        faults.unsigned_decision++;
        await retrying(this.ctx, () => this.ctx.client.signalDecision(first.conversationId, unsigned));
      } else if (path === 'temporal_cli_unsigned') {
        faults.unsigned_decision++;
        const { temporalCli, temporalEnv } = this.ctx.decisions;
        const args = [
          'workflow',
          'signal',
          '--workflow-id',
          first.conversationId,
          '--name',
          'decision',
          '--input',
          JSON.stringify(unsigned),
        ];
        // The address (and TLS, on the cluster) from the standard variables, as a team's CLI reads them.
        await retrying(this.ctx, () =>
          execFileAsync(temporalCli, args, { timeout: 20_000, env: { ...process.env, ...temporalEnv } }),
        );
      } else {
        faults.malformed_signal++;
        const malformed = this.paths.pick([
          { decision: 'maybe', toolCallId: first.toolCallId },
          { decisionId: 42 },
          'approve everything',
        ]);
        await retrying(this.ctx, () =>
          this.ctx.client.temporal.workflow.getHandle(first.conversationId).signal('decision', malformed),
        );
      }
      sent.ackAt = Date.now();
    } catch (err) {
      this.ctx.log(
        `${this.plan.id}: a decision around the API (${path}) was not acknowledged: ${(err as Error).message}`,
      );
    }
  }

  private async intervene(kind: 'cancel', send: () => Promise<void>): Promise<void> {
    const entry = { conversationId: this.plan.id, kind, sentAt: Date.now(), ackAt: undefined as number | undefined };
    this.ctx.runLog.interventions.push(entry);
    try {
      await retrying(this.ctx, send);
      entry.ackAt = Date.now();
    } catch (err) {
      this.ctx.log(`${this.plan.id}: ${kind} not acknowledged: ${(err as Error).message}`);
    }
  }
}

/** `start` followed by order lines, exactly `bytes` bytes of ASCII. */
function padded(start: string, bytes: number): string {
  const line = 'ord_chaos_2,cus_chaos,refund requested,2000000000; ';
  return (start + line.repeat(Math.ceil(bytes / line.length))).slice(0, bytes);
}

const execFileAsync = promisify(execFile);
