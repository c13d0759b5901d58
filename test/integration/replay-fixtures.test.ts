import fs from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';
import { readHistoryFile } from '../../src/testing/histories';
import { WORKFLOW_PATCHES } from '../../src/contract/patches';

// Recorded histories of representative conversations (test/fixtures/histories,
// recorded at 1.0 by `npm run fixtures:record` and by the tests that save theirs)
// replayed against the current workflow code: a change that would break running
// conversations fails here. Every patch of src/contract/patches.ts names its
// fixture here too (a history begun before the patch).

const DIR = path.join(__dirname, '..', 'fixtures', 'histories');
const fixtures = fs
  .readdirSync(DIR)
  .filter((f) => f.endsWith('.json'))
  .sort();

describe('replaying recorded histories', () => {
  it('covers the representative conversations', () => {
    const names = new Set(fixtures.map((f) => f.replace(/(\.run\d+)?\.json$/, '')));
    for (const expected of [
      // test/fixtures/record-histories.ts (npm run fixtures:record): the turn's main paths.
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
      'usage-search-attributes',
      'mcp-tools',
      'approval-shown-after-write',
      'named-search-attributes',
      'handoff',
      'sub-agent',
      'sub-agent-child',
      'sub-agent-approval',
      'sub-agent-approval-child',
      'edit-and-respond',
      'typed-output',
      'guardrails',
      // Recorded at 8f47c2c, before regenerate and the going-back work: two turns, the second approved.
      'two-turns-approved',
      // Histories the tests save (RECORD_FIXTURES_DIR): a decision verified after its deadline
      // (decision-deadline-crash), deferred writes, an effect_unknown, signed decisions (http-api),
      // local activities (all calls, and tool calls alone), an oversized message refused, reused and empty provider
      // ids, a note
      // stored in place of a refused message, raw signals holding U+0000 refused, a cancel lost while a turn
      // wrote its end (before its patch).
      'decision-verified-after-deadline',
      'deferred-transcript-writes',
      'effect-unknown-timeout',
      'signed-decisions',
      'local-activities',
      'local-activities-cancel',
      'local-tool-calls',
      'oversized-user-message',
      'reused-tool-call-ids',
      'duplicated-and-empty-ids',
      'store-refused-note',
      'unstorable-signals-refused',
      'cancel-while-turn-ends',
      'budget-exceeded',
      // Recorded at de8e702, with the final answer written by its model call: a turn with a tool step, a turn
      // cancelled during its model call (its end supersedes what the call may have written), a third turn.
      'final-answer-by-model-call',
      // Guardrails' results with their outputInfo in the turn's record (from the model calls' results).
      'guardrail-output-info',
      // A handoff(agent, options): its input refused, then taken with its record and input filter in its result.
      'handoff-options',
      // An agent tool with parameters, a built task and an async needsApproval in its plan, and its child's answer
      // with what the output extractor made of it.
      'agent-tool-options',
      'agent-tool-options-child',
      // An agent called as a tool under its caller's budget: the child's spend added to the caller's (patch
      // called-agents-spend), its model calls held against the top-level conversation's budget.
      'called-agents-spend',
      'called-agents-spend-child',
      // User messages carrying files by reference (their bytes in PostgreSQL), one of them a file alone.
      'user-message-files',
      // Summaries of earlier turns (model.contextOverflow 'summarize'): their cost in the model calls' results.
      'context-summaries',
      // Approval policies: two different people approving one call (N of M), rules that allow and deny without a
      // person (recorded with the message that asked), and an escalation ladder's two steps before a decision, in a
      // run continued as new.
      'approval-policy-two-people',
      'approval-policy-allow-deny',
      'escalation',
      // A standing grant given with an approval, covering the next two calls of its tool, then a call that waits.
      'grant-two-calls',
      // A turn that waited, then answered, announcing its end (patch turn-end-notification), and a turn without a wait.
      'turn-ended-after-wait',
      // A call of a waitForEvent() tool: its wait registered, a malformed and an unrelated event signal, then its event.
      'event-wait',
      // A come-back asked through the API, another cancelled, then the turn it started (timers between turns).
      'come-back',
    ]) {
      expect(names).toContain(expected);
    }
  });

  it('every patch of the one patch list has its recorded history, and the code asks about listed patches only', () => {
    const names = new Set(fixtures.map((f) => f.replace(/(\.run\d+)?\.json$/, '')));
    for (const patch of WORKFLOW_PATCHES) expect(names, patch.id).toContain(patch.fixture);
    const listed = new Set<string>(WORKFLOW_PATCHES.map((p) => p.id));
    const asked: string[] = [];
    const visit = (dir: string): void => {
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const file = path.join(dir, entry.name);
        if (entry.isDirectory()) visit(file);
        else if (file.endsWith('.ts')) {
          for (const m of fs
            .readFileSync(file, 'utf8')
            .matchAll(/\b(?:patched|deprecatePatch|allows)\(\s*['"`]([^'"`]+)['"`]/g))
            asked.push(m[1]);
        }
      }
    };
    visit(path.join(__dirname, '..', '..', 'src'));
    expect(asked.filter((id) => !listed.has(id))).toEqual([]);
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
