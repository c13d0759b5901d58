/**
 * Agents: handoffs between a conversation's agents, agents called as tools
 * (their child conversations, how deep they nest, what waits for a person
 * inside them) and what such an agent reports to its caller. Pure.
 */
import type { ToolCallPlan } from '../contract/activities';
import type { ConversationInput } from '../contract/conversation-input';
import type { ConversationSummary } from '../contract/conversation-state';
import type { PendingBelow, SubAgentWaitingReport } from '../contract/waiting-calls';
import { describePendingApproval, type BatchCall } from './batch';
import type { SubAgentStart } from './edge';
import { handoffContent, toolFailedContent, type ToolFailureReason } from './outcomes';
import type { CoreState } from './state';
import { toolCallSummary } from './call-summary';
import { answeredOutcome } from './agent-results';
import { addCalledAgentSpend } from './budget';

/**
 * Settles the handoffs of the answer just stored, at once (no activity runs
 * one): the first within the turn's limit gets its result and moves the
 * conversation to its agent when the batch closes, after the response's other
 * calls (run, or waited on for a person: a handoff cancels nothing); any other
 * is refused with a result saying why.
 */
export function takeHandoffs(s: CoreState, plans: readonly ToolCallPlan[]): void {
  for (const plan of plans) {
    const call = plan.handoff === undefined ? undefined : s.batch?.get(plan.toolCallId);
    if (!call || call.phase === 'settled' || plan.handoff === undefined) continue;
    const refusal =
      s.nextAgent !== undefined
        ? `Only the first handoff of a response is taken (to ${s.nextAgent}); this one was ignored.`
        : s.turn.handoffs >= s.limits.maxHandoffsPerTurn
          ? `This turn made ${s.turn.handoffs} handoffs, its limit (maxHandoffsPerTurn); the conversation stays with agent ${s.kept.agent}, which should answer now.`
          : undefined;
    if (refusal) {
      s.batch!.settle(call.id, { kind: 'tool_failed', content: toolFailedContent(refusal, 'handoff_refused') });
      continue;
    }
    s.nextAgent = plan.handoff;
    s.batch!.settle(call.id, { kind: 'ok', content: handoffContent(plan.handoff, plan.handoffRecord) });
  }
}

/**
 * The batch closed: a handoff it made takes effect, whatever closed it (its result is stored, so the next model call
 * must see the new agent).
 */
export function handOff(s: CoreState): void {
  const next = s.nextAgent;
  if (next === undefined) return;
  s.env.log.info('Handed the conversation to another agent', { conversationId: s.id, from: s.kept.agent, to: next });
  s.kept.agent = next;
  s.nextAgent = undefined;
  s.turn.handoffs++;
}

/** A call of an agent as a tool past `maxAgentDepth` cannot run: it is settled at once, saying why. */
export function withinAgentDepth<
  T extends { subAgent?: string; problem?: { reason: ToolFailureReason; message: string } },
>(s: CoreState, call: T): T {
  const depth = (s.input.calledBy?.path.length ?? 1) - 1;
  if (call.subAgent === undefined || call.problem || depth < s.limits.maxAgentDepth) return call;
  return {
    ...call,
    problem: {
      reason: 'agent_too_deep',
      message:
        `Agents called as tools nest at most ${s.limits.maxAgentDepth} deep (maxAgentDepth), ` +
        `and this one is ${depth} deep (${s.input.calledBy?.path.join(' > ')}); do the task here.`,
    },
  };
}

/** The agents from the top-level conversation's down to this one's current agent; undefined for one unnamed agent. */
export function agentPath(s: CoreState): string[] | undefined {
  const caller = s.input.calledBy;
  if (caller) return [...caller.path.slice(0, -1), s.kept.agent ?? caller.path[caller.path.length - 1]];
  return s.kept.agent === undefined ? undefined : [s.kept.agent];
}

/**
 * The child conversation that runs a started call of an agent as a tool: the
 * agent, the task the model gave, and this conversation's settings, which it
 * inherits (its model, limits, timeouts and search attributes; its budget is
 * the top-level conversation's, which covers every agent below it, in that
 * conversation's current turn).
 */
