/** Runs the project's CLI (`src/cli/cli.ts`) as a user would, and returns what it printed. */
import { execFile } from 'node:child_process';
import path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');

/**
 * Runs `agent <args>` with `env` added (and `input` on its standard input); resolves with stdout and stderr, rejects on
 * a non-zero exit.
 */
export function runCli(
  args: string[],
  env: Record<string, string>,
  input?: string,
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      path.join(ROOT, 'node_modules', '.bin', 'tsx'),
      [path.join(ROOT, 'src', 'cli', 'cli.ts'), ...args],
      { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'warn', ...env }, timeout: 60_000 },
      (error, stdout, stderr) =>
        error ? reject(Object.assign(error, { stdout, stderr })) : resolve({ stdout, stderr }),
    );
    child.stdin?.end(input ?? '');
  });
}
