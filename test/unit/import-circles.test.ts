import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { importsOf, isRelative, resolveImport, sourceFiles } from '../support/imports';

// No module imports, directly or through others, a module that imports it.
// Such a circle says that something lives in the wrong file: the type or
// function both sides need belongs in one of them, or in a module of its own
// that both import. Type-only imports count: a circle of types is still a type
// in the wrong place. An `import()` does not: it loads when it runs. See
// docs/architecture.md.

const ROOT = path.join(__dirname, '..', '..');
const FOLDERS = ['src', 'scripts', 'test'];

/** A module → the project's modules it imports or re-exports statically (type-only ones included). */
type ImportGraph = Map<string, string[]>;

/** The import graph of `files`, each named by its path from the repository's root. */
function importGraph(files: readonly string[]): ImportGraph {
  const named = (file: string) => path.relative(ROOT, file).split(path.sep).join('/');
  const known = new Set(files.map(named));
  return new Map(
    files.map((file) => {
      const imported = importsOf(file)
        .filter((i) => !i.dynamic && isRelative(i.specifier))
        .map((i) => named(resolveImport(file, i.specifier)))
        .filter((to) => known.has(to) && to !== named(file));
      return [named(file), [...new Set(imported)]];
    }),
  );
}

/** Every module `from` imports, directly or through others (`from` itself only when a circle leads back to it). */
function reachedFrom(graph: ImportGraph, from: string): Set<string> {
  const reached = new Set<string>();
  const next = [...(graph.get(from) ?? [])];
  while (next.length > 0) {
    const module = next.pop()!;
    if (reached.has(module)) continue;
    reached.add(module);
    next.push(...(graph.get(module) ?? []));
  }
  return reached;
}

/** The circles of `graph`: the largest groups of modules each of which reaches every other one, sorted. */
function importCircles(graph: ImportGraph): string[][] {
  const reach = new Map([...graph.keys()].map((m) => [m, reachedFrom(graph, m)]));
  const inCircle = new Set<string>();
  const circles: string[][] = [];
  for (const module of [...graph.keys()].sort()) {
    if (inCircle.has(module) || !reach.get(module)!.has(module)) continue;
    const circle = [...reach.get(module)!].filter((other) => reach.get(other)!.has(module)).sort();
    for (const m of circle) inCircle.add(m);
    circles.push(circle);
  }
  return circles;
}

/** One shortest way round `circle`, from its first module back to it: `a.ts → b.ts → a.ts`. */
function wayRound(graph: ImportGraph, circle: readonly string[]): string {
  const start = circle[0];
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const module = queue.shift()!;
    for (const next of graph.get(module) ?? []) {
      if (next === start) {
        const way = [module];
        while (way[0] !== start) way.unshift(cameFrom.get(way[0])!);
        return [...way, start].join(' → ');
      }
      if (circle.includes(next) && !cameFrom.has(next)) {
        cameFrom.set(next, module);
        queue.push(next);
      }
    }
  }
  throw new Error(`${circle.join(', ')} is no circle`);
}

/** Each circle as its files and one way round it. */
const described = (graph: ImportGraph) =>
  importCircles(graph).map((circle) => `${circle.join(', ')} (${wayRound(graph, circle)})`);

describe('import circles', () => {
  it('no module of src/, scripts/ or test/ imports, directly or through others, a module that imports it', () => {
    const graph = importGraph(FOLDERS.flatMap((folder) => sourceFiles(path.join(ROOT, folder))));
    // The graph is read: a parser that found no imports would find no circles either.
    expect(graph.get('src/core/calls.ts')).toContain('src/core/batch.ts');
    expect(graph.get('src/contract/index.ts')).toContain('src/contract/activities.ts');
    expect(graph.get('test/unit/import-circles.test.ts')).toEqual(['test/support/imports.ts']);
    expect(
      described(graph),
      'circles of imports, each as its files and one way round it: move what one side needs from the other into the ' +
        'module where it belongs, or into a module of its own that both import',
    ).toEqual([]);
  });

  it('finds each circle once, with every module in it and none outside it', () => {
    const graph: ImportGraph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts', 'd.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['e.ts']],
      ['e.ts', ['d.ts', 'f.ts']],
      ['f.ts', []],
    ]);
    expect(described(graph)).toEqual([
      'a.ts, b.ts, c.ts (a.ts → b.ts → c.ts → a.ts)',
      'd.ts, e.ts (d.ts → e.ts → d.ts)',
    ]);
    expect(
      importCircles(
        new Map([
          ['a.ts', ['b.ts']],
          ['b.ts', []],
        ]),
      ),
    ).toEqual([]);
  });
});