export function subAgentStart(s: CoreState, call: BatchCall): SubAgentStart {
  const agent = call.subAgent ?? '';
  let task: unknown;
  try {
    task = (JSON.parse(call.arguments) as { input?: unknown }).input;
  } catch {
    task = undefined;
  }
  const index = s.batch?.all().indexOf(call) ?? 0;
  const caller = s.input.calledBy;
  const i = s.input;
  const inherited: ConversationInput = {
    ...(i.model ? { model: i.model } : {}),
    ...(i.timeouts ? { timeouts: i.timeouts } : {}),
    ...(i.approvalTimeoutMs !== undefined ? { approvalTimeoutMs: i.approvalTimeoutMs } : {}),
    ...(i.maxSteps !== undefined ? { maxSteps: i.maxSteps } : {}),
    ...(i.maxHandoffsPerTurn !== undefined ? { maxHandoffsPerTurn: i.maxHandoffsPerTurn } : {}),
    ...(i.maxAgentDepth !== undefined ? { maxAgentDepth: i.maxAgentDepth } : {}),
    ...(i.localActivities ? { localActivities: i.localActivities } : {}),
    ...(i.mcpServers ? { mcpServers: i.mcpServers } : {}),
    ...(i.budget ? { budget: i.budget } : {}),
    ...(i.searchAttributes ? { searchAttributes: i.searchAttributes } : {}),
  };
  return {
    workflowId: `${s.id}~${agent}~${s.answerSeq}-${index}`,
    input: {
      ...inherited,
      agent,
      calledBy: {
        conversationId: s.id,
        rootConversationId: caller?.rootConversationId ?? s.id,
        callKey: call.key,
        toolName: call.name,
        path: [...(caller?.path ?? [s.kept.agent ?? 'agent']), agent],
        requestedBy: [...s.turn.requesters],
        task: call.task ?? (typeof task === 'string' ? task : String(task ?? '')),
        ...(s.kept.agent !== undefined ? { callerAgent: s.kept.agent } : {}),
        rootTurn: caller ? caller.rootTurn : s.kept.turns,
      },
    },
    summary: `${agent} agent for ${toolCallSummary(s, call)}`,
    ...(call.timeoutMs > 0 ? { timeoutMs: call.timeoutMs } : {}),
  };
}

/**
 * The child conversation of a call of an agent as a tool ended: its answer (in
 * full, by reference) is the call's result; a turn that did not answer settles
 * the call as `tool_failed`, saying why.
 */
export function subAgentEnded(s: CoreState, call: BatchCall, summary: ConversationSummary): void {
  if (!isOpen(s, call)) return;
  const turn = summary.lastTurn;
  addCalledAgentSpend(s, turn);
  if (turn?.outcome === 'answered' && turn.answer) {
    s.batch!.settle(call.id, answeredOutcome(turn.answer, call.subAgent, call.name));
    return;
  }
  const why = turn
    ? `its turn ended as ${turn.outcome}${turn.error ? `: ${turn.error}` : ''}`
    : 'it ended without a turn';
  s.batch!.settle(call.id, {
    kind: 'tool_failed',
    content: toolFailedContent(`The ${call.subAgent} agent did not answer (${summary.conversationId}): ${why}`),
  });
}

/** True when the call belongs to the open batch (a call of a closed batch changes nothing). */
export function isOpen(s: CoreState, call: BatchCall): boolean {
  if (s.batch?.all().includes(call)) return true;
  s.env.log.warn('A result arrived for a call whose batch is closed; ignored', {
    conversationId: s.id,
    toolCallId: call.id,
  });
  return false;
}

/** The calls waiting for a person below the running calls of agents as tools, as their agents last reported. */
export function waitingBelow(s: CoreState): PendingBelow[] {
  if (s.below.size === 0) return [];
  const running = new Set((s.batch?.all() ?? []).filter((c) => c.phase === 'running').map((c) => c.key));
  return [...s.below].flatMap(([key, waiting]) => (running.has(key) ? waiting : []));
}

/**
 * An agent called as a tool reported the calls waiting in it and below it.
 * Kept while its call runs. Returns true when it changed what this
 * conversation waits on; a report of no running call, or malformed, changes
 * nothing.
 */
export function subAgentWaiting(s: CoreState, report: unknown): boolean {
  const r = report as Partial<SubAgentWaitingReport> | null;
  if (typeof r?.callKey !== 'string' || !Array.isArray(r.waiting) || r.waiting.length > 1000) {
    s.env.log.warn('Ignored a malformed subAgentWaiting report', { conversationId: s.id });
    return false;
  }
  const call = s.batch?.all().find((c) => c.key === r.callKey);
  if (call?.subAgent === undefined || call.phase !== 'running') return false;
  s.below.set(
    r.callKey,
    r.waiting.map((w) => ({ ...w })),
  );
  return true;
}

/**
 * For an agent called as a tool: what to report to its caller now (the calls
 * waiting in it, once the messages asking for them are written, and below
 * it), when that changed since the last report; else undefined.
 */
export function reportForCaller(s: CoreState): SubAgentWaitingReport | undefined {
  const caller = s.input.calledBy;
  if (!caller || !s.writes.allWritten) return undefined;
  const path = agentPath(s) ?? [];
  const now = s.env.now();
  const own = (s.batch?.awaitingApproval() ?? []).map((call): PendingBelow => ({
    ...describePendingApproval(call, now, s.turn.requesters),
    conversationId: s.id,
    agentPath: path,
  }));
  const waiting = [...own, ...waitingBelow(s)];
  const json = JSON.stringify(waiting.map(({ ageMs: _age, ...w }) => w));
  if (json === s.reported || (s.reported === undefined && waiting.length === 0)) return undefined;
  s.reported = json;
  return { callKey: caller.callKey, waiting };
}
