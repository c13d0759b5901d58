import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { workerNodeFlags, workerProcessEnv } from '../../src/app/worker-node-options';

const ROOT = path.join(__dirname, '..', '..');

describe('the worker process options', () => {
  it("are package.json's workerNodeOptions, which this Node accepts, and which npm start passes", () => {
    const flags = workerNodeFlags();
    expect(flags.some((flag) => flag.startsWith('--max-semi-space-size='))).toBe(true);
    const run = spawnSync(
      process.execPath,
      [...flags, '-e', 'process.stdout.write(JSON.stringify(process.execArgv))'],
      { encoding: 'utf8' },
    );
    expect(run.stderr).toBe('');
    expect((JSON.parse(run.stdout) as string[]).slice(0, flags.length)).toEqual(flags);
    const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(manifest.scripts.start).toContain('$npm_package_config_workerNodeOptions');
    expect(manifest.scripts.start).toContain(
      'MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX:-$npm_package_config_workerMallocArenaMax}',
    );
  });

  it('are none for a package.json without them', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'node-options-'));
    fs.writeFileSync(path.join(dir, 'package.json'), '{"name":"x"}');
    expect(workerNodeFlags(path.join(dir, 'package.json'))).toEqual([]);
    expect(workerProcessEnv({}, path.join(dir, 'package.json'))).toEqual({});
    fs.rmSync(dir, { recursive: true });
  });

  it('set MALLOC_ARENA_MAX to 2 unless the environment sets it', () => {
    expect(workerProcessEnv({})).toEqual({ MALLOC_ARENA_MAX: '2' });
    expect(workerProcessEnv({ MALLOC_ARENA_MAX: '8' })).toEqual({});
  });
});
