/**
 * Holding a chat response open while a turn waits for someone other than
 * its reader (four eyes: the requester may not approve): the response stays
 * open, with an SSE comment as keep-alive (the AI SDK's stream parser skips
 * comments), and streams the decision and the rest of the turn when it
 * comes. A wait longer than the hold ends the response with `finish`,
 * `awaitingOthers` in its metadata: the client resumes (`GET
 * /v1/chat/{id}/stream`), which holds again.
 */
import type { TurnFacts } from './ui-stream';

/** How often a held response sends a keep-alive comment. */
export const KEEP_ALIVE_MS = 15_000;

/** How often a held response reads the conversation's state (a decision shows within this). */
export const HOLD_POLL_MS = 250;

/** The hold of one response. */
export interface Hold {
  /** True while the response is held (then the state is read every {@link HOLD_POLL_MS}). */
  readonly holding: boolean;
  readonly pollMs: number;
  /**
   * The facts to project: a wait the reader cannot end (`viewerMayDecide` false) does not end the response while the
   * hold lasts; after it, it ends with `awaitingOthers`.
   */
  shape(facts: TurnFacts, viewerMayDecide: boolean): TurnFacts;
}

/** The hold of a response that holds for at most `holdMs` (none when unset or 0), pinging with `keepAlive`. */
export function holdsFor(holdMs: number | undefined, keepAlive: () => void): Hold | undefined {
  if (!holdMs || holdMs <= 0) return undefined;
  let since: number | undefined;
  let pinged = 0;
  const hold = {
    holding: false,
    pollMs: HOLD_POLL_MS,
    shape(facts: TurnFacts, viewerMayDecide: boolean): TurnFacts {
      const waits = facts.end !== undefined && 'waiting' in facts.end;
      if (!waits || viewerMayDecide) {
        hold.holding = false;
        since = undefined;
        return facts;
      }
      const now = Date.now();
      if (since === undefined) [since, pinged] = [now, now];
      if (now - since >= holdMs) {
        hold.holding = false;
        return { ...facts, end: { waiting: true, others: true } };
      }
      hold.holding = true;
      if (now - pinged >= KEEP_ALIVE_MS) {
        pinged = now;
        keepAlive();
      }
      const { end: _waiting, ...open } = facts;
      return open;
    },
  };
  return hold;
}
