/**
 * HTML of the approval inbox (`inbox.ts` serves it). Every value shown comes
 * from conversations and tools, so it is untrusted: {@link html} escapes
 * every interpolated value unless it is already {@link Html} made here, and
 * {@link visible} shows the invisible and direction-changing characters a
 * tool's arguments could hide an amount behind.
 */
import type { PendingApprovalView } from '../client/client';
import { DECISION_FIELD_MAX_CHARS, type ConversationState, type DecisionKind, type TurnRecord } from '../contract';
import type { ChatMessage } from '../contract/messages';

/** Markup that is safe to insert as it is: only {@link html} makes it. */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

/** Escapes text for an HTML element or a double- or single-quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** A template whose interpolations are escaped (arrays joined; `undefined`, `null` and `false` left out; {@link Html} inserted as it is). */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += interpolate(values[i]) + strings[i + 1];
  return new Html(out);
}

function interpolate(value: unknown): string {
  if (value instanceof Html) return value.value;
  if (Array.isArray(value)) return value.map(interpolate).join('');
  if (value === undefined || value === null || value === false) return '';
  return escapeHtml(String(value));
}

/**
 * Makes control, zero-width and bidirectional-override characters visible
 * (as `⟨U+202E⟩`): what the approver reads is what the tool receives.
 */
export function visible(text: string): string {
  return text.replace(
    // Control characters are what this shows: matching them is the point.
    // eslint-disable-next-line no-control-regex
    /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u00AD\u061C\u115F\u1160\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\u3164\uFEFF\uFFA0]/g,
    (c) => `⟨U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}⟩`,
  );
}

/** "12 s", "2 min", "3 h 5 min", "2 d 4 h". */
export function humanDuration(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return minutes % 60 ? `${hours} h ${minutes % 60} min` : `${hours} h`;
  const days = Math.floor(hours / 24);
  return hours % 24 ? `${days} d ${hours % 24} h` : `${days} d`;
}

/** Text cut to `max` characters, saying how much was left out. */
function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}

/** The arguments as the approver should read them: pretty JSON (or the raw text the model sent). */
export function prettyArguments(args: unknown): string {
  const text = typeof args === 'string' ? args : (JSON.stringify(args, null, 2) ?? String(args));
  return visible(clip(text, 8_000));
}

/** Who is signed in, as the header shows it. */
export interface Viewer {
  subject: string;
  roles: readonly string[];
  /** The session's CSRF token, sent back with every form. */
  csrf: string;
  /** May decide (the approver role); otherwise the page is read-only. */
  canDecide: boolean;
}

/** A one-time message shown above the page's content, e.g. why a decision was refused. */
export interface Flash {
  kind: 'ok' | 'error';
  message: string;
  /** The call it is about, whose form shows `reason` again. */
  callKey?: string;
  reason?: string;
}

/** What every page has. */
interface PageFrame {
  title: string;
  /** The CSP nonce of this response's inline style and script. */
  nonce: string;
  viewer?: Viewer;
  /** Refresh `<main>` every ~2 s. */
  live: boolean;
  main: Html;
}

/** How often the page refreshes its content. */
export const REFRESH_MS = 2_000;

