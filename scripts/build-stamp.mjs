// The compiled worker's record of what it was compiled from, so that
// `npm run start:compiled` never runs a build older than the sources beside it
// (a workflow compiled from other sources than the ones a fix went into would
// replay conversations with code nobody meant to run).
//
//   node scripts/build-stamp.mjs write   after `tsc -p tsconfig.app.json` (npm run build:app)
//   node scripts/build-stamp.mjs check   before `node build/main.js` (prestart:compiled)
//
// The record, build/sources.json, holds a SHA-256 of every file the build reads
// from the project: src/ and the tsconfig files. `check` refuses a missing
// build, a build without a record and a build whose record differs from the
// files now there, naming what changed. A deployment that ships build/ without
// src/ has nothing to compare with: `check` lets it start.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The build's inputs, relative to the project's root. */
const CONFIG_FILES = ['tsconfig.json', 'tsconfig.build.json', 'tsconfig.app.json'];
/** The record, inside the build. */
const RECORD = path.join('build', 'sources.json');

/** Every file under `dir` (relative to `root`), sorted, with `/` separators. */
function filesUnder(root, dir) {
  const found = [];
  const walk = (relative) => {
    for (const entry of fs.readdirSync(path.join(root, relative), { withFileTypes: true })) {
      const child = path.posix.join(relative, entry.name);
      if (entry.isDirectory()) walk(child);
      else if (entry.isFile()) found.push(child);
    }
  };
  if (fs.existsSync(path.join(root, dir))) walk(dir);
  return found.sort();
}

/** The SHA-256 of each input file now in `root`. */
function sourceDigests(root) {
  const files = [...CONFIG_FILES.filter((file) => fs.existsSync(path.join(root, file))), ...filesUnder(root, 'src')];
  return Object.fromEntries(
    files.map((file) => [
      file,
      createHash('sha256')
        .update(fs.readFileSync(path.join(root, file)))
        .digest('hex'),
    ]),
  );
}

/** Writes the record of the sources the build in `root` was just compiled from. */
export function writeRecord(root) {
  const record = {
    note: 'What npm run build:app compiled build/ from; npm run start:compiled compares it with the files now there.',
    files: sourceDigests(root),
  };
  fs.writeFileSync(path.join(root, RECORD), `${JSON.stringify(record, null, 2)}\n`);
}

/**
 * Why the build in `root` must not run, or undefined when it may: missing,
 * unrecorded, or compiled from other sources than those now in `root`.
 */
export function refusal(root) {
  const rebuild = 'run npm run build:app first (and again after every change to src/).';
  if (!fs.existsSync(path.join(root, 'build', 'main.js'))) return `build/main.js is missing: ${rebuild}`;
  if (!fs.existsSync(path.join(root, 'src'))) return undefined; // build/ shipped alone: nothing to compare with
  if (!fs.existsSync(path.join(root, RECORD)))
    return `build/ has no record of the sources it was compiled from (${RECORD}): ${rebuild}`;
  let recorded;
  try {
    recorded = JSON.parse(fs.readFileSync(path.join(root, RECORD), 'utf8')).files ?? {};
  } catch (err) {
    return `${RECORD} cannot be read (${err.message}): ${rebuild}`;
  }
  const now = sourceDigests(root);
  const changed = [
    ...Object.keys(now)
      .filter((file) => recorded[file] !== now[file])
      .map((file) => (file in recorded ? `${file} changed` : `${file} added`)),
    ...Object.keys(recorded)
      .filter((file) => !(file in now))
      .map((file) => `${file} removed`),
  ];
  if (changed.length === 0) return undefined;
  const shown = changed.slice(0, 5).join(', ') + (changed.length > 5 ? ` and ${changed.length - 5} more` : '');
  return `build/ is older than the sources (${shown} since npm run build:app): it would run code other than what src/ holds; run npm run build:app again.`;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const [command] = process.argv.slice(2);
  if (command === 'write') {
    writeRecord(root);
  } else if (command === 'check') {
    const problem = refusal(root);
    if (problem) {
      console.error(problem);
      process.exit(1);
    }
  } else {
    console.error('usage: node scripts/build-stamp.mjs write|check');
    process.exit(2);
  }
}
