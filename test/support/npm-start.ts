/** Runs `npm start` (the real `src/main.ts`, through npm) as a user does, and stops it with SIGTERM as Ctrl-C would. */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { postgresDataDir } from '../../src/db/embedded-postgres';

const ROOT = path.join(__dirname, '..', '..');

/** A running `npm start`: the npm process and everything it printed so far. */
export interface NpmStart {
  child: ChildProcess;
  output(): string;
}

/**
 * Runs `npm start` (or `npm run <script>`, e.g. `start:compiled`) with `env`
 * added to the test's environment, until its banner; rejects when it exits
 * first or prints none within `readyTimeoutMs`.
 */
export async function npmStart(
  env: Record<string, string>,
  readyTimeoutMs = 150_000,
  script = 'start',
): Promise<NpmStart> {
  const child = spawn('npm', ['run', script], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += String(chunk)));
  child.stderr!.on('data', (chunk) => (output += String(chunk)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`npm run ${script} printed no banner within ${readyTimeoutMs / 1000} s:\n${output}`)),
      readyTimeoutMs,
    );
    const check = setInterval(() => {
      if (output.includes('Press Ctrl-C to stop.')) {
        clearInterval(check);
        clearTimeout(timer);
        resolve();
      }
    }, 200);
    child.once('exit', (code) => {
      clearInterval(check);
      clearTimeout(timer);
      reject(new Error(`npm run ${script} exited (${code}) before its banner:\n${output}`));
    });
  });
  return { child, output: () => output };
}

/** Every process below `pid`, from /proc. */
export function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  const found: number[] = [];
  const walk = (p: number) => {
    for (const child of children.get(p) ?? []) {
      found.push(child);
      walk(child);
    }
  };
  walk(pid);
  return found;
}

/** The command line of `pid`, its arguments joined by spaces; empty once it is gone. */
export function commandLine(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
  } catch {
    return '';
  }
}

/** True while `pid` runs (a zombie has exited; only its entry remains until its parent reaps it). */
export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return !/^\S+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

/**
 * Sends SIGTERM to npm and waits for it to exit; returns the exit code, the
 * processes it had started, and those of them still alive 10 s later.
 */
export async function stopWithSigterm(
  child: ChildProcess,
): Promise<{ code: number | null; started: number[]; leftBehind: string[] }> {
  const started = descendants(child.pid!);
  const exited =
    child.exitCode !== null
      ? Promise.resolve(child.exitCode)
      : new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  const code = await exited;
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && started.some(alive)) await new Promise((resolve) => setTimeout(resolve, 200));
  const leftBehind = started.filter(alive).map((pid) => `${pid} ${commandLine(pid).slice(0, 160)}`.trimEnd());
  return { code, started, leftBehind };
}

const dataFolders: string[] = [];

/**
 * A new data folder of the given mode for `npm start` (as root, embedded PostgreSQL keeps its cluster inside it only
 * when its user can enter it); {@link removeDataFolders} removes it and the cluster PostgreSQL kept elsewhere.
 */
export function newDataFolder(mode: number, prefix = 'agent-npm-start-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chmodSync(dir, mode);
  dataFolders.push(dir);
  return dir;
}

/** Removes every folder {@link newDataFolder} made, with the PostgreSQL cluster of each. */
export function removeDataFolders(): void {
  for (const dir of dataFolders.splice(0)) {
    const cluster = postgresDataDir(path.join(dir, 'postgres'), true);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(cluster, { recursive: true, force: true });
  }
}
