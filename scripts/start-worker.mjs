// `npm start`'s entry: runs the worker (src/main.ts) as JavaScript, without tsx in the process.
//
// tsx compiles each module as it loads and keeps its loader in the process for the worker's whole life: about 50 MiB
// of resident memory (docs/performance.md, "Waiting conversations"). Here the sources are transpiled once, file by
// file, with esbuild (what tsx uses too: types removed, ES modules turned into CommonJS, no type checking, no
// bundling) into node_modules/.cache/durable-agent-worker/start/<fingerprint>/, a copy of src/'s layout; a start
// whose sources did not change reuses that copy (the fingerprint of src/ takes milliseconds, the transpiling under a
// second). Then the copy's main.js runs in this process.
//
// The copy behaves as the sources do under tsx:
// - `__dirname` and `__filename` are those of the source file (src/…/x.ts): the paths the modules compute from them
//   (the data folder, the workflow bundle's sources and fingerprint, package.json) are the same;
// - a module of src/ that something loads by its path (the failure converter of encrypted payloads) is the copy's,
//   through a resolve hook (`module.registerHooks`, in this thread), so it is one module, not two.
//
// Run through tsx as before, when:
// - AGENT_TOOLS_MODULE is TypeScript (it may import the sources, which then must be the same modules);
// - this Node.js has no `module.registerHooks` (before 22.15);
// - the copy cannot be made (a read-only checkout): said in one line on stderr.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import nodeModule, { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SOURCES = path.join(ROOT, 'src');
const CACHE = path.join(ROOT, 'node_modules', '.cache', 'durable-agent-worker', 'start');
/**
 * Copies kept: this start's and the ones started most recently before it (a worker still running an older copy may
 * load a module late).
 */
const KEEP = 3;
const require = createRequire(import.meta.url);

/** Every `.ts` file under src/, relative to it, sorted, with `/` separators. */
function sourceFiles() {
  const found = [];
  const walk = (relative) => {
    for (const entry of fs.readdirSync(path.join(SOURCES, relative), { withFileTypes: true })) {
      const child = relative ? `${relative}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(child);
      else if (entry.isFile() && entry.name.endsWith('.ts')) found.push(child);
    }
  };
  walk('');
  return found.sort();
}

/** What the copy is made from: this script, esbuild's version, tsconfig.json, the checkout's place, every source. */
function fingerprint(files, esbuildVersion) {
  const hash = createHash('sha256');
  hash.update(`start v1\0${ROOT}\0${esbuildVersion}\0`);
  for (const file of [fileURLToPath(import.meta.url), path.join(ROOT, 'tsconfig.json')])
    hash.update(fs.readFileSync(file));
  for (const file of files) {
    hash.update(`\0${file}\0`);
    hash.update(fs.readFileSync(path.join(SOURCES, file)));
  }
  return hash.digest('hex').slice(0, 24);
}

/** Transpiles `files` into `dir` (a new folder), each with its source map beside it. */
async function transpile(esbuild, files, dir) {
  const { compilerOptions } = JSON.parse(fs.readFileSync(path.join(ROOT, 'tsconfig.json'), 'utf8'));
  await Promise.all(
    files.map(async (file) => {
      const source = path.join(SOURCES, file);
      const out = path.join(dir, file.replace(/\.ts$/, '.js'));
      const result = await esbuild.transform(fs.readFileSync(source, 'utf8'), {
        loader: 'ts',
        format: 'cjs',
        platform: 'node',
        target: 'es2022',
        sourcefile: source,
        sourcemap: 'external',
        tsconfigRaw: { compilerOptions },
        define: { __dirname: JSON.stringify(path.dirname(source)), __filename: JSON.stringify(source) },
        logLevel: 'silent',
      });
      fs.mkdirSync(path.dirname(out), { recursive: true });
      fs.writeFileSync(`${out}.map`, result.map);
      fs.writeFileSync(out, `${result.code}//# sourceMappingURL=${path.basename(out)}.map\n`);
    }),
  );
}

