/**
 * Running guardrails inside the model call's activity: the turn's input
 * before the model is asked, each planned tool call, and a final answer
 * before anyone sees it. A guardrail that throws fails the activity
 * (retried by its policy, saying which guardrail failed); a model answer
 * already stored is reused, not paid for again.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { ActivityErrorType, type AssistantMessage } from '../contract/activities';
import type { GuardrailResult } from '../contract/guardrail-results';
import type { GuardrailTrip } from '../contract/turn-records';
import { boundedOutputInfo, readGuardrailVerdict } from './guardrail-results';
import { guardrailsOn, type Guardrail, type GuardrailContext, type ToolGuardrailContext } from '../tools/guardrails';
import type { Agent } from '../tools/agents';
import type { Tool } from '../tools/tool';
import type { ModelApi } from '../contract/model-api';
import { requestCompletion } from './completion';
import type { ModelActivityDeps } from './deps';
import { modelApiOf, requestResponse } from './model/responses-completion';

/** The guardrails that apply to a model call: the worker's, then its agent's. */
export interface ApplicableGuardrails {
  input: Extract<Guardrail, { on: 'input' }>[];
  output: Extract<Guardrail, { on: 'output' }>[];
  /** Tool guardrails of the worker and the agent; a tool's own come after them. */
  tool: Extract<Guardrail, { on: 'tool' }>[];
}

/**
 * The guardrails of the worker and of each agent, sorted by where they run
 * once per agent (not per model call): `of(speaker)` is the list for a call
 * answered by `speaker` (undefined: one unnamed agent).
 */
export function guardrailsByAgent(
  worker: readonly Guardrail[] | undefined,
): (speaker: Agent | undefined) => ApplicableGuardrails {
  const sorted = new Map<string | undefined, ApplicableGuardrails>();
  return (speaker) => {
    let found = sorted.get(speaker?.name);
    if (!found) {
      found = {
        input: guardrailsOn('input', worker, speaker?.guardrails),
        output: guardrailsOn('output', worker, speaker?.guardrails),
        tool: guardrailsOn('tool', worker, speaker?.guardrails),
      };
      sorted.set(speaker?.name, found);
    }
    return found;
  };
}

/**
 * What a check gets besides its subject: the conversation, and the worker's model for a guardrail that asks one,
 * asked on `api` (the call's: the conversation's, else the agent's, else the worker's), so a worker, agent or
 * conversation on the Responses API never sends a guardrail's request to Chat Completions.
 */
export function guardrailContext(
  deps: Pick<ModelActivityDeps, 'model'>,
  conversationId: string,
  agent: string | undefined,
  api?: ModelApi,
): GuardrailContext {
  return {
    conversationId,
    ...(agent !== undefined ? { agent } : {}),
    signal: Context.current().cancellationSignal,
    async complete(prompt, options = {}) {
      const messages = [
        ...(options.system ? [{ role: 'system' as const, content: options.system }] : []),
        { role: 'user' as const, content: prompt },
      ];
      const body = { model: deps.model.name, messages };
      const sent = { stream: false, idleTimeoutMs: 60_000 };
      const done =
        modelApiOf(api, deps.model.api) === 'responses'
          ? await requestResponse(deps.model.client, body, sent)
          : await requestCompletion(deps.model.client, body, sent);
      return done.message.content ?? '';
    },
  };
}

/** What the input or output guardrails said: each one's result, and the trip that stops the turn, if one tripped. */
export interface GuardrailOutcome {
  results: GuardrailResult[];
  trip?: GuardrailTrip;
}

/**
 * Runs input or output guardrails side by side; the first (in declared order) whose tripwire is set stops the turn.
 * Every one's result is returned, with its `outputInfo` bounded (`readGuardrailVerdict`); one the record cannot keep
 * is logged.
 */
