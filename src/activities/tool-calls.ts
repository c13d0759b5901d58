/** Checking a tool call the model made against the registry, before anything runs. */
import { z } from 'zod';
import type { Tool } from '../tools/tool';
import type { ToolRegistry } from '../tools/registry';

/** A call that can run: the tool and its validated arguments. */
export interface CheckedToolCall {
  ok: true;
  tool: Tool;
  args: unknown;
}

/** A call that cannot run, and why, in words for the model. */
export interface RejectedToolCall {
  ok: false;
  reason: 'unknown_tool' | 'invalid_arguments';
  message: string;
}

/** Resolves the tool and parses and validates the arguments (`""` counts as `{}`). */
export function checkToolCall(
  registry: ToolRegistry,
  allowed: readonly string[] | undefined,
  name: string,
  rawArguments: string,
): CheckedToolCall | RejectedToolCall {
  const tool = registry.get(name);
  const offered = allowed ? allowed.filter((n) => registry.get(n)) : registry.names();
  if (!tool || (allowed && !allowed.includes(name))) {
    return {
      ok: false,
      reason: 'unknown_tool',
      message: `Unknown tool "${name}". Available tools: ${offered.join(', ') || '(none)'}.`,
    };
  }
  let parsed: unknown;
  try {
    parsed = rawArguments.trim() === '' ? {} : JSON.parse(rawArguments);
  } catch (err) {
    return {
      ok: false,
      reason: 'invalid_arguments',
      message: `Arguments for ${name} are not valid JSON (${(err as Error).message}). Send a JSON object matching the tool's schema.`,
    };
  }
  const result = tool.parameters.safeParse(parsed);
  if (!result.success) {
    return {
      ok: false,
      reason: 'invalid_arguments',
      message: `Arguments for ${name} do not match its schema:\n${z.prettifyError(result.error)}`,
    };
  }
  return { ok: true, tool, args: result.data };
}
