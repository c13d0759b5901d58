import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/app/config';
import { startTraceExport, TRACING_PACKAGES } from '../../src/app/tracing-setup';
import { ConfigError } from '../../src/common/errors';
import { apiCaller, TEST_TOKENS, token } from '../support/api';
import { startHarness, type Harness } from '../support/harness';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

// The standalone worker (`npm start`, src/main.ts, run as its own process)
// exports traces over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set: one
// turn with an approval, sent and decided through the HTTP API, is one trace
// from the API client's start of the conversation through the workflow and
// its activities down to the agent's "model call" and "tool run" spans, and
// the spans still buffered when the worker stops reach the receiver. Without
// the endpoint (or with OTEL_TRACES_EXPORTER=none) nothing is sent and no
// tracing package is loaded. `npm run api` (src/app/api-main.ts) on its own makes
// the start span of each conversation it starts, and flushes it when stopped.

/** A span as an OTLP/HTTP receiver gets it, with its resource's service name. */
interface ReceivedSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes: Record<string, unknown>;
  service: unknown;
}

/** What an OTLP/HTTP receiver on 127.0.0.1 got. */
interface OtlpReceiver {
  /** Base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  url: string;
  requests: { method: string; path: string; contentType: string }[];
  spans(): ReceivedSpan[];
  close(): Promise<void>;
}

/** An OTLP attribute value (`{ stringValue }`, `{ intValue }`, …) as a plain value. */
function plain(value: Record<string, unknown> | undefined): unknown {
  if (!value) return undefined;
  if ('intValue' in value) return Number(value.intValue);
  if ('arrayValue' in value)
    return ((value.arrayValue as { values?: Record<string, unknown>[] }).values ?? []).map(plain);
  return Object.values(value)[0];
}

function attributes(list: { key: string; value: Record<string, unknown> }[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((a) => [a.key, plain(a.value)]));
}

/** A small OTLP/HTTP trace receiver that understands the JSON encoding (gzip or not) and answers 200. */
async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const requests: OtlpReceiver['requests'] = [];
  const spans: ReceivedSpan[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const contentType = String(req.headers['content-type'] ?? '');
      requests.push({ method: req.method ?? '', path: req.url ?? '', contentType });
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = zlib.gunzipSync(body);
      if (contentType.startsWith('application/json')) {
        const request = JSON.parse(body.toString('utf8')) as {
          resourceSpans?: { resource?: { attributes?: [] }; scopeSpans?: { spans?: Record<string, unknown>[] }[] }[];
        };
        for (const rs of request.resourceSpans ?? []) {
          const service = attributes(rs.resource?.attributes)['service.name'];
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              spans.push({
                name: s.name as string,
                traceId: s.traceId as string,
                spanId: s.spanId as string,
                parentSpanId: (s.parentSpanId as string | undefined) || undefined,
                attributes: attributes(s.attributes as []),
                service,
              });
            }
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    spans: () => [...spans],
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The chain of span names from `span` up to its trace's root (a parent never received ends it). */
function ancestry(span: ReceivedSpan, all: readonly ReceivedSpan[]): string[] {
  const byId = new Map(all.map((s) => [s.spanId, s]));
  const names: string[] = [];
  for (let at: ReceivedSpan | undefined = span; at; at = at.parentSpanId ? byId.get(at.parentSpanId) : undefined)
    names.push(at.name);
  return names;
}

/**
 * Node's preload that records, when the worker process exits, every module it loaded (its main thread's CommonJS
 * cache).
 */
const PRELOAD = `
const { isMainThread } = require('node:worker_threads');
if (isMainThread) {
  process.on('exit', () => {
    require('node:fs').writeFileSync(require('node:path').join(process.env.TEST_LOADED_MODULES_DIR, process.pid + '.json'), JSON.stringify(Object.keys(require.cache)));
  });
}
`;

let h: Harness;
let receiver: OtlpReceiver;
let scratch: string;
let tokensFile: string;
let preload: string;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  h = await startHarness({ worker: false });
  receiver = await startOtlpReceiver();
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-traces-'));
  // Known tokens: alice requests, bob approves (four eyes).
  tokensFile = path.join(scratch, 'api-tokens.json');
  fs.writeFileSync(tokensFile, JSON.stringify(TEST_TOKENS), { mode: 0o600 });
  preload = path.join(scratch, 'record-modules.cjs');
  fs.writeFileSync(preload, PRELOAD);
});

afterAll(async () => {
  for (const worker of workers) await worker.stop('SIGKILL');
  await receiver?.close();
  await h?.stop();
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
});

/**
 * Starts `src/main.ts` on the harness with `env`; returns it, its API's URL and where its loaded modules will be
 * listed.
 */
async function startWorker(
  env: Record<string, string>,
): Promise<{ worker: WorkerProcess; apiUrl: string; loadedModules: () => string[] }> {
  const modulesDir = fs.mkdtempSync(path.join(scratch, 'modules-'));
  const worker = await startWorkerProcess(
    {
      ...h.workerEnv({ OPENAI_MODEL: 'scripted-model' }),
      AGENT_API_TOKENS_FILE: tokensFile,
      // No OpenTelemetry setting of the environment the tests run in leaks in.
      OTEL_EXPORTER_OTLP_ENDPOINT: '',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '',
      OTEL_TRACES_EXPORTER: '',
      OTEL_SERVICE_NAME: '',
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${preload}`.trim(),
      TEST_LOADED_MODULES_DIR: modulesDir,
      ...env,
    },
    120_000,
  );
  workers.push(worker);
  const apiUrl = /HTTP API\s+(\S+)\/v1/.exec(worker.output())?.[1];
  expect(apiUrl, worker.output()).toBeDefined();
  const loadedModules = () =>
    JSON.parse(fs.readFileSync(path.join(modulesDir, `${worker.child.pid}.json`), 'utf8')) as string[];
  return { worker, apiUrl: apiUrl!, loadedModules };
}

/**
 * Sends a message through the API that makes the model ask for a refund needing approval, approves it as another
 * person, and waits for the answer.
 */
async function turnWithApproval(apiUrl: string, conversationId: string, toolCallId: string): Promise<void> {
  const call = apiCaller(() => apiUrl);
  h.model.enqueue(
    {
      toolCalls: [
        {
          id: toolCallId,
          name: 'issue_refund',
          arguments: { order_id: 'ord_2001', amount_cents: 12_000, reason: 'late delivery' },
        },
      ],
    },
    { content: 'Refunded 120.00.' },
  );
  const sent = await call('POST', `/v1/conversations/${conversationId}/messages`, token('a'), {
    text: 'Refund 120 on ord_2001',
  });
  expect(sent.status).toBe(202);
  // Polled slowly: each state request is a traced query, and the batch must not fill before the worker stops.
  await expect
    .poll(
      async () =>
        ((await call('GET', `/v1/conversations/${conversationId}`, token('b'))).json?.pendingApprovals ?? []).length,
      {
        timeout: 30_000,
        interval: 500,
      },
    )
    .toBe(1);
  const decided = await call('POST', `/v1/conversations/${conversationId}/decisions`, token('b'), {
    decision: 'approve',
    toolCallIds: [toolCallId],
  });
  expect(decided.status).toBe(200);
  expect((await h.client.waitForTurn(conversationId, sent.json.messageId, 30_000)).outcome).toBe('answered');
}

/** Path fragments of the tracing packages in Node's module cache. */
const TRACING_MODULE_PATHS = TRACING_PACKAGES.map((name) => `/node_modules/${name}/`);

describe('npm start exports traces over OTLP/HTTP', () => {
  it('one turn with an approval through the HTTP API is one trace: API client, workflow, activities, model calls and the tool run; flushed when the worker stops', async () => {
    const { worker, apiUrl, loadedModules } = await startWorker({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_SERVICE_NAME: 'agent-traces-test',
      // Nothing leaves before the worker stops: the last spans reach the receiver only if the stop flushes them.
      OTEL_BSP_SCHEDULE_DELAY: '600000',
      OTEL_BSP_MAX_QUEUE_SIZE: '8192',
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '8192',
    });
    expect(worker.output()).toContain(
      `  Traces       ${receiver.url}/v1/traces  (OTLP/HTTP, service agent-traces-test)`,
    );

    const id = h.newConversationId('traced');
    await turnWithApproval(apiUrl, id, 'call_tr1');
    // The workflow's span ends with the workflow: end the conversation.
    await h.client.end(id);
    await h.temporal.workflow.getHandle(id).result();
    expect(receiver.requests).toEqual([]);

    expect(await worker.stop('SIGTERM')).toBe(0);
    expect(receiver.requests.length).toBeGreaterThan(0);
    for (const request of receiver.requests)
      expect(request).toEqual({ method: 'POST', path: '/v1/traces', contentType: 'application/json' });
    expect(loadedModules().filter((file) => TRACING_MODULE_PATHS.some((p) => file.includes(p))).length).toBeGreaterThan(
      0,
    );

    const spans = receiver.spans();
    const ours = spans.filter((s) => s.attributes['agent.conversation_id'] === id);
    const models = ours.filter((s) => s.name === 'model call');
    const tools = ours.filter((s) => s.name === 'tool run');
    expect(ours.map((s) => s.name).sort()).toEqual(['model call', 'model call', 'tool run']);
    for (const span of models) {
      expect(span.attributes).toMatchObject({
        'agent.model': 'scripted-model',
        'agent.attempt': 1,
        'agent.streamed': true,
        'agent.outcome': 'ok',
      });
      expect(span.attributes['agent.prompt_tokens']).toBeGreaterThan(0);
      expect(span.attributes['agent.completion_tokens']).toBeGreaterThan(0);
    }
    expect(models.map((s) => s.attributes['agent.tool_calls']).sort()).toEqual([0, 1]);
    expect(tools[0].attributes).toMatchObject({
      'agent.tool': 'issue_refund',
      'agent.tool_call_id': 'call_tr1',
      'agent.outcome': 'ok',
      'agent.from_ledger': false,
    });

    // Parented as README "Traces" draws it, up to the start the API's client made, which roots the trace.
    const root = ['RunWorkflow:agentConversation', 'SignalWithStartWorkflow:agentConversation'];
    for (const span of models) {
      expect(ancestry(span, spans)).toEqual([
        'model call',
        'RunActivity:durableAgent.callModel',
        'StartActivity:durableAgent.callModel',
        ...root,
      ]);
    }
    expect(ancestry(tools[0], spans)).toEqual([
      'tool run',
      'RunActivity:durableAgent.runTool',
      'StartActivity:durableAgent.runTool',
      ...root,
    ]);
    const starts = spans.filter(
      (s) => s.name === 'SignalWithStartWorkflow:agentConversation' && s.attributes.temporalWorkflowId === id,
    );
    expect(starts).toHaveLength(1);
    expect(starts[0].parentSpanId).toBeUndefined();
    const trace = spans.filter((s) => s.traceId === starts[0].traceId);
    for (const span of ours) expect(span.traceId).toBe(starts[0].traceId);
    expect(trace.filter((s) => s.name === 'RunWorkflow:agentConversation')).toHaveLength(1);
    expect(trace.filter((s) => s.name === 'RunActivity:durableAgent.callModel')).toHaveLength(2);
    expect(trace.filter((s) => s.name === 'RunActivity:durableAgent.runTool')).toHaveLength(1);
    for (const span of trace.filter((s) => s.name.startsWith('RunActivity:')))
      expect(span.attributes.temporalWorkflowId).toBe(id);
    // The worker's spans and the workflow's (exported through Temporal's plugin) carry the configured service name.
    expect(new Set(trace.map((s) => s.service))).toEqual(new Set(['agent-traces-test']));
  }, 300_000);

  it.each([
    [
      "no OTLP endpoint is set (only other signals' endpoints)",
      {
        OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: 'RECEIVER',
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'RECEIVER',
        OTEL_SERVICE_NAME: 'agent-traces-test',
      },
    ],
    ['OTEL_TRACES_EXPORTER is none', { OTEL_EXPORTER_OTLP_ENDPOINT: 'RECEIVER', OTEL_TRACES_EXPORTER: 'none' }],
  ])(
    'sends nothing and loads no tracing package when %s',
    async (_case, variables) => {
      const before = receiver.requests.length;
      const env = Object.fromEntries(
        Object.entries(variables).map(([k, v]) => [k, v === 'RECEIVER' ? receiver.url : v]),
      );
      const { worker, apiUrl, loadedModules } = await startWorker(env);
      expect(worker.output()).toContain(
        '  Traces       off (set OTEL_EXPORTER_OTLP_ENDPOINT to export them over OTLP/HTTP)',
      );
      const id = h.newConversationId('untraced');
      await turnWithApproval(apiUrl, id, 'call_un1');
      expect(await worker.stop('SIGTERM')).toBe(0);
      expect(receiver.requests.slice(before)).toEqual([]);
      const loaded = loadedModules();
      expect(loaded.some((file) => file.includes('/node_modules/@temporalio/worker/'))).toBe(true);
      expect(loaded.filter((file) => TRACING_MODULE_PATHS.some((p) => file.includes(p)))).toEqual([]);
    },
    300_000,
  );
});

describe('npm run api exports traces over OTLP/HTTP', () => {
  it("a message sent through the API on its own is the start span of its conversation's trace, flushed when the API stops", async () => {
    const dataDir = fs.mkdtempSync(path.join(scratch, 'api-'));
    const id = h.newConversationId('api-traced');
    // A task queue no worker polls: the start is all this process traces.
    const env = {
      ...process.env,
      ...h.workerEnv({ TEMPORAL_TASK_QUEUE: `api-traces-${id}` }),
      AGENT_DATA_DIR: dataDir,
      AGENT_API_PORT: '0',
      AGENT_API_TOKENS_FILE: tokensFile,
      AGENT_DECISION_KEYS: `k1:${'s'.repeat(40)}`,
      LOG_LEVEL: 'warn',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '',
      OTEL_TRACES_EXPORTER: '',
      OTEL_SERVICE_NAME: 'agent-api-traces-test',
      OTEL_BSP_SCHEDULE_DELAY: '600000',
    };
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(__dirname, '..', '..', 'src', 'app', 'api-main.ts')],
      {
        cwd: path.join(__dirname, '..', '..'),
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (chunk) => (output += String(chunk)));
    child.stderr.on('data', (chunk) => (output += String(chunk)));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      await expect.poll(() => output, { timeout: 60_000, interval: 200 }).toMatch(/Traces: .*\.\n/);
      expect(output).toContain(`Traces: ${receiver.url}/v1/traces  (OTLP/HTTP, service agent-api-traces-test).`);
      const apiUrl = /HTTP API on (\S+)\/v1,/.exec(output)![1];
      const sent = await apiCaller(() => apiUrl)('POST', `/v1/conversations/${id}/messages`, token('a'), {
        text: 'Refund 120 on ord_2001',
      });
      expect(sent.status).toBe(202);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited, output).toBe(0);
    const starts = receiver.spans().filter((s) => s.attributes.temporalWorkflowId === id);
    expect(starts.map((s) => [s.name, s.parentSpanId, s.service])).toEqual([
      ['SignalWithStartWorkflow:agentConversation', undefined, 'agent-api-traces-test'],
    ]);
  }, 120_000);
});

describe('trace export settings', () => {
  it('read the standard variables: the shared endpoint gets v1/traces, the traces endpoint is used as given, none turns export off', () => {
    expect(loadConfig({}).traces).toBeUndefined();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).traces).toEqual({
      url: 'http://collector:4318/v1/traces',
      endpointVariable: 'OTEL_EXPORTER_OTLP_ENDPOINT',
      serviceName: 'durable-agent-worker',
    });
    expect(
      loadConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example.com/otlp',
        OTEL_SERVICE_NAME: 'agents',
      }).traces,
    ).toEqual({
      url: 'https://traces.example.com/otlp',
      endpointVariable: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
      serviceName: 'agents',
    });
    expect(
      loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' }).traces,
    ).toBeUndefined();
  });

  it('refuse what the worker cannot do, naming the variable and the way out', () => {
    const refusal = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as Error).message;
      }
      throw new Error(`accepted ${JSON.stringify(env)}`);
    };
    expect(refusal({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toContain(
      'OTEL_EXPORTER_OTLP_ENDPOINT: must be an http(s) URL',
    );
    expect(
      refusal({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
    ).toMatch(/OTEL_EXPORTER_OTLP_PROTOCOL: is "grpc", but .*OTLP\/HTTP.*port \(usually 4318\)/);
    expect(refusal({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'zipkin' })).toContain(
      'OTEL_TRACES_EXPORTER: is "zipkin", but npm start and npm run api export traces over OTLP only: set otlp (or leave it unset)',
    );
    // Without an endpoint the other variables ask for nothing the worker does.
    expect(loadConfig({ OTEL_TRACES_EXPORTER: 'zipkin', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }).traces).toBeUndefined();
  });

  it("a missing tracing package stops the start with the packages to install, at this repository's versions", () => {
    const settings = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }).traces!;
    const absent = ['@opentelemetry/exporter-trace-otlp-http', '@temporalio/interceptors-opentelemetry'];
    const resolve = (name: string): string => {
      if (absent.includes(name))
        throw Object.assign(new Error(`Cannot find module '${name}'`), { code: 'MODULE_NOT_FOUND' });
      return require.resolve(name);
    };
    const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
      devDependencies: Record<string, string>;
    };
    expect(() => startTraceExport(settings, resolve)).toThrow(ConfigError);
    expect(() => startTraceExport(settings, resolve)).toThrow(
      'OTEL_EXPORTER_OTLP_ENDPOINT asks for traces, but these packages are not installed: @opentelemetry/exporter-trace-otlp-http, @temporalio/interceptors-opentelemetry. ' +
        `Install them (npm install @opentelemetry/exporter-trace-otlp-http@${manifest.devDependencies['@opentelemetry/exporter-trace-otlp-http']} ` +
        `@temporalio/interceptors-opentelemetry@${manifest.devDependencies['@temporalio/interceptors-opentelemetry']}), ` +
        'or unset OTEL_EXPORTER_OTLP_ENDPOINT (or set OTEL_TRACES_EXPORTER=none) to run without traces.',
    );
  });
});
