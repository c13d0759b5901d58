/**
 * The scripted OpenAI-compatible model server: plays the model over real
 * loopback HTTP, validates every request like a provider and records it.
 *
 * @packageDocumentation
 */

import { randomInt } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import type {
  FinishReason,
  ModelServer,
  ModelServerDialect,
  ModelServerOptions,
  RecordedRequest,
  Responder,
  ScriptedMessageReply,
  ScriptedReply,
  StreamScript,
  ToolCallIdScheme,
} from './types';
import { errorBody, INVALID_JSON_MESSAGE, validateChatRequest } from './validate';
import { contextLengthExceededBody, countPromptTokens } from './context-window';

/** Message of the 500 answered when neither the queue nor a responder supplies a reply. */
export const NO_SCRIPTED_REPLY_MESSAGE = 'Scripted model server: no scripted reply left for this request (the queue is empty and no responder is set).';

/** Start of the message of the 500 answered when the responder throws; the error's message follows. */
export const RESPONDER_FAILED_PREFIX = 'Scripted model server: the responder threw: ';

/** OpenAI's message for a 500. */
export const DEFAULT_SERVER_ERROR_MESSAGE = 'The server had an error while processing your request. Sorry about that!';

/** Content streamed before a `drop` when the reply gives none. */
export const DEFAULT_DROP_CONTENT = 'This answer is cut off before it is finished.';

/** The SSE comment line a `keepAlive` stream script sends, as DeepSeek does while a request is queued. */
export const KEEP_ALIVE_LINE = ': keep-alive\n\n';

/** Model id listed by `GET /v1/models`. */
export const SCRIPTED_MODEL_ID = 'scripted-model';

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const LOOPBACK_HOSTS = new Set(['localhost', '::1', '[::1]']);
const TOOL_CALL_ID_SCHEMES: readonly ToolCallIdScheme[] = ['unique', 'per-response', 'empty', 'duplicated'];

/**
 * Starts a scripted model server on a loopback address.
 *
 * @param options - host, port, dialect, an optional responder and the tool call id scheme
 * @returns the running server; its {@link ModelServer.url} goes to the SDK's `baseURL`
 * @throws when `host` is not a loopback address or `toolCallIds` is not a known scheme
 */
