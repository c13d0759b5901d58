/**
 * The one script of the approval inbox's pages, sent inline under the
 * response's CSP nonce: the live refresh of `<main>`, and the check of edited
 * arguments before they are sent.
 */

/** How often the page refreshes its content. */
export const REFRESH_MS = 2_000;

/**
 * Refreshes `<main>` every {@link REFRESH_MS} while it says `data-live="true"`:
 * fetches the same address and swaps the element. It waits while the person
 * has a field or button of it focused, carries what was typed (reasons, a grant's limits) and which
 * of its parts were open over to the same call's form, and keeps the messages shown above the content (`data-flash`).
 */
export const INBOX_SCRIPT = `(function(){
var wait=${REFRESH_MS};
function typing(m){var a=document.activeElement;return !!a&&a!==document.body&&m.contains(a);}
function swap(m,next){
function call(e){return '[data-call-key="'+CSS.escape(e.closest('[data-call-key]').getAttribute('data-call-key'))+'"] ';}
var fields=m.querySelectorAll('[data-call-key] textarea,[data-call-key] input:not([type=hidden]),[data-call-key] select');
for(var i=0;i<fields.length;i++){
var same=next.querySelector(call(fields[i])+'[name="'+CSS.escape(fields[i].name)+'"]');if(same)same.value=fields[i].value;}
var open=m.querySelectorAll('[data-call-key] details[open][data-testid]');
for(var k=0;k<open.length;k++){var d=next.querySelector(call(open[k])+'details[data-testid="'+CSS.escape(open[k].getAttribute('data-testid'))+'"]');if(d)d.open=true;}
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
