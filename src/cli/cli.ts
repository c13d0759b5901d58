/**
 * The command line: `chat`, `say`, `show`, `state`, `end`.
 * Finds Temporal and PostgreSQL from the environment, or from the runtime
 * file a running `npm start` writes; decides through the HTTP API of
 * AGENT_API_URL, or of the `npm start` running here for the same target
 * (docs/cli.md).
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { Command } from 'commander';
import { loadConfig } from '../app/config';
import { readRuntimeInfo } from '../app/services';
import { connectionOptions, EMBEDDED_DEV_SERVER, explainConnectionFailure } from '../app/temporal-connection';
import { isUnsignedRefusal } from '../common/decision-signing';
import { DecisionRefusedError } from '../common/errors';
import { decideThroughApi, findApiDecider, remoteApi, waitingThroughApi, type ApiDecider, type ApiPendingApproval } from './api-decisions';
import { sayThroughApi, stateThroughApi, transcriptThroughApi } from './api-conversation';
import { AgentClient } from '../client/client';
import type { DecisionKind } from '../contract';
import { formatTranscript } from './format';
import { LineQueue, readAll } from './lines';
import { findRunningApi, howToDecideThroughApi, type RunningApi } from './running-api';
import { resolveCliTarget } from './target';
import { StreamView } from '../client/stream';
import { encryptingDataConverter } from '../codec';

/** How long the CLI waits for a worker to answer a query. */
const CLI_QUERY_TIMEOUT_MS = 5_000;

async function connect(): Promise<AgentClient> {
  const config = loadConfig();
  const target = resolveCliTarget(config, process.env, readRuntimeInfo(config.dataDir));
  // A configured server gets the TLS, API key and metadata of Temporal's environment configuration;
  // the embedded dev server of a running `npm start` (found through its runtime file) takes plain connections.
  const settings = target.embedded ? EMBEDDED_DEV_SERVER : config.temporal.connection;
  return explainConnectionFailure(settings, target.temporalAddress, () =>
    AgentClient.connect({
      ...connectionOptions(settings),
      temporalAddress: target.temporalAddress,
      databaseUrl: target.databaseUrl,
      schema: target.schema,
      searchAttributes: target.searchAttributes,
      namespace: target.namespace,
      taskQueue: target.taskQueue,
      // A command never hangs on a conversation no worker answers for: it says so within seconds.
      queryTimeoutMs: CLI_QUERY_TIMEOUT_MS,
      // Nor on a server that does not answer.
      connectTimeoutMs: CLI_QUERY_TIMEOUT_MS,
      // The workers' payload keys: the CLI reads what they encrypted.
      dataConverter: encryptingDataConverter(config.payloadKeys),
    }),
  );
}

/** How long a decision waits for the conversation's worker before it is queued instead: the CLI answers within 5 s. */
const CLI_DECISION_WAIT_MS = 3_000;

/** What the CLI decided: the calls, as whom, and whether no worker answered so they wait in the conversation's history. */
interface CliDecision {
  calls: { decisionId?: string; toolCallId: string; callKey?: string; toolName: string; arguments: unknown }[];
  decidedBy?: string;
  queued: boolean;
  /** Sent without the HTTP API: workers that require signed decisions refuse it. */
  unsigned: boolean;
  /** When unsigned: what to set to decide through the API instead. */
  howToSign?: string;
}

/**
 * Decides calls: through the HTTP API when one is configured or running
 * (signed, under the token's subject), else with the client directly
 * (accepted only by workers that do not require signed decisions; a worker's
 * refusal of it says what to set to decide through the API). No call
 * named: every call waiting now, each named by its key, so a call that
 * appears later is not decided. When no worker answers within
 * {@link CLI_DECISION_WAIT_MS}, the decisions are queued: checked against
 * what the list of waiting calls says waits and sent as signals a worker applies later.
 */