export async function startModelServer(options: ModelServerOptions = {}): Promise<ModelServer> {
  const host = options.host ?? '127.0.0.1';
  if (!isLoopback(host)) throw new Error(`The scripted model server only listens on loopback addresses, not '${host}'.`);
  const dialect: ModelServerDialect = options.dialect ?? 'openai';
  const requests: RecordedRequest[] = [];
  const queue: ScriptedReply[] = [];
  let responder: Responder | undefined = options.responder;
  let toolCallIds: ToolCallIdScheme = checkToolCallIdScheme(options.toolCallIds ?? 'unique');
  let contextWindow = checkContextWindow(options.contextWindow);
  let closing = false;
  let closed: Promise<void> | undefined;
  /** Exchanges whose connection has not closed yet, so `close()` can wait until each has recorded `closedAt`. */
  const open = new Set<Exchange>();

  const nextReply = async (record: RecordedRequest): Promise<ScriptedReply> => {
    const queued = queue.shift();
    if (queued) return queued;
    if (!responder) return serverError(NO_SCRIPTED_REPLY_MESSAGE, 'no_scripted_reply');
    try {
      return await responder(record);
    } catch (err) {
      return serverError(RESPONDER_FAILED_PREFIX + (err instanceof Error ? err.message : String(err)), 'responder_failed');
    }
  };

  const server = http.createServer((req, res) => {
    const record: RecordedRequest = {
      index: requests.length,
      receivedAt: Date.now(),
      method: req.method ?? 'GET',
      path: (req.url ?? '/').split('?')[0],
      body: undefined,
      valid: true,
      aborted: false,
    };
    requests.push(record);
    const exchange = new Exchange(res, record, () => closing);
    open.add(exchange);
    void exchange.closed.then(() => open.delete(exchange));
    handle(
      req,
      exchange,
      dialect,
      nextReply,
      () => toolCallIds,
      () => contextWindow,
    ).catch((err: unknown) => {
      exchange.send(500, errorBody(`Scripted model server failed: ${String(err)}`, 'server_error'));
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const urlHost = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;

  return {
    url: `http://${urlHost}:${port}/v1`,
    requests,
    invalidRequests: () => requests.filter((r) => !r.valid),
    enqueue: (...replies: ScriptedReply[]) => {
      queue.push(...replies);
    },
    setResponder: (next: Responder | undefined) => {
      responder = next;
    },
    setToolCallIds: (scheme: ToolCallIdScheme) => {
      toolCallIds = checkToolCallIdScheme(scheme);
    },
    setContextWindow: (tokens: number | undefined) => {
      contextWindow = checkContextWindow(tokens);
    },
    close: () => {
      if (!closed) {
        closing = true;
        const exchanges = [...open].map((exchange) => exchange.closed);
        closed = new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }).then(async () => {
          await Promise.all(exchanges);
        });
      }
      return closed;
    },
  };
}

async function handle(
  req: http.IncomingMessage,
  exchange: Exchange,
  dialect: ModelServerDialect,
  nextReply: (record: RecordedRequest) => Promise<ScriptedReply>,
  currentToolCallIds: () => ToolCallIdScheme,
  currentContextWindow: () => number | undefined,
): Promise<void> {
  const { record } = exchange;
  const raw = await readBody(req);
  if (raw === undefined) return;
  if (raw.length > 0) {
    try {
      record.body = JSON.parse(raw);
    } catch {
      record.body = raw;
      if (record.method === 'POST' && record.path === '/v1/chat/completions') {
        exchange.reject(400, errorBody(INVALID_JSON_MESSAGE, 'invalid_request_error'));
        return;
      }
    }
  }

  const path = record.path.replace(/\/+$/, '');
  if (record.method === 'GET' && path === '/v1/models') {
    exchange.send(200, {
      object: 'list',
      data: [{ id: SCRIPTED_MODEL_ID, object: 'model', created: nowSeconds(), owned_by: 'model-server' }],
    });
    return;
  }
  if (record.method !== 'POST' || path !== '/v1/chat/completions') {
    exchange.reject(
      404,
      errorBody(
        `Unknown request URL: ${record.method} ${record.path}. Please check the URL for typos, or see the docs at https://platform.openai.com/docs/api-reference/.`,
        'invalid_request_error',
        null,
        'unknown_url',
      ),
    );
    return;
  }

  const failure = validateChatRequest(record.body, dialect);
  if (failure) {
    exchange.reject(failure.status, failure.body);
    return;
  }
  const contextWindow = currentContextWindow();
  if (contextWindow !== undefined) {
    record.promptTokens = countPromptTokens(record.body as ChatRequestBody);
    if (record.promptTokens > contextWindow) {
      exchange.reject(400, contextLengthExceededBody(contextWindow, record.promptTokens));
      return;
    }
  }

  const reply = await nextReply(record);
  record.reply = reply;
  // The scheme is fixed when the reply is chosen, so a later setToolCallIds does not affect a delayed reply.
  await deliver(reply, exchange, { ...(record.body as ChatRequestBody), promptTokens: record.promptTokens }, currentToolCallIds());
}

interface ChatRequestBody {
  model: string;
  messages: unknown[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean } | null;
  tools?: unknown[];
  /** The prompt's tokens as the context window counted them, when it did. */
  promptTokens?: number;
}

async function deliver(reply: ScriptedReply, exchange: Exchange, request: ChatRequestBody, toolCallIds: ToolCallIdScheme): Promise<void> {
  if (exchange.isClosed) return;
  switch (reply.kind) {
    case 'delay':
      if (await exchange.wait(reply.ms)) await deliver(reply.then, exchange, request, toolCallIds);
      return;
    case 'hang':
      await exchange.closed;
      return;
    case 'drop':
      if (request.stream === true) {
        const plan = planCompletion({ content: reply.content ?? DEFAULT_DROP_CONTENT }, request, toolCallIds);
        await writeChatStream(exchange, plan, { fault: { kind: 'drop', afterContentPieces: 1 } });
      } else {
        exchange.destroy();
      }
      return;
    case 'http_error':
      exchange.send(reply.status, reply.body === undefined ? defaultErrorBody(reply.status) : reply.body, reply.headers);
      return;
    default: {
      const plan = planCompletion(reply, request, toolCallIds);
      if (request.stream === true) await writeChatStream(exchange, plan, { script: reply.stream });
      else exchange.send(200, completionObject(plan));
    }
  }
}

/** Everything needed to render one scripted reply, streaming or not. */
interface CompletionPlan {
  id: string;
  created: number;
  model: string;
  content: string | null;
  reasoningContent?: string;
  toolCalls: { id: string; name: string; arguments: string }[];
  finishReason: FinishReason;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  includeUsage: boolean;
}

function planCompletion(reply: ScriptedMessageReply, request: ChatRequestBody, toolCallIds: ToolCallIdScheme): CompletionPlan {
  const makeId = toolCallIdMaker(toolCallIds);
  const toolCalls = (reply.toolCalls ?? []).map((call, index) => ({
    id: call.id ?? makeId(call.name, index),
    name: call.name,
    arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
  }));
  const hasToolCalls = toolCalls.length > 0;
  const content = reply.content !== undefined ? reply.content : hasToolCalls ? null : '';
  const promptTokens = request.promptTokens ?? estimateTokens(JSON.stringify(request.messages));
  const completionTokens = estimateTokens((content ?? '') + (reply.reasoningContent ?? '') + toolCalls.map((c) => c.name + c.arguments).join(''));
  return {
    id: `chatcmpl-${randomAlphanumeric(29)}`,
    created: nowSeconds(),
    model: request.model,
    content,
    reasoningContent: reply.reasoningContent,
    toolCalls,
    finishReason: reply.finishReason ?? (hasToolCalls ? 'tool_calls' : 'stop'),
    usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
    includeUsage: request.stream_options?.include_usage === true,
  };
}

/**
 * Returns the id maker for the tool calls of ONE response under `scheme`;
 * called with the call's function name and its position in the response.
 */
function toolCallIdMaker(scheme: ToolCallIdScheme): (name: string, index: number) => string {
  switch (scheme) {
    case 'per-response':
      return (name, index) => `functions.${name}:${index}`;
    case 'empty':
      return () => '';
    case 'duplicated': {
      const shared = `call_${randomAlphanumeric(24)}`;
      return () => shared;
    }
    default:
      return () => `call_${randomAlphanumeric(24)}`;
  }
}

function checkToolCallIdScheme(scheme: ToolCallIdScheme): ToolCallIdScheme {
  if (!TOOL_CALL_ID_SCHEMES.includes(scheme)) {
    throw new Error(`Unknown tool call id scheme '${String(scheme)}'; expected one of: ${TOOL_CALL_ID_SCHEMES.join(', ')}.`);
  }
  return scheme;
}

function completionObject(plan: CompletionPlan): Record<string, unknown> {
  const message: Record<string, unknown> = { role: 'assistant', content: plan.content, refusal: null };
  if (plan.reasoningContent !== undefined) message.reasoning_content = plan.reasoningContent;
  if (plan.toolCalls.length > 0) {
    message.tool_calls = plan.toolCalls.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: call.arguments },
    }));
  }
  return {
    id: plan.id,
    object: 'chat.completion',
    created: plan.created,
    model: plan.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: plan.finishReason }],
    usage: plan.usage,
  };
}

