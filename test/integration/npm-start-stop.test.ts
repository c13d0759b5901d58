import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/common/free-port';
import { alive, commandLine, descendants, newDataFolder, removeDataFolders } from '../support/npm-start';
import { NOTHING_CONFIGURED } from '../support/worker-process';

// A stop at any moment of `npm start` ends cleanly: exit code 0, no uncaught error or stack trace, and every process
// it started (the Temporal dev server, PostgreSQL, the bundler) gone. Ctrl-C in a terminal reaches the whole
// foreground process group (npm, the worker, Temporal, PostgreSQL, tsx's esbuild at once), and npm forwards it to the
// worker a second time; a service manager signals npm alone, and then only the worker can stop the rest. Both are
// tried, at each phase of the start: one data folder, so the first tries pay for its set-up and the later ones start
// the way a developer's second start does.

const ROOT = path.join(__dirname, '..', '..');

afterAll(removeDataFolders);

/** When to stop: this many milliseconds after the spawn, or once the output matches. */
type Moment = number | RegExp;

/** Ctrl-C in a terminal (SIGINT to the process group), or a service manager's SIGTERM to npm alone. */
type How = 'ctrl-c' | 'sigterm-to-npm';

interface Stopped {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  started: string[];
  leftBehind: string[];
  /** Whether the stop was sent (the moment came before the start ended by itself). */
  sent: boolean;
}

/** Runs `npm start` with nothing configured, stops it at `moment`, and waits until it exited and what it started is gone. */
async function startAndStop(
  dataDir: string,
  moment: Moment,
  how: How,
  during?: (stdout: string) => Promise<void>,
): Promise<Stopped> {
  const env = {
    ...process.env,
    ...NOTHING_CONFIGURED,
    AGENT_DATA_DIR: dataDir,
    AGENT_API_PORT: '0',
    AGENT_METRICS_ADDRESS: `127.0.0.1:${await freePort()}`,
    TEMPORAL_UI_PORT: String(await freePort()),
    // The moments are found in the debug log: PostgreSQL's own lines among them.
    LOG_LEVEL: 'debug',
  };
  // Its own process group, as a terminal's foreground job.
  const child = spawn('npm', ['start'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let stdout = '';
  let stderr = '';
  const seen = new Set<number>();
  const watch = setInterval(() => descendants(child.pid!).forEach((pid) => seen.add(pid)), 50);
  let sent = false;
  const send = (): void => {
    if (sent || child.exitCode !== null || child.signalCode !== null) return;
    sent = true;
    descendants(child.pid!).forEach((pid) => seen.add(pid));
    if (how === 'ctrl-c') process.kill(-child.pid!, 'SIGINT');
    else child.kill('SIGTERM');
  };
  let duringDone: Promise<void> | undefined;
  const check = (): void => {
    if (typeof moment === 'number' || sent || duringDone) return;
    if (!moment.test(stdout + stderr)) return;
    duringDone = (during ? during(stdout) : Promise.resolve()).then(send, send);
  };
  child.stdout!.on('data', (chunk) => {
    stdout += String(chunk);
    check();
  });
  child.stderr!.on('data', (chunk) => {
    stderr += String(chunk);
    check();
  });
  const timer = typeof moment === 'number' ? setTimeout(send, moment) : undefined;
  const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.once('exit', (code, signal) => resolve([code, signal])),
  );
  const killer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 60_000);
  const [code, signal] = await exited;
  clearTimeout(killer);
  clearTimeout(timer);
  clearInterval(watch);
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && [...seen].some(alive)) await new Promise((resolve) => setTimeout(resolve, 100));
  const started = [...seen].map((pid) => `${pid} ${commandLine(pid).slice(0, 120)}`);
  const leftBehind = [...seen].filter(alive).map((pid) => `${pid} ${commandLine(pid).slice(0, 160)}`);
  for (const pid of [...seen].filter(alive)) process.kill(pid, 'SIGKILL');
  return { code, signal, stdout, stderr, started, leftBehind, sent };
}

