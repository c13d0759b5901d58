/**
 * Tools for the effect-unknown crash test, loaded by a real worker process
 * through AGENT_TOOLS_MODULE: the demo tools plus `send_letter`, a tool that
 * is not idempotent (it writes without `context.once`). It writes its letter,
 * leaves a marker file (LETTER_MARKER_FILE) so the test knows it is running,
 * and then takes long to finish, so the test can kill its worker mid-run.
 * And `post_invoice`, idempotent with one attempt: it posts through
 * `context.once`, then its first run takes long.
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
      await db.query('INSERT INTO letters (customer_id, idempotency_key) VALUES ($1, $2)', [
        customer_id,
        idempotencyKey,
      ]);
      const marker = process.env.LETTER_MARKER_FILE;
      if (marker) fs.writeFileSync(marker, String(Date.now()));
      await sleep(60_000);
      return { sent: true };
    },
  }),
  tool({
    name: 'post_invoice',
    description: 'Post an invoice to a customer, once per call.',
    parameters: z.object({ customer_id: z.string() }),
    idempotent: true,
    maxAttempts: 1,
    async execute({ customer_id }, { once, idempotencyKey }) {
      // The effect commits first; then the first run takes long (its worker is killed meanwhile), a later one answers
      // at once.
      const posted = await once(async (tx) => {
        await tx.query('INSERT INTO letters (customer_id, idempotency_key) VALUES ($1, $2)', [
          customer_id,
          idempotencyKey,
        ]);
        return { posted: true };
      });
      const marker = process.env.LETTER_MARKER_FILE;
      if (marker && !fs.existsSync(marker)) {
        fs.writeFileSync(marker, String(Date.now()));
        await sleep(60_000);
      }
      return posted;
    },
  }),
];
