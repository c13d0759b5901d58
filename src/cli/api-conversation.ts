/**
 * A conversation through the HTTP API, for the CLI with AGENT_API_URL and
 * AGENT_API_TOKEN (no Temporal or PostgreSQL access needed): its state, its
 * transcript, and `say`, which sends a message and follows its turn as
 * server-sent events (`GET /v1/conversations/{id}/events`), printing the
 * model's text as it streams, each tool call, each approval asked for and
 * the answer, once each and in order.
 */
import type { StoredMessage } from '../db/transcript-store';
import type { ConversationState } from '../contract';
import { callApi, type ApiDecider } from './api-decisions';
import { TurnText } from './turn-text';

const conversationPath = (conversationId: string): string => `/v1/conversations/${encodeURIComponent(conversationId)}`;

/** The conversation's state, as `GET /v1/conversations/{id}` answers it. */
export function stateThroughApi(api: ApiDecider, conversationId: string): Promise<ConversationState> {
  return callApi<ConversationState>(api, 'GET', conversationPath(conversationId));
}

/** The whole stored transcript, page by page (`GET /v1/conversations/{id}/transcript`). */
export async function transcriptThroughApi(api: ApiDecider, conversationId: string): Promise<StoredMessage[]> {
  const messages: StoredMessage[] = [];
  for (let after = -1; ;) {
    const page = await callApi<{ messages: StoredMessage[]; next: number | null }>(
      api,
      'GET',
      `${conversationPath(conversationId)}/transcript?after=${after}&limit=500`,
    );
    messages.push(...page.messages);
    if (page.next === null) return messages;
    after = page.next;
  }
}

/** One server-sent event: its name and parsed data. */
interface Sse {
  event: string;
  data: unknown;
}

/** Splits a server-sent event stream into events. */
async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<Sse> {
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true });
    for (let end = buffered.indexOf('\n\n'); end !== -1; end = buffered.indexOf('\n\n')) {
      const block = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      if (data.length > 0) yield { event, data: JSON.parse(data.join('\n')) as unknown };
    }
  }
}

/**
 * Sends `text` to the conversation as the token's subject (or, given
 * `{ regenerate: true }`, asks for its last answer again) and prints its
 * turn to `out`. Returns when the turn finishes, or when it waits for an
 * approval (printing the commands that decide it). A stream the API ends
 * with `wait_ended` (its turn outlasted the stream's wait, `waitSeconds`,
 * the API's default when unset) is opened again; what was printed is not
 * printed again (a stream opened again sends the calls so far and the running
 * model call's text from its start: each delta says where its text starts).
 */
export async function sayThroughApi(
  api: ApiDecider,
  conversationId: string,
  text: string | { regenerate: true },
  out: (s: string) => void,
  options: { waitSeconds?: number } = {},
): Promise<void> {
  const path = conversationPath(conversationId);
  const { messageId } =
    typeof text === 'string'
      ? await callApi<{ messageId: string }>(api, 'POST', `${path}/messages`, { text })
      : await callApi<{ messageId: string }>(api, 'POST', `${path}/regenerate`, {});
  const printer = new TurnText(out);
  const printedCalls = new Set<string>();
  for (;;) {
    const stop = new AbortController();
    const wait = options.waitSeconds === undefined ? '' : `&waitSeconds=${options.waitSeconds}`;
    const response = await fetch(`${api.url}${path}/events?messageId=${encodeURIComponent(messageId)}${wait}`, {
      headers: { authorization: `Bearer ${api.token}`, accept: 'text/event-stream' },
      signal: stop.signal,
    });
    if (!response.ok || !response.body) {
      const json = (await response.json().catch(() => undefined)) as
        { error?: { code: string; message: string } } | undefined;
      throw new Error(
        `The message was sent (id ${messageId}), but its turn cannot be followed: ${json?.error ? `${json.error.message} (${json.error.code})` : `the API answered ${response.status}`}.`,
      );
    }
    let waitEnded = false;
    // What this stream sent of each response, for a delta without an offset (an API from before deltas carried one):
    // a stream starts the running call's text over, so a delta continues what the same stream sent.
    const received = new Map<string, { attempt: number; length: number }>();
    try {
      for await (const { event, data } of readEvents(response.body)) {
        if (event === 'delta') {
          const d = data as { responseKey: string; attempt: number; offset?: number; text: string };
          const before = received.get(d.responseKey);
          const offset = d.offset ?? (before?.attempt === d.attempt ? before.length : 0);
          received.set(d.responseKey, { attempt: d.attempt, length: offset + d.text.length });
          printer.piece(d.responseKey, d.attempt, offset, d.text);
        } else if (event === 'tool_call') {
          const d = data as { toolName: string; toolCallId: string; seq: number };
          if (printedCalls.has(`${d.seq}/${d.toolCallId}`)) continue;
          printedCalls.add(`${d.seq}/${d.toolCallId}`);
          printer.line(`  ⚙ ${d.toolName} [${d.toolCallId}]\n`);
        } else if (event === 'approval') {
          const d = data as { toolName: string; toolCallId: string; arguments: unknown };
          printer.line(
            `  ⏸ ${d.toolName}(${JSON.stringify(d.arguments)}) needs approval:\n` +
              `      npm run cli -- approve ${conversationId} ${d.toolCallId}\n` +
              `      npm run cli -- reject ${conversationId} ${d.toolCallId} --reason "..."\n`,
          );
          return;
        } else if (event === 'turn') {
          const d = data as { outcome: string; error?: string; answer?: string };
          if (d.outcome !== 'answered') printer.line(`agent> (turn ${d.outcome}: ${d.error})\n`);
          else if (d.answer !== undefined) printer.answer(d.answer);
          else printer.newline();
          return;
        } else if (event === 'wait_ended') {
          waitEnded = true;
          break;
        }
      }
    } finally {
      stop.abort();
    }
    if (!waitEnded)
      throw new Error(
        `The API closed the stream of conversation ${conversationId} before its turn finished; follow it with: npm run cli -- show ${conversationId}`,
      );
  }
}
