import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// The workflow function only translates what the core decides into Temporal
// commands: it stays short, and it holds no conversation state of its own
// (no `let`: the state is the core's, src/core/conversation.ts).

const FILE = path.join(__dirname, '..', '..', 'src', 'workflows', 'conversation.ts');

describe('the workflow function', () => {
  it('agentConversation is at most 150 lines and declares no let', () => {
    const lines = fs.readFileSync(FILE, 'utf8').split('\n');
    const start = lines.findIndex((l) => l.startsWith('export async function agentConversation('));
    expect(start).toBeGreaterThanOrEqual(0);
    const end = lines.findIndex((l, i) => i > start && l === '}');
    const body = lines.slice(start, end + 1);
    expect(body.length).toBeLessThanOrEqual(150);
    expect(body.filter((l) => /\blet\s/.test(l))).toEqual([]);
  });
});
