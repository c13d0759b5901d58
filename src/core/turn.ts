/**
 * A turn, from the messages it takes to its record: what it does next
 * ({@link nextTurnStep}), what the model's answer and the batch's close
 * change, and how a stop or the end finishes it. Pure.
 */
import type { ModelCallInput, ModelCallResult, ToolDiscoveryResult } from '../contract/activities';
import { RECENT_TURNS_KEPT, TURN_INPUT_MAX_BYTES } from '../contract/limits';
import type { TurnRecord } from '../contract/turn-records';
import { withGuardrailResults } from '../contract/guardrail-results';
import { NOT_RUN_TOOL_LABEL } from '../contract/metrics';
import { handOff, takeHandoffs, withinAgentDepth } from './agents';
import { requestedCalls, ToolCallBatch } from './batch';
import { addSpend, budgetStop, spendScope } from './budget';
import { STOP_REASONS, type StoreEntry } from './edge';
import type { OutcomeKind } from './outcomes';
import { turnOrigin } from './origin';
import { extractedOf } from './agent-results';
import { supersedeStep } from './regenerate';
import { noTurn, type CoreState } from './state';
import { finishWith, record } from './turn-record';
import type { TurnStep } from './steps';
import { modelCallSummary, toolDiscoverySummary, whoDecided } from './summaries';
import { modelView, store } from './transcript';
import { approvalRequests, ruledRecords } from './views';
import { applyGrants } from './grants';
import { noteWaiting } from './turn-end-notice';

/** Takes every queued message into a new turn and stores them; false when none is queued (the conversation ends). */
export function takeTurn(s: CoreState): boolean {
  if (s.inbox.length === 0) return false;
  const taken = s.inbox.take(TURN_INPUT_MAX_BYTES);
  const requesters = [
    ...(s.input.calledBy?.requestedBy ?? []),
    ...taken.flatMap((m) => (m.sentBy === undefined ? [] : [m.sentBy])),
  ];
  s.turn = {
    ...noTurn(),
    active: true,
    messageIds: taken.map((m) => m.messageId),
    firstSeq: s.writes.nextSeq,
    requesters: [...new Set(requesters)],
  };
  s.kept.lastInput = { fromSeq: s.writes.nextSeq, toSeq: s.writes.nextSeq + taken.length };
  store(
    s,
    taken.map((m): StoreEntry => ({
      message: { role: 'user', content: m.text, ...(m.files ? { files: m.files } : {}) },
    })),
  );
  return true;
}

/** The turn's messages are stored and it starts. Returns true when it was stopped already (it starts cancelled). */
export function beginTurn(s: CoreState): boolean {
  s.kept.phase = 'running';
  s.kept.turns++;
  s.turn.stage = 'start';
  return s.stopReason !== undefined;
}

/** What the running turn does next. */
export function nextTurnStep(s: CoreState): TurnStep {
  const t = s.turn;
  if (t.end) {
    const record = t.end;
    t.end = undefined;
    t.stage = 'ended';
    return { kind: 'endTurn', record };
  }
  if (t.stage === 'start') {
    const supersede = supersedeStep(s);
    if (supersede) return supersede;
    t.stage = 'next';
    const servers = s.input.mcpServers ?? [];
    if (servers.length > 0 && t.toolset === undefined) {
      const input = { conversationId: s.id, servers, ...(s.input.tools ? { tools: s.input.tools } : {}) };
      return { kind: 'discoverTools', input, summary: toolDiscoverySummary(servers, s.kept.turns) };
    }
  }
  if (t.stage === 'answered') {
    const waiting = approvalRequests(s);
    const ruled = ruledRecords(s);
    noteWaiting(s, waiting);
    t.stage = 'calls';
    // Calls an approval policy's rule allowed or denied are recorded with the message that asked for them.
    if (ruled.length > 0) return { kind: 'write', waiting, ruled };
    if (waiting.length > 0) return { kind: 'write', waiting };
    // Calls that wait for an event: the message asking for them is stored first, so the transcript shows them.
    if (s.batch?.all().some((c) => c.wait !== undefined && c.phase !== 'settled')) return { kind: 'write', waiting };
  }
  if (t.stage === 'calls') {
    t.stage = 'running';
    return { kind: 'runCalls', calls: s.batch?.all() ?? [] };
  }
  if (t.stage !== 'next') throw new Error(`no step follows a turn at stage ${t.stage}`);
  const overBudget = budgetStop(s);
  if (overBudget) return nextTurnStep(finishWith(s, overBudget));
  t.stage = 'model';
  return {
    kind: 'callModel',
    request: modelRequest(s),
    summary: modelCallSummary(s.kept.turns, t.steps + 1, s.input.model?.model, s.kept.agent),
  };
}

