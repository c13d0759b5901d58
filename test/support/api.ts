/**
 * What the HTTP API's tests share: four people's tokens (alice requests, bob
 * approves, carol operates, dave both requests and approves) and a system's
 * (the gateway sends events), the decision key the API signs with and the
 * worker verifies with, and a JSON caller.
 */
import type { DecisionKey } from '../../src/common/decision-signing';
import type { ApiTokenConfig } from '../../src/api/tokens';

/** The token of a caller: 40 times a letter (`a` alice, `b` bob, `c` carol, `d` dave, `g` the gateway; others unknown). */
export const token = (c: string): string => c.repeat(40);

/** The tokens the tests' API accepts. */
export const TEST_TOKENS: ApiTokenConfig[] = [
  { subject: 'alice@example.com', roles: ['requester'], token: token('a') },
  { subject: 'bob@example.com', roles: ['approver'], token: token('b') },
  { subject: 'carol@example.com', roles: ['operator'], token: token('c') },
  { subject: 'dave@example.com', roles: ['requester', 'approver'], token: token('d') },
  { subject: 'gateway@example.com', roles: ['events'], token: token('g') },
];

/** The key the tests' API signs decisions with, and their worker verifies with. */
export const TEST_DECISION_KEY: DecisionKey = { id: 'k1', secret: 's'.repeat(40) };

/** Calls `route` of the API at `base()` with `who`'s bearer token and a JSON body; the status and the JSON answer. */
export function apiCaller(base: () => string) {
  return async (
    method: string,
    route: string,
    who?: string,
    body?: unknown,
  ): Promise<{ status: number; json: any }> => {
    const response = await fetch(`${base()}${route}`, {
      method,
      headers: {
        ...(who ? { authorization: `Bearer ${who}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, json: await response.json().catch(() => undefined) };
  };
}
