import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';

// The package's public surface, read as a team's compiler reads it: the
// declarations `npm run build` writes (tsconfig.build.json), built here in
// memory (nothing is written to the repository or anywhere else), then
// loaded through the entry points package.json `exports` names.

const ROOT = path.join(__dirname, '..', '..');
/**
 * Exported names over all entry points at most: 52 at 1.0, 60 after the features of 0.x, 63 with `handoff`, the
 * context a standalone needsApproval names (`ToolCallContext`) and the refusal of a message to a child conversation
 * (`ChildConversationError`), 64 with `approvalPolicy`, 65 with `verifyWebhook` (a webhook receiver's check, from
 * `durable-agent-worker/client`), 66 with `waitForEvent` (a tool whose calls wait for an event), 67 with
 * `comeBackLater` (the tool that asks a conversation to come back later). Option types are
 * inferred from the functions that take them.
 */
const MAX_EXPORTED_NAMES = 67;

interface EntryPoint {
  /** The subpath of package.json `exports`, e.g. `./client`. */
  subpath: string;
  /** Its declaration file, as built. */
  declarations: string;
  /** The source file it is built from. */
  source: string;
}

let entryPoints: EntryPoint[];
let built: ts.Program;

/** The build's options and files, from tsconfig.build.json. */
function buildConfig(): ts.ParsedCommandLine {
  const config = ts.getParsedCommandLineOfConfigFile(
    path.join(ROOT, 'tsconfig.build.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  );
  if (!config) throw new Error('tsconfig.build.json could not be read');
  return config;
}

/** The declaration files the build writes, by absolute path, emitted into memory. */
function emitDeclarations(config: ts.ParsedCommandLine): Map<string, string> {
  const program = ts.createProgram({
    rootNames: config.fileNames,
    options: { ...config.options, emitDeclarationOnly: true },
  });
  const emitted = new Map<string, string>();
  const result = program.emit(undefined, (file, text) => emitted.set(path.resolve(file), text));
  const problems = [...ts.getPreEmitDiagnostics(program), ...result.diagnostics].map((d) =>
    ts.flattenDiagnosticMessageText(d.messageText, '\n'),
  );
  if (problems.length > 0) throw new Error(`The declarations do not build:\n${problems.join('\n')}`);
  return emitted;
}

/** A program over the in-memory declarations of `entries` (everything else, such as node_modules, from disk). */
function loadDeclarations(
  config: ts.ParsedCommandLine,
  emitted: Map<string, string>,
  entries: readonly string[],
): ts.Program {
  const options: ts.CompilerOptions = { ...config.options, noEmit: true, declaration: false };
  const host = ts.createCompilerHost(options);
  const fromDisk = {
    getSourceFile: host.getSourceFile,
    fileExists: host.fileExists,
    readFile: host.readFile,
    directoryExists: host.directoryExists,
  };
  host.fileExists = (file) => emitted.has(path.resolve(file)) || fromDisk.fileExists(file);
  host.readFile = (file) => emitted.get(path.resolve(file)) ?? fromDisk.readFile(file);
  host.directoryExists = (dir) =>
    [...emitted.keys()].some((file) => file.startsWith(path.resolve(dir) + path.sep)) ||
    (fromDisk.directoryExists?.(dir) ?? false);
  host.getSourceFile = (file, language, ...rest) => {
    const text = emitted.get(path.resolve(file));
    return text === undefined
      ? fromDisk.getSourceFile(file, language, ...rest)
      : ts.createSourceFile(file, text, language, true);
  };
  return ts.createProgram({ rootNames: [...entries], options, host });
}

/** The names an entry point's declarations export. */
function exportsOf(entry: EntryPoint): ts.Symbol[] {
  const checker = built.getTypeChecker();
  const file = built.getSourceFile(entry.declarations);
  if (!file) throw new Error(`${entry.subpath}: ${path.relative(ROOT, entry.declarations)} was not built`);
  const module = checker.getSymbolAtLocation(file);
  return module ? checker.getExportsOfModule(module) : [];
}

beforeAll(() => {
  const config = buildConfig();
  const outDir = config.options.outDir!;
  const rootDir = config.options.rootDir!;
  const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    exports: Record<string, string | { types: string }>;
  };
  entryPoints = Object.entries(manifest.exports).flatMap(([subpath, target]) => {
    if (typeof target === 'string') return [];
    const declarations = path.join(ROOT, target.types);
    return [
      {
        subpath,
        declarations,
        source: path.join(rootDir, path.relative(outDir, declarations)).replace(/\.d\.ts$/, '.ts'),
      },
    ];
  });
  built = loadDeclarations(
    config,
    emitDeclarations(config),
    entryPoints.map((e) => e.declarations),
  );
}, 120_000);

describe("the package's public surface", () => {
  it(`exports at most ${MAX_EXPORTED_NAMES} names over all its entry points`, () => {
    const names = Object.fromEntries(
      entryPoints.map((entry) => [
        entry.subpath,
        exportsOf(entry)
          .map((s) => s.name)
          .sort(),
      ]),
    );
    const total = Object.values(names).reduce((sum, list) => sum + list.length, 0);
    expect(entryPoints.map((e) => e.subpath)).toEqual(['.', './workflow', './client', './api', './testing']);
    expect(total, `exported names by entry point: ${JSON.stringify(names, null, 1)}`).toBeLessThanOrEqual(
      MAX_EXPORTED_NAMES,
    );
  });

  it('documents every exported name with TSDoc', () => {
    const checker = built.getTypeChecker();
    const undocumented = entryPoints.flatMap((entry) =>
      exportsOf(entry)
        .filter((symbol) => {
          const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
          return ts.displayPartsToString(target.getDocumentationComment(checker)).trim() === '';
        })
        .map((symbol) => `${entry.subpath}: ${symbol.name}`),
    );
    expect(undocumented).toEqual([]);
  });

  it('names every export of an entry point (no `export *`)', () => {
    const wildcards = entryPoints.flatMap((entry) => {
      const file = ts.createSourceFile(entry.source, fs.readFileSync(entry.source, 'utf8'), ts.ScriptTarget.Latest);
      return file.statements
        .filter((s) => ts.isExportDeclaration(s) && s.exportClause === undefined)
        .map((s) => `${path.relative(ROOT, entry.source)}: ${s.getText(file)}`);
    });
    expect(wildcards).toEqual([]);
  });
});
