/**
 * The frame of every inbox page: the head with its style, the header saying
 * who is signed in, the refresh script; and the small pages and boxes that
 * need no conversation (sign-in, a refusal, a one-time message).
 */
import { html, Html } from './html';
import { INBOX_SCRIPT } from './inbox-script';
import { INBOX_STYLE } from './inbox-style';

/** Who is signed in, as the header shows it. */
export interface Viewer {
  subject: string;
  roles: readonly string[];
  /** The groups the token that signed in gave: an approval policy's rule may let only some groups decide a call. */
  groups: readonly string[];
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

/** The head of a page of the API: its title, named meta values, and its style admitted by the CSP nonce. */
export function pageHead(frame: { title: string; nonce: string; style: string; meta?: Record<string, string> }): Html {
  const meta = Object.entries(frame.meta ?? {}).map(
    ([name, content]) => html`<meta name="${name}" content="${content}" />`,
  );
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
      ${pageHead({ title: frame.title, nonce: frame.nonce, style: INBOX_STYLE })}
      <body>
        <header class="top">
          <a class="brand" href="/inbox">Approval inbox</a>
          ${
            viewer &&
            html`<div class="who">
              <span>Signed in as <strong data-testid="subject">${viewer.subject}</strong> <span class="roles">(${viewer.roles.join(', ')}${viewer.groups.length > 0 ? `; groups ${viewer.groups.join(', ')}` : ''})</span></span>
              <form method="post" action="/inbox/sign-out">
                <input type="hidden" name="_csrf" value="${viewer.csrf}" /><button type="submit">Sign out</button>
              </form>
            </div>`
          }
        </header>
        <main data-live="${frame.live ? 'true' : 'false'}" data-rendered="${Date.now()}">${frame.main}</main>
        <script nonce="${frame.nonce}">
          ${new Html(INBOX_SCRIPT)};
        </script>
      </body>
    </html> `.value;
}

/** The sign-in form, with what went wrong last time. */
export function signInMain(options: { problem?: string; next?: string }): Html {
  return html`<div class="signin">
    <div class="card">
      <h1>Sign in</h1>
      <p>Paste your API token. It is checked once and not kept: the page remembers only who you are, your roles and your groups, for 8 hours or until you sign out.</p>
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
