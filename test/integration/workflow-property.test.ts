import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScriptedReply } from '../../src/testing';
import type { ScriptedToolCall } from '../../src/testing/types';
import { toolMessageKeys } from '../support/effect-keys';
import { pairingProblemsOf } from '../support/pairing';
import { startHarness, type Harness } from '../support/harness';

// The guarantee on the real workflow, for a bounded sample of random
// conversations: random tool calls, decisions, cancels, new messages and
// approval timeouts, with tool-call ids as providers send them (unique,
// restarted in every response, empty, duplicated within a response), against
// the real dev server and the validating model server.

type CallKind = 'read' | 'approval' | 'unknown' | 'bad_json';
type Action = 'approve_all' | 'reject_all' | 'approve_first' | 'cancel' | 'interrupt' | 'timeout' | 'decide_twice';
type IdScheme = 'unique' | 'per-response' | 'empty' | 'duplicated';
interface TurnSpec {
  calls: CallKind[];
  action: Action;
  ids: IdScheme;
}

const SCENARIOS = 30;
const APPROVAL_TIMEOUT_MS = 1_200;

let h: Harness;
const scripts = new Map<string, TurnSpec[]>();

beforeAll(async () => {
  h = await startHarness();
  h.model.setResponder((request) => {
    const messages = (request.body as { messages: { role: string; content?: string }[] }).messages;
    const first = messages.find((m) => m.role === 'user')?.content ?? '';
    const script = scripts.get(first.split(' ')[0]);
    if (!script) return { content: 'unscripted' };
    const last = messages[messages.length - 1];
    const turn = messages.filter((m) => m.role === 'user').length - 1;
    if (last.role === 'tool' || !script[turn] || script[turn].calls.length === 0)
      return { content: `answer to turn ${turn}` };
    const calls = script[turn].calls.map(toolCall);
    return { toolCalls: withIds(calls, script[turn].ids) } satisfies ScriptedReply;
  });
});
afterAll(async () => {
  await h?.stop();
});

let callCounter = 0;
function toolCall(kind: CallKind): ScriptedToolCall {
  const id = `call_p${++callCounter}`;
  switch (kind) {
    case 'read':
      return { id, name: 'find_customer', arguments: { query: 'Ada' } };
    case 'approval':
      return {
        id,
        name: 'issue_refund',
        arguments: { order_id: 'ord_2001', amount_cents: 10_001, reason: 'property test' },
      };
    case 'unknown':
      return { id, name: 'launch_rocket', arguments: {} };
    case 'bad_json':
      return { id, name: 'find_customer', arguments: '{"query":' };
  }
}

/** Replaces the ids of one response's calls the way some providers send them. */
function withIds(calls: ScriptedToolCall[], scheme: IdScheme): ScriptedToolCall[] {
  switch (scheme) {
    case 'unique':
      return calls;
    case 'per-response':
      return calls.map((c, i) => ({ ...c, id: `functions.${c.name}:${i}` }));
    case 'empty':
      return calls.map((c) => ({ ...c, id: '' }));
    case 'duplicated':
      return calls.map((c) => ({ ...c, id: calls[0].id }));
  }
}

const turnArbitrary: fc.Arbitrary<TurnSpec> = fc.record({
  ids: fc.constantFrom<IdScheme>('unique', 'per-response', 'empty', 'duplicated'),
  calls: fc.array(fc.constantFrom<CallKind>('read', 'approval', 'approval', 'unknown', 'bad_json'), { maxLength: 4 }),
  action: fc.constantFrom<Action>(
    'approve_all',
    'reject_all',
    'approve_first',
    'cancel',
    'interrupt',
    'timeout',
    'decide_twice',
  ),
});

