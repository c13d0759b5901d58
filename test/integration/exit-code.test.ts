import { execFile } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.join(__dirname, '..', '..');

describe('process exit codes', () => {
  it('loading embedded PostgreSQL does not turn a failing exit code into success', async () => {
    // embedded-postgres hooks process exit; a failing test run or start must still exit non-zero.
    const script = `require(${JSON.stringify(path.join(ROOT, 'src', 'db', 'embedded-postgres.ts'))}); process.exitCode = 3;`;
    const code = await new Promise<number | null>((resolve) => {
      execFile(path.join(ROOT, 'node_modules', '.bin', 'tsx'), ['-e', script], { cwd: ROOT }, (error) =>
        resolve(error ? ((error as { code?: number }).code ?? null) : 0),
      );
    });
    expect(code).toBe(3);
  });
});
