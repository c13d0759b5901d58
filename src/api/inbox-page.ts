/**
 * HTML of the approval inbox (`inbox.ts` serves it): the inbox of waiting
 * calls and a conversation's page. Escaping is `html.ts`'s, the frame of
 * every page `inbox-frame.ts`'s, a waiting call's block `inbox-call.ts`'s;
 * their names are re-exported here for the routes.
 */
import type { ConversationState, TurnRecord } from '../contract';
import type { ChatMessage } from '../contract/messages';
import { clip, html, visible, type Html } from './html';
import { callBlock, conversationPath, type ShownCall } from './inbox-call';
import { flashBox, type Flash, type Viewer } from './inbox-frame';
import { grantsBlock } from './inbox-grants';
import { REFRESH_MS } from './inbox-script';

export { escapeHtml, html, Html, humanDuration, prettyArguments, visible } from './html';
export { callBlock, conversationPath, type ShownCall } from './inbox-call';
export { flashBox, page, pageHead, problemMain, signInMain, type Flash, type Viewer } from './inbox-frame';
export { REFRESH_MS } from './inbox-script';

/** A stored message, as the inbox lists it. */
export interface ShownMessage {
  seq: number;
  message: ChatMessage;
}

/** The recent messages of a conversation: roles and text, tool calls by name. */
export function messagesList(
  messages: readonly ShownMessage[] | undefined,
  toolNames: ReadonlyMap<string, string>,
): Html {
  if (messages === undefined) return html`<p class="muted">The messages could not be read just now.</p>`;
  const shown = messages.filter((m) => m.message.role !== 'system');
  if (shown.length === 0) return html`<p class="muted">No messages stored yet.</p>`;
  return html`<ol class="msgs">
    ${shown.map(({ seq, message }) => {
      switch (message.role) {
        case 'user':
          return html`<li class="msg user" data-seq="${seq}">
            <span class="role">user</span>
            <div class="text">${visible(clip(message.content, 2_000))}</div>
          </li>`;
        case 'assistant':
          return html`<li class="msg assistant" data-seq="${seq}">
            <span class="role">assistant</span>${message.content && html`<div class="text">${visible(clip(message.content, 2_000))}</div>`}${
              !!message.tool_calls?.length &&
              html`<div class="calls">calls ${message.tool_calls.map((c, i) => html`${i > 0 ? ', ' : ''}<strong>${visible(c.function.name)}</strong>`)}</div>`
            }
          </li>`;
        case 'tool':
          return html`<li class="msg tool" data-seq="${seq}">
            <span class="role">result of ${visible(toolNames.get(message.tool_call_id) ?? 'a tool')}</span>
            <div class="text">${visible(clip(message.content, 400))}</div>
          </li>`;
        default:
          return html``;
      }
    })}
  </ol>`;
}

/** Tool names by call id, for showing tool results. */
export function toolNamesOf(messages: readonly ShownMessage[] | undefined): Map<string, string> {
  const names = new Map<string, string>();
  for (const { message } of messages ?? [])
    if (message.role === 'assistant') for (const c of message.tool_calls ?? []) names.set(c.id, c.function.name);
  return names;
}

/** A conversation with waiting calls, as the inbox lists it. */
export interface InboxGroup {
  conversationId: string;
  calls: ShownCall[];
  /** Its recent messages; undefined when they could not be read. */
  messages?: ShownMessage[];
}

/** The inbox: every waiting call, grouped by conversation, oldest first. */
export function inboxMain(
  groups: readonly InboxGroup[],
  ctx: { viewer: Viewer; flash?: Flash; fourEyes: boolean; now: number; yours?: number },
): Html {
  const count = groups.reduce((n, g) => n + g.calls.length, 0);
  const yours = ctx.yours ?? 0;
  return html`${flashBox(ctx.flash)}
    <h1>Pending approvals <span class="badge">${count}</span></h1>
    <p class="sub">Tool calls waiting for a person across all conversations: first those you may decide, then the others, each oldest first. <span class="live">Updates every ${REFRESH_MS / 1000} s.</span></p>
    ${
      ctx.viewer.canDecide &&
      count > 0 &&
      html`<p class="queue" data-testid="yours">${
        yours === 0
          ? 'None of them is yours to decide: each names who may, below.'
          : `${yours} of them ${yours === 1 ? 'is' : 'are'} yours to decide.`
      }</p>`
    }
    ${
      groups.length === 0
        ? html`<div class="card empty">Nothing is waiting for a decision.</div>`
        : groups.map(
            (g) =>
              html`<section class="card" data-conversation="${g.conversationId}">
                <header>
                  <h2>
                    Conversation <a href="${conversationPath(g.conversationId)}"><code>${visible(g.conversationId)}</code></a>
                  </h2>
                  <span class="meta">${g.calls.length} ${g.calls.length === 1 ? 'call' : 'calls'} waiting</span>
                </header>
                <div class="cols">
                  <div>
                    <h3>Recent messages</h3>
                    ${messagesList(g.messages, toolNamesOf(g.messages))}
                  </div>
                  <div>
                    <h3>Waiting for a decision</h3>
                    ${g.calls.map((c) => callBlock(c, { ...ctx, back: 'inbox' }))}
                  </div>
                </div>
              </section>`,
          )
    }`;
}

