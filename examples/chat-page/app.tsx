/**
 * A minimal chat in front of the durable agent worker, with the AI SDK's
 * useChat: streaming, tool approvals inline, and a reload that resumes the
 * running turn. Served by the API at /chat (npm run build:chat-page first);
 * the browser is signed in with the API's session cookie, and each write
 * carries the session's CSRF token. No token is ever in page script.
 */
import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses, type UIMessage } from 'ai';
import { useState } from 'react';
import { createRoot } from 'react-dom/client';

const meta = (name: string) => document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? '';
const conversationId = meta('conversation');

const transport = new DefaultChatTransport<UIMessage>({
  api: '/v1/chat',
  credentials: 'same-origin',
  headers: { 'x-csrf-token': meta('csrf') },
  // The conversation keeps the transcript: only the new message is sent.
  prepareSendMessagesRequest: ({ id, messages }) => ({ body: { id, messages: messages.slice(-1) } }),
});

type ToolPart = {
  type: 'dynamic-tool';
  toolName: string;
  toolCallId: string;
  state: string;
  input?: unknown;
  output?: unknown;
  errorText?: string;
  approval?: { id: string };
};

function Part({
  part,
  onDecide,
}: {
  part: UIMessage['parts'][number];
  onDecide: (id: string, approved: boolean) => void;
}) {
  if (part.type === 'text') return <p className="text">{part.text}</p>;
  if (part.type !== 'dynamic-tool') return null;
  const tool = part as unknown as ToolPart;
  return (
    <div className={`tool ${tool.state}`} data-state={tool.state}>
      <code>
        {tool.toolName}({JSON.stringify(tool.input)})
      </code>
      {tool.state === 'approval-requested' && tool.approval && (
        <span>
          <button onClick={() => onDecide(tool.approval!.id, true)}>Approve</button>
          <button onClick={() => onDecide(tool.approval!.id, false)}>Reject</button>
        </span>
      )}
      {tool.state === 'output-available' && <pre>{JSON.stringify(tool.output)}</pre>}
      {tool.state === 'output-error' && <pre className="error">{tool.errorText}</pre>}
      {tool.state === 'output-denied' && <em>rejected</em>}
    </div>
  );
}

function Chat() {
  const [draft, setDraft] = useState('');
  const { messages, sendMessage, addToolApprovalResponse, status, error } = useChat({
    id: conversationId,
    transport,
    resume: true,
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const busy = status === 'submitted' || status === 'streaming';
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
          if (draft.trim() === '') return;
          void sendMessage({ text: draft });
          setDraft('');
        }}
      >
        <input aria-label="Message" value={draft} onChange={(e) => setDraft(e.target.value)} disabled={busy} />
        <button type="submit" disabled={busy}>
          Send
        </button>
        <span id="status">{status}</span>
      </form>
    </main>
  );
}

createRoot(document.getElementById('root')!).render(<Chat />);