async function decideCalls(
  conversationId: string,
  d: {
    decision: DecisionKind;
    toolCallId?: string;
    callKey?: string;
    reason?: string;
    decidedBy?: string;
    arguments?: Record<string, unknown>;
    response?: string;
  },
  client?: AgentClient,
): Promise<CliDecision> {
  const { running, api } = localApi();
  const { decision, reason } = d;
  const extra = { ...(d.arguments ? { arguments: d.arguments } : {}), ...(d.response !== undefined ? { response: d.response } : {}) };
  if (api) {
    const named = d.callKey
      ? { callKeys: [d.callKey] }
      : d.toolCallId
        ? { toolCallIds: [d.toolCallId] }
        : { callKeys: (await waitingThroughApi(api, conversationId)).map((p) => p.callKey) };
    if (named.callKeys?.length === 0) throw new Error(`No tool call is waiting for approval in conversation ${conversationId}. Nothing was decided.`);
    const outcome = await decideThroughApi(api, conversationId, { decision, ...named, reason, ...extra });
    return { calls: outcome.results, decidedBy: outcome.decidedBy, queued: outcome.queued, unsigned: false };
  }
  if (!client) return withClient((connected) => decideCalls(conversationId, d, connected));
  const { calls: waiting, workerAnswered } = await client.waitingCalls(conversationId, CLI_DECISION_WAIT_MS);
  const chosen = waiting.filter((p) => (d.callKey ? p.callKey === d.callKey : d.toolCallId ? p.toolCallId === d.toolCallId : true));
  if (chosen.length === 0) {
    const what = d.callKey ? `Call ${d.callKey} is` : d.toolCallId ? `Tool call "${d.toolCallId}" is` : 'No tool call is';
    const how = workerAnswered ? '' : ` as its last recorded state says (no worker answered within ${CLI_DECISION_WAIT_MS / 1000} s)`;
    throw new Error(`${what} not waiting for approval in conversation ${conversationId}${how}. Nothing was decided; see "pending".`);
  }
  for (const call of chosen) {
    const one = { decision, toolCallId: call.toolCallId, callKey: call.callKey, reason, decidedBy: d.decidedBy, ...extra };
    if (workerAnswered) {
      await client.decide(conversationId, one).catch((err: Error) => {
        // The worker wants decisions signed by the API: say how this CLI reaches one.
        throw isUnsignedRefusal(err.message) ? new DecisionRefusedError(`${err.message}\n${howToDecideThroughApi(running)}`) : err;
      });
    } else await client.signalDecision(conversationId, one);
  }
  return { calls: chosen, decidedBy: d.decidedBy, queued: !workerAnswered, unsigned: true, howToSign: howToDecideThroughApi(running) };
}

/**
 * The API decisions go through (AGENT_API_URL with AGENT_API_TOKEN, or the
 * API of the `npm start` running here for the CLI's target, with its local
 * approver's token), and what the CLI found of that `npm start`.
 */
function localApi(): { running: RunningApi; api?: ApiDecider } {
  const config = loadConfig();
  const running = findRunningApi(config, process.env, readRuntimeInfo(config.dataDir));
  return { running, api: findApiDecider(process.env, running) };
}

/** The arguments of `approve --edit`: a JSON object, for one named call. */
function parseEdit(decision: 'approve' | 'reject', text: string, all: boolean | undefined): Record<string, unknown> {
  if (decision !== 'approve') throw new Error('--edit goes with approve: the call runs with your arguments.');
  if (all) throw new Error('--edit decides one call: name it (a tool call id or --key), not --all.');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new Error(`--edit takes the arguments as a JSON object, e.g. '{"order_id":"ord_1001","amount_cents":12000}': ${(err as Error).message}`, {
      cause: err,
    });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error("--edit takes a JSON object (the tool's arguments).");
  return parsed as Record<string, unknown>;
}

async function withClient<T>(action: (client: AgentClient) => Promise<T>): Promise<T> {
  const client = await connect();
  try {
    return await action(client);
  } finally {
    await client.close();
  }
}

function formatAge(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  return `${Math.round(s / 3600)}h`;
}

/**
 * Sends a message and prints the turn as it unfolds: the model's text as it
 * streams, tool calls, results, the answer. Calls that need approval are
 * asked about at the prompt (`ask`), or listed with the commands that decide
 * them when there is no prompt.
 */
