import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { COMPILE_CACHE_FOLDER } from '../../src/app/compile-cache';

// The worker, the API and the CLI keep Node's compile cache in a private folder of the data folder
// (src/app/compile-cache.ts, imported first by each through src/app/node-check.ts). Shown with the CLI under tsx, as
// `npm run cli` runs it.

const run = promisify(execFile);
const ROOT = path.join(__dirname, '..', '..');
const folders: string[] = [];

afterEach(() => {
  for (const folder of folders.splice(0)) fs.rmSync(folder, { recursive: true, force: true });
});

function scratch(): string {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'compile-cache-test-'));
  folders.push(folder);
  return folder;
}

/** `agent --help` with `env` on top of this process's environment (without its compile cache switches). */
async function cliHelp(env: Record<string, string>): Promise<{ stdout: string; stderr: string }> {
  const base = { ...process.env };
  delete base.NODE_DISABLE_COMPILE_CACHE;
  delete base.NODE_COMPILE_CACHE;
  return run(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src', 'cli', 'cli.ts'), '--help'], {
    cwd: ROOT,
    env: { ...base, ...env },
    timeout: 60_000,
  });
}

/** Every file under `dir`. */
function filesUnder(dir: string): string[] {
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name));
}

describe('the compile cache', () => {
  it('is made private (0700) in the data folder, filled by a start, and read by the next', async () => {
    const dataDir = path.join(scratch(), 'data');
    const cache = path.join(dataDir, COMPILE_CACHE_FOLDER);

    const first = await cliHelp({ AGENT_DATA_DIR: dataDir });
    expect(first.stdout).toContain('fork');
    expect(fs.statSync(cache).mode & 0o777).toBe(0o700);
    // The data folder keeps its usual mode: embedded PostgreSQL, run as another user under root, must enter it.
    expect(fs.statSync(dataDir).mode & 0o777).toBe(0o777 & ~process.umask());
    const written = filesUnder(cache);
    expect(written.length).toBeGreaterThan(50);
    for (const file of written) expect(fs.statSync(file).mode & 0o077, file).toBe(0);

    // Node's own trace of the cache: the CLI's TypeScript modules, compiled by tsx, come from it the second time.
    const second = await cliHelp({ AGENT_DATA_DIR: dataDir, NODE_DEBUG_NATIVE: 'COMPILE_CACHE' });
    expect(second.stdout).toContain('fork');
    expect(second.stderr).toMatch(/V8 code cache for CommonJS \S+src\/cli\/commands\/chat\.ts was accepted/);
    expect(second.stderr).toMatch(/V8 code cache for CommonJS \S+node_modules\/commander\/\S+ was accepted/);
  });

  it('makes a folder that others could read private before it uses it', async () => {
    const dataDir = path.join(scratch(), 'data');
    const cache = path.join(dataDir, COMPILE_CACHE_FOLDER);
    fs.mkdirSync(cache, { recursive: true, mode: 0o755 });
    fs.chmodSync(cache, 0o755);

    await cliHelp({ AGENT_DATA_DIR: dataDir });
    expect(fs.statSync(cache).mode & 0o777).toBe(0o700);
    expect(filesUnder(cache).length).toBeGreaterThan(50);
  });

  it('is off with NODE_DISABLE_COMPILE_CACHE=1: no folder is made and the CLI still runs', async () => {
    const dataDir = path.join(scratch(), 'data');

    const { stdout, stderr } = await cliHelp({
      AGENT_DATA_DIR: dataDir,
      NODE_DISABLE_COMPILE_CACHE: '1',
      NODE_DEBUG_NATIVE: 'COMPILE_CACHE',
    });
    expect(stdout).toContain('fork');
    expect(fs.existsSync(path.join(dataDir, COMPILE_CACHE_FOLDER))).toBe(false);
    expect(stderr).not.toContain('was accepted');
  });
});
