/**
 * The imports of the project's own modules, read from their text: the one
 * parser behind the tests of how modules depend on each other (the layers of
 * src/, test/unit/import-layers.test.ts; no circles, test/unit/import-circles.test.ts).
 * It reads the single-quoted specifiers Prettier leaves; no TypeScript needed.
 */
import fs from 'node:fs';
import path from 'node:path';

/** One `import`, `export … from` or `import()` of a module. */
export interface ModuleImport {
  /** As written: `./calls`, `../contract`, `zod`. */
  specifier: string;
  /** An `import()`: the module is loaded when it runs, not when the importing module is. */
  dynamic: boolean;
  /** `import type`, or braces naming only types: erased when compiled, so loading the importer loads nothing. */
  typeOnly: boolean;
}

/**
 * A static import or re-export (its clause, then its specifier), a bare `import './x'`, or an `import()`. The clause
 * may span lines (`import {\n  a,\n  b,\n} from './x'`).
 */
const IMPORT =
  /^\s*(?:import|export)\s+([^'"]*?)\s*from\s+'([^']+)'|^\s*import\s+'([^']+)'|\bimport\(\s*'([^']+)'\s*\)/gm;

/** What `file` imports and re-exports, statically or not, in the order written. */
export function importsOf(file: string): ModuleImport[] {
  const text = fs.readFileSync(file, 'utf8');
  return [...text.matchAll(IMPORT)].map((m): ModuleImport => {
    if (m[4] !== undefined) return { specifier: m[4], dynamic: true, typeOnly: false };
    if (m[3] !== undefined) return { specifier: m[3], dynamic: false, typeOnly: false };
    const clause = m[1];
    const names = /^\{([^}]*)\}$/
      .exec(clause)?.[1]
      .split(',')
      .map((n) => n.trim())
      .filter((n) => n !== '');
    const typeOnly =
      clause.startsWith('type ') ||
      (names !== undefined && names.length > 0 && names.every((n) => n.startsWith('type ')));
    return { specifier: m[2], dynamic: false, typeOnly };
  });
}

/** Whether a specifier names one of the project's files (`./x`, `../x`) rather than a package. */
export const isRelative = (specifier: string): boolean => specifier.startsWith('.');

/**
 * The file a relative specifier names: itself when it exists (`./start-worker.mjs`), else its `.ts` source (a `.js`
 * specifier names the `.ts` file: compiled Node16 ESM `import()` needs the extension) or the folder's `index.ts`.
 * Throws when there is none.
 */
export function resolveImport(from: string, specifier: string): string {
  const named = path.resolve(path.dirname(from), specifier);
  const base = named.replace(/\.js$/, '');
  for (const candidate of [named, `${base}.ts`, path.join(base, 'index.ts')])
    if (fs.existsSync(candidate) && fs.statSync(candidate).isFile()) return candidate;
  throw new Error(`cannot resolve ${specifier} from ${from}`);
}

/** The modules under `dir`, at any depth: `.ts`, `.mts` and `.mjs` files, not declarations, not `node_modules`. */
export function sourceFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) =>
      e.isDirectory()
        ? e.name === 'node_modules'
          ? []
          : sourceFiles(path.join(dir, e.name))
        : /\.(ts|mts|mjs)$/.test(e.name) && !e.name.endsWith('.d.ts')
          ? [path.join(dir, e.name)]
          : [],
    );
}