const STYLE = `
:root{--fg:#1d2330;--muted:#5d6778;--line:#dde1e8;--bg:#f4f6f9;--card:#fff;--accent:#2450b2;--ok:#17803d;--okbg:#e8f6ed;--bad:#b42318;--badbg:#fdecea;--warn:#8a5a00;--warnbg:#fff6e0}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
a{color:var(--accent)}
.top{display:flex;align-items:center;gap:16px;padding:10px 24px;background:#1d2330;color:#fff}
.top .brand{font-weight:650;letter-spacing:.2px;color:#fff;text-decoration:none}
.top .who{margin-left:auto;display:flex;align-items:center;gap:10px;font-size:14px}
.top .who .roles{opacity:.75}
.top form{margin:0}
.top button{background:transparent;color:#fff;border:1px solid rgba(255,255,255,.45);border-radius:6px;padding:3px 10px;font:inherit;cursor:pointer}
main{max-width:1180px;margin:0 auto;padding:20px 24px 48px}
h1{font-size:22px;margin:6px 0 2px}
h2{font-size:16px;margin:0}
h3{font-size:13px;text-transform:uppercase;letter-spacing:.5px;color:var(--muted);margin:0 0 8px}
.sub{color:var(--muted);margin:0 0 18px;font-size:14px}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;margin:0 0 18px;box-shadow:0 1px 2px rgba(16,24,40,.04)}
.card>header{display:flex;flex-wrap:wrap;align-items:baseline;gap:10px;padding:12px 18px;border-bottom:1px solid var(--line)}
.card>header .meta{margin-left:auto;color:var(--muted);font-size:13px}
.cols{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1.1fr)}
.cols>*{padding:14px 18px}
.cols>*+*{border-left:1px solid var(--line)}
@media (max-width:860px){.cols{grid-template-columns:1fr}.cols>*+*{border-left:0;border-top:1px solid var(--line)}}
.msgs{list-style:none;margin:0;padding:0;display:flex;flex-direction:column;gap:8px}
.msg{border-radius:8px;padding:6px 10px;background:#f1f3f7;font-size:14px}
.msg.user{background:#e9effc}
.msg.tool{background:#f6f6f6;color:var(--muted)}
.msg .role{display:block;font-size:11px;font-weight:650;text-transform:uppercase;letter-spacing:.5px;color:var(--muted)}
.msg .text{white-space:pre-wrap;overflow-wrap:anywhere}
.msg .calls{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:13px}
.call+.call{margin-top:16px;padding-top:16px;border-top:1px dashed var(--line)}
.call .name{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:16px;font-weight:650}
dl.facts{display:grid;grid-template-columns:auto 1fr;gap:2px 12px;margin:8px 0;font-size:14px}
dl.facts dt{color:var(--muted)}
dl.facts dd{margin:0;overflow-wrap:anywhere}
pre.args{margin:8px 0;padding:10px 12px;background:#0f172a;color:#e5e9f0;border-radius:8px;font-size:13px;line-height:1.45;overflow:auto;max-height:320px;white-space:pre-wrap;overflow-wrap:anywhere}
label{display:block;font-size:13px;color:var(--muted);margin:10px 0 4px}
textarea,input[type=password]{width:100%;font:inherit;padding:7px 9px;border:1px solid #c5cbd5;border-radius:6px;background:#fff}
textarea{min-height:56px;resize:vertical}
.actions{display:flex;gap:8px;margin-top:8px}
button.approve,button.reject,button.primary{font:inherit;font-weight:600;border-radius:6px;padding:6px 16px;cursor:pointer;border:1px solid transparent}
button.approve{background:var(--ok);color:#fff}
button.primary{background:var(--accent);color:#fff}
button.reject{background:#fff;color:var(--bad);border-color:var(--bad)}
.badge{display:inline-block;font-size:12px;font-weight:600;padding:1px 8px;border-radius:999px;background:#eef0f4;color:var(--fg)}
.badge.awaiting_approval,.badge.waiting{background:var(--warnbg);color:var(--warn)}
.badge.running{background:#e8eefc;color:var(--accent)}
.badge.answered,.badge.idle{background:var(--okbg);color:var(--ok)}
.badge.failed,.badge.cancelled,.badge.interrupted,.badge.closed{background:var(--badbg);color:var(--bad)}
.flash{border-radius:8px;padding:10px 14px;margin:0 0 16px;border:1px solid}
.flash.error{background:var(--badbg);border-color:#f3b8b2;color:#7a1a12}
.flash.ok{background:var(--okbg);border-color:#a9dcb9;color:#0f5229}
.note{font-size:13px;color:var(--warn);background:var(--warnbg);border-radius:6px;padding:6px 10px;margin:8px 0}
.readonly{font-size:13px;color:var(--muted);margin-top:8px}
.empty{padding:36px;text-align:center;color:var(--muted)}
.answer{white-space:pre-wrap;overflow-wrap:anywhere;background:var(--okbg);border-radius:8px;padding:10px 12px;margin:8px 0 0}
.error-text{white-space:pre-wrap;background:var(--badbg);border-radius:8px;padding:10px 12px;margin:8px 0 0}
.signin{max-width:460px;margin:48px auto}
.signin .card{padding:20px 22px}
.signin p{color:var(--muted);font-size:14px}
.live{font-size:12px;color:var(--muted)}
.waiting-block{margin-top:18px;padding-top:14px;border-top:1px solid var(--line)}
.muted{color:var(--muted)}
details.alt{margin-top:.6rem}details.alt summary{cursor:pointer;color:var(--muted)}details.alt textarea{font-family:ui-monospace,SFMono-Regular,Menlo,monospace}
code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.92em;overflow-wrap:anywhere}
`;

