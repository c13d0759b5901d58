import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { postgresDataDir } from '../../src/db/embedded-postgres';
import { workflowBundleFingerprint } from '../../src/worker/workflow-bundle';
import { freePort } from '../../src/common/free-port';
import {
  commandLine,
  descendants,
  newDataFolder,
  npmStart,
  removeDataFolders,
  stopWithSigterm,
  type NpmStart,
} from '../support/npm-start';
import { NOTHING_CONFIGURED } from '../support/worker-process';

// `npm start` as a newcomer runs it, with nothing configured: embedded
// Temporal, PostgreSQL and the demo model, the HTTP API on a free port. A
// SIGTERM to npm stops every process it started; a second start on the same
// data folder still has the first one's transcripts; runtime.json (which holds
// the database's password) is readable by its owner only; the bundler's
// progress shows at LOG_LEVEL=debug only. `npm run start:compiled` runs the
// same worker compiled to JavaScript (`npm run build:app`), without tsx.

const ROOT = path.join(__dirname, '..', '..');

afterAll(removeDataFolders);

const dataFolder = (mode: number): string => newDataFolder(mode);

const run = promisify(execFile);

/**
 * Runs `npm start` (or `npm run <script>`) with nothing configured but `env` until its banner: the API on a free port,
 * the given log level.
 */
async function npmStartWithNothingConfigured(
  dataDir: string,
  logLevel: string,
  script = 'start',
  env: Record<string, string> = {},
): Promise<NpmStart> {
  const uiPort = await freePort();
  // Metrics on a free port: test files run at once, and the default 127.0.0.1:9464 could be taken.
  const metricsPort = await freePort();
  return npmStart(
    {
      ...NOTHING_CONFIGURED,
      AGENT_DATA_DIR: dataDir,
      AGENT_API_PORT: '0',
      AGENT_METRICS_ADDRESS: `127.0.0.1:${metricsPort}`,
      TEMPORAL_UI_PORT: String(uiPort),
      LOG_LEVEL: logLevel,
      ...env,
    },
    undefined,
    script,
  );
}

/**
 * Stops `npm start` with SIGTERM; returns the processes it had started (npm's shell, node, Temporal, PostgreSQL, …)
 * that are still alive 10 s later.
 */
async function stop(child: ChildProcess): Promise<string[]> {
  const stopped = await stopWithSigterm(child);
  expect(stopped.started.length).toBeGreaterThan(2);
  return stopped.leftBehind;
}

