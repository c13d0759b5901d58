/**
 * Tools for the effect-unknown crash test, loaded by a real worker process
 * through AGENT_TOOLS_MODULE: the demo tools plus `send_letter`, a tool that
 * is not idempotent (it writes without `context.once`). It writes its letter,
 * leaves a marker file (LETTER_MARKER_FILE) so the test knows it is running,
 * and then takes long to finish, so the test can kill its worker mid-run.
 */
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { backofficeTools } from '../../src/demo/tools';
import { tool, type Tool } from '../../src/tools/tool';

export const tools: Tool[] = [
  ...backofficeTools(),
  tool({
    name: 'send_letter',
    description: 'Post a letter to a customer.',
    parameters: z.object({ customer_id: z.string() }),
    idempotent: false,
    async execute({ customer_id }, { db, idempotencyKey }) {
      await db.query('INSERT INTO letters (customer_id, idempotency_key) VALUES ($1, $2)', [customer_id, idempotencyKey]);
      const marker = process.env.LETTER_MARKER_FILE;
      if (marker) fs.writeFileSync(marker, String(Date.now()));
      await sleep(60_000);
      return { sent: true };
    },
  }),
];
