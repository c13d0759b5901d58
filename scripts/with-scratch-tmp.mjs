// Runs a command with the system temp folder pointed at a folder of its own
// (TMPDIR), and removes that folder when the command ends, however it ends:
// what the tests, their worker processes, PostgreSQL, the Temporal dev server
// and Chromium put in the temp folder never outlives the run.
//
//   node scripts/with-scratch-tmp.mjs vitest run
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const [command, ...args] = process.argv.slice(2);
if (!command) {
  process.stderr.write('usage: node scripts/with-scratch-tmp.mjs <command> [args...]\n');
  process.exit(2);
}
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-tests-'));
// Entered by anyone: as root, PostgreSQL runs as its own user and must reach its data below it.
fs.chmodSync(scratch, 0o755);
const child = spawn(command, args, { stdio: 'inherit', env: { ...process.env, TMPDIR: scratch } });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => {
  fs.rmSync(scratch, { recursive: true, force: true });
  process.exit(code ?? (signal ? 1 : 0));
});
