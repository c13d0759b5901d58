/**
 * The style sheet of the approval inbox's pages, sent inline under the
 * response's CSP nonce (no other style is admitted).
 */

/** The inbox's CSS: header, cards, messages, waiting calls and their forms, badges by status. */
export const INBOX_STYLE = `
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
button.approve:disabled{opacity:.45;cursor:not-allowed}
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
input[type=number],input[type=text],select{font:inherit;padding:5px 8px;border:1px solid #c5cbd5;border-radius:6px;background:#fff}
input[type=number],input[type=text]{width:100%}
.grant-fields{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:0 12px}
.grant-fields .duration{display:flex;gap:6px}
.grants{padding:6px 18px 14px}
.grant+.grant{margin-top:12px;padding-top:12px;border-top:1px dashed var(--line)}
.grant .name{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-weight:650}
form.revoke{display:flex;align-items:flex-end;gap:8px}form.revoke label{flex:1;margin:0}
.badge.live{background:var(--okbg);color:var(--ok)}
.badge.revoked,.badge.expired{background:var(--badbg);color:var(--bad)}
`;
