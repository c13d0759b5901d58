// The team's own activities, which its AI SDK workflow runs as tools.

/** Accounts the AI SDK workflow looked up (a real activity would ask the team's own system). */
export const lookedUpAccounts: string[] = [];

/** Looks up a customer account: read-only, so the AI SDK workflow runs it without asking anyone. */
export async function lookUpAccount(accountId: string): Promise<{ account_id: string; status: string; plan: string }> {
  lookedUpAccounts.push(accountId);
  return { account_id: accountId, status: 'active', plan: 'team' };
}
