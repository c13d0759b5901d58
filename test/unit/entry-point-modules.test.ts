import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

// What the CLI and the client really load, read from a child process's module
// cache: the CLI starts without the demo model or the scripted model server
// (they are the worker's, through app/services.ts), and a client that talks to
// Temporal alone loads no `pg` (it is imported by the first database read).

const ROOT = path.join(__dirname, '..', '..');

/**
 * Preloaded in the child: at exit, writes every module in the CommonJS cache (all of ours and `pg`'s) to
 * LOADED_MODULES_FILE.
 */
const REPORT_LOADED_MODULES = `data:text/javascript,${encodeURIComponent(`
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';
const cache = createRequire(process.cwd() + '/').cache;
process.on('exit', () => writeFileSync(process.env.LOADED_MODULES_FILE, JSON.stringify(Object.keys(cache))));
`)}`;

/** Runs node with `args` (after tsx) and returns the files it loaded, relative to the project. */
async function modulesLoadedBy(args: string[]): Promise<string[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'entry-point-modules-'));
  try {
    const file = path.join(dir, 'loaded.json');
    await promisify(execFile)(process.execPath, ['--import', REPORT_LOADED_MODULES, '--import', 'tsx', ...args], {
      cwd: ROOT,
      env: { ...process.env, LOADED_MODULES_FILE: file },
    });
    const loaded = JSON.parse(fs.readFileSync(file, 'utf8')) as string[];
    return loaded.map((f) => path.relative(ROOT, f).split(path.sep).join('/')).sort();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const demoOrTesting = (f: string) => f.startsWith('src/demo/') || f.startsWith('src/testing/');
const pg = (f: string) => /(^|\/)node_modules\/pg(-[a-z]+)?\//.test(f);

describe('what the CLI and the client load', () => {
  it('the CLI starts (--help) without loading the demo model or the scripted model server', async () => {
    const loaded = await modulesLoadedBy(['src/cli/cli.ts', '--help']);
    // The report sees the CLI's own modules, so an empty list below is not an empty report.
    expect(loaded).toEqual(
      expect.arrayContaining(['src/cli/cli.ts', 'src/client/client.ts', 'src/app/runtime-file.ts']),
    );
    expect(loaded.filter(demoOrTesting)).toEqual([]);
  });

  it('a client given a database URL but only talking to Temporal loads no pg, nor the demo or the scripted model server', async () => {
    const script = `
      const { AgentClient } = require('./src/client/index.ts');
      const { Client, Connection } = require('@temporalio/client');
      const temporal = new Client({ connection: Connection.lazy({ address: '127.0.0.1:7233' }) });
      const client = AgentClient.fromClient(temporal, { databaseUrl: 'postgres://agent@127.0.0.1:5432/agent' });
      client.close();
    `;
    const loaded = await modulesLoadedBy(['-e', script]);
    expect(loaded).toEqual(expect.arrayContaining(['src/client/index.ts', 'src/client/client.ts']));
    expect(loaded.some((f) => f.includes('node_modules/@temporalio/client/'))).toBe(true);
    expect(loaded.filter(pg)).toEqual([]);
    expect(loaded.filter(demoOrTesting)).toEqual([]);
  });
});
