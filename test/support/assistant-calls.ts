import type { ToolCallPlan } from '../../src/contract/activities';
import type { DecisionKind } from '../../src/contract';
import type { ChatMessage } from '../../src/contract/messages';

/** An assistant message asking for these calls, and a plan for each. */
export function assistantWithCalls(
  calls: {
    id: string;
    name?: string;
    needsApproval?: boolean;
    idempotent?: boolean;
    problem?: ToolCallPlan['problem'];
    handoff?: string;
    subAgent?: string;
    arguments?: string;
    decisions?: DecisionKind[];
    blocked?: ToolCallPlan['blocked'];
  }[],
): {
  message: Extract<ChatMessage, { role: 'assistant' }>;
  plans: ToolCallPlan[];
} {
  return {
    message: {
      role: 'assistant',
      content: null,
      tool_calls: calls.map((c) => ({
        id: c.id,
        type: 'function' as const,
        function: { name: c.name ?? 'tool', arguments: c.arguments ?? '{}' },
      })),
    },
    plans: calls.map((c) => ({
      toolCallId: c.id,
      name: c.name ?? 'tool',
      needsApproval: c.needsApproval ?? false,
      idempotent: c.idempotent ?? true,
      timeoutMs: 60_000,
      maxAttempts: 3,
      ...(c.problem ? { problem: c.problem } : {}),
      ...(c.handoff ? { handoff: c.handoff } : {}),
      ...(c.subAgent ? { subAgent: c.subAgent } : {}),
      ...(c.decisions ? { decisions: c.decisions } : {}),
      ...(c.blocked ? { blocked: c.blocked } : {}),
    })),
  };
}
