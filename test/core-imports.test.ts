import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// src/core is the conversation's rules with no Temporal and no I/O: everything it imports,
// followed file by file (type-only imports included), stays among pure modules.

const SRC = path.join(__dirname, '..', 'src');

/** The module specifiers a file imports or re-exports. */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  return [...text.matchAll(/^\s*(?:import|export)\s[^'"]*?from\s+'([^']+)'/gm)].map((m) => m[1]);
}

function resolve(from: string, specifier: string): string {
  const base = path.resolve(path.dirname(from), specifier);
  for (const candidate of [`${base}.ts`, path.join(base, 'index.ts')]) if (fs.existsSync(candidate)) return candidate;
  throw new Error(`cannot resolve ${specifier} from ${from}`);
}

describe('src/core stays pure', () => {
  it('imports nothing from Temporal, Node or any package, directly or through the modules it uses', () => {
    const seen = new Set<string>();
    const outside: string[] = [];
    const queue = fs
      .readdirSync(path.join(SRC, 'core'))
      .filter((f) => f.endsWith('.ts'))
      .map((f) => path.join(SRC, 'core', f));
    while (queue.length > 0) {
      const file = queue.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      for (const specifier of importsOf(file)) {
        if (!specifier.startsWith('.')) outside.push(`${path.relative(SRC, file)} imports ${specifier}`);
        else queue.push(resolve(file, specifier));
      }
    }
    expect(outside).toEqual([]);
    const reached = [...seen].map((f) => path.relative(SRC, f)).sort();
    expect(reached).toContain('core/conversation.ts');
    expect(reached.filter((f) => !f.startsWith('core/'))).toEqual(['activities/contracts.ts', 'tools/defaults.ts']);
  });
});
