/**
 * `audit export` and `audit verify`: every decision on tool calls in a time
 * range as JSON Lines (from PostgreSQL, or through the HTTP API's
 * `GET /v1/audit` with AGENT_API_URL and an operator's AGENT_API_TOKEN), and
 * the check of such an export's signatures with the decision keys the API
 * signs with, found as `npm start` finds them (docs/approval-policies.md#audit).
 */
import fs from 'node:fs';
import readline from 'node:readline';
import type { Writable } from 'node:stream';
import type { Command } from 'commander';
import { loadConfig } from '../../app/config';
import { resolveDecisionKeys } from '../../app/decision-keys';
import { AUDIT_MAX_RANGE_DAYS, auditRange, type AuditRange } from '../../audit/range';
import { auditVerificationFailed, describeAuditVerification, verifyAuditExport } from '../../audit/verify-export';
import { readAuditRecords } from '../../db/audit';
import { remoteApi, type ApiDecider } from '../api-decisions';
import { withDatabase } from '../connect';

/** Adds `audit export` and `audit verify` to the program. */
export function addAuditCommands(program: Command): void {
  const audit = program
    .command('audit')
    .description("export the decisions on tool calls in a time range as JSON Lines, and check an export's signatures");

  audit
    .command('export')
    .description(
      `write every decision made from --from (included) to --to (excluded, at most ${AUDIT_MAX_RANGE_DAYS} days later) as JSON Lines, one record a line: who, when, the calls and their arguments, the verdict, the rule, the signed decision (from PostgreSQL; through the HTTP API with AGENT_API_URL and an operator's AGENT_API_TOKEN)`,
    )
    .requiredOption('--from <time>', 'ISO 8601 with Z or an offset (2026-01-01T00:00:00Z), or a date (midnight UTC)')
    .requiredOption('--to <time>', 'the same; the range ends before it')
    .option('--out <file>', 'write to this new file (mode 0600; an existing file is refused), not standard output')
    .action(async (options: { from: string; to: string; out?: string }) => {
      const range = auditRange(options.from, options.to);
      const remote = remoteApi(process.env);
      const target = options.out === undefined ? undefined : openNewFile(options.out);
      const out: Writable = target ?? process.stdout;
      let written = 0;
      try {
        written = remote
          ? await exportThroughApi(remote, range, out, (n) => (written = n))
          : await withDatabase(async (pool, tables) => {
              for await (const page of readAuditRecords(pool, tables, range)) {
                await write(out, page.map((record) => `${JSON.stringify(record)}\n`).join(''));
                written += page.length;
              }
              return written;
            });
        if (target) await closeFile(target);
      } catch (err) {
        if (target) {
          target.destroy();
          fs.rmSync(options.out!, { force: true });
        }
        const where = target ? ` ${options.out} was removed.` : ' What was written is incomplete.';
        throw new Error(`The export failed after ${written} records: ${(err as Error).message}${where}`, {
          cause: err,
        });
      }
      process.stderr.write(
        `Exported ${written} record${written === 1 ? '' : 's'} decided from ${range.from.toISOString()} to ${range.to.toISOString()}${options.out ? ` to ${options.out}` : ''}.\n`,
      );
    });

  audit
    .command('verify')
    .description(
      "check the signature of every signed record of an export with the decision keys the API signs with (AGENT_DECISION_KEYS, AGENT_DECISION_KEYS_FILE, or npm start's in the data folder); exits 1 when a record is invalid, mismatched, signed with a key not given, or not a record",
    )
    .argument('<file>', 'the export, or - for standard input')
    .action(async (file: string) => {
      const { keys } = resolveDecisionKeys(loadConfig(), { create: false });
      if (file !== '-' && !fs.existsSync(file))
        throw new Error(`${file} does not exist: name an export of "audit export", or - to read standard input.`);
      const input = file === '-' ? process.stdin : fs.createReadStream(file, 'utf8');
      const lines = readline.createInterface({ input, crlfDelay: Infinity });
      const result = await verifyAuditExport(lines, keys);
      const source = file === '-' ? 'standard input' : file;
      process.stdout.write(
        `${describeAuditVerification(
          result,
          source,
          keys.map((k) => k.id),
        ).join('\n')}\n`,
      );
      if (auditVerificationFailed(result)) process.exitCode = 1;
    });
}

/** Opens `file` for the export: created now, owner only (it holds arguments and names); an existing file is refused. */
function openNewFile(file: string): fs.WriteStream {
  let fd: number;
  try {
    fd = fs.openSync(file, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST')
      throw new Error(`${file} exists: the export writes a new file. Remove it, or name another with --out.`, {
        cause: err,
      });
    throw new Error(`Cannot create ${file}: ${(err as Error).message}`, { cause: err });
  }
  return fs.createWriteStream('', { fd });
}

/** Writes `chunk`, waiting when `out` is full. */
async function write(out: Writable, chunk: string | Uint8Array): Promise<void> {
  if (out.write(chunk)) return;
  await new Promise<void>((resolve, reject) => {
    const done = (err?: Error) => {
      out.off('drain', done);
      out.off('error', done);
      if (err) reject(err);
      else resolve();
    };
    out.once('drain', done);
    out.once('error', done);
  });
}

/** Ends the file and waits until it is written. */
function closeFile(file: fs.WriteStream): Promise<void> {
  return new Promise((resolve, reject) => {
    file.once('error', reject);
    file.end(() => resolve());
  });
}

/**
 * Streams `GET /v1/audit` to `out` as it comes, counting the records (lines) through `progress`; throws with the API's
 * refusal, or when the body is cut short. Returns the records written.
 */
async function exportThroughApi(
  api: ApiDecider,
  range: AuditRange,
  out: Writable,
  progress: (records: number) => void,
): Promise<number> {
  const query = new URLSearchParams({ from: range.from.toISOString(), to: range.to.toISOString() });
  const response = await fetch(`${api.url}/v1/audit?${query}`, {
    headers: { authorization: `Bearer ${api.token}` },
  }).catch((err: Error) => {
    throw new Error(
      `the HTTP API at ${api.url} did not answer (${err.message}). Is npm start (or npm run api) running?`,
    );
  });
  if (!response.ok || !response.body) {
    const body = (await response.json().catch(() => undefined)) as
      { error?: { code: string; message: string } } | undefined;
    const error = body?.error;
    throw new Error(error ? `${error.message} (${error.code})` : `the API at ${api.url} answered ${response.status}`);
  }
  let records = 0;
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    await write(out, chunk);
    for (const byte of chunk) if (byte === 0x0a) records++;
    progress(records);
  }
  return records;
}
