/**
 * Types for the scripted OpenAI-compatible model server used by tests and the
 * offline demo.
 *
 * @packageDocumentation
 */

/** A `finish_reason` value a Chat Completions choice can carry. */
export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';

/** Which provider's validation rules and error bodies the server imitates. */
export type ModelServerDialect = 'openai' | 'deepseek' | 'deepseek-thinking';

/**
 * How the server makes ids for scripted tool calls that have no explicit
 * {@link ScriptedToolCall.id}, so tests can imitate providers whose tool call
 * ids are not unique. A call with an explicit id always keeps it.
 */
export type ToolCallIdScheme =
  /** The default, like OpenAI: `call_` plus 24 random alphanumerics, fresh for every call. */
  | 'unique'
  /**
   * Ids restart in every response, like Kimi: `functions.<name>:<index>`,
   * where index is the call's position within that response (0, 1, ...).
   * The first refund of two different responses both get `functions.issue_refund:0`.
   */
  | 'per-response'
  /**
   * Every call's id is the empty string `""`; streaming, the first fragment of
   * each call carries `"id": ""`.
   */
  | 'empty'
  /**
   * Every call of one response gets the same id: one `call_` plus 24 random
   * alphanumerics, made fresh for each response (so ids differ across responses).
   */
  | 'duplicated';

/** One tool call the scripted model makes. */
export interface ScriptedToolCall {
  /**
   * Tool call id, sent exactly as given (even `''`). When omitted the server
   * makes one according to the server's {@link ToolCallIdScheme} (see
   * {@link ModelServerOptions.toolCallIds} and {@link ModelServer.setToolCallIds}):
   * by default (`unique`) `call_` plus 24 random alphanumerics.
   */
  id?: string;
  /** Function name. */
  name: string;
  /**
   * Function arguments. An object is JSON-stringified; a string is sent
   * verbatim, which is how a test scripts malformed JSON arguments.
   */
  arguments: string | Record<string, unknown>;
}

/**
 * A normal assistant reply: content, tool calls or both. The same reply serves both APIs: in the Responses API
 * (`POST /v1/responses`) the content is an assistant message item and each tool call a `function_call` item.
 */
export interface ScriptedMessageReply {
  kind?: 'message';
  /** Defaults to `null` when there are tool calls, else `""`. */
  content?: string | null;
  toolCalls?: ScriptedToolCall[];
  /** Defaults to `tool_calls` when tool calls are present, else `stop`. */
  finishReason?: FinishReason;
  /**
   * Sent as `message.reasoning_content` (streaming: `delta.reasoning_content`) when given. In the Responses
   * API it is a reasoning item first in the output, with `encrypted_content` when the request's `include`
   * asks for `reasoning.encrypted_content` and a summary when `reasoning.summary` is set.
   */
  reasoningContent?: string;
  /**
   * Responses API only (Chat Completions ignores it): the response ends `status: 'failed'` with this `error`
   * (streamed: a `response.failed` event), still carrying the scripted output items and the usage, as OpenAI
   * bills a response that failed part way. A content-filtered answer is `finishReason: 'content_filter'`
   * (`status: 'incomplete'`, `incomplete_details.reason: 'content_filter'`).
   */
  responseError?: { code: string; message: string };
  /**
   * How to stream this reply: pacing, provider quirks and faults. Used only
   * when the request has `stream: true`; ignored for non-streaming requests.
   */
  stream?: StreamScript;
}

/**
 * Streaming faults and quirks for one {@link ScriptedMessageReply}, all
 * optional. Without any of them a reply streams as: the role chunk,
 * `reasoning_content` fragments, `content` fragments, per tool call a first
 * fragment with `id`, `type`, `function.name` and `arguments: ""` followed by
 * argument fragments, the finish chunk, the usage chunk when
 * `stream_options.include_usage` asks for it, and `data: [DONE]`.
 *
 * "Data chunks" below are the `data:` events in that order, the role chunk
 * first and `[DONE]` included; `: keep-alive` comment lines are not data chunks.
 */
