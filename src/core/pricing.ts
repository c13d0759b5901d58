/**
 * What a model call costs, from the tokens the provider counted and a price
 * table the team configures (no built-in prices: they change, and a stale
 * table would mislead). Pure, safe in the workflow sandbox.
 */
import type { TokenUsage } from '../contract/turn-records';

/** A model's prices in US dollars per million tokens, as providers publish them. */
export interface ModelPrice {
  /** Per million prompt tokens. */
  input: number;
  /** Per million completion tokens. */
  output: number;
}

/** Prices by model name, exactly as conversations and the worker name the model. */
export type ModelPrices = Readonly<Record<string, ModelPrice>>;

/** Dollars rounded to a millionth (a dollar per million tokens is a millionth per token). */
export function roundUsd(usd: number): number {
  return Math.round(usd * 1e6) / 1e6;
}

/** What `usage` cost on `model`, in dollars; undefined when the model has no price. */
export function costOf(
  prices: ModelPrices | undefined,
  model: string,
  usage: TokenUsage | undefined,
): number | undefined {
  const price = prices?.[model];
  if (!price || !usage) return undefined;
  return roundUsd((usage.promptTokens * price.input + usage.completionTokens * price.output) / 1e6);
}

/** Why `value` is not a price table, or undefined when it is one. */
export function describeBadPrices(value: unknown): string | undefined {
  const example = 'such as {"gpt-4.1": {"input": 2, "output": 8}} (US dollars per million tokens)';
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return `must be a JSON object of prices by model name, ${example}`;
  for (const [model, price] of Object.entries(value)) {
    const p = price as Record<string, unknown> | null;
    const ok = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v >= 0;
    if (typeof p !== 'object' || p === null || !ok(p.input) || !ok(p.output)) {
      return `the price of "${model}" must have "input" and "output", numbers of dollars per million tokens, at least 0; ${example}`;
    }
  }
  return undefined;
}
