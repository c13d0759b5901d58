/**
 * A minimal chat in front of the durable agent worker, with the AI SDK's
 * useChat: streaming, tool approvals inline, and a reload that shows the
 * whole conversation (history.ts) and resumes the running turn. Served by
 * the API at /chat (npm run build:chat-page first);
 * the browser is signed in with the API's session cookie, and each write
 * carries the session's CSRF token. No token is ever in page script.
 */
import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport, type UIMessage } from 'ai';
import { useRef, useState } from 'react';
import { Approval, heldForOthers, sendOnceWhenAnswered, useResumeWhileOthersDecide, type ToolPart } from './approvals';
import { createRoot } from 'react-dom/client';
import { loadHistory } from './history';
import { FilePart, useAttachments } from './files';

const meta = (name: string) => document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? '';
const conversationId = meta('conversation');

const transport = new DefaultChatTransport<UIMessage>({
  api: '/v1/chat',
  credentials: 'same-origin',
  headers: { 'x-csrf-token': meta('csrf') },
  // The conversation keeps the transcript: only the new message is sent.
  // regenerate() says so with its trigger and the message it replaces (it may leave no message to send).
  prepareSendMessagesRequest: ({ id, messages, trigger, messageId }) => ({
    body: { id, messages: messages.slice(-1), trigger, messageId },
  }),
});

function Part({
  part,
  onDecide,
}: {
  part: UIMessage['parts'][number];
  onDecide: (id: string, approved: boolean) => void;
}) {
  if (part.type === 'text') return <p className="text">{part.text}</p>;
  if (part.type === 'file') return <FilePart part={part} />;
  if (part.type !== 'dynamic-tool') return null;
  const tool = part as unknown as ToolPart;
  return (
    <div className={`tool ${tool.state}`} data-state={tool.state}>
      {tool.title && <span className="agents">{tool.title} › </span>}
      <code>
        {tool.toolName}({JSON.stringify(tool.input)})
      </code>
      <Approval tool={tool} onDecide={onDecide} />
      {tool.state === 'output-available' && <pre>{JSON.stringify(tool.output)}</pre>}
      {tool.state === 'output-error' && <pre className="error">{tool.errorText}</pre>}
      {tool.state === 'output-denied' && tool.approval?.approved === undefined && <em>rejected</em>}
    </div>
  );
}

function Chat({ history }: { history: UIMessage[] }) {
  const [draft, setDraft] = useState('');
  const [sendOnce] = useState(sendOnceWhenAnswered);
  // Set when a message is sent while the response is held: once its answer ends, the page reads the conversation again.
  const reread = useRef(false);
  const chat = useChat({
    id: conversationId,
    // The whole conversation so far (history.ts); resuming a turn's stream then replaces its message, never doubles it.
    messages: history,
    transport,
    resume: true,
    sendAutomaticallyWhen: sendOnce,
    // The turn a message sent while held interrupted (or waited behind) shows as it ended, as a reload would show it.
    onFinish: ({ isAbort }) => {
      if (isAbort || !reread.current) return;
      reread.current = false;
      loadHistory(conversationId).then(chat.setMessages, () => undefined);
    },
  });
  const { messages, sendMessage, regenerate, addToolApprovalResponse, status, error, resumeStream, stop } = chat;
  useResumeWhileOthersDecide(messages, status, resumeStream);
  // A response held open while a call waits for someone else does not keep the reader from writing: a message sent
  // then ends that response and goes to the conversation, which interrupts the turn or queues it (its onNewMessage).
  const held = heldForOthers(messages, status);
  const streaming = status === 'submitted' || status === 'streaming';
  const busy = streaming && !held;
  const attached = useAttachments(busy);
  return (
    <main>
      <h1>Conversation {conversationId}</h1>
      <ol id="messages">
        {messages.map((m) => (
          <li key={m.id} className={m.role}>
            {m.parts.map((part, i) => (
              <Part key={i} part={part} onDecide={(id, approved) => addToolApprovalResponse({ id, approved })} />
            ))}
          </li>
        ))}
      </ol>
      {error && <p className="error">{error.message}</p>}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (busy || (draft.trim() === '' && !attached.files)) return;
          // The files are read as the send starts: the picker is cleared only then.
          const send = () => {
            void sendMessage({ text: draft, files: attached.files });
            setDraft('');
            attached.clear();
          };
          if (!held) return send();
          reread.current = true;
          void stop().then(send);
        }}
      >
        <input aria-label="Message" value={draft} onChange={(e) => setDraft(e.target.value)} disabled={busy} />
        {attached.picker}
        <button type="submit" disabled={busy}>
          Send
        </button>
        <button
          type="button"
          onClick={() => void regenerate()}
          disabled={streaming || messages.at(-1)?.role !== 'assistant'}
        >
          Regenerate
        </button>
        <span id="status">{status}</span>
      </form>
    </main>
  );
}

const root = createRoot(document.getElementById('root')!);
loadHistory(conversationId).then(
  (history) => root.render(<Chat history={history} />),
  (err: Error) => root.render(<p className="error">{err.message}</p>),
);