async function playScenario(index: number, turns: TurnSpec[]): Promise<void> {
  const id = h.newConversationId(`prop${index}`);
  const tag = `[${id}]`;
  scripts.set(tag, turns);
  for (const [t, turn] of turns.entries()) {
    const messageId = await h.client.sendMessage(id, `${tag} turn ${t}`, {
      input: { approvalTimeoutMs: APPROVAL_TIMEOUT_MS },
    });
    const needsPerson = turn.calls.includes('approval');
    // The approval timeout is short: under load it can pass before a query sees the call waiting.
    // The person then had no chance to act; the rest of the property still holds.
    const waiting = async () => {
      const state = await h.client.state(id);
      const finished = state.recentTurns.some((r) => r.messageIds.includes(messageId));
      return state.pendingApprovals.length > 0 || finished ? state : undefined;
    };
    let pending: Awaited<ReturnType<typeof h.client.state>>['pendingApprovals'] = [];
    if (needsPerson) {
      await expect.poll(waiting, { timeout: 20_000 }).toBeDefined();
      pending = (await waiting())?.pendingApprovals ?? [];
    }
    if (needsPerson && pending.length > 0) {
      switch (turn.action) {
        case 'approve_all':
          await h.client.signalDecision(id, { decision: 'approve' });
          break;
        case 'reject_all':
          await h.client.signalDecision(id, { decision: 'reject', reason: 'no' });
          break;
        case 'approve_first':
          await h.client.signalDecision(id, { decision: 'approve', toolCallId: pending[0].toolCallId });
          await h.client.signalDecision(id, { decision: 'reject' });
          break;
        case 'decide_twice':
          await h.client.signalDecision(id, {
            decisionId: `${id}-twice`,
            decision: 'reject',
            toolCallId: pending[0].toolCallId,
          });
          await h.client.signalDecision(id, {
            decisionId: `${id}-twice`,
            decision: 'reject',
            toolCallId: pending[0].toolCallId,
          });
          await h.client.signalDecision(id, { decision: 'approve' });
          break;
        case 'cancel':
          await h.client.cancelTurn(id);
          break;
        case 'interrupt':
          break; // the next turn's message interrupts this one
        case 'timeout':
          break; // let the approval time out
      }
    } else if (turn.action === 'cancel') {
      await h.client.cancelTurn(id);
    }
    if (turn.action !== 'interrupt' || !needsPerson || t === turns.length - 1) {
      if (turn.action === 'interrupt' && needsPerson) await h.client.cancelTurn(id, 'last turn');
      await h.client.waitForTurn(id, messageId, 30_000);
    }
  }
  await expect.poll(async () => (await h.client.state(id)).status, { timeout: 30_000 }).toMatch(/^(idle|failed)$/);

  const state = await h.client.state(id);
  expect(state.transcriptRepairs).toBe(0);
  expect(state.pendingApprovals).toEqual([]);
  const stored = await h.client.transcript(id);
  expect(pairingProblemsOf(stored.map((m) => m.message))).toEqual([]);
  // Each refund the transcript reports happened exactly once, under the key of its own call instance.
  const keys = await toolMessageKeys(h.pool, id);
  const reported = stored.flatMap(({ seq, message: m }) =>
    m.role === 'tool' && m.content.includes('"refund_id"')
      ? [{ key: keys.get(seq), refundId: String(JSON.parse(m.content).refund_id) }]
      : [],
  );
  expect(new Set(reported.map((r) => r.key)).size).toBe(reported.length);
  const applied = await h.pool.query<{ key: string; ids: string[] }>(
    'SELECT idempotency_key AS key, array_agg(id::text) AS ids FROM refunds WHERE idempotency_key = ANY($1) GROUP BY 1',
    [reported.map((r) => r.key)],
  );
  expect(new Map(applied.rows.map((r) => [r.key, r.ids]))).toEqual(new Map(reported.map((r) => [r.key, [r.refundId]])));
}

describe('the real workflow under random conversations (property, bounded sample)', () => {
  it('every conversation ends with a valid transcript and the model server never saw an invalid request', async () => {
    let played = 0;
    let turns = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(turnArbitrary, { minLength: 1, maxLength: 3 }), async (spec) => {
        await playScenario(played++, spec);
        turns += spec.length;
      }),
      { numRuns: SCENARIOS, endOnFailure: true },
    );
    h.expectOnlyValidModelRequests();
    console.log(
      `workflow property: ${played} conversations, ${turns} turns, ${h.model.requests.length} model requests, ` +
        `${h.model.invalidRequests().length} invalid`,
    );
  });
});
