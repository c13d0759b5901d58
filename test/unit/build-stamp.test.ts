import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain JavaScript script, run by npm before TypeScript is anywhere (no declarations)
import { refusal, writeRecord } from '../../scripts/build-stamp.mjs';

const check = refusal as (root: string) => string | undefined;
const record = writeRecord as (root: string) => void;

// The record npm run build:app leaves in build/, and what npm run start:compiled
// makes of it, on a project of a few files in a folder of its own.
const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true });
});

function project(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'build-stamp-'));
  roots.push(root);
  fs.mkdirSync(path.join(root, 'src', 'workflows'), { recursive: true });
  fs.writeFileSync(path.join(root, 'tsconfig.app.json'), '{}');
  fs.writeFileSync(path.join(root, 'src', 'main.ts'), 'export {};');
  fs.writeFileSync(path.join(root, 'src', 'workflows', 'conversation.ts'), 'export const turn = 1;');
  return root;
}

function build(root: string): void {
  fs.mkdirSync(path.join(root, 'build'), { recursive: true });
  fs.writeFileSync(path.join(root, 'build', 'main.js'), '');
  record(root);
}

describe('the compiled build and its sources', () => {
  it('a build compiled from the sources now there may start', () => {
    const root = project();
    build(root);
    expect(check(root)).toBeUndefined();
  });

  it('no build, or a build without its record, is refused with what to run', () => {
    const root = project();
    expect(check(root)).toBe(
      'build/main.js is missing: run npm run build:app first (and again after every change to src/).',
    );
    build(root);
    fs.rmSync(path.join(root, 'build', 'sources.json'));
    expect(check(root)).toMatch(
      /^build\/ has no record of the sources it was compiled from \(build\/sources\.json\): run npm run build:app first/,
    );
  });

  it('a source changed, added or removed since the build is named, and the build refused', () => {
    const root = project();
    build(root);
    fs.writeFileSync(path.join(root, 'src', 'workflows', 'conversation.ts'), 'export const turn = 2;');
    fs.writeFileSync(path.join(root, 'src', 'workflows', 'handoff.ts'), 'export {};');
    fs.rmSync(path.join(root, 'src', 'main.ts'));
    fs.writeFileSync(path.join(root, 'tsconfig.app.json'), '{ "compilerOptions": {} }');
    expect(check(root)).toBe(
      'build/ is older than the sources (tsconfig.app.json changed, src/workflows/conversation.ts changed, src/workflows/handoff.ts added, src/main.ts removed since npm run build:app): it would run code other than what src/ holds; run npm run build:app again.',
    );
    record(root);
    expect(check(root)).toBeUndefined();
  });

  it('a build shipped without src/ has nothing to compare with and may start', () => {
    const root = project();
    build(root);
    fs.rmSync(path.join(root, 'src'), { recursive: true });
    expect(check(root)).toBeUndefined();
  });
});