export async function firstTrip<Subject>(
  on: 'input' | 'output',
  guardrails: readonly { name: string; check(subject: Subject, context: GuardrailContext): unknown }[],
  subject: Subject,
  context: GuardrailContext,
): Promise<GuardrailOutcome> {
  const results = await Promise.all(
    guardrails.map(async (g) =>
      readGuardrailVerdict(on, g.name, await guarded(g.name, () => g.check(subject, context))),
    ),
  );
  for (const r of results) {
    if (r.outputInfoDropped)
      Context.current().log.warn(`The ${on} guardrail "${r.guardrail}": ${r.outputInfoDropped}`, {
        conversationId: context.conversationId,
      });
  }
  const tripped = results.find((r) => r.tripwire);
  if (!tripped) return { results };
  return { results, trip: { on, guardrail: tripped.guardrail, reason: tripped.reason ?? 'no reason given' } };
}

/** What the tool guardrails say about one call: the first block wins, else the first that asks for a person. */
export async function toolVerdict(
  guardrails: readonly Extract<Guardrail, { on: 'tool' }>[],
  call: { toolName: string; arguments: unknown },
  context: ToolGuardrailContext,
): Promise<ToolVerdict> {
  const verdicts = await Promise.all(
    guardrails.map(async (g) => ({ g, verdict: await guarded(g.name, () => g.check(call, context)) })),
  );
  // Kept for the turn's record: every verdict that did more than allow, or reported what it found.
  const results = verdicts.flatMap(({ g, verdict }): GuardrailResult[] => {
    const action = verdict?.action ?? 'allow';
    if (action === 'allow' && verdict?.outputInfo === undefined) return [];
    const reason = verdict?.reason?.trim();
    return [
      {
        on: 'tool',
        guardrail: g.name,
        toolCallId: context.toolCallId,
        action,
        tripwire: action === 'block',
        ...(reason ? { reason } : {}),
        ...boundedOutputInfo(verdict?.outputInfo),
      },
    ];
  });
  for (const action of ['block', 'require_approval'] as const) {
    const hit = verdicts.find(({ verdict }) => verdict?.action === action);
    if (hit) return { action, guardrail: hit.g.name, reason: hit.verdict.reason?.trim() || 'no reason given', results };
  }
  return { action: 'allow', results };
}

/** What a call's tool guardrails decided, and what each said for the turn's record. */
export type ToolVerdict = (
  { action: 'allow' } | { action: 'block' | 'require_approval'; guardrail: string; reason: string }
) & { results: GuardrailResult[] };

/** The tool guardrails of one call: the worker's and the agent's, then the tool's own. */
export function toolGuardrailsOf(applicable: ApplicableGuardrails, tool: Tool): Extract<Guardrail, { on: 'tool' }>[] {
  return tool.guardrails?.length ? [...applicable.tool, ...guardrailsOn('tool', tool.guardrails)] : applicable.tool;
}

/**
 * The assistant message stored in place of an answer when a guardrail stopped the turn: what the user and the model
 * read.
 */
export function guardrailNote(trip: GuardrailTrip, agent: string | undefined): AssistantMessage {
  const what = trip.on === 'input' ? 'This request was not answered' : 'The answer was withheld';
  return {
    role: 'assistant',
    content: `[guardrail ${trip.guardrail}] ${what}: ${trip.reason}`,
    ...(agent !== undefined ? { name: agent } : {}),
  };
}

/** Runs one check, turning a throw into a failure that names the guardrail. */
async function guarded<T>(name: string, check: () => T | Promise<T>): Promise<T> {
  try {
    return await check();
  } catch (err) {
    if (err instanceof ApplicationFailure) throw err; // the model call of a guardrail failed: its own failure says how
    throw ApplicationFailure.create({
      message: `The guardrail "${name}" failed: ${err instanceof Error ? err.message : String(err)}`,
      type: ActivityErrorType.GuardrailFailed,
      cause: err instanceof Error ? err : undefined,
    });
  }
}
