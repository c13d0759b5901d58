import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresDataDir } from '../../src/db/embedded-postgres';
import { freePort } from '../../src/common/free-port';
import { NOTHING_CONFIGURED, startWorkerProcess, type WorkerProcess } from '../support/worker-process';

const ROOT = path.join(__dirname, '..', '..');
const TSX = path.join(ROOT, 'node_modules', '.bin', 'tsx');

let dataDir: string;
let worker: WorkerProcess | undefined;
let uiPort: number;

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-demo-'));
  uiPort = await freePort();
  worker = await startWorkerProcess(
    { ...NOTHING_CONFIGURED, AGENT_DATA_DIR: dataDir, TEMPORAL_UI_PORT: String(uiPort) },
    120_000,
  );
});
afterAll(async () => {
  await worker?.stop('SIGKILL');
  // As root the embedded cluster may live outside the data folder (see postgresDataDir).
  const cluster = postgresDataDir(path.join(dataDir, 'postgres'), true);
  fs.rmSync(dataDir, { recursive: true, force: true });
  fs.rmSync(cluster, { recursive: true, force: true });
});

/** Runs the CLI's interactive `chat`, typing `lines` one after the other as each answer arrives. */
function chat(lines: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(TSX, [path.join(ROOT, 'src', 'cli', 'cli.ts'), 'chat', 'demo-conversation'], {
      cwd: ROOT,
      env: { ...process.env, ...NOTHING_CONFIGURED, AGENT_DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let output = '';
    let prompts = 0;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`chat did not finish:\n${output}`));
    }, 90_000);
    const onData = (chunk: Buffer): void => {
      output += String(chunk);
      const seen = output.split('you> ').length - 1;
      while (prompts < seen) {
        child.stdin.write(`${lines[prompts] ?? '/quit'}\n`);
        prompts++;
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (chunk) => (output += String(chunk)));
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(output);
      else reject(new Error(`chat exited with ${code}:\n${output}`));
    });
  });
}

describe('npm start with nothing configured', () => {
  it('starts Temporal, PostgreSQL and the offline demo model embedded, and says where they are', () => {
    const banner = worker!.output();
    expect(banner).toContain('embedded dev server');
    expect(banner).toContain(`Temporal UI  http://127.0.0.1:${uiPort}`);
    expect(banner).toContain('embedded PostgreSQL');
    expect(banner).toContain('[OFFLINE DEMO MODEL]');
    expect(fs.existsSync(path.join(dataDir, 'temporal.sqlite'))).toBe(true);
  });

  it('the CLI chat completes a demo conversation that calls a tool', async () => {
    const output = await chat(['find Ada', 'refund $7 on ord_1002 because the box was damaged', '/show']);
    expect(output).toContain('⚙ find_customer({"query":"Ada"})');
    expect(output).toContain('⚙ list_orders({"customer_id":"cus_ada"})');
    // The demo's triage agent has no refund tool: it hands the conversation to the refunds agent, which issues it.
    // The refunds agent asks the auditor (an agent called as a tool, in a conversation of its own) before it refunds.
    expect(output).toMatch(/⚙ audit_order\(\{"input":"Check order ord_1002 before a refund of 700 cents."\}\)/);
    expect(output).toMatch(/#\d+\s+assistant \(refunds\)\s+→ audit_order\(/);
    expect(output).toMatch(
      /⚙ transfer_to_refunds\(\{\}\)[\s\S]*⚙ issue_refund\(\{"order_id":"ord_1002","amount_cents":700,"reason":"the box was damaged"\}\)/,
    );
    expect(output).toMatch(
      /agent> \[offline demo model\] Here is what the tools returned:[\s\S]*"refunded_total_cents":700/,
    );
    expect(output).toMatch(/#\d+\s+tool\s+\[call_/);
    // /show names the agent of each answer: triage handed the refund to refunds.
    expect(output).toMatch(/#\d+\s+assistant \(triage\)\s+→ transfer_to_refunds\(\{\}\)/);
    expect(output).toMatch(/#\d+\s+assistant \(refunds\)\s+→ issue_refund\(/);
  });

  it('Ctrl-C stops the worker and the servers it started', async () => {
    const runtimeFile = path.join(dataDir, 'runtime.json');
    expect(fs.existsSync(runtimeFile)).toBe(true);
    const pid = worker!.child.pid!;
    await worker!.stop('SIGINT');
    worker = undefined;
    expect(fs.existsSync(runtimeFile)).toBe(false);
    expect(() => process.kill(pid, 0)).toThrow();
  });
});
