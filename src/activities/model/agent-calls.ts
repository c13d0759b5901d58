/**
 * A call of an agent as a tool, as the model call's activity plans it: its
 * arguments checked (`{"input": ...}`, or the tool's `parameters`), and the
 * agent's task made from them by its `inputBuilder`, here where I/O is
 * allowed, once: the plan records the task, and the child conversation is
 * started with it.
 */
import { TOOL_ARGUMENTS_MAX_BYTES } from '../../contract/activities';
import { logger } from '../../common/logger';
import type { AgentTool } from '../../tools/agent-tool';
import { APPROVAL_CHECK_TIMEOUT_MS, type ToolCallContext } from '../../tools/call-context';
import { withinTime } from './call-checks';

/** The checked arguments and the task to record (absent: the task is the `input` argument, as before). */
export type AgentCallArguments = { ok: true; args: unknown; task?: string } | { ok: false; message: string };

/** Checks a call's arguments and makes the agent's task from them. */
export async function agentCallArguments(
  asTool: AgentTool,
  rawArguments: string,
  context: ToolCallContext,
): Promise<AgentCallArguments> {
  let parsed: unknown;
  try {
    parsed = rawArguments.trim() === '' ? {} : JSON.parse(rawArguments);
  } catch (err) {
    parsed = err;
  }
  const checked = checkArguments(asTool, rawArguments, parsed);
  if (!checked.ok) return checked;
  if (!asTool.inputBuilder && !asTool.arguments) return checked;
  const task = asTool.inputBuilder ? await builtTask(asTool, checked.args, context) : defaultTask(checked.args);
  if (typeof task !== 'string') return task;
  const bytes = Buffer.byteLength(task, 'utf8');
  if (task.trim() === '' || bytes > TOOL_ARGUMENTS_MAX_BYTES) {
    return {
      ok: false,
      message:
        `The task made for the ${asTool.agent} agent is ${task.trim() === '' ? 'empty' : `${bytes} bytes`}; ` +
        `it must say something, in at most ${TOOL_ARGUMENTS_MAX_BYTES} bytes. Call ${asTool.toolName} again with other arguments.`,
    };
  }
  return { ok: true, args: checked.args, task };
}

/** The arguments as the tool takes them: its `parameters`, else `{"input": "<text>"}`. */
function checkArguments(asTool: AgentTool, rawArguments: string, parsed: unknown): AgentCallArguments {
  const shape = asTool.arguments
    ? `arguments matching its schema: ${JSON.stringify(asTool.parametersSchema)}`
    : 'arguments {"input": "<the task, in words>"}';
  const refusal = (why: string): AgentCallArguments => ({
    ok: false,
    message: `${asTool.toolName} runs the ${asTool.agent} agent: ${why}Give ${shape}.`,
  });
  if (parsed instanceof Error) return refusal(`its arguments are not JSON (${parsed.message}). `);
  if (asTool.arguments) {
    const verdict = asTool.arguments.check(rawArguments.trim() === '' ? '{}' : rawArguments);
    return verdict.ok ? { ok: true, args: verdict.value } : refusal(`its arguments do not match: ${verdict.problem} `);
  }
  const input = (parsed as { input?: unknown } | null)?.input;
  return typeof input === 'string' && input.trim() !== '' ? { ok: true, args: parsed } : refusal('');
}

/** The task when `parameters` are declared without an `inputBuilder`: the arguments, as JSON, said to be the task. */
function defaultTask(args: unknown): string {
  return `You are called as a tool. Your task is given by these arguments (JSON):\n${JSON.stringify(args, null, 2)}`;
}

/**
 * The task `inputBuilder` makes, within {@link APPROVAL_CHECK_TIMEOUT_MS}.
 * One that throws, times out or returns no string leaves the call unrun, and
 * the model reads why (so it may call again with other arguments).
 */
async function builtTask(
  asTool: AgentTool,
  args: unknown,
  context: ToolCallContext,
): Promise<string | { ok: false; message: string }> {
  try {
    const task = await withinTime(
      (signal) => asTool.inputBuilder!(args, { ...context, signal }),
      context.signal,
      APPROVAL_CHECK_TIMEOUT_MS,
    );
    if (typeof task !== 'string') throw new Error(`it returned ${typeof task}, not the task as a string`);
    return task;
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    logger.warn(
      { conversationId: context.conversationId, toolCallId: context.toolCallId, toolName: asTool.toolName, err },
      `The inputBuilder of agent tool ${asTool.toolName} failed (${why}); the call was not run`,
    );
    return {
      ok: false,
      message: `The task for the ${asTool.agent} agent could not be made from these arguments: ${why}`,
    };
  }
}
