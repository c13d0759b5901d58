/**
 * Tools for crash tests, loaded by a real worker process through
 * AGENT_TOOLS_MODULE: the demo tools, where `issue_refund` kills its own
 * worker with SIGKILL right after its effect and ledger row committed, before
 * the activity can report completion. It does so once per marker file
 * (CRASH_MARKER_FILE), so the worker started after it runs normally. With
 * the demo's agents, and one that calls the refunds agent as a tool, for
 * conversations that name one.
 */
import fs from 'node:fs';
import { backofficeAgents, backofficeTools } from '../../src/demo/tools';
import { tool, type Tool } from '../../src/tools/tool';
import { agent } from '../../src/tools/agents';

const marker = process.env.CRASH_MARKER_FILE;

export const tools: Tool[] = backofficeTools().map((t) =>
  t.name !== 'issue_refund'
    ? t
    : tool({
        ...t,
        async execute(args, context) {
          const result = await t.execute(args, context);
          if (marker && !fs.existsSync(marker)) {
            fs.writeFileSync(marker, JSON.stringify({ killedAt: Date.now(), idempotencyKey: context.idempotencyKey }));
            process.kill(process.pid, 'SIGKILL');
          }
          return result;
        },
      }),
);

const demoAgents = backofficeAgents(tools);

/**
 * The demo's agents over these tools (conversations name one to use them), and `desk`, which calls the refunds agent as
 * a tool.
 */
export const agents = [
  ...demoAgents,
  agent({
    name: 'desk',
    instructions: 'You delegate refunds to the refunds agent.',
    tools: [demoAgents.find((a) => a.name === 'refunds')!.asTool({ toolName: 'ask_refunds' })],
  }),
];
