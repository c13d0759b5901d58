/**
 * Saving a test's conversation history as a replay fixture. Only when
 * `RECORD_FIXTURES_DIR` is set (e.g. `RECORD_FIXTURES_DIR=test/fixtures/histories
 * npx vitest run test/integration/decision-deadline-crash.test.ts`): histories a test alone can
 * produce, such as one begun by an earlier version of the workflow code.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';

/** Writes the history of the conversation's latest run to `<RECORD_FIXTURES_DIR>/<name>.json`, if that is set. */
export async function exportHistoryFixture(client: Client, workflowId: string, name: string): Promise<void> {
  const dir = process.env.RECORD_FIXTURES_DIR;
  if (!dir) return;
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, `${name}.json`), `${historyToJSON(history)}\n`);
}