describe('npm start', () => {
  it.each([
    ['0700', 0o700],
    ['0755', 0o755],
  ])(
    'stops every process it started on SIGTERM, and a second start on the same data folder keeps the transcripts (data folder %s)',
    async (_mode, mode) => {
      const dataDir = dataFolder(mode);
      // At the default level the bundler's progress stays out of the way; at debug it is there.
      const first = await npmStartWithNothingConfigured(dataDir, 'info');
      const beforeBanner = first.output().split('Durable agent worker is running.')[0];
      expect(beforeBanner).not.toMatch(/Workflow bundle created|compiled successfully|webpack/);
      const runtimeFile = path.join(dataDir, 'runtime.json');
      expect(fs.statSync(runtimeFile).mode & 0o777).toBe(0o600);
      const runtime = JSON.parse(fs.readFileSync(runtimeFile, 'utf8')) as { apiUrl: string };
      const [requester] = JSON.parse(fs.readFileSync(path.join(dataDir, 'api-tokens.json'), 'utf8')) as {
        token: string;
      }[];
      const headers = { authorization: `Bearer ${requester.token}`, 'content-type': 'application/json' };
      const sent = await fetch(`${runtime.apiUrl}/v1/conversations/restart-1/messages`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ text: 'find Ada' }),
      });
      expect(sent.status).toBe(202);
      await expect
        .poll(
          async () =>
            (
              (await (await fetch(`${runtime.apiUrl}/v1/conversations/restart-1`, { headers })).json()) as {
                recentTurns: unknown[];
              }
            ).recentTurns.length,
          {
            timeout: 30_000,
          },
        )
        .toBe(1);

      // As root, the cluster sits in the data folder when PostgreSQL's user can enter it, else under /var/lib; never
      // under /tmp.
      const cluster = postgresDataDir(path.join(dataDir, 'postgres'), true);
      expect(fs.existsSync(path.join(cluster, 'PG_VERSION'))).toBe(true);
      if (mode === 0o755 || process.getuid?.() !== 0) expect(cluster).toBe(path.join(dataDir, 'postgres'));
      else expect(cluster.startsWith('/var/lib/durable-agent-worker/')).toBe(true);

      expect(await stop(first.child)).toEqual([]);
      // The first start left its bundle's fingerprint; sources that changed since (here, a fingerprint of others) make
      // the next start bundle again.
      const fingerprintFile = path.join(dataDir, 'workflow-bundle.fingerprint');
      expect(fs.readFileSync(fingerprintFile, 'utf8')).toBe(workflowBundleFingerprint());
      fs.writeFileSync(fingerprintFile, 'the sources of an earlier version');

      const second = await npmStartWithNothingConfigured(dataDir, 'debug');
      try {
        expect(second.output().split('Durable agent worker is running.')[0]).toMatch(
          /Workflow bundle created \{"size":"[\d.]+MB"\}/,
        );
        expect(second.output()).toMatch(/webpack [\d.]+ compiled successfully/);
        const again = JSON.parse(fs.readFileSync(runtimeFile, 'utf8')) as { apiUrl: string };
        const page = (await (
          await fetch(`${again.apiUrl}/v1/conversations/restart-1/transcript`, { headers })
        ).json()) as {
          messages: { message: { role: string; content: string | null } }[];
        };
        expect(page.messages[0].message).toEqual({ role: 'user', content: 'find Ada' });
        expect(page.messages.at(-1)?.message.role).toBe('assistant');
      } finally {
        expect(await stop(second.child)).toEqual([]);
      }
    },
  );

  it('refuses a bad LOG_LEVEL with the variable named, before starting anything', async () => {
    const dataDir = dataFolder(0o755);
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src', 'main.ts')], {
      cwd: ROOT,
      env: { ...process.env, ...NOTHING_CONFIGURED, AGENT_DATA_DIR: dataDir, LOG_LEVEL: 'bogus' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (chunk) => (stderr += String(chunk)));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(1);
    expect(stderr).toContain('LOG_LEVEL');
    expect(stderr).not.toMatch(/at .*pino|TypeError/);
    // Nothing started: only Node's compile cache of the modules loaded so far (src/app/compile-cache.ts) is there.
    expect(fs.readdirSync(dataDir)).toEqual(['compile-cache']);
  });

  it('npm run start:compiled refuses to start without a build or with one older than src/, then runs the worker npm run build:app compiled, without tsx, and answers (payload encryption on)', async () => {
    const build = path.join(ROOT, 'build');
    fs.rmSync(build, { recursive: true, force: true });
    const refused = await run('npm', ['run', 'start:compiled'], {
      cwd: ROOT,
      env: { ...process.env, ...NOTHING_CONFIGURED },
    }).catch((err: { code: number; stderr: string }) => err);
    expect(refused).toMatchObject({ code: 1 });
    expect((refused as { stderr: string }).stderr).toContain('build/main.js is missing: run npm run build:app first');

    await run('npm', ['run', 'build:app'], { cwd: ROOT });
    expect(fs.existsSync(path.join(build, 'main.js'))).toBe(true);

    // A build older than the sources is refused too: here the record says src/main.ts held something else at build
    // time.
    const recordFile = path.join(build, 'sources.json');
    const record = fs.readFileSync(recordFile, 'utf8');
    const older = JSON.parse(record) as { files: Record<string, string> };
    expect(Object.keys(older.files)).toEqual(
      expect.arrayContaining(['src/main.ts', 'src/workflows/conversation.ts', 'tsconfig.app.json']),
    );
    older.files['src/main.ts'] = '0'.repeat(64);
    fs.writeFileSync(recordFile, JSON.stringify(older));
    const stale = await run('npm', ['run', 'start:compiled'], {
      cwd: ROOT,
      env: { ...process.env, ...NOTHING_CONFIGURED },
    }).catch((err: { code: number; stderr: string }) => err);
    expect(stale).toMatchObject({ code: 1 });
    expect((stale as { stderr: string }).stderr).toContain(
      'build/ is older than the sources (src/main.ts changed since npm run build:app)',
    );
    fs.writeFileSync(recordFile, record);

    const dataDir = dataFolder(0o755);
    // Encrypted payloads: the workflow bundle then takes the codec's failure converter, a module only the worker names
    // by path.
    const payloadKey = `k1:${Buffer.alloc(32, 7).toString('base64')}`;
    const started = await npmStartWithNothingConfigured(dataDir, 'info', 'start:compiled', {
      AGENT_PAYLOAD_KEYS: payloadKey,
    });
    try {
      const commandLines = descendants(started.child.pid!).map(commandLine);
      const worker = commandLines.find((line) => line.includes(path.join('build', 'main.js')));
      expect(worker).toMatch(/--max-semi-space-size=\d+ --heap-growing-percent=\d+ build\/main\.js/);
      expect(commandLines.join('\n')).not.toContain('tsx');

      const runtime = JSON.parse(fs.readFileSync(path.join(dataDir, 'runtime.json'), 'utf8')) as { apiUrl: string };
      const [requester] = JSON.parse(fs.readFileSync(path.join(dataDir, 'api-tokens.json'), 'utf8')) as {
        token: string;
      }[];
      const headers = { authorization: `Bearer ${requester.token}`, 'content-type': 'application/json' };
      const sent = await fetch(`${runtime.apiUrl}/v1/conversations/compiled-1/messages`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ text: 'find Ada' }),
      });
      expect(sent.status).toBe(202);
      await expect
        .poll(
          async () => {
            const page = (await (
              await fetch(`${runtime.apiUrl}/v1/conversations/compiled-1/transcript`, { headers })
            ).json()) as {
              messages?: { message: { role: string; content: string | null } }[];
            };
            const last = page.messages?.at(-1)?.message;
            return last?.role === 'assistant' ? last.content : undefined;
          },
          { timeout: 30_000 },
        )
        .toContain('Ada Lovelace');
    } finally {
      expect(await stop(started.child)).toEqual([]);
    }
  });
});
