/**
 * `slow_export`, a tool that runs for a minute unless its call is cancelled:
 * what tests interrupt while a tool runs (cancel, a new message, a workflow
 * cancel).
 */
import { z } from 'zod';
import { tool } from '../../src/tools/tool';

/** Whether the tool began and whether its cancellation reached it, for the test to read. */
export interface SlowExport {
  started: boolean;
  aborted: boolean;
}

/** A `slow_export` tool, and what it saw (reset `seen` fields between tests as needed). */
export function slowExportTool(): { tool: ReturnType<typeof tool>; seen: SlowExport } {
  const seen: SlowExport = { started: false, aborted: false };
  const slowExport = tool({
    name: 'slow_export',
    description: 'Exports everything; takes a long time.',
    parameters: z.object({}),
    async execute(_args, { signal }) {
      seen.started = true;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 60_000);
        signal.addEventListener('abort', () => {
          seen.aborted = true;
          clearTimeout(timer);
          resolve();
        });
      });
      return 'exported';
    },
  });
  return { tool: slowExport, seen };
}
