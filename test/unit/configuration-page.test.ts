import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { declaredVariables, ENV_VARS } from '../../src/app/config';

/** One row of the page's table of environment variables: the variables it names and its default cell. */
interface PageRow {
  variables: string[];
  defaultCell: string;
}

/** The code spans of a Markdown table cell, such as `AGENT_API_HOST` in "`AGENT_API_HOST`, `AGENT_API_PORT`". */
function codeSpans(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
}

/** The rows of the table under "## Environment variables" in docs/configuration.md. */
function pageRows(): PageRow[] {
  const page = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'configuration.md'), 'utf8');
  const section = page.split(/^## /m).find((s) => s.startsWith('Environment variables'));
  if (!section) throw new Error('docs/configuration.md has no "## Environment variables" section');
  const rows = section
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .map((line) => line.split('|').slice(1, -1));
  // The header and the |---| line.
  expect(rows[0].map((c) => c.trim())).toEqual(['variable', 'default', 'meaning']);
  return rows.slice(2).map(([variables, defaultCell]) => ({ variables: codeSpans(variables), defaultCell }));
}

describe('the configuration page and the configuration table', () => {
  const rows = pageRows();
  const onPage = rows.flatMap((r) => r.variables);
  const declared = declaredVariables();

  it('the page lists every variable the configuration table declares', () => {
    const missing = declared.map((d) => d.variable).filter((v) => !onPage.includes(v));
    expect(missing, 'declared in src/app/config.ts, absent from docs/configuration.md').toEqual([]);
  });

  it('the page lists no variable the configuration table does not declare', () => {
    const names = new Set(declared.map((d) => d.variable));
    expect(
      onPage.filter((v) => !names.has(v)),
      'in docs/configuration.md, not declared in src/app/config.ts',
    ).toEqual([]);
  });

  it('the page names each variable once', () => {
    expect(onPage.filter((v, i) => onPage.indexOf(v) !== i)).toEqual([]);
  });

  it("the page states each plain default as the table's, in code form, in the variable's row", () => {
    const withDefaults = declared.filter((d) => d.default !== undefined);
    // LOG_LEVEL, AGENT_API_PORT, AGENT_REQUIRE_SIGNED_DECISIONS and the others: a number, a word, true or false.
    expect(withDefaults.length).toBeGreaterThan(10);
    const wrong = withDefaults.filter((d) => {
      const row = rows.find((r) => r.variables.includes(d.variable));
      return !row || !codeSpans(row.defaultCell).includes(String(d.default));
    });
    expect(
      wrong.map((d) => `${d.variable}: \`${String(d.default)}\``),
      'defaults in src/app/config.ts that docs/configuration.md states otherwise',
    ).toEqual([]);
  });

  it('every variable a deployment sets is declared, with a line of doc', () => {
    expect(ENV_VARS.length).toBeGreaterThan(30);
    for (const name of ENV_VARS) expect(declared.find((d) => d.variable === name)?.doc).toMatch(/\w/);
  });
});
