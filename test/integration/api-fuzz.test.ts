import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startApiServer } from '../../src/api/server';
import type { ScriptedReply } from '../../src/testing';
import { apiCaller, TEST_DECISION_KEY, TEST_TOKENS, token } from '../support/api';
import { startHarness, type Harness } from '../support/harness';

// schemathesis (PyPI, pinned in package.json, installed by
// scripts/ensure-schemathesis.sh) against the HTTP API on the real stack:
// a worker, the dev server, PostgreSQL and the scripted model. It reads
// /openapi.json and sends what the document allows and what it forbids, then
// chains operations through the document's links; every check is on, with the
// seed and counts of schemathesis.toml. Each role runs with its own token, so
// the refusals a role gets are checked too.

const ROOT = path.resolve(__dirname, '..', '..');
const ROLES: [role: string, bearer: string][] = [
  ['requester', token('a')],
  ['approver', token('b')],
  ['operator', token('c')],
  ['events', token('g')],
];

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
let schemathesis: string;
let reports: string;
beforeAll(async () => {
  // Installs the pinned version when it is missing (a newcomer running this file alone); prints where it is.
  const { stderr } = await promisify(execFile)('bash', [path.join(ROOT, 'scripts/ensure-schemathesis.sh')], {
    cwd: ROOT,
  });
  schemathesis = /^schemathesis: (\S+) /m.exec(stderr)![1];
  h = await startHarness({ decisionTrust: { keys: [TEST_DECISION_KEY] } });
  // The model answers whatever the fuzzer sends: a refund asked for waits for a decision, anything else is answered.
  h.model.setResponder((request): ScriptedReply => {
    const messages = ((request.body as { messages?: { role: string; content?: unknown }[] }).messages ?? []).filter(
      (m) => m.role !== 'system',
    );
    const last = messages.at(-1);
    if (last?.role === 'user' && typeof last.content === 'string' && last.content.includes('refund')) {
      return {
        toolCalls: [
          { name: 'issue_refund', arguments: { order_id: 'ord_1001', amount_cents: 15_000, reason: 'fuzzing' } },
        ],
      };
    }
    return { content: 'ok' };
  });
  api = await startApiServer({ client: h.client, tokens: TEST_TOKENS, decisions: { signingKey: TEST_DECISION_KEY } });
  reports = fs.mkdtempSync(path.join(os.tmpdir(), 'api-fuzz-'));
  // Calls waiting for a decision, so that approvers' links from the list to a decision have something to name.
  const call = apiCaller(() => api.url);
  for (const id of ['fuzz-refund-1', 'fuzz-refund-2'])
    await call('POST', `/v1/conversations/${id}/messages`, token('a'), { text: 'please refund ord_1001' });
  await vi.waitFor(
    async () => expect((await call('GET', '/v1/approvals', token('b'))).json.approvals).toHaveLength(2),
    { timeout: 20_000, interval: 200 },
  );
}, 300_000);
afterAll(async () => {
  await api?.stop();
  await h?.stop();
  if (reports) fs.rmSync(reports, { recursive: true, force: true });
});

/** One role's run: the exit code, its JUnit report's failures and errors, and the summary it printed. */
async function runSchemathesis(role: string, bearer: string) {
  const junit = path.join(reports, `${role}.xml`);
  const args = ['--config-file', path.join(ROOT, 'schemathesis.toml'), '--no-color', 'run', `${api.url}/openapi.json`];
  args.push('--header', `Authorization: Bearer ${bearer}`, '--report', 'junit', '--report-junit-path', junit);
  const child = spawn(schemathesis, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exitCode = await new Promise<number | null>((resolve) => child.on('close', resolve));
  const xml = fs.existsSync(junit) ? fs.readFileSync(junit, 'utf8') : '';
  const testcases = [...xml.matchAll(/<testcase name="([^"]*)"[^>]*?(?:\/>|>([\s\S]*?)<\/testcase>)/g)].map(
    ([, name, body]) => ({
      name: unescapeXml(name),
      problems: [...(body ?? '').matchAll(/<(failure|error)[^>]*?(?:message="([^"]*)")?[^>]*>([\s\S]*?)<\/\1>/g)].map(
        ([, kind, message, text]) => `${kind}: ${unescapeXml(message ?? '')}\n${unescapeXml(text)}`,
      ),
    }),
  );
  const summary = /Test cases:\s*\n\s*(.*)\n/.exec(output)?.[1] ?? '(no summary)';
  const took = /in ([\d.]+s) =+\s*$/m.exec(output)?.[1] ?? '?';
  const seed = /^Seed: (\d+)/m.exec(output)?.[1] ?? '?';
  return { exitCode, testcases, summary, took, seed, output };
}

function unescapeXml(text: string): string {
  return text
    .replace(/&#(\d+);/g, (_, code: string) => String.fromCodePoint(Number(code)))
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

describe('schemathesis finds no failure in the HTTP API', () => {
  it.each(ROLES)(
    'as the %s',
    async (role, bearer) => {
      const document = (await (await fetch(`${api.url}/openapi.json`)).json()) as {
        paths: Record<string, Record<string, unknown>>;
      };
      const operations = Object.entries(document.paths).flatMap(([route, methods]) =>
        Object.keys(methods).map((method) => `${method.toUpperCase()} ${route}`),
      );
      const run = await runSchemathesis(role, bearer);
      console.log(
        `schemathesis as the ${role}: ${run.summary}; ${run.testcases.length - 1} operations and the stateful phase in ${run.took}, seed ${run.seed}`,
      );
      const problems = run.testcases.flatMap((t) => t.problems.map((p) => `${t.name}: ${p}`));
      // Every operation was tested, and the stateful phase ran, so "no failure" means something.
      expect(run.testcases.map((t) => t.name).sort(), run.output.slice(-4000)).toEqual(
        [...operations, 'Stateful tests'].sort(),
      );
      expect({ exitCode: run.exitCode, problems }, run.output.slice(-8000)).toEqual({ exitCode: 0, problems: [] });
    },
    600_000,
  );
});