/**
 * Refreshes `<main>` every {@link REFRESH_MS} while it says `data-live="true"`:
 * fetches the same address and swaps the element. It waits while the person
 * has a field or button of it focused, carries typed reasons over to the same call's form, and keeps
 * the messages shown above the content (`data-flash`).
 */
const SCRIPT = `(function(){
var wait=${REFRESH_MS};
function typing(m){var a=document.activeElement;return !!a&&a!==document.body&&m.contains(a);}
function swap(m,next){
var fields=m.querySelectorAll('[data-call-key] textarea');
for(var i=0;i<fields.length;i++){var key=fields[i].closest('[data-call-key]').getAttribute('data-call-key');
var same=next.querySelector('[data-call-key="'+CSS.escape(key)+'"] textarea[name="'+CSS.escape(fields[i].name)+'"]');if(same)same.value=fields[i].value;}
var flashes=m.querySelectorAll('[data-flash]');for(var j=flashes.length-1;j>=0;j--)next.insertBefore(flashes[j],next.firstChild);
m.replaceWith(next);}
function tick(){var m=document.querySelector('main');if(!m||m.getAttribute('data-live')!=='true')return;
if(typing(m)||document.visibilityState==='hidden'){setTimeout(tick,wait);return;}
fetch(location.href,{credentials:'same-origin',cache:'no-store'}).then(function(r){return r.ok?r.text():null;}).then(function(text){
if(!text||document.querySelector('main')!==m||typing(m))return;
var doc=new DOMParser().parseFromString(text,'text/html');var next=doc.querySelector('main');if(next){swap(m,document.adoptNode(next));document.title=doc.title;}
}).catch(function(){}).then(function(){setTimeout(tick,wait);});}
setTimeout(tick,wait);
document.addEventListener('submit',function(e){var b=e.submitter;if(!b||b.value!=='edit')return;
var f=b.form,t=f.querySelector('textarea[name="arguments"]'),out=f.querySelector('[data-testid=edit-problem]'),why='';
try{var v=JSON.parse(t.value);if(v===null||typeof v!=='object'||Array.isArray(v))why='The arguments must be a JSON object, like {"amount_cents": 12000}.';}
catch(x){why='The arguments are not JSON: '+x.message;}
if(why){e.preventDefault();out.textContent=why+' Nothing was sent.';t.focus();}},true);
})();`;

/** The head of a page of the API: its title, named meta values, and its style admitted by the CSP nonce. */
export function pageHead(frame: { title: string; nonce: string; style: string; meta?: Record<string, string> }): Html {
  const meta = Object.entries(frame.meta ?? {}).map(([name, content]) => html`<meta name="${name}" content="${content}" />`);
  return html`<head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <meta name="referrer" content="same-origin" />
    ${meta}
    <title>${frame.title}</title>
    <style nonce="${frame.nonce}">
      ${new Html(frame.style)}
    </style>
  </head>`;
}