/**
 * A fault injected into a stream. `drop`: after the role chunk and the first
 * `afterContentPieces` content pieces, destroy the socket.
 */
type StreamFault = { kind: 'drop'; afterContentPieces: number };

/** One SSE event to write, tagged so faults can pick their cut point. */
interface StreamEvent {
  part: 'role' | 'reasoning' | 'content' | 'tool_call' | 'finish' | 'usage' | 'done';
  data: string;
  /** The event after which a `cutAfterArgumentChars` script destroys the socket. */
  cutAfter?: boolean;
}

function streamEvents(plan: CompletionPlan, script: StreamScript): StreamEvent[] {
  const chunk = (delta: Record<string, unknown>, finishReason: FinishReason | null = null): string =>
    JSON.stringify({
      id: plan.id,
      object: 'chat.completion.chunk',
      created: plan.created,
      model: plan.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    });

  const events: StreamEvent[] = [{ part: 'role', data: chunk({ role: 'assistant', content: '' }) }];
  for (const piece of splitText(plan.reasoningContent ?? '', 3)) {
    events.push({ part: 'reasoning', data: chunk({ reasoning_content: piece }) });
  }
  for (const piece of splitText(plan.content ?? '', 3)) {
    events.push({ part: 'content', data: chunk({ content: piece }) });
  }
  plan.toolCalls.forEach((call, index) => {
    const first: StreamEvent = {
      part: 'tool_call',
      data: chunk({
        tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }],
      }),
    };
    events.push(first);
    let pieces =
      script.argumentChunks !== undefined ? splitEvenly(call.arguments, script.argumentChunks) : splitText(call.arguments, call.arguments.length > 8 ? 3 : 2);
    // Only the first call can be cut; the cut point is clamped to its arguments.
    const cutAt =
      index === 0 && script.cutAfterArgumentChars !== undefined
        ? Math.min(Math.max(0, Math.floor(script.cutAfterArgumentChars)), call.arguments.length)
        : undefined;
    if (cutAt !== undefined) {
      pieces = splitPiecesAt(pieces, cutAt);
      if (cutAt === 0) first.cutAfter = true;
    }
    let sent = 0;
    for (const piece of pieces) {
      sent += piece.length;
      const fragment = script.emptyIdAndName
        ? { index, id: '', type: 'function', function: { name: '', arguments: piece } }
        : { index, function: { arguments: piece } };
      events.push({
        part: 'tool_call',
        data: chunk({ tool_calls: [fragment] }),
        cutAfter: cutAt !== undefined && cutAt > 0 && sent === cutAt,
      });
    }
  });
  if (!script.omitFinish) events.push({ part: 'finish', data: chunk({}, plan.finishReason) });
  if (plan.includeUsage) {
    events.push({
      part: 'usage',
      data: JSON.stringify({
        id: plan.id,
        object: 'chat.completion.chunk',
        created: plan.created,
        model: plan.model,
        choices: [],
        usage: plan.usage,
      }),
    });
  }
  if (!script.omitDone) events.push({ part: 'done', data: '[DONE]' });
  return events;
}

