/** What the figures were measured on: machine, versions, commit. */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Stack } from './stack';

const ROOT = path.join(__dirname, '..', '..');

/** The machine and software of a run. */
export interface MachineInfo {
  cpuModel: string;
  cpuCount: number;
  totalMemoryGiB: number;
  kernel: string;
  node: string;
  temporalSdk: string;
  temporalCli: { path: string; version: string; devServerArgs: string[] };
  git: { commit?: string; uncommittedChanges?: boolean };
  /** 1, 5 and 15 minute load averages when the run began: other work on the machine skews every figure. */
  loadAverageAtStart: number[];
}

function git(args: string[]): string | undefined {
  try {
    return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

/** Collects the {@link MachineInfo} of this run. */
export function machineInfo(stack: Stack | undefined, loadAverageAtStart: number[]): MachineInfo {
  const sdk = JSON.parse(fs.readFileSync(require.resolve('@temporalio/worker/package.json'), 'utf8')) as {
    version: string;
  };
  const status = git(['status', '--porcelain']);
  return {
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    cpuCount: os.cpus().length,
    totalMemoryGiB: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    kernel: `${os.type()} ${os.release()}`,
    node: process.version,
    temporalSdk: sdk.version,
    temporalCli: {
      path: stack?.temporalInfo.cliPath ?? '',
      version: stack?.temporalInfo.version ?? '',
      devServerArgs: stack?.temporalInfo.args ?? [],
    },
    git: {
      commit: git(['rev-parse', 'HEAD']),
      uncommittedChanges: status === undefined ? undefined : status.length > 0,
    },
    loadAverageAtStart,
  };
}