/** A whole page: header with who is signed in, the content, and the refresh script. */
export function page(frame: PageFrame): string {
  const { viewer } = frame;
  return html`<!doctype html>
    <html lang="en">
      ${pageHead({ title: frame.title, nonce: frame.nonce, style: STYLE })}
      <body>
        <header class="top">
          <a class="brand" href="/inbox">Approval inbox</a>
          ${
            viewer &&
            html`<div class="who">
              <span>Signed in as <strong data-testid="subject">${viewer.subject}</strong> <span class="roles">(${viewer.roles.join(', ')})</span></span>
              <form method="post" action="/inbox/sign-out">
                <input type="hidden" name="_csrf" value="${viewer.csrf}" /><button type="submit">Sign out</button>
              </form>
            </div>`
          }
        </header>
        <main data-live="${frame.live ? 'true' : 'false'}" data-rendered="${Date.now()}">${frame.main}</main>
        <script nonce="${frame.nonce}">
          ${new Html(SCRIPT)};
        </script>
      </body>
    </html> `.value;
}

/** The sign-in form, with what went wrong last time. */
export function signInMain(options: { problem?: string; next?: string }): Html {
  return html`<div class="signin">
    <div class="card">
      <h1>Sign in</h1>
      <p>Paste your API token. It is checked once and not kept: the page remembers only who you are and your roles, for 8 hours or until you sign out.</p>
      ${options.problem && html`<div class="flash error" role="alert">${options.problem}</div>`}
      <form method="post" action="/inbox/sign-in">
        ${options.next && html`<input type="hidden" name="next" value="${options.next}" />`}
        <label for="token">API token</label>
        <input id="token" name="token" type="password" autocomplete="off" spellcheck="false" required />
        <div class="actions"><button class="primary" type="submit">Sign in</button></div>
      </form>
    </div>
  </div>`;
}

/** A page's one-time message. */
export function flashBox(flash: Flash | undefined): Html {
  if (!flash) return html``;
  return html`<div class="flash ${flash.kind}" role="${flash.kind === 'error' ? 'alert' : 'status'}" data-flash>${flash.message}</div>`;
}

/** A message the page refuses with (bad CSRF token, not found...), with a way back. */
export function problemMain(title: string, message: string): Html {
  return html`<h1>${title}</h1>
    <div class="flash error" role="alert">${message}</div>
    <p><a href="/inbox">Back to the inbox</a></p>`;
}

/** A stored message, as the inbox lists it. */
export interface ShownMessage {
  seq: number;
  message: ChatMessage;
}

/** The recent messages of a conversation: roles and text, tool calls by name. */
export function messagesList(messages: readonly ShownMessage[] | undefined, toolNames: ReadonlyMap<string, string>): Html {
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
  for (const { message } of messages ?? []) if (message.role === 'assistant') for (const c of message.tool_calls ?? []) names.set(c.id, c.function.name);
  return names;
}

/** One waiting call as the inbox shows it (its age is computed when shown). */
export type ShownCall = Omit<PendingApprovalView, 'ageMs'>;

/** The address of a conversation's page. */
export const conversationPath = (id: string): string => `/inbox/conversations/${encodeURIComponent(id)}`;

