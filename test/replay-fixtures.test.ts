import fs from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';
import { readHistoryFile } from '../src/testing/histories';

// Recorded histories of representative conversations (test/fixtures/histories,
// refreshed by `npm run fixtures:record`) replayed against the current workflow
// code: a change that would break running conversations fails here.

const DIR = path.join(__dirname, 'fixtures', 'histories');
const fixtures = fs.readdirSync(DIR).filter((f) => f.endsWith('.json')).sort();

describe('replaying recorded histories', () => {
  it('covers the representative conversations', () => {
    const names = new Set(fixtures.map((f) => f.replace(/(\.run\d+)?\.json$/, '')));
    for (const expected of [
      'plain',
      'parallel-tools',
      'tool-and-model-failures',
      'approve',
      'reject-batch',
      'approval-timeout',
      'cancel-during-tool',
      'interrupt-while-awaiting-approval',
      'queue-policy',
      'workflow-cancel',
      'continue-as-new',
      'crash-recovery',
      // From a chaos run: a sticky worker died, the approval timer fired, then a late decision
      // arrived; processed live in that order, replayed with the signal first.
      'late-decision-after-worker-crash',
      // From test/decision-deadline-crash.test.ts: the approval deadline passed while no worker ran;
      // a decision sent before it is applied, one sent after it refused.
      'decision-in-time-worker-dead-at-deadline',
      'decision-late-worker-dead-at-deadline',
      // Effect keys per call instance: a conversation begun by the workflow code before them and
      // finished by the code after (test/effect-key-upgrade.test.ts), and histories of the new paths.
      'upgrade-to-call-instance-keys',
      'reused-tool-call-ids',
      'duplicated-and-empty-ids',
      'effect-unknown-timeout',
      // Message size limits (test/message-size-limits.test.ts): an oversized raw signal refused.
      'oversized-user-message',
      // Prefixed activity types (test/prefixed-activity-types.test.ts): a conversation begun with the
      // bare types and finished by the current worker, and one that schedules only prefixed types.
      'upgrade-to-prefixed-activity-types',
      'prefixed-activity-types',
      // Deferred transcript writes (test/deferred-transcript-writes.test.ts): a conversation begun
      // writing each message in an activity of its own and finished by the current worker, and one
      // whose writes ride on its model calls.
      'upgrade-to-deferred-transcript-writes',
      'deferred-transcript-writes',
      // Local activities (test/local-activities.test.ts): model calls and idempotent tools as local
      // activities with an approval, and a long local model call cancelled at the task heartbeat.
      'local-activities',
      'local-activities-cancel',
      // Signed decisions (test/http-api.test.ts): unsigned and tampered decisions refused by the
      // verifyDecision activity, a signed one applied; the approval index in the search attributes.
      'signed-decisions',
      // test/approval-identity-upgrade.test.ts: a conversation begun before signed decisions whose
      // decision the current code verifies; test/decision-deadline-crash.test.ts: a decision sent in
      // time, verified after the deadline's timer fired, applied.
      'upgrade-to-approval-identity',
      'decision-verified-after-deadline',
      // Activity and timer summaries, the workflow's current details and metrics (no command added):
      // an approval recorded by the code that sets them.
      'summaries-and-details',
      // Tokens and cost as search attributes (patch usage-search-attributes): a priced conversation
      // across continue-as-new, recorded by the current code (npm run fixtures:record), and one begun
      // before the patch and finished after it (test/usage-search-attributes.test.ts).
      'usage-search-attributes',
      'upgrade-to-usage-search-attributes',
      // Tools from MCP servers (test/mcp-tools.test.ts): a discovery activity per turn, a read-only
      // call, an approved destructive call and one refused by the server's schema.
      'mcp-tools',
      // The store activities' retry capped at 5 s apart: a conversation with an approval whose writes
      // were scheduled with the policy before (30 s), replayed by the code after.
      'store-retry-interval',
      // The state query shows a waiting call once its message is written (no command changed):
      // an approval recorded by the code before, replayed by the code after.
      'approval-shown-after-write',
      // Text PostgreSQL cannot store (patch unstorable-text): a conversation the code before stalled on
      // a NUL, finished by the current code (test/unstorable-text-upgrade.test.ts); raw signals holding
      // U+0000 refused (test/unstorable-text.test.ts); a message PostgreSQL refused, stored as a note in
      // its place (test/store-refusals.test.ts).
      'upgrade-stalled-by-nul',
      'unstorable-signals-refused',
      'store-refused-note',
      // Conversations that name the search attributes they set (test/search-attribute-limits.test.ts,
      // npm run fixtures:record): status and approvals only, across continue-as-new.
      'named-search-attributes',
    ]) {
      expect(names).toContain(expected);
    }
  });

  it('every recorded history replays against the current workflow code without nondeterminism', async () => {
    // Replayed under the conversation's own id: the workflow keys calls by it (effect keys), and a
    // decision naming a call by its key is checked against them.
    const fileOf = new Map<string, string>();
    const histories = fixtures.map((file) => {
      const recorded = readHistoryFile(path.join(DIR, file));
      fileOf.set(recorded.workflowId, file);
      return recorded;
    });
    const failures: string[] = [];
    let replayed = 0;
    for await (const result of Worker.runReplayHistories(
      { workflowBundle: { codePath: inject('workflowBundlePath') } },
      histories,
    )) {
      replayed++;
      if (result.error) failures.push(`${fileOf.get(result.workflowId) ?? result.workflowId}: ${result.error.message}`);
    }
    expect(failures).toEqual([]);
    expect(replayed).toBe(fixtures.length);
  });
});
