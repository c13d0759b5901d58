/**
 * `npm run replay -- --commit <rev> [--dir <folder>]`: replays recorded
 * workflow histories against the workflow code of a git revision (default:
 * the working tree). With histories recorded by the current code
 * (`RECORD_FIXTURES_DIR=/tmp/h npm run fixtures:record`) and `--commit` an
 * earlier revision, it shows whether a refactor of workflow code issues the
 * same commands as the code before it: a history the new code made that the
 * old code cannot replay means running workers of the old version and the new
 * one would disagree. Exit code 1 when any history fails.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Command } from 'commander';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { readHistoryFile } from '../src/testing/histories';

const ROOT = path.join(__dirname, '..');

const program = new Command()
  .name('npm run replay --')
  .description('Replay recorded workflow histories against the workflow code of a git revision.')
  .option('--commit <rev>', 'git revision whose src/ to replay against (default: the working tree)')
  .option('--dir <folder>', 'folder of history JSON files', path.join(ROOT, 'test', 'fixtures', 'histories'));

/** The workflow code of `rev` (or of the working tree), bundled as its workers bundle it. */
async function bundleAt(rev: string | undefined) {
  let srcRoot = ROOT;
  if (rev) {
    srcRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-replay-'));
    execFileSync('tar', ['-x', '-C', srcRoot], {
      input: execFileSync('git', ['-C', ROOT, 'archive', '--format=tar', rev, 'src']),
    });
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(srcRoot, 'node_modules'), 'dir');
  }
  const quiet = () => undefined;
  try {
    return await bundleWorkflowCode({
      workflowsPath: path.join(srcRoot, 'src', 'workflows', 'index.ts'),
      workflowInterceptorModules: [path.join(srcRoot, 'src', 'workflows', 'interceptors.ts')],
      logger: { log: quiet, trace: quiet, debug: quiet, info: quiet, warn: quiet, error: console.error },
    });
  } finally {
    if (rev) fs.rmSync(srcRoot, { recursive: true, force: true }); // the bundle is in memory
  }
}

async function main(): Promise<number> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const { commit, dir } = program.parse().opts<{ commit?: string; dir: string }>();
  if (!fs.existsSync(dir))
    throw new Error(`No folder ${dir}; record histories first (RECORD_FIXTURES_DIR=${dir} npm run fixtures:record).`);
  const files = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort();
  if (files.length === 0) throw new Error(`${dir} holds no history JSON files.`);
  const workflowBundle = await bundleAt(commit);
  const fileOf = new Map<string, string>();
  const histories = files.map((file) => {
    const recorded = readHistoryFile(path.join(dir, file));
    fileOf.set(recorded.workflowId, file);
    return recorded;
  });
  let failed = 0;
  for await (const result of Worker.runReplayHistories({ workflowBundle }, histories)) {
    if (!result.error) continue;
    failed++;
    console.log(`FAILED ${fileOf.get(result.workflowId) ?? result.workflowId}: ${result.error.message}`);
  }
  console.log(
    `${files.length - failed} of ${files.length} histories in ${dir} replay against ${commit ?? 'the working tree'}`,
  );
  return failed === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