export interface StreamScript {
  /** Pause in milliseconds before every SSE write after the first one (keep-alive comments included). */
  chunkDelayMs?: number;
  /** Number of `: keep-alive` SSE comment lines sent right after the headers, before the first data chunk. */
  keepAlive?: number;
  /**
   * Every argument fragment after a tool call's first one also carries
   * `"id":""`, `"type":"function"` and `function.name: ""` (DeepSeek,
   * DashScope). The first fragment keeps the real id and name.
   */
  emptyIdAndName?: boolean;
  /**
   * Send the reply's text (content and reasoning; on the Responses API its output text and reasoning summaries) in
   * deltas of at most this many characters (values below 1 count as 1) instead of three deltas.
   */
  textDeltaChars?: number;
  /**
   * Split each tool call's arguments into this many fragments (at most one
   * per character; values below 1 count as 1). Without it: 3 fragments for
   * arguments longer than 8 characters, else 2.
   */
  argumentChunks?: number;
  /**
   * Destroy the socket once this many characters of the FIRST tool call's
   * arguments have been sent (the fragment crossing that point is split
   * there): no finish chunk, no `[DONE]`. 0 cuts right after the call's first
   * fragment; a value at or past the arguments' length cuts after the last
   * argument fragment. Ignored when the reply has no tool calls. The request
   * is not recorded as aborted (the server, not the client, ended it).
   */
  cutAfterArgumentChars?: number;
  /**
   * After this many data chunks, send nothing more and keep the connection
   * open until the client disconnects (recorded as `aborted`) or the server
   * closes. 0 stalls right after the headers and any keep-alive lines.
   */
  stallAfterChunks?: number;
  /** Send the finish chunk (and the usage chunk when asked for) but not `data: [DONE]`, then end the response. */
  omitDone?: boolean;
  /**
   * Send no chunk carrying a `finish_reason`: the fragments are followed
   * directly by the usage chunk (when asked for) and `data: [DONE]`.
   */
  omitFinish?: boolean;
}

/** An HTTP error answer, e.g. a 500 or a 429. */
export interface ScriptedHttpError {
  kind: 'http_error';
  status: number;
  /**
   * Response body. Objects are sent as JSON, strings verbatim. Defaults to an
   * `{error:{message,type,param,code}}` body fitting the status.
   */
  body?: unknown;
  /** Extra response headers, e.g. `{ 'retry-after': '2' }` on a 429 or 503. */
  headers?: Record<string, string>;
}

/** Waits `ms` milliseconds, then answers with `then`. */
export interface ScriptedDelay {
  kind: 'delay';
  ms: number;
  then: ScriptedReply;
}

/** Never answers; ends when the client disconnects or the server closes. */
export interface ScriptedHang {
  kind: 'hang';
}

/**
 * Destroys the socket without a complete response. Non-streaming: before any
 * byte is sent. Streaming: after the role chunk and part of `content`.
 */
export interface ScriptedDrop {
  kind: 'drop';
  /** Content whose first part is streamed before the drop; a default sentence when omitted. */
  content?: string;
}

/** What the scripted model does for one valid request. */
export type ScriptedReply = ScriptedMessageReply | ScriptedHttpError | ScriptedDelay | ScriptedHang | ScriptedDrop;

/** An error body in the shape providers use and the `openai` SDK understands. */
export interface ProviderErrorBody {
  error: {
    message: string;
    type: string;
    param: string | null;
    code: string | null;
  };
}

/** The 400 answer for a request a real provider would reject. */
export interface ValidationFailure {
  status: 400;
  body: ProviderErrorBody;
}

