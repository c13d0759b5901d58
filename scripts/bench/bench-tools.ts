/**
 * The bench's tools, loaded by the worker process through `AGENT_TOOLS_MODULE`
 * (and called directly by the plain loop): a no-op that answers at once, and
 * one that needs a person's approval first.
 */
import { z } from 'zod';
import { tool } from '../../src/tools/tool';

/** Name of the no-op tool every bench step calls. */
export const NOOP_TOOL = 'bench_noop';
/** Name of the tool that waits for a person's approval. */
export const APPROVAL_TOOL = 'bench_approval';

/** Returns at once; reads nothing, writes nothing. */
export const noopTool = tool({
  name: NOOP_TOOL,
  description: 'Does nothing and answers at once.',
  parameters: z.object({ i: z.number().int() }),
  needsApproval: false,
  idempotent: true,
  execute: ({ i }) => ({ ok: true, i }),
});

/** Does nothing either, but only after a person approved the call. */
export const approvalTool = tool({
  name: APPROVAL_TOOL,
  description: 'Does nothing, once a person has approved it.',
  parameters: z.object({ i: z.number().int() }),
  needsApproval: true,
  idempotent: true,
  execute: ({ i }) => ({ approved: true, i }),
});

/** What `AGENT_TOOLS_MODULE` exports. */
export const tools = [noopTool, approvalTool];