/** The copy of the current sources: made now unless an earlier start made it; its folder. */
async function preparedCopy() {
  const files = sourceFiles();
  const esbuildVersion = JSON.parse(fs.readFileSync(require.resolve('esbuild/package.json'), 'utf8')).version;
  const dir = path.join(CACHE, fingerprint(files, esbuildVersion));
  if (fs.existsSync(path.join(dir, 'main.js'))) {
    // Its time is when a start last used it: pruning keeps the copies started most recently.
    const now = new Date();
    fs.utimesSync(dir, now, now);
    return dir;
  }
  fs.mkdirSync(CACHE, { recursive: true });
  // Made whole in a folder of its own, then renamed: two starts at once each make one, and the first rename wins.
  const partial = fs.mkdtempSync(`${dir}.partial-`);
  const esbuild = await import('esbuild');
  try {
    await transpile(esbuild, files, partial);
  } finally {
    await esbuild.stop?.();
  }
  try {
    fs.renameSync(partial, dir);
  } catch (err) {
    if (!fs.existsSync(path.join(dir, 'main.js'))) throw err;
  }
  fs.rmSync(partial, { recursive: true, force: true });
  pruneOlderCopies(dir);
  return dir;
}

/**
 * Removes all but the {@link KEEP} copies started most recently, and partial ones an interrupted start left an hour ago
 * or more.
 */
function pruneOlderCopies(current) {
  const entries = fs
    .readdirSync(CACHE, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => {
      const full = path.join(CACHE, entry.name);
      return { full, partial: entry.name.includes('.partial-'), mtime: fs.statSync(full).mtimeMs };
    });
  const copies = entries.filter((e) => !e.partial && e.full !== current).sort((a, b) => b.mtime - a.mtime);
  const stale = [...copies.slice(KEEP - 1), ...entries.filter((e) => e.partial && Date.now() - e.mtime > 3_600_000)];
  for (const { full } of stale) fs.rmSync(full, { recursive: true, force: true });
}

/** Loads a module of src/ by its path from the copy: `src/x/y.ts` is `<copy>/x/y.js`. */
function loadSourcesFrom(copy) {
  const sourcesUrl = `${pathToFileURL(SOURCES).href}/`;
  const copyUrl = `${pathToFileURL(copy).href}/`;
  nodeModule.registerHooks({
    resolve(specifier, context, nextResolve) {
      const resolved = nextResolve(specifier, context);
      if (!resolved.url.startsWith(sourcesUrl) || !resolved.url.endsWith('.ts')) return resolved;
      const url = `${copyUrl}${resolved.url.slice(sourcesUrl.length, -'.ts'.length)}.js`;
      return { ...resolved, url, format: 'commonjs' };
    },
  });
}

const typeScriptTools = /\.[cm]?tsx?$/i.test(process.env.AGENT_TOOLS_MODULE?.trim() ?? '');
let copy;
if (!typeScriptTools && typeof nodeModule.registerHooks === 'function') {
  // Nothing has started yet: a stop while the copy is made just ends the process (src/app/stop-signals.ts takes over
  // once the worker's modules load).
  const stopNow = () => process.exit(0);
  process.once('SIGINT', stopNow).once('SIGTERM', stopNow);
  try {
    copy = await preparedCopy();
  } catch (err) {
    process.stderr.write(
      `npm start: could not transpile src/ into ${CACHE} (${err instanceof Error ? err.message : String(err)}); ` +
        'running the sources through tsx instead, which holds about 50 MiB more.\n',
    );
  }
  process.off('SIGINT', stopNow).off('SIGTERM', stopNow);
}
if (copy) {
  loadSourcesFrom(copy);
  require(path.join(copy, 'main.js'));
} else {
  await import('tsx');
  require(path.join(SOURCES, 'main.ts'));
}
