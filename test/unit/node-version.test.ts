import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { describeUnsupportedNode, MIN_NODE_VERSION } from '../../src/common/node-version';

// The worker, the API and the CLI refuse a Node.js older than 22.12 at once, naming the version they need.

const run = promisify(execFile);
const ROOT = path.join(__dirname, '..', '..');

/** Starts an entry point in a Node.js that says it is `version`; its exit code and stderr. */
async function startAs(version: string, entry: string): Promise<{ code: number; stderr: string }> {
  const script = `Object.defineProperty(process.versions, 'node', { value: ${JSON.stringify(version)} });
    require('tsx/cjs'); require(${JSON.stringify(path.join(ROOT, entry))});`;
  try {
    const { stderr } = await run(process.execPath, ['-e', script], { cwd: ROOT, timeout: 30_000 });
    return { code: 0, stderr };
  } catch (err) {
    const failed = err as { code: number; stderr: string };
    return { code: failed.code, stderr: failed.stderr };
  }
}

describe('the Node.js version check', () => {
  it('refuses 20.x and 22 before 22.12, naming the version needed and this one', () => {
    for (const version of ['20.20.2', '22.11.0', '18.19.1', 'v21.7.3']) {
      const problem = describeUnsupportedNode(version);
      expect(problem).toContain(`needs Node.js ${MIN_NODE_VERSION} or later; this is Node.js ${version}`);
      expect(problem).toContain('npm start');
    }
  });

  it('accepts 22.12 and later, 24.x among them', () => {
    for (const version of ['22.12.0', '22.20.1', '23.0.0', '24.21.0', 'v24.1.0', '25.0.0'])
      expect(describeUnsupportedNode(version)).toBeUndefined();
  });

  it('the CLI, the worker and the API stop on Node.js 20 with the message and status 1', async () => {
    for (const entry of ['src/cli/cli.ts', 'src/main.ts', 'src/app/api-main.ts']) {
      const { code, stderr } = await startAs('20.20.2', entry);
      expect(code, entry).toBe(1);
      expect(stderr, entry).toContain('needs Node.js 22.12.0 or later; this is Node.js 20.20.2');
    }
  });

  it('the CLI starts on 24.x (its help lists the commands)', async () => {
    const script = `Object.defineProperty(process.versions, 'node', { value: '24.21.0' });
      process.argv.push('--help'); require('tsx/cjs'); require(${JSON.stringify(path.join(ROOT, 'src/cli/cli.ts'))});`;
    const { stdout } = await run(process.execPath, ['-e', script], { cwd: ROOT, timeout: 30_000 });
    expect(stdout).toContain('fork');
  });
});