/** The next model call's input: the transcript so far by reference, with the unwritten messages it writes first. */
export function modelRequest(s: CoreState): ModelCallInput {
  const t = s.turn;
  const append = s.writes.forModelCall();
  // The call writes a final answer itself, so the turn's end has nothing to write (one activity less per turn).
  t.answerAt = s.env.allows('final-answer-written-by-model-call') ? s.writes.nextSeq : undefined;
  return {
    conversationId: s.id,
    throughSeq: s.writes.nextSeq - 1,
    ...modelView(s),
    settings: s.input.model ?? {},
    tools: s.input.tools,
    toolChoice: t.steps >= s.limits.maxSteps ? 'none' : 'auto',
    ...(t.toolset ? { toolset: t.toolset } : {}),
    ...(append ? { append } : {}),
    ...(s.kept.agent !== undefined ? { agent: s.kept.agent } : {}),
    ...(s.input.output ? { output: s.input.output } : {}),
    ...(t.steps === 0 ? { turnFromSeq: t.firstSeq } : {}),
    ...(t.answerAt !== undefined ? { answerSeq: t.answerAt } : {}),
    ...spendScope(s),
    ...turnOrigin(s),
  };
}

/** The turn's MCP tools were listed and stored: its model and tool calls carry the reference. */
export function toolsDiscovered(s: CoreState, result: ToolDiscoveryResult): void {
  s.turn.toolset = result.toolset;
  for (const problem of result.skipped) s.env.log.warn(problem, { conversationId: s.id });
}

/** The MCP servers' tools could not be listed: the turn fails, before any model call, saying why. */
export function toolDiscoveryFailed(s: CoreState, error: string): void {
  finishWith(s, record(s, 'failed', { error: `Could not list the tools of the conversation's MCP servers: ${error}` }));
}

/**
 * The model call failed for good: the turn fails; or it was not made because
 * the budget it draws on (shared with the agents of the whole tree) is spent:
 * the turn ends as `budget_exceeded`, as before any model call.
 */
export function modelFailed(s: CoreState, error: string, overBudget = false): void {
  answerUnknown(s);
  if (overBudget) finishWith(s, record(s, 'budget_exceeded', { error }));
  else finishWith(s, record(s, 'failed', { error: `Model call failed: ${error}` }));
}

/**
 * The model answered (and wrote the messages it was given). Its answer is
 * stored by reference; its calls are pending from now on (whatever ends the
 * turn settles them), each with the effect key of its call instance; calls
 * asked for past maxSteps, or that cannot run, are settled at once as
 * `tool_failed`. The next step ends the turn or runs the calls.
 */
