import { describe, expect, it } from 'vitest';
import { runChaos } from '../chaos/run-chaos';
import { DECISION_PATHS } from '../chaos/plan';
import { FAULT_KINDS } from '../chaos/run-log';

// A small chaos run (`npm run chaos` with a CI-sized configuration): its own
// Temporal dev server and PostgreSQL, two worker processes, 8 conversations
// (half of them on the Responses API, the others on Chat Completions),
// 2 worker kills and a server restart. Every "must be 0" must be 0 on both
// APIs, and every kind of fault must actually have been injected, agents
// called as tools, Temporal resets and forks among them.

describe('chaos run (small)', () => {
  it('injects every kind of fault, and nothing is lost, duplicated, stuck or broken', async () => {
    const summary = await runChaos({
      conversations: 8,
      kills: 2,
      serverRestarts: 1,
      databaseRestarts: 1,
      concurrency: 4,
      seed: process.env.CHAOS_SEED ?? '20261122',
      maxMinutes: 3,
      faultGapMs: [500, 1_500],
    });
    console.log(summary.text);

    expect(summary.hardStopped).toBe(false);
    expect(summary.mustBeZero).toEqual({
      invalidModelRequests: 0,
      sideEffectsAppliedTwice: 0,
      effectsOfCallsNotRun: 0,
      decisionsLost: 0,
      conversationsStuck: 0,
      brokenTranscripts: 0,
      transcriptRepairs: 0,
      effectKeysFromProviderIds: 0,
      lostToSizeLimits: 0,
      conversationsNotAnswering: 0,
      decisionsWithoutIdentity: 0,
      reasoningNotSentBack: 0,
    });
    expect(summary.problems).toEqual([]);
    const notInjected = FAULT_KINDS.filter((kind) => !(summary.faults[kind] > 0));
    expect(notInjected, 'fault kinds never injected').toEqual([]);
    const pathsNotUsed = DECISION_PATHS.filter((p) => !(summary.decisions.byPath[p] > 0));
    expect(pathsNotUsed, 'decision paths never used').toEqual([]);
    expect(summary.conversations).toBe(8);
    expect(summary.turns).toBeGreaterThanOrEqual(8);
    expect(summary.recovery.workerKills.count).toBe(2);
    // Agents called as tools ran, and decisions reached calls waiting inside them (a coverage scenario approves one
    // through the API).
    expect(summary.subAgentConversations).toBeGreaterThan(0);
    expect(summary.decisions.appliedInSubAgents).toBeGreaterThan(0);
    // Both APIs served conversations, and reasoning of the Responses API was kept and sent back.
    const { chat, responses } = summary.modelApis;
    expect(chat.conversations + responses.conversations).toBe(8);
    expect(responses.conversations).toBe(4);
    expect(chat.requests).toBeGreaterThan(0);
    expect(responses.requests).toBeGreaterThan(0);
    expect(responses.reasoningItemsSentBack).toBeGreaterThan(0);
    expect(responses.storedReasoning.items).toBeGreaterThan(0);
    expect(summary.passed).toBe(true);
  }, 240_000);
});
