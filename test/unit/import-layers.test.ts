import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { importsOf, resolveImport as resolve, sourceFiles } from '../support/imports';

// The folders of src/ say where code runs, in layers: a module imports only
// from its own folder and from lower layers, never uphill (the store never
// imports an activity, the worker never imports the demo). And src/core is
// the conversation's rules: pure, with no Temporal, Node or package import,
// directly or through the modules it uses. See docs/architecture.md.

const SRC = path.join(__dirname, '..', '..', 'src');

/** Each folder of src/ and its layer: a module may import from its own folder and from lower layers only. */
const LAYERS: Record<string, number> = {
  contract: 0,
  common: 1,
  // What an audit record is and how its signature is checked: read by db, served by api, verified by the CLI.
  audit: 1.5,
  core: 2,
  db: 2,
  codec: 2,
  mcp: 2,
  tools: 2,
  // Approval policies are declared beside tools and read their call context; activities evaluate them.
  policies: 2.5,
  testing: 2,
  // Temporal Schedules whose runs start conversations: client side, below the client that exposes them.
  schedules: 2,
  workflows: 3,
  activities: 3,
  client: 3,
  demo: 3,
  // Webhook deliveries: the dispatcher the worker's plugin runs, and the options it (and npm start) checks.
  notifications: 3,
  worker: 4,
  api: 4,
  app: 5,
  cli: 6,
  // src/main.ts (npm start) and src/index.ts (the package's worker entry)
  '.': 7,
};

/** The module specifiers a file imports or re-exports, statically or by `import()` (type-only ones included). */
const specifiersOf = (file: string): string[] => importsOf(file).map((i) => i.specifier);

/**
 * The module specifiers a file loads when it is loaded: its static imports and
 * re-exports that bring a value (an `import type`, or one naming only types,
 * is erased), not its dynamic `import()`s, which load only when they run.
 */
const loadedOnImport = (file: string): string[] =>
  importsOf(file)
    .filter((i) => !i.dynamic && !i.typeOnly)
    .map((i) => i.specifier);

/** Every source file and package that loading `entry` loads, following {@link loadedOnImport}. */
function loadedFrom(entry: string): { files: string[]; packages: string[] } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const queue = [entry];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (files.has(file)) continue;
    files.add(file);
    for (const specifier of loadedOnImport(file)) {
      if (specifier.startsWith('.')) queue.push(resolve(file, specifier));
      else packages.add(`${path.relative(SRC, file)} loads ${specifier}`);
    }
  }
  return {
    files: [...files].map((f) => path.relative(SRC, f).split(path.sep).join('/')).sort(),
    packages: [...packages].sort(),
  };
}

const folderOf = (file: string) => {
  const rel = path.relative(SRC, file).split(path.sep);
  return rel.length === 1 ? '.' : rel[0];
};

describe('the layers of src', () => {
  it('every folder has a layer, and no module imports from a higher layer or a sibling folder of its own layer', () => {
    const uphill: string[] = [];
    for (const file of sourceFiles(SRC)) {
      const from = folderOf(file);
      expect(LAYERS[from], `src/${from} has no layer`).toBeDefined();
      for (const specifier of specifiersOf(file)) {
        if (!specifier.startsWith('.')) continue;
        const to = folderOf(resolve(file, specifier));
        if (to !== from && LAYERS[to] >= LAYERS[from])
          uphill.push(
            `${path.relative(SRC, file)} (${from}, layer ${LAYERS[from]}) imports ${specifier} (${to}, layer ${LAYERS[to]})`,
          );
      }
    }
    expect(uphill).toEqual([]);
  });

  it('src/core imports nothing from Temporal, Node or any package, directly or through the contract modules it uses', () => {
    const seen = new Set<string>();
    const outside: string[] = [];
    const queue = sourceFiles(path.join(SRC, 'core'));
    while (queue.length > 0) {
      const file = queue.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      for (const specifier of specifiersOf(file)) {
        if (!specifier.startsWith('.')) outside.push(`${path.relative(SRC, file)} imports ${specifier}`);
        else queue.push(resolve(file, specifier));
      }
    }
    expect(outside).toEqual([]);
    const reached = [...seen].map((f) => path.relative(SRC, f)).sort();
    expect(reached).toContain('core/conversation.ts');
    expect(reached.filter((f) => !f.startsWith('core/') && !f.startsWith('contract/'))).toEqual([]);
  });

  it('the CLI loads neither the demo nor the scripted model server, and the client loads no pg until it reads the database', () => {
    const cli = loadedFrom(path.join(SRC, 'cli', 'cli.ts'));
    expect(cli.files).toContain('client/client.ts');
    expect(cli.files.filter((f) => f.startsWith('demo/') || f.startsWith('testing/'))).toEqual([]);

    const client = loadedFrom(path.join(SRC, 'client', 'index.ts'));
    expect(client.files).toContain('client/client.ts');
    expect(client.files.filter((f) => f.startsWith('demo/') || f.startsWith('testing/'))).toEqual([]);
    expect(client.packages.filter((p) => / loads pg(-[a-z]+)?(\/|$)/.test(p))).toEqual([]);
  });
});