/** One HTTP request the server received, in arrival order. */
export interface RecordedRequest {
  /** Position in {@link ModelServer.requests}, starting at 0. */
  index: number;
  /** `Date.now()` when the request arrived. */
  receivedAt: number;
  /** HTTP method, e.g. `POST`. */
  method: string;
  /** Request path without the query string, e.g. `/v1/chat/completions`. */
  path: string;
  /** Parsed JSON body; the raw text when it is not JSON; `undefined` when empty. */
  body: unknown;
  /** False when the server answered with a 400 (or 404 for an unknown URL) instead of playing the model. */
  valid: boolean;
  /** The error answer given to an invalid request. */
  error?: { status: number; body: unknown };
  /** Prompt tokens of the request as the context window counts them (set while a window is enforced). */
  promptTokens?: number;
  /** The scripted reply chosen for a valid request (the outer reply for `delay`). */
  reply?: ScriptedReply;
  /** True when the client closed the connection before the reply finished. */
  aborted: boolean;
  /**
   * `Date.now()` when the status line and headers of the response were
   * written; `undefined` while nothing has been sent (`hang`, a pending
   * `delay`, a non-streaming `drop`).
   */
  firstByteAt?: number;
  /**
   * `Date.now()` when the server saw the exchange end: the response finished,
   * the client closed the connection, or the server destroyed it (`drop`, a
   * cut stream, {@link ModelServer.close}). `undefined` while it is open.
   */
  closedAt?: number;
}

/** Chooses the reply for a valid request once the queue is empty. */
export type Responder = (request: RecordedRequest) => ScriptedReply | Promise<ScriptedReply>;

/** Options for {@link startModelServer}. */
export interface ModelServerOptions {
  /** Loopback address to listen on; defaults to `127.0.0.1`. Non-loopback hosts are refused. */
  host?: string;
  /** Port; defaults to 0, any free port. */
  port?: number;
  /** Provider whose rules and error bodies to imitate; defaults to `openai`. */
  dialect?: ModelServerDialect;
  /** Called for valid requests when the queue is empty. */
  responder?: Responder;
  /** How ids are made for scripted tool calls without an explicit id; defaults to `unique`. */
  toolCallIds?: ToolCallIdScheme;
  /**
   * The model's context window, in tokens: a request whose prompt (counted
   * like a provider, see `context-window.ts`) is larger is answered with
   * OpenAI's `context_length_exceeded` 400. No limit when unset.
   */
  contextWindow?: number;
  /**
   * For tests: the {@link StreamScript.textDeltaChars} of every streamed message reply whose own `stream` script
   * sets neither it nor `chunkDelayMs` (a paced stream keeps the pieces its timing was written for); the recorded
   * {@link RecordedRequest.reply} shows it. Unset: three deltas. Small values (1 to 3) put a delta boundary inside
   * every word of the model's text, so whatever splits it further on (a worker publishes the text it has every
   * 50 ms) splits it inside a sentence.
   */
  textDeltaChars?: number;
}

/** A running scripted model server. */
export interface ModelServer {
  /** Base URL for the SDK, ending in `/v1`, e.g. `http://127.0.0.1:PORT/v1`. */
  readonly url: string;
  /** Every request received so far, in arrival order (live array). */
  readonly requests: RecordedRequest[];
  /** The recorded requests that were answered with an error instead of a reply. */
  invalidRequests(): RecordedRequest[];
  /** Appends replies to the FIFO queue consulted before the responder. */
  enqueue(...replies: ScriptedReply[]): void;
  /** Replaces (or with `undefined` removes) the responder. */
  setResponder(responder: Responder | undefined): void;
  /**
   * Switches the {@link ToolCallIdScheme} for replies chosen after this call
   * (a request already being answered keeps the scheme it started with).
   *
   * @throws when `scheme` is not one of the known schemes
   */
  setToolCallIds(scheme: ToolCallIdScheme): void;
  /** Sets (or with `undefined` removes) the {@link ModelServerOptions.contextWindow} for requests from now on. */
  setContextWindow(tokens: number | undefined): void;
  /** Stops listening and ends every open connection, hanging requests included. */
  close(): Promise<void>;
}