/** What shapes one streamed reply: a built-in fault (`drop`) or a reply's own stream script. */
interface StreamOptions {
  fault?: StreamFault;
  script?: StreamScript;
}

async function writeChatStream(exchange: Exchange, plan: CompletionPlan, options: StreamOptions = {}): Promise<void> {
  const { fault, script = {} } = options;
  const events = streamEvents(plan, script);
  const delayMs = Math.max(0, script.chunkDelayMs ?? 0);
  const keepAlive = Math.max(0, Math.floor(script.keepAlive ?? 0));
  const stallAfter = script.stallAfterChunks === undefined ? undefined : Math.max(0, Math.floor(script.stallAfterChunks));

  exchange.startStream();
  let writes = 0;
  /** Paces writes; false when the connection closed meanwhile. */
  const beforeWrite = async (): Promise<boolean> => {
    if (writes++ > 0) {
      if (delayMs > 0) return exchange.wait(delayMs);
      await new Promise((resolve) => setImmediate(resolve));
    }
    return !exchange.isClosed;
  };
  const stall = async (): Promise<void> => {
    await exchange.flush();
    await exchange.closed;
  };

  for (let i = 0; i < keepAlive; i++) {
    if (!(await beforeWrite())) return;
    exchange.write(KEEP_ALIVE_LINE);
  }
  let dataChunks = 0;
  let contentPieces = 0;
  for (const event of events) {
    if (stallAfter !== undefined && dataChunks >= stallAfter) return stall();
    if (!(await beforeWrite())) return;
    if (fault?.kind === 'drop' && event.part !== 'role' && contentPieces >= fault.afterContentPieces) {
      await exchange.flush();
      exchange.destroy();
      return;
    }
    exchange.write(`data: ${event.data}\n\n`);
    dataChunks++;
    if (event.part === 'content') contentPieces++;
    if (event.cutAfter) {
      await exchange.flush();
      exchange.destroy();
      return;
    }
  }
  if (stallAfter !== undefined && dataChunks >= stallAfter) return stall();
  await new Promise((resolve) => setImmediate(resolve));
  exchange.end();
}

/** One request/response pair, tracking whether and how the connection ended. */
class Exchange {
  /** Resolves when the response is finished or its connection is gone. */
  readonly closed: Promise<void>;
  private destroyedByServer = false;
  private done = false;
  private readonly requestId = `req_${randomAlphanumeric(24)}`;

