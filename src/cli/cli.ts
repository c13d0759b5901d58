/**
 * The command line: `chat`, `say`, `retry`, `show`, `state`, `pending`,
 * `unknown-effects`, `approve`, `reject`, `respond`, `grants`, `revoke-grant`, `fork`, `cancel`, `end`,
 * `audit export`, `audit verify`, `events send`.
 * Finds Temporal and PostgreSQL from the environment, or from the runtime
 * file a running `npm start` writes; decides through the HTTP API of
 * AGENT_API_URL, or of the `npm start` running here for the same target
 * (docs/cli.md). Each group of commands is in `commands/`.
 */
import '../app/node-check';
import { Command } from 'commander';
import { addAuditCommands } from './commands/audit';
import { addChatCommand } from './commands/chat';
import { addDecisionCommands } from './commands/decide';
import { addEventCommands } from './commands/events';
import { addComeBackCommands } from './commands/come-back';
import { addForkCommand } from './commands/fork';
import { addGrantCommands } from './commands/grants';
import { addNotificationCommands } from './commands/notifications';
import { addPendingCommands } from './commands/pending';
import { addRetryCommand } from './commands/retry';
import { addSayCommand } from './commands/say';
import { addScheduleCommands } from './commands/schedules';
import { addShowCommands } from './commands/show';
import { addStopCommands } from './commands/stop';

const program = new Command()
  .name('agent')
  .description('Talk to the durable agent worker. Start the worker first with "npm start".');

// The order here is the order `--help` lists the commands in.
addChatCommand(program);
addSayCommand(program);
addRetryCommand(program);
addShowCommands(program);
addPendingCommands(program);
addDecisionCommands(program);
addGrantCommands(program);
addForkCommand(program);
addStopCommands(program);
addNotificationCommands(program);
addEventCommands(program);
addComeBackCommands(program);
addAuditCommands(program);
addScheduleCommands(program);

program.parseAsync().catch((err: Error) => {
  process.stderr.write(`error: ${err.message}\n`);
  process.exitCode = 1;
});
