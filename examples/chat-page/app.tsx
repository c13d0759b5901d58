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
import { useState } from 'react';
import { Approval, sendOnceWhenAnswered, useResumeWhileOthersDecide, type ToolPart } from './approvals';
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
  const { messages, sendMessage, regenerate, addToolApprovalResponse, status, error, resumeStream } = useChat({
    id: conversationId,
    // The whole conversation so far (history.ts); resuming a turn's stream then replaces its message, never doubles it.
    messages: history,
    transport,
    resume: true,
    sendAutomaticallyWhen: sendOnce,
  });
  useResumeWhileOthersDecide(messages, status, resumeStream);
  const busy = status === 'submitted' || status === 'streaming';
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
          if (draft.trim() === '' && !attached.files) return;
          void sendMessage({ text: draft, files: attached.files });
          setDraft('');
          attached.clear();
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
          disabled={busy || messages.at(-1)?.role !== 'assistant'}
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