  constructor(
    private readonly res: http.ServerResponse,
    readonly record: RecordedRequest,
    serverClosing: () => boolean,
  ) {
    this.closed = new Promise<void>((resolve) => {
      res.once('close', () => {
        this.done = true;
        record.closedAt = Date.now();
        if (!res.writableFinished && !this.destroyedByServer && !serverClosing()) record.aborted = true;
        resolve();
      });
    });
  }

  get isClosed(): boolean {
    return this.done || this.res.destroyed;
  }

  /** Waits `ms` milliseconds; false when the connection closed first. */
  async wait(ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const elapsed = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), ms);
    });
    const result = await Promise.race([elapsed, this.closed.then(() => false)]);
    clearTimeout(timer);
    return result && !this.isClosed;
  }

  reject(status: number, body: unknown): void {
    this.record.valid = false;
    this.record.error = { status, body };
    this.send(status, body);
  }

  /** Sends a complete response: strings verbatim, anything else as JSON. */
  send(status: number, body: unknown, headers: Record<string, string> = {}): void {
    if (this.isClosed || this.res.headersSent) return;
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    this.record.firstByteAt ??= Date.now();
    this.res.writeHead(status, {
      ...headers,
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      'x-request-id': this.requestId,
    });
    this.res.end(text);
  }

  startStream(): void {
    this.record.firstByteAt ??= Date.now();
    this.res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      'x-request-id': this.requestId,
    });
    this.res.flushHeaders();
  }

  write(text: string): void {
    this.res.write(text);
  }

  /** Resolves once everything written so far has been handed to the socket. */
  flush(): Promise<void> {
    return new Promise((resolve) => {
      if (this.isClosed) resolve();
      else this.res.write('', () => resolve());
    });
  }

  end(): void {
    if (!this.isClosed) this.res.end();
  }

  destroy(): void {
    this.destroyedByServer = true;
    this.res.socket?.destroy();
    this.res.destroy();
  }
}

async function readBody(req: http.IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of req) chunks.push(chunk as Buffer);
  } catch {
    return undefined;
  }
  return Buffer.concat(chunks).toString('utf8');
}

function checkContextWindow(tokens: number | undefined): number | undefined {
  if (tokens !== undefined && !(Number.isInteger(tokens) && tokens > 0)) {
    throw new Error(`contextWindow must be a positive integer number of tokens, got ${String(tokens)}.`);
  }
  return tokens;
}

function serverError(message: string, code: string): ScriptedReply {
  return { kind: 'http_error', status: 500, body: errorBody(message, 'server_error', null, code) };
}

function defaultErrorBody(status: number): unknown {
  if (status >= 500) return errorBody(DEFAULT_SERVER_ERROR_MESSAGE, 'server_error');
  if (status === 429) return errorBody('Rate limit reached for requests (scripted).', 'requests', null, 'rate_limit_exceeded');
  return errorBody(`Scripted HTTP ${status} error.`, 'invalid_request_error');
}

function splitText(text: string, pieces: number): string[] {
  if (text.length === 0) return [];
  const count = Math.min(pieces, text.length);
  const size = Math.ceil(text.length / count);
  const out: string[] = [];
  for (let start = 0; start < text.length; start += size) out.push(text.slice(start, start + size));
  return out;
}

/** Splits `text` into exactly `pieces` parts (at most one per character) whose lengths differ by at most one. */
function splitEvenly(text: string, pieces: number): string[] {
  if (text.length === 0) return [];
  const count = Math.min(Math.max(1, Math.floor(pieces)), text.length);
  const base = Math.floor(text.length / count);
  const longer = text.length % count;
  const out: string[] = [];
  let start = 0;
  for (let k = 0; k < count; k++) {
    const size = base + (k < longer ? 1 : 0);
    out.push(text.slice(start, start + size));
    start += size;
  }
  return out;
}

/** Splits the piece that spans character `at` of the joined pieces in two, so a piece ends exactly there. */
function splitPiecesAt(pieces: string[], at: number): string[] {
  const out: string[] = [];
  let position = 0;
  for (const piece of pieces) {
    if (position < at && at < position + piece.length) out.push(piece.slice(0, at - position), piece.slice(at - position));
    else out.push(piece);
    position += piece.length;
  }
  return out;
}

function randomAlphanumeric(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHANUMERIC[randomInt(ALPHANUMERIC.length)];
  return out;
}

function estimateTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

function isLoopback(host: string): boolean {
  return LOOPBACK_HOSTS.has(host) || /^127(\.\d{1,3}){3}$/.test(host);
}