export function modelAnswered(s: CoreState, result: ModelCallResult): void {
  const t = s.turn;
  s.writes.modelCallAnswered();
  if (result.guardrails) t.guardrails = withGuardrailResults(t.guardrails, result.guardrails);
  const calls = result.message.tool_calls ?? [];
  const overLimit = t.steps >= s.limits.maxSteps && calls.length > 0;
  t.steps++;
  s.kept.steps++;
  if (result.usage) addSpend(s, result.usage, result.costUsd, result.message.name ?? s.kept.agent);
  // Summaries of earlier turns, written to fit the window, are the call's spend too (absent in older histories).
  if (result.summary) addSpend(s, result.summary.usage, result.summary.costUsd, result.message.name ?? s.kept.agent);
  const notRun = {
    reason: 'not_run_max_steps' as const,
    message: `The turn reached maxSteps (${s.limits.maxSteps}); the call was not run.`,
  };
  // A conversation that named no agent is with the worker's default agent, which names itself in its answers: from now
  // on it stays with that agent.
  if (result.message.name !== undefined && s.kept.agent === undefined) s.kept.agent = result.message.name;
  const seq = store(s, [{ message: result.message, ref: { kind: 'model_response', key: result.responseKey } }]);
  if (result.answerWritten && seq === t.answerAt) s.writes.writtenByModelCall(seq);
  t.answerAt = undefined;
  s.answerSeq = seq;
  const requested = requestedCalls(
    s.id,
    seq,
    calls,
    result.calls,
    overLimit ? notRun : undefined,
    s.kept.regenerations,
  ).map((r) => withinAgentDepth(s, r));
  if (calls.length === 0)
    s.lastAnswer = { responseKey: result.responseKey, text: result.message.content ?? '', ...extractedOf(result) };
  s.batch = calls.length === 0 ? undefined : new ToolCallBatch(requested, s.env.now());
  applyGrants(s);
  s.batchOverLimit = overLimit;
  t.stage = 'answered';
  if (!s.batch) return finalAnswer(s, result, seq);
  takeHandoffs(s, result.calls);
}

/**
 * A final answer (no tool calls). When a typed output was asked for and the
 * answer does not match it, the mismatch is said to the model in a user
 * message and it is asked again (an empty batch of calls, then the model),
 * within the retries the output allows; past them the turn ends as
 * `invalid_output`. Otherwise the turn answered, with its typed output when
 * one was asked for.
 */
function finalAnswer(s: CoreState, result: ModelCallResult, seq: number): void {
  if (result.guardrail) {
    const { on, guardrail, reason } = result.guardrail;
    const error = `The ${on} guardrail "${guardrail}" stopped the turn: ${reason}`;
    finishWith(s, record(s, 'guardrail_tripped', { answerSeq: seq, error, guardrail: { ...result.guardrail } }));
    return;
  }
  const check = result.output;
  if (check && !check.ok) {
    const attempts = `${s.turn.outputRetries + 1} of ${check.retries + 1}`;
    if (s.turn.outputRetries >= check.retries) {
      const error = `The model's answer did not match the output schema "${check.schemaName}" (answer ${attempts}): ${check.problem}`;
      finishWith(s, record(s, 'invalid_output', { answerSeq: seq, error }));
      return;
    }
    s.turn.outputRetries++;
    store(s, [{ message: { role: 'user', content: outputRetryNote(check.schemaName, check.problem, attempts) } }]);
    return;
  }
  const typed = check?.ok ? (check.inAnswer ? { outputInAnswer: true } : { output: check.value }) : {};
  finishWith(s, record(s, 'answered', { answerSeq: seq, ...typed }));
}

/**
 * Every call of the open batch is settled: its tool messages are stored, in
 * call order, and it closes (a stopped turn closes it after
 * {@link turnStopped}; nothing happens without one). Returns how its calls
 * ended, for the metrics (the tool's name, or {@link NOT_RUN_TOOL_LABEL} for a
 * call that could never run), and the turn's record when the turn ends here
 * (calls past maxSteps).
 */
