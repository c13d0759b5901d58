/**
 * Tools of the chaos run's worker processes, loaded through AGENT_TOOLS_MODULE:
 * the demo back-office tools plus `check_stock`, a tool on a flaky warehouse
 * system. It is slow (so worker kills land while it runs), fails now and then
 * (a transient error Temporal retries, or a permanent `ToolError`), and when it
 * succeeds it writes one `chaos_effects` row through `context.once`, a second
 * side effect whose once-ness the run checks. Each failure is recorded in
 * `chaos_faults` before it is thrown, so the run can count what it injected.
 *
 * `export_orders` answers with a result of the size asked for (megabytes,
 * near and over Temporal's 2 MB payload limit), the first line saying how
 * long it is, so the checks can tell a result kept whole from one cut.
 *
 * Whether an attempt fails depends only on CHAOS_SEED, the idempotency key and
 * the attempt number, so a seed replays the same failures; except for the SKU
 * FAIL_FIRST_SKU, whose call fails until one failure is on record.
 *
 * `agents`: the run's two agents, for the conversations that name one.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { backofficeTools } from '../../src/demo/tools';
import { tool, ToolError, type Tool, type ToolContext } from '../../src/tools/tool';
import { agent, type Agent } from '../../src/tools/agents';
import { unitFromText } from './random';

/** The SKU whose call fails once, whatever the seed: how the run makes sure a tool failure happens. */
export const FAIL_FIRST_SKU = 'chaos-fail-first';

const seed = process.env.CHAOS_SEED ?? '0';

async function recordFault(context: ToolContext, detail: string): Promise<void> {
  await context.db.query('INSERT INTO chaos_faults (kind, idempotency_key, attempt, detail) VALUES ($1, $2, $3, $4)', [
    'tool_failure',
    context.idempotencyKey,
    context.attempt,
    detail,
  ]);
}

const checkStock = tool({
  name: 'check_stock',
  description: 'Check how many units of a SKU the warehouse has. The warehouse system is slow and sometimes fails.',
  parameters: z.object({ sku: z.string().min(1).describe('Stock keeping unit, e.g. gear-42') }),
  maxAttempts: 3,
  async execute({ sku }, context) {
    const r = unitFromText(`${seed}/${context.idempotencyKey}/${context.attempt}`);
    await sleep(200 + Math.floor(r * 1300), undefined, { signal: context.signal });
    if (sku === FAIL_FIRST_SKU) {
      // Fails until one failure is on record (an attempt cut short by a worker kill records none).
      const { rows } = await context.db.query('SELECT 1 FROM chaos_faults WHERE idempotency_key = $1', [
        context.idempotencyKey,
      ]);
      if (rows.length === 0) {
        await recordFault(context, 'transient (forced)');
        throw new Error('The warehouse system timed out (chaos: forced failure).');
      }
    }
    if (r < 0.25) {
      await recordFault(context, 'transient');
      throw new Error('The warehouse system timed out (chaos: transient failure).');
    }
    if (r < 0.33) {
      await recordFault(context, 'permanent');
      throw new ToolError(`The warehouse does not know SKU ${sku} (chaos: permanent failure).`);
    }
    return context.once(async (tx) => {
      await tx.query('INSERT INTO chaos_effects (idempotency_key, sku) VALUES ($1, $2)', [context.idempotencyKey, sku]);
      return { sku, units: Math.floor(r * 100) };
    });
  },
});

/** The first line of an export of `kilobytes` KB. */
export function exportHeader(kilobytes: number): string {
  return `EXPORT ${kilobytes * 1024} characters\n`;
}

const exportOrders = tool({
  name: 'export_orders',
  description: 'Export every order as CSV lines, `kilobytes` KB of them.',
  parameters: z.object({ kilobytes: z.number().int().min(1).max(8_192) }),
  idempotent: true,
  maxAttempts: 3,
  execute({ kilobytes }) {
    const header = exportHeader(kilobytes);
    const line = 'ord_chaos_1,cus_chaos,shipped,2000000000\n';
    return (header + line.repeat(Math.ceil((kilobytes * 1024) / line.length))).slice(0, kilobytes * 1024);
  },
});

export const tools: Tool[] = [...backofficeTools(), checkStock, exportOrders];

/**
 * Two agents with every tool, each handing off to the other, the front desk
 * also calling the back desk as a tool (a child conversation): conversations
 * that name `desk` (half of them) are with them; the others (the workers run
 * with AGENT_DEFAULT_AGENT=none) are one unnamed agent.
 */
const backdesk = agent({
  name: 'backdesk',
  instructions: 'You are the back desk of the chaos run.',
  tools,
  handoffs: ['desk'],
});
export const agents: Agent[] = [
  agent({
    name: 'desk',
    instructions: 'You are the front desk of the chaos run.',
    tools: [
      ...tools,
      backdesk.asTool({ toolName: 'ask_backdesk', toolDescription: 'Asks the back desk to do part of the work.' }),
    ],
    handoffs: ['backdesk'],
  }),
  backdesk,
];
