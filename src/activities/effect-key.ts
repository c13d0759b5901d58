/**
 * The key a tool call's effect is applied and recorded under: the call
 * instance the workflow minted (`callInstanceKey`) and what runs, the tool
 * and its validated arguments. The same call retried (a crash, a timeout, a
 * lost completion, a reset that asks for it again) gets the same key and
 * finds its recorded effect; another call at the same place (a reset run whose
 * model asked for other arguments) gets another key and runs for real, never
 * answered with the first call's result. Activity code (Node's crypto).
 */
import { createHash } from 'node:crypto';

/** `<callKey>/args-<16 hex digits of SHA-256 over the tool's name and the arguments' canonical JSON>`. */
export function effectKey(callKey: string, toolName: string, args: unknown): string {
  const digest = createHash('sha256').update(toolName).update('\n').update(canonicalJson(args)).digest('hex');
  return `${callKey}/args-${digest.slice(0, 16)}`;
}

/** JSON with every object's keys in code-point order, so the same value always gives the same text. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value ?? null, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
}
