/**
 * The built-in tool a team turns on to let the model ask its conversation to
 * come back later: `comeBackLater()`. The model calls it with a note and a
 * time (`in_minutes` or `at`); the call settles at once (nothing runs on a
 * worker) and at that time a turn starts with the note as its message, sent
 * by the conversation itself. docs/coming-back-later.md.
 */
import { z } from 'zod';
import { COME_BACK_LIMITS } from '../contract/comebacks';
import { tool, type Tool } from './tool';

/** Options of {@link comeBackLater}. */
export interface ComeBackLaterOptions {
  /** The tool's name; `come_back_later` by default. */
  name?: string;
  /** What the model reads about it. */
  description?: string;
  /** The furthest ahead the model may ask for; 30 days by default, at most a year. */
  maxDelayMs?: number;
}

const DEFAULT_MAX_DELAY_MS = 30 * 24 * 60 * 60 * 1000;

/** Declares the come-back tool. Throws a `TypeError` for a `maxDelayMs` outside 1 ms to a year. */
export function comeBackLater(options: ComeBackLaterOptions = {}): Tool {
  const maxDelayMs = options.maxDelayMs ?? DEFAULT_MAX_DELAY_MS;
  if (!Number.isInteger(maxDelayMs) || maxDelayMs < 1 || maxDelayMs > COME_BACK_LIMITS.maxDelayMs)
    throw new TypeError(
      `comeBackLater: maxDelayMs must be a whole number from 1 to ${COME_BACK_LIMITS.maxDelayMs} (a year).`,
    );
  const declared = tool({
    name: options.name ?? 'come_back_later',
    description:
      options.description ??
      'Come back to this conversation later: at that time a new turn starts with your note as its message. Give the note (what to do then) and either in_minutes or at (an ISO 8601 time).',
    parameters: z.object({
      note: z.string().min(1).max(COME_BACK_LIMITS.noteMaxChars).describe('What to do when you come back'),
      in_minutes: z.number().positive().optional().describe('How many minutes from now'),
      at: z.string().optional().describe('When, as an ISO 8601 time (instead of in_minutes)'),
    }),
    execute: () => {
      throw new Error('come_back_later is settled by the conversation; it is not executed.');
    },
  });
  return { ...declared, comeBack: { maxDelayMs } };
}