/**
 * What a clean stop must not print: an uncaught error or a stack trace on stderr (the dev server's own log lines,
 * `time=… level=…`, are its shutdown's, not ours), or an error from the worker's log on stdout.
 */
function crashes(stopped: Stopped): string[] {
  const ours = stopped.stderr.split('\n').filter((line) => !/^time=\S+ level=/.test(line));
  return [
    ...ours.filter((line) => /Error\b|Uncaught|triggerUncaughtException|^\s+at \S.*:\d+:\d+\)?$/.test(line)),
    ...stopped.stdout.split('\n').filter((line) => /^\{"level":(50|60)\b/.test(line)),
  ];
}

/** The token of the local development requester, and the API's address, once the banner is out. */
function apiOf(dataDir: string): { url: string; headers: Record<string, string> } {
  const runtime = JSON.parse(fs.readFileSync(path.join(dataDir, 'runtime.json'), 'utf8')) as { apiUrl: string };
  const [requester] = JSON.parse(fs.readFileSync(path.join(dataDir, 'api-tokens.json'), 'utf8')) as {
    token: string;
  }[];
  return {
    url: runtime.apiUrl,
    headers: { authorization: `Bearer ${requester.token}`, 'content-type': 'application/json' },
  };
}

const BANNER = /Press Ctrl-C to stop\./;

describe('npm start stopped at any moment', () => {
  const dataDir = newDataFolder(0o755, 'agent-npm-start-stop-');

  // In order: the first tries set the data folder up (PostgreSQL's cluster, the workflow bundle, the migrations).
  const tries: [string, Moment, How][] = [
    ['right after the spawn', 0, 'ctrl-c'],
    ['while npm starts the worker', /> durable-agent-worker@[^\n]+ start\n/, 'ctrl-c'],
    ['once the Temporal dev server is up, while PostgreSQL starts', /Temporal Server:\s+\S+:\d+/, 'sigterm-to-npm'],
    ['once PostgreSQL is up', /database system is ready to accept connections/, 'ctrl-c'],
    ['while the worker is prepared (migrations)', /"msg":"applied database migrations"/, 'ctrl-c'],
    ['right after the banner', BANNER, 'ctrl-c'],
    ['right after the banner, npm alone', BANNER, 'sigterm-to-npm'],
  ];

  it.each(tries)('%s', async (_phase, moment, how) => {
    const stopped = await startAndStop(dataDir, moment, how);
    expect(stopped.sent).toBe(true);
    expect(crashes(stopped)).toEqual([]);
    expect(stopped.leftBehind).toEqual([]);
    if (how === 'ctrl-c' && stopped.signal === 'SIGINT') {
      // Before the worker's handlers are installed, npm and node end by the signal itself (a shell says 130), and
      // only then: nothing had started.
      expect(stopped.stdout).not.toMatch(/stopping:/);
      expect(stopped.started.join('\n')).not.toMatch(/temporal|postgres/);
    } else {
      expect({ code: stopped.code, signal: stopped.signal }).toEqual({ code: 0, signal: null });
    }
  });

  it('while a turn runs', async () => {
    let conversation = '';
    const stopped = await startAndStop(dataDir, BANNER, 'ctrl-c', async () => {
      const api = apiOf(dataDir);
      conversation = `stop-${Date.now()}`;
      const sent = await fetch(`${api.url}/v1/conversations/${conversation}/messages`, {
        method: 'POST',
        headers: api.headers,
        body: JSON.stringify({ text: 'find Ada' }),
      });
      expect(sent.status).toBe(202);
    });
    expect(crashes(stopped)).toEqual([]);
    expect(stopped.leftBehind).toEqual([]);
    expect({ code: stopped.code, signal: stopped.signal }).toEqual({ code: 0, signal: null });
    expect(stopped.stdout).toMatch(/"msg":"worker stopped"/);
  });
});