/** Whether a conversation is busy with a turn (so its page keeps refreshing). */
export function turnInProgress(state: Pick<ConversationState, 'status' | 'queuedMessages'>): boolean {
  return state.status === 'running' || state.status === 'awaiting_approval' || state.queuedMessages > 0;
}

/**
 * One conversation: its state, the last turn's outcome and answer, waiting calls and recent messages, and its standing
 * grants.
 */
export function conversationMain(
  view: {
    state: ConversationState;
    lastTurn?: TurnRecord;
    /** The last turn's answer, when it answered and the answer is stored. */
    answer?: string;
    calls: ShownCall[];
    messages?: ShownMessage[];
  },
  ctx: { viewer: Viewer; flash?: Flash; fourEyes: boolean; now: number },
): Html {
  const { state, lastTurn } = view;
  const busy = turnInProgress(state);
  return html`${flashBox(ctx.flash)}
    <p class="sub"><a href="/inbox">← Pending approvals</a></p>
    <h1>Conversation <code>${visible(state.conversationId)}</code></h1>
    <p class="sub">
      Status
      <span class="badge ${state.status}" data-testid="status">${state.status.replace('_', ' ')}</span>
      ${state.queuedMessages > 0 && html` · ${state.queuedMessages} message(s) queued`} · ${state.messageCount} messages ·
      ${busy ? html`<span class="live">Updates every ${REFRESH_MS / 1000} s until the turn finishes.</span>` : html`<span class="live">No turn running.</span>`}
    </p>
    <section class="card">
      <div class="cols">
        <div>
          <h3>${busy ? 'Previous turn' : 'Last turn'}</h3>
          ${
            lastTurn
              ? html`<div data-testid="last-turn">
                  <span class="badge ${lastTurn.outcome}">${lastTurn.outcome}</span>
                  ${!!lastTurn.requestedBy?.length && html`<span class="muted"> asked by ${visible(lastTurn.requestedBy.join(', '))}</span>`}
                  <span class="muted"> · ${lastTurn.steps} model ${lastTurn.steps === 1 ? 'call' : 'calls'}</span>
                  ${view.answer !== undefined && html`<div class="answer" data-testid="answer">${visible(clip(view.answer, 8_000))}</div>`}
                  ${lastTurn.error && html`<div class="error-text">${visible(clip(lastTurn.error, 2_000))}</div>`}
                </div>`
              : html`<p class="muted">No turn has finished yet.</p>`
          }
          ${
            !!state.eventWaits?.length &&
            html`<div class="waiting-block" data-testid="event-waits">
              <h3>Waiting for an event</h3>
              ${state.eventWaits.map(
                (w) =>
                  html`<p data-testid="event-wait"><code>${visible(w.event)}</code> with key <code>${visible(w.key)}</code> · ${visible(w.toolName)} (<code>${visible(w.toolCallId)}</code>) · until ${w.deadlineAt.replace('T', ' ').slice(0, 19)} UTC</p>`,
              )}
            </div>`
          }
          ${
            !!state.comeBacks?.length &&
            html`<div class="waiting-block" data-testid="come-backs">
              <h3>Coming back later</h3>
              ${state.comeBacks.map(
                (c) =>
                  html`<p data-testid="come-back">${c.at.replace('T', ' ').slice(0, 19)} UTC · ${visible(clip(c.note, 500))}${c.requestedBy && html` <span class="muted">(asked by ${visible(c.requestedBy)})</span>`}</p>`,
              )}
            </div>`
          }
          ${
            view.calls.length > 0 &&
            html`<div class="waiting-block">
              <h3>Waiting for a decision</h3>
              ${view.calls.map((c) => callBlock(c, { ...ctx, back: 'conversation' }))}
            </div>`
          }
        </div>
        <div>
          <h3>Recent messages</h3>
          ${messagesList(view.messages, toolNamesOf(view.messages))}
        </div>
      </div>
    </section>
    ${grantsBlock(state.conversationId, state.grants, ctx)}`;
}
