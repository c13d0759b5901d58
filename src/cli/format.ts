/** Readable transcripts for terminals. */
import type { StoredMessage } from '../db/transcript-store';

/**
 * One line (or a few) per message: seq, role (with the agent that wrote an answer, in conversations with agents), text
 * or tool calls.
 */
export function formatTranscript(messages: readonly StoredMessage[]): string {
  return messages
    .map(({ seq, message }) => {
      const head = `#${String(seq).padEnd(3)} ${message.role.padEnd(9)}`;
      switch (message.role) {
        case 'assistant': {
          const calls = (message.tool_calls ?? []).map(
            (c) => `\n${' '.repeat(14)}→ ${c.function.name}(${c.function.arguments})  [${c.id}]`,
          );
          const agent = message.name === undefined ? '' : ` (${message.name})`;
          return `${head}${agent} ${message.content ?? ''}${calls.join('')}`;
        }
        case 'tool':
          return `${head} [${message.tool_call_id}] ${message.content}`;
        default:
          return `${head} ${message.content}`;
      }
    })
    .join('\n');
}
