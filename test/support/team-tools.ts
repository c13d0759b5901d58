/**
 * A team's own tools, loaded by a worker process through AGENT_TOOLS_MODULE.
 * They use none of the back-office demo's tables, so a worker running them
 * sets up nothing in the database but the project's own tables. `remember`
 * goes through `once`, so its calls reach the tool ledger too.
 */
import { z } from 'zod';
import { tool, type Tool } from '../../src/tools/tool';

export const tools: Tool[] = [
  tool({
    name: 'remember',
    description: 'Remember a note for later.',
    parameters: z.object({ note: z.string().min(1).describe('What to remember') }),
    idempotent: true,
    async execute({ note }, { once }) {
      return once(async () => ({ remembered: note }));
    },
  }),
];
