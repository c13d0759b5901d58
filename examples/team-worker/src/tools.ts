import { tool } from 'durable-agent-worker';
import { z } from 'zod';

/** Accounts this worker closed (a real tool would call the team's own system). */
export const closedAccounts: string[] = [];

/** A tool with a side effect, so a person approves each call first. */
export const closeAccount = tool({
  name: 'close_account',
  description: 'Closes a customer account for good.',
  parameters: z.object({ account_id: z.string(), reason: z.string() }),
  needsApproval: true,
  // Runs at most once per call: a call cut off mid-way is reported as "effect unknown", never retried.
  idempotent: false,
  execute: async ({ account_id, reason }) => {
    closedAccounts.push(account_id);
    return { closed: account_id, reason };
  },
});