export function closeBatch(s: CoreState): { settled: { tool: string; outcome: OutcomeKind }[]; finished?: TurnRecord } {
  const batch = s.batch;
  if (s.turn.stage === 'running') s.turn.stage = 'next';
  if (!batch) return { settled: [] };
  store(
    s,
    batch.results().map(({ toolCallId, outcome }) => ({
      message: { role: 'tool', tool_call_id: toolCallId, content: outcome.content },
      ref: outcome.storedResultKey
        ? { kind: 'tool_result', key: outcome.storedResultKey, toolCallId }
        : outcome.storedAnswerKey
          ? { kind: 'agent_answer', key: outcome.storedAnswerKey, toolCallId }
          : undefined,
    })),
  );
  const settled = batch
    .all()
    .flatMap((c) => (c.outcome ? [{ tool: c.problem ? NOT_RUN_TOOL_LABEL : c.name, outcome: c.outcome.kind }] : []));
  s.lastCalls = batch.all().map((c) => ({
    name: c.name,
    id: c.id,
    outcome: c.outcome?.kind,
    decidedBy: c.decision ? whoDecided(c.decision.decidedBy, c.decision.authenticated) : undefined,
    approved: c.decision?.approved,
    fromLedger: c.outcome?.fromLedger,
  }));
  const overLimit = s.batchOverLimit;
  s.batch = undefined;
  s.below.clear();
  s.batchOverLimit = false;
  handOff(s);
  if (!overLimit) return { settled };
  const error = `The model asked for tools after the turn reached maxSteps (${s.limits.maxSteps}); the calls were not run.`;
  const finished = record(s, 'failed', { error });
  if (s.turn.stage === 'next') finishWith(s, finished);
  return { settled, finished };
}

/**
 * The turn was cancelled (a new message that interrupts, a cancel, or the
 * whole workflow): running calls settle as `interrupted`, calls not started
 * as `cancelled`, finished results are kept. The edge then closes the batch
 * ({@link closeBatch}). Returns the turn's record.
 */
export function turnStopped(s: CoreState, workflowCancelled: boolean): TurnRecord {
  if (s.turn.stage === 'model') answerUnknown(s);
  const why = workflowCancelled ? STOP_REASONS.workflowCancelled : (s.stopReason ?? STOP_REASONS.cancelledByUser);
  s.batch?.interrupt(why);
  s.turn.stage = 'ended';
  const interrupted = s.stopReason === STOP_REASONS.interruptedByMessage && !workflowCancelled;
  return record(s, interrupted ? 'interrupted' : 'cancelled', { error: why });
}

/**
 * The model call asked to write its final answer did not answer the run (stopped, or failed for good): what it may
 * have written before that is unknown to the run, so the turn's end supersedes it.
 */
function answerUnknown(s: CoreState): void {
  if (s.turn.answerAt !== undefined) s.writes.supersedeOnFlush(s.turn.answerAt);
  s.turn.answerAt = undefined;
}

/** The turn is over (its end is written): keeps its record for clients, sets the status. */
export function finishTurn(s: CoreState, turnRecord: TurnRecord): void {
  const k = s.kept;
  s.turn.active = false;
  s.turn.recorded = false;
  s.stopReason = s.cancelNextTurn;
  s.cancelNextTurn = undefined;
  k.recentTurns.push(turnRecord);
  if (k.recentTurns.length > RECENT_TURNS_KEPT) k.recentTurns.shift();
  if (turnRecord.outcome === 'failed' || turnRecord.outcome === 'invalid_output')
    k.lastError = [turnRecord.error, s.storeProblem].filter(Boolean).join(' Before that: ');
  else if (turnRecord.outcome === 'answered') k.lastError = s.storeProblem;
  s.storeProblem = undefined;
  k.phase = turnRecord.outcome === 'failed' ? 'failed' : 'idle';
}

/** The user message that asks the model again after an answer that did not match the typed output. */
function outputRetryNote(schemaName: string, problem: string, attempts: string): string {
  return (
    `[output check] Your answer (${attempts}) does not match the required output schema "${schemaName}":\n${problem}\n` +
    'Answer again with only a JSON value that matches the schema, nothing else.'
  );
}
