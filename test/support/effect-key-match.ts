/** Matching effect keys in assertions (apart from effect-keys.ts, which the chaos run loads outside vitest). */
import { expect } from 'vitest';

/** Matches the effect key of the call `callKey`, whatever its arguments. */
export function anEffectKeyOf(callKey: string): string {
  return expect.stringMatching(
    new RegExp(`^${callKey.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/args-[0-9a-f]{16}$`),
  ) as string;
}
