/**
 * The example chat page's shell (`/chat`): the conversation id and the
 * session's CSRF token in meta tags, and the bundled script
 * (examples/chat-page, built by `npm run build:chat-page`), admitted by the
 * page's CSP nonce. The session cookie carries the identity.
 */
import { html, pageHead } from './inbox-page';

const STYLE = `body{font:15px/1.45 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
main{max-width:760px;margin:0 auto;padding:16px}ol{list-style:none;padding:0}
li{background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:8px 12px;margin:8px 0}li.user{background:#eef4ff}
.tool{font-size:13px;border-left:3px solid #9aa5b5;padding-left:8px;margin:6px 0}.tool pre{white-space:pre-wrap;margin:4px 0}
.error{color:#a4262c}form{display:flex;gap:8px}input{flex:1;padding:6px}button{padding:6px 12px}`;

/** The page, for a signed-in person. */
export function chatPage(frame: { nonce: string; conversationId: string; csrf: string; subject: string }): string {
  return html`<!doctype html>
    <html lang="en">
      ${pageHead({ title: `Chat · ${frame.conversationId}`, nonce: frame.nonce, style: STYLE, meta: { conversation: frame.conversationId, csrf: frame.csrf } })}
      <body>
        <p>Signed in as <strong data-testid="subject">${frame.subject}</strong></p>
        <div id="root"></div>
        <script nonce="${frame.nonce}" src="/chat/app.js"></script>
      </body>
    </html>`.value;
}
