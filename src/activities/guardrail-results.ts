/**
 * Reading an input or output guardrail's verdict, in our shape
 * (`{ tripwire, reason }`) or the OpenAI Agents SDK's (`{ tripwireTriggered,
 * outputInfo }`), into the result a turn's record keeps, its `outputInfo`
 * bounded. Pure.
 */
import { ApplicationFailure } from '@temporalio/common';
import { ActivityErrorType } from '../contract/activities';
import { GUARDRAIL_OUTPUT_INFO_MAX_CHARS, type GuardrailResult } from '../contract/guardrail-results';

/**
 * The result of guardrail `name` on `on` from what its check returned.
 * Throws a non-retryable `GuardrailFailed` failure for a verdict that says
 * neither `tripwire` nor `tripwireTriggered` as a boolean, or says both
 * differently: running the same check again would return the same, so the
 * model call fails at once, naming the guardrail and what it returned.
 */
export function readGuardrailVerdict(on: 'input' | 'output', name: string, verdict: unknown): GuardrailResult {
  const v = (typeof verdict === 'object' && verdict !== null ? verdict : {}) as Record<string, unknown>;
  const ours = typeof v.tripwire === 'boolean' ? v.tripwire : undefined;
  const sdk = typeof v.tripwireTriggered === 'boolean' ? v.tripwireTriggered : undefined;
  if ((ours === undefined && sdk === undefined) || (ours !== undefined && sdk !== undefined && ours !== sdk)) {
    const why =
      ours === undefined && sdk === undefined ? 'says no tripwire' : 'says tripwire and tripwireTriggered differently';
    throw ApplicationFailure.nonRetryable(
      `The ${on} guardrail "${name}" returned ${describe(verdict)}, which ${why}: return { tripwire: boolean, reason?, outputInfo? } ` +
        'or, as in the OpenAI Agents SDK, { tripwireTriggered: boolean, outputInfo? }.',
      ActivityErrorType.GuardrailFailed,
    );
  }
  const reason = typeof v.reason === 'string' && v.reason.trim() !== '' ? { reason: v.reason } : {};
  return { on, guardrail: name, tripwire: (ours ?? sdk) === true, ...reason, ...boundedOutputInfo(v.outputInfo) };
}

/**
 * A guardrail's `outputInfo` as a turn's record keeps it: as JSON (what
 * `JSON.stringify` keeps of it), when its JSON text has at most
 * {@link GUARDRAIL_OUTPUT_INFO_MAX_CHARS} characters; otherwise left out,
 * with `outputInfoDropped` saying why. Nothing for `undefined`.
 */
export function boundedOutputInfo(value: unknown): Pick<GuardrailResult, 'outputInfo' | 'outputInfoDropped'> {
  if (value === undefined) return {};
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    return {
      outputInfoDropped: `outputInfo is not JSON (${(err as Error).message.split('\n')[0]}); return plain data`,
    };
  }
  if (text === undefined) return { outputInfoDropped: `outputInfo is not JSON (a ${typeof value}); return plain data` };
  if (text.length > GUARDRAIL_OUTPUT_INFO_MAX_CHARS) {
    return {
      outputInfoDropped:
        `outputInfo is ${text.length} characters of JSON, over the ${GUARDRAIL_OUTPUT_INFO_MAX_CHARS} a turn's record keeps ` +
        '(GUARDRAIL_OUTPUT_INFO_MAX_CHARS): return a summary, and keep the rest where operators can read it (a table, a log)',
    };
  }
  return { outputInfo: JSON.parse(text) as unknown };
}

/** A verdict as quoted in an error: its JSON, at most 200 characters. */
function describe(verdict: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(verdict) ?? String(verdict);
  } catch {
    text = String(verdict);
  }
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