/** A waiting call: what, for whom, how long, and the form to decide it (for approvers). */
export function callBlock(call: ShownCall, ctx: { viewer: Viewer; flash?: Flash; back: 'inbox' | 'conversation'; fourEyes: boolean; now: number }): Html {
  const own = ctx.fourEyes && call.requestedBy.includes(ctx.viewer.subject);
  const reason = ctx.flash?.callKey === call.callKey ? (ctx.flash.reason ?? '') : '';
  return html`<article class="call" data-call-key="${call.callKey}">
    <div>
      <span class="name">${visible(call.toolName)}</span> <span class="badge waiting">waiting ${humanDuration(ctx.now - call.requestedAt.getTime())}</span>
    </div>
    <dl class="facts">
      <dt>Asked by</dt>
      <dd data-testid="requested-by">${call.requestedBy.length > 0 ? visible(call.requestedBy.join(', ')) : html`<span class="muted">nobody named</span>`}</dd>
      <dt>Since</dt>
      <dd>${call.requestedAt.toISOString().replace('T', ' ').slice(0, 19)} UTC</dd>
      <dt>Call</dt>
      <dd><code>${visible(call.toolCallId)}</code></dd>
      ${
        call.agentPath.length > 0 &&
        html`<dt>Agents</dt>
          <dd data-testid="agent-path">${visible(call.agentPath.join(' › '))}</dd>`
      }
      ${
        call.rootConversationId !== call.conversationId &&
        html`<dt>For</dt>
          <dd data-testid="root-conversation">
            conversation <a href="${conversationPath(call.rootConversationId)}"><code>${visible(call.rootConversationId)}</code></a
            >, inside the agent's own
            <a href="${conversationPath(call.conversationId)}"><code>${visible(call.conversationId)}</code></a>
          </dd>`
      }
    </dl>
    <pre class="args" data-testid="arguments">${prettyArguments(call.arguments)}</pre>
    ${own && html`<div class="note">You sent the request that asked for this call: another approver has to approve it (four eyes). You may reject it.</div>`}
    ${
      ctx.viewer.canDecide
        ? html`<form method="post" action="${conversationPath(call.conversationId)}/decisions">
            <input type="hidden" name="_csrf" value="${ctx.viewer.csrf}" />
            <input type="hidden" name="callKey" value="${call.callKey}" />
            <input type="hidden" name="back" value="${ctx.back}" />
            <label
              >Reason (recorded with the decision)<textarea name="reason" maxlength="2000" placeholder="Why you approve or reject">${reason}</textarea>
            </label>
            <div class="actions">
              <button class="approve" type="submit" name="decision" value="approve">Approve</button>
              <button class="reject" type="submit" name="decision" value="reject">Reject</button>
            </div>
            ${
              allows(call, 'edit') &&
              html`<details class="alt" data-testid="edit">
                <summary>Edit the arguments, then approve</summary>
                <label
                  >Arguments the call runs with (JSON, checked against the tool before it runs)<textarea name="arguments" rows="6" spellcheck="false">
${editableArguments(call.arguments)}</textarea>
                </label>
                <p class="error-text" data-testid="edit-problem" role="alert"></p>
                <button class="approve" type="submit" name="decision" value="edit">Run with these arguments</button>
              </details>`
            }
            ${
              allows(call, 'respond') &&
              html`<details class="alt" data-testid="respond">
                <summary>Answer in the tool's place</summary>
                <label
                  >Your answer becomes the call's result; the tool does not run<textarea
                    name="response"
                    rows="3"
                    maxlength="${DECISION_FIELD_MAX_CHARS.response}"
                  ></textarea>
                </label>
                <button type="submit" name="decision" value="respond">Respond</button>
              </details>`
            }
          </form>`
        : html`<p class="readonly">Read only: deciding needs the approver role.</p>`
    }
  </article>`;
}

/** Whether a person may decide `kind` on the call (its tool's `decisions`; approve and reject only when it says none). */
function allows(call: ShownCall, kind: DecisionKind): boolean {
  return (call.decisions ?? ['approve', 'reject']).includes(kind);
}

/** The arguments as the editor starts with them: pretty JSON (the raw text when the model's were not JSON). */
function editableArguments(args: unknown): string {
  const text = typeof args === 'string' ? args : (JSON.stringify(args, null, 2) ?? '');
  // Invisible and direction-changing characters as JSON escapes: the person sees them, and the JSON means the same.
  return text.replace(/[\u200b-\u200f\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A conversation with waiting calls, as the inbox lists it. */
export interface InboxGroup {
  conversationId: string;
  calls: ShownCall[];
  /** Its recent messages; undefined when they could not be read. */
  messages?: ShownMessage[];
}

/** The inbox: every waiting call, grouped by conversation, oldest first. */
export function inboxMain(groups: readonly InboxGroup[], ctx: { viewer: Viewer; flash?: Flash; fourEyes: boolean; now: number }): Html {
  const count = groups.reduce((n, g) => n + g.calls.length, 0);
  return html`${flashBox(ctx.flash)}
    <h1>Pending approvals <span class="badge">${count}</span></h1>
    <p class="sub">Tool calls waiting for a person, oldest first, across all conversations. <span class="live">Updates every ${REFRESH_MS / 1000} s.</span></p>
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

/** One conversation: its state, the last turn's outcome and answer, waiting calls and recent messages. */
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
    </section>`;
}
