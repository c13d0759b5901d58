/** Reading a chat turn's UI message stream with `ai`'s own reader, as a chat page does. */
import { readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';

/**
 * The message a turn's stream leaves after the page's `messages`: the last assistant message continued (the stream
 * of a turn that approved calls goes on with it), else a new one.
 */
export async function streamedMessage(
  stream: ReadableStream<UIMessageChunk>,
  messages: readonly UIMessage[],
): Promise<UIMessage> {
  const last = messages[messages.length - 1];
  let message: UIMessage | undefined;
  for await (const m of readUIMessageStream<UIMessage>({
    stream,
    ...(last?.role === 'assistant' ? { message: structuredClone(last) } : {}),
  }))
    message = m;
  if (!message) throw new Error('the stream ended without a message');
  return message;
}