async function printTurn(client: AgentClient, conversationId: string, text: string, ask?: (question: string) => Promise<string>): Promise<void> {
  let printedSeq = (await client.transcript(conversationId).catch(() => [])).length;
  const view = new StreamView();
  let midLine = false;
  let lastStreamed = '';
  /** Texts of responses streamed to the end: the answer is not printed again. */
  const streamed = new Set<string>();
  const write = (s: string): void => {
    process.stdout.write(s);
    midLine = !s.endsWith('\n');
  };
  const newline = (): void => {
    if (midLine) write('\n');
  };
  /** Prints the stored tool calls and results not printed yet. */
  const printNew = async (): Promise<void> => {
    const transcript = await client.transcript(conversationId);
    for (const { message } of transcript.slice(printedSeq)) {
      if (message.role === 'assistant' && message.tool_calls?.length) {
        newline();
        for (const call of message.tool_calls) write(`  ⚙ ${call.function.name}(${call.function.arguments})\n`);
      } else if (message.role === 'tool') {
        newline();
        write(`  ↳ ${message.content.slice(0, 200)}\n`);
      }
    }
    printedSeq = Math.max(printedSeq, transcript.length);
  };
  // Everything printed goes through one queue, in order: stream events, and the transcript's new messages.
  let queue: Promise<void> = Promise.resolve();
  const inOrder = (work: () => Promise<void> | void): Promise<void> => (queue = queue.then(work, work));
  const started = new Set<string>();
  let finished = false;
  const unsubscribe = await client.subscribe(conversationId, (event) => {
    void inOrder(async () => {
      if (finished) return;
      // A new response: the calls and results stored before it print first (its call wrote them before it began).
      if (!started.has(event.responseKey)) {
        started.add(event.responseKey);
        await printNew().catch(() => undefined);
      }
      const change = view.apply(event);
      if (!change) return;
      if (change.reset) {
        newline();
        write('  ↻ the model call was retried; its text starts over\n');
      }
      if (change.appended) {
        if (!midLine) write('agent> ');
        write(change.appended);
        lastStreamed = change.response.text;
      }
      if (change.response.done && change.response.ok) streamed.add(change.response.text);
    });
  });
  try {
    const messageId = await client.sendMessage(conversationId, text);
    const asked = new Set<string>();
    for (;;) {
      const state = await client.state(conversationId);
      await inOrder(printNew);
      const turn = state.recentTurns.find((t) => t.messageIds.includes(messageId));
      if (turn) {
        if (turn.outcome === 'answered') {
          const answer = (await client.transcript(conversationId, turn.answerSeq)).find((m) => m.seq === turn.answerSeq)?.message;
          const content = answer?.role === 'assistant' ? (answer.content ?? '') : '';
          await queue; // the stream's events so far print before the answer is judged
          finished = true; // and any that come later print nothing
          if (streamed.has(content) || content === lastStreamed) newline();
          else if (lastStreamed !== '' && midLine && content.startsWith(lastStreamed)) write(`${content.slice(lastStreamed.length)}\n`);
          else {
            newline();
            write(`agent> ${content}\n`);
          }
        } else {
          newline();
          write(`agent> (turn ${turn.outcome}: ${turn.error})\n`);
        }
        return;
      }
      for (const pending of state.pendingApprovals.filter((p) => !asked.has(p.toolCallId))) {
        asked.add(pending.toolCallId);
        newline();
        const call = `${pending.toolName}(${JSON.stringify(pending.arguments)})`;
        if (!ask) {
          write(
            `  ⏸ ${call} needs approval:\n` +
              `      npm run cli -- approve ${conversationId} ${pending.toolCallId}\n` +
              `      npm run cli -- reject ${conversationId} ${pending.toolCallId} --reason "..."\n`,
          );
          continue;
        }
        const answer = (await ask(`  ⏸ ${call} needs approval. Approve? [y/N, or a reason to reject] `)).trim();
        const approve = /^y(es)?$/i.test(answer);
        await decideCalls(
          conversationId,
          {
            decision: approve ? 'approve' : 'reject',
            toolCallId: pending.toolCallId,
            callKey: pending.callKey,
            reason: approve || answer === '' || /^no?$/i.test(answer) ? undefined : answer,
            decidedBy: process.env.USER ?? 'cli',
          },
          client,
        ).catch((err: Error) => write(`  (decision not applied: ${err.message})\n`));
      }
      if (!ask && asked.size > 0 && state.pendingApprovals.length > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  } finally {
    await unsubscribe();
  }
}

const program = new Command().name('agent').description('Talk to the durable agent worker. Start the worker first with "npm start".');

program
  .command('chat')
  .description('interactive conversation (a new one unless you give an id)')
  .argument('[conversationId]', 'conversation to continue')
  .action(async (conversationId?: string) => {
    const id = conversationId ?? `conv-${randomUUID().slice(0, 8)}`;
    const remote = remoteApi(process.env);
    if (remote) {
      await chatThroughApi(remote, id);
      return;
    }
    await withClient(async (client) => {
      process.stdout.write(`Conversation ${id}. Type a message; /show prints the transcript, /quit leaves.\n`);
      const lines = new LineQueue(process.stdin, process.stdout);
      const ask = async (question: string) => (await lines.next(question, process.stdout)) ?? '';
      try {
        for (;;) {
          const typed = await lines.next('you> ', process.stdout);
          if (typed === undefined) break; // input closed
          const line = typed.trim();
          if (line === '/quit' || line === '/exit') break;
          if (line === '') continue;
          if (line === '/show') {
            process.stdout.write(`${formatTranscript(await client.transcript(id))}\n`);
            continue;
          }
          await printTurn(client, id, line, ask).catch((err: Error) => process.stdout.write(`error: ${err.message}\n`));
        }
      } finally {
        lines.close();
      }
      process.stdout.write(`Bye. Continue later with: npm run cli -- chat ${id}\n`);
    });
  });

/** `chat` through the HTTP API: each line a `say`; approvals are listed with the commands that decide them (another person's token, under four eyes). */
async function chatThroughApi(api: ApiDecider, id: string): Promise<void> {
  process.stdout.write(`Conversation ${id} (through ${api.url}). Type a message; /show prints the transcript, /quit leaves.\n`);
  const lines = new LineQueue(process.stdin, process.stdout);
  try {
    for (;;) {
      const typed = await lines.next('you> ', process.stdout);
      if (typed === undefined) break;
      const line = typed.trim();
      if (line === '/quit' || line === '/exit') break;
      if (line === '') continue;
      const write = (out: string): boolean => process.stdout.write(out);
      if (line === '/show') write(`${formatTranscript(await transcriptThroughApi(api, id))}\n`);
      else await sayThroughApi(api, id, line, write).catch((err: Error) => write(`error: ${err.message}\n`));
    }
  } finally {
    lines.close();
  }
  process.stdout.write(`Bye. Continue later with: npm run cli -- chat ${id}\n`);
}

program
  .command('say')
  .description('send one message and print the answer (the text as arguments, "-" for standard input, or --file)')
  .argument('<conversationId>')
  .argument('[text...]')
  .option('--file <path>', 'the message is the text of this file')
  .action(async (conversationId: string, words: string[], options: { file?: string }) => {
    let text = words.join(' ');
    if (options.file) {
      if (words.length > 0) throw new Error('Give the message as text, "-" or --file, not several.');
      text = fs.readFileSync(options.file, 'utf8');
    } else if (words.length === 1 && words[0] === '-') {
      text = await readAll(process.stdin);
    }
    if (text.trim() === '') throw new Error('The message is empty: give its text, "-" to read it from standard input, or --file <path>.');
    const message = text.replace(/\n$/, '');
    const remote = remoteApi(process.env);
    if (remote) await sayThroughApi(remote, conversationId, message, (out) => process.stdout.write(out));
    else await withClient((client) => printTurn(client, conversationId, message));
  });

program
  .command('show')
  .description('print the transcript and status')
  .argument('<conversationId>')
  .action(async (conversationId: string) => {
    const remote = remoteApi(process.env);
    const { state, transcript } = remote
      ? { state: await stateThroughApi(remote, conversationId), transcript: await transcriptThroughApi(remote, conversationId) }
      : await withClient(async (client) => ({ state: await client.state(conversationId), transcript: await client.transcript(conversationId) }));
    process.stdout.write(`${conversationId}: ${state.status}, ${state.steps} model calls${state.lastError ? `, last error: ${state.lastError}` : ''}\n`);
    process.stdout.write(`${formatTranscript(transcript)}\n`);
  });

program
  .command('state')
  .description('print the state query result as JSON')
  .argument('<conversationId>')
  .action(async (conversationId: string) => {
    const remote = remoteApi(process.env);
    const state = remote ? await stateThroughApi(remote, conversationId) : await withClient((client) => client.state(conversationId));
    process.stdout.write(`${JSON.stringify(state, null, 2)}\n`);
  });

program
  .command('pending')
  .description('list every tool call waiting for a decision, oldest first (from PostgreSQL; no search attribute needed)')
  .action(async () => {
    const remote = remoteApi(process.env);
    const waiting: Array<
      Pick<
        ApiPendingApproval,
        'conversationId' | 'toolCallId' | 'toolName' | 'arguments' | 'ageMs' | 'requestedBy' | 'callKey' | 'rootConversationId' | 'agentPath'
      >
    > = remote ? await waitingThroughApi(remote) : await withClient((client) => client.pendingApprovals());
    if (waiting.length === 0) {
      process.stdout.write('No tool call is waiting for approval.\n');
      return;
    }
    for (const p of waiting) {
      const by = p.requestedBy.length > 0 ? `  asked by ${p.requestedBy.join(', ')}` : '';
      // A call inside an agent called as a tool: the top-level conversation it serves, and the agents down to it.
      const below = p.rootConversationId !== p.conversationId ? `  for ${p.rootConversationId}` : '';
      const agents = p.agentPath.length > 0 ? `  agents ${p.agentPath.join(' > ')}` : '';
      process.stdout.write(
        `${p.conversationId}  ${p.toolCallId}  ${p.toolName}(${JSON.stringify(p.arguments)})  waiting ${formatAge(p.ageMs)}${by}${below}${agents}  key ${p.callKey}\n`,
      );
    }
  });

program
  .command('unknown-effects')
  .description('list tool calls whose effect is unknown (found by the UnknownEffects search attribute, group unknownEffects): check each before acting again')
  .action(async () => {
    await withClient(async (client) => {
      const found = await client.withUnknownEffects();
      if (found.length === 0) {
        process.stdout.write('No conversation has a tool call whose effect is unknown.\n');
        return;
      }
      for (const { conversationId, count, unknownEffects } of found) {
        process.stdout.write(`${conversationId}  ${count} call(s) with unknown effect\n`);
        for (const u of unknownEffects) {
          process.stdout.write(`  ${u.toolCallId}  ${u.toolName}  key ${u.callKey}  ${u.settledAt}  ${u.why}\n`);
        }
      }
    });
  });

for (const decision of ['approve', 'reject'] as const) {
  program
    .command(decision)
    .description(`${decision} one pending tool call, or all of them with --all`)
    .argument('<conversationId>')
    .argument('[toolCallId]', 'the call to decide (see "pending")')
    .option('--all', `${decision} every call waiting for approval`)
    .option('--key <callKey>', 'the key of the call meant (see "pending"): refused if another call with the same id waits now')
    .option('--reason <text>', 'why (sent to the model with a rejection)')
    .option(
      '--edit <json>',
      'approve only: run the call with these arguments instead of the model\'s, e.g. \'{"order_id":"ord_1001","amount_cents":12000}\' (checked against the tool first)',
    )
    .option('--by <name>', 'who decides, for the records (only without the HTTP API; through it, the token names who decides)', process.env.USER)
    .option('--json', 'print what was decided as JSON (the calls with their decision ids, as whom, queued or not) for scripts')
    .action(
      async (
        conversationId: string,
        toolCallId: string | undefined,
        options: { all?: boolean; key?: string; reason?: string; by?: string; json?: boolean; edit?: string },
      ) => {
        if (!toolCallId && !options.key && !options.all) throw new Error(`Name the tool call to ${decision} (see "pending"), or pass --all.`);
        if ((toolCallId || options.key) && options.all) throw new Error('Give a tool call id or key, or --all, not both.');
        const edited = options.edit === undefined ? undefined : parseEdit(decision, options.edit, options.all);
        const result = await decideCalls(conversationId, {
          decision: edited ? 'edit' : decision,
          toolCallId,
          callKey: options.key,
          reason: options.reason,
          decidedBy: options.by,
          ...(edited ? { arguments: edited } : {}),
        });
        if (options.json) {
          const calls = result.calls.map(({ decisionId, toolCallId: id, callKey, toolName }) => ({ decisionId, toolCallId: id, callKey, toolName }));
          process.stdout.write(`${JSON.stringify({ decision, decidedBy: result.decidedBy, queued: result.queued, unsigned: result.unsigned, calls })}\n`);
          return;
        }
        const as = result.decidedBy ? ` as ${result.decidedBy}` : '';
        const decided = result.calls.map((call) => `${call.toolName}(${JSON.stringify(call.arguments)}) [${call.toolCallId}]`).join(', ');
        const verb = edited ? `Approved with edited arguments ${JSON.stringify(edited)}` : decision === 'approve' ? 'Approved' : 'Rejected';
        const follow = `Follow the turn: npm run cli -- show ${conversationId}`;
        if (!result.queued) {
          const next = decision === 'approve' ? 'it runs now' : 'the model is told';
          process.stdout.write(`${verb}${as}: ${decided}; ${next}. ${follow}\n`);
          return;
        }
        process.stdout.write(
          `Queued${as}: ${decision} ${decided}. No worker answered for conversation ${conversationId} within ${CLI_DECISION_WAIT_MS / 1000} s, ` +
            `so the decision waits in the conversation's history and applies when a worker runs (npm start), if the call still waits then. ${follow}\n`,
        );
        if (result.unsigned) {
          process.stdout.write(`It was sent without the HTTP API, unsigned: a worker that requires signed decisions will refuse it. ${result.howToSign}\n`);
        }
      },
    );
}

program
  .command('respond')
  .description("answer one pending tool call in the tool's place: your text becomes its result and the tool does not run (where its tool allows it)")
  .argument('<conversationId>')
  .argument('[toolCallId]', 'the call to answer (see "pending")')
  .requiredOption('--text <text>', "the answer, which the model reads as the call's result (marked as a person's)")
  .option('--key <callKey>', 'the key of the call meant (see "pending"): refused if another call with the same id waits now')
  .option('--reason <text>', 'why, for the records')
  .option('--by <name>', 'who decides, for the records (only without the HTTP API; through it, the token names who decides)', process.env.USER)
  .action(async (conversationId: string, toolCallId: string | undefined, options: { text: string; key?: string; reason?: string; by?: string }) => {
    if (!toolCallId && !options.key) throw new Error('Name the tool call to answer (see "pending").');
    const result = await decideCalls(conversationId, {
      decision: 'respond',
      toolCallId,
      callKey: options.key,
      reason: options.reason,
      decidedBy: options.by,
      response: options.text,
    });
    const as = result.decidedBy ? ` as ${result.decidedBy}` : '';
    const answered = result.calls.map((call) => `${call.toolName} [${call.toolCallId}]`).join(', ');
    process.stdout.write(
      `${result.queued ? 'Queued' : 'Answered'}${as}: ${answered}; the tool does not run and the model reads your answer. Follow the turn: npm run cli -- show ${conversationId}\n`,
    );
  });

program
  .command('cancel')
  .description('cancel the current turn: finished results are kept, running calls interrupted, the rest cancelled')
  .argument('<conversationId>')
  .option('--reason <text>', 'why')
  .action(async (conversationId: string, options: { reason?: string }) => {
    await withClient((client) => client.cancelTurn(conversationId, options.reason));
  });

program
  .command('end')
  .description('end a conversation after its current turn')
  .argument('<conversationId>')
  .action(async (conversationId: string) => {
    await withClient((client) => client.end(conversationId));
  });

program.parseAsync().catch((err: Error) => {
  process.stderr.write(`error: ${err.message}\n`);
  process.exitCode = 1;
});
