/** The one summary a chaos run returns and prints: what it did and found ({@link ChaosSummary}), and its text. */
import type { ModelApi } from '../../src/contract/model-api';
import type { CheckResults } from './checks';
import type { ChaosOptions } from './options';
import { FAULT_KINDS, type FaultKind } from './run-log';
import type { UnexpectedExit } from './worker-pool';
import type { LoggedMessage } from './worker-logs';

/** How many times were measured, and their p50 and p99 (unset when none). */
export interface Percentiles {
  count: number;
  p50Ms?: number;
  p99Ms?: number;
}

/** Recovery times of one kind of fault. */
export interface RecoveryStats {
  /** Faults of this kind. */
  count: number;
  /** Those with at least one turn in flight (the others have nothing to recover). */
  withTurnsInFlight: number;
  /** Controls a fault ended before every conversation in them had moved (left out of the times); 0 for faults. */
  cutShort: number;
  /** Conversations in flight at one of these faults that never progressed afterwards (left out of the times). */
  neverProgressed: string[];
  p50Ms?: number;
  p99Ms?: number;
  maxMs?: number;
  /** The slowest faults: when (ms into the run), how many turns were in flight, and which conversation moved last. */
  slowest: { atMs: number; inFlight: number; recoveredMs?: number; conversationId?: string; cause?: string }[];
  /** What the last conversation to move waited for, by cause: how many faults, and their median recovery. */
  causes: Record<string, { count: number; p50Ms?: number }>;
  /**
   * Fault → the last conversation it held up (a timeout or a takeover in its wait) progressed, over the faults that
   * held one up.
   */
  heldUp: Percentiles;
  /** Fault → each conversation it held up progressed, over every held-up conversation of every fault of this kind. */
  heldUpConversations: Percentiles;
  /**
   * Fault → the held-up work of each such conversation ran again (its retried
   * attempt started, or its next workflow task after a timeout): recovery
   * without the redone work's own time.
   */
  resumed: Percentiles;
}

/** What a run did and found. `text` is the summary as printed. */
export interface ChaosSummary {
  runId: string;
  seed: string;
  options: Required<
    Pick<
      ChaosOptions,
      | 'conversations'
      | 'kills'
      | 'serverRestarts'
      | 'databaseRestarts'
      | 'concurrency'
      | 'maxMinutes'
      | 'workers'
      | 'lostWorkerTakeover'
      | 'controls'
      | 'cluster'
      | 'responsesShare'
    >
  >;
  durationMs: number;
  /** True when the hard stop (`maxMinutes`) ended the run. */
  hardStopped: boolean;
  conversations: number;
  messagesSent: number;
  turns: number;
  turnOutcomes: Record<string, number>;
  toolOutcomes: Record<string, number>;
  modelRequests: number;
  /** Per model API: the run's conversations on it and the requests its endpoint received. */
  modelApis: Record<ModelApi, ModelApiUse>;
  faults: Record<FaultKind, number>;
  decisions: CheckResults['decisions'];
  mustBeZero: CheckResults['mustBeZero'];
  refundsApplied: number;
  effectsOfInterruptedCalls: number;
  /** Effects applied by runs a reset abandoned: real, and kept. */
  effectsOfAbandonedRuns: number;
  /** Resets made, by kind, and forks made (forks of forks among them). */
  goingBack: { resets: Record<string, number>; forks: number; forksOfForks: number; forksWhileWaiting: number };
  continueAsNewAfterEvents?: number;
  continuedAsNew: number;
  /** Conversations of agents called as tools (child workflows) the run made and checked. */
  subAgentConversations: number;
  /** Conversations never started because the hard stop came first. */
  notStarted: number;
  recovery: {
    definition: string;
    workerKills: RecoveryStats;
    serverRestarts: RecoveryStats;
    databaseRestarts: RecoveryStats;
    /** The same measure at moments with no fault: the floor the recovery times stand on. */
    controls: RecoveryStats;
  };
  workers: {
    started: number;
    /** Spawn → ready of the first workers (each bundles the workflow code). */
    startupP50Ms?: number;
    /** Replacements of killed or exited workers, on their predecessors' data folders (the bundle reused). */
    restarts: number;
    restartP50Ms?: number;
    restartMaxMs?: number;
    unexpectedExits: UnexpectedExit[];
    loggedWarnings: LoggedMessage[];
  };
  clientRetries: number;
  /** One line per problem behind a non-zero "must be 0". */
  problems: string[];
  /** Every "must be 0" is 0 and the hard stop did not fire. */
  passed: boolean;
  /** Where the worker logs are, when kept. */
  keptFiles?: string;
  text: string;
}

/** What one model API's endpoint saw in a run. */
export interface ModelApiUse {
  /** The run's conversations that sent requests there (their forks and agents called as tools counted with them). */
  conversations: number;
  /** Requests its endpoint received, invalid ones included. */
  requests: number;
  /** Of those, answered with a 400/404 (or, on the Responses API, found breaking a rule when read again). */
  invalid: number;
  /** Replies that carried reasoning (Responses API). */
  reasoningReplies: number;
  /** Reasoning items sent back in requests (Responses API). */
  reasoningItemsSentBack: number;
  /** Calls sent back that the model wrote right after reasoning, each checked for it (Responses API). */
  reasoningLedCallsSent: number;
  /** Calls sent back without the reasoning the model wrote just before them (Responses API; must be 0). */
  reasoningLost: number;
  /** Answers stored with reasoning items, and those items (Responses API). */
  storedReasoning: { answers: number; items: number };
}

const MUST_BE_ZERO_LABELS: Record<keyof ChaosSummary['mustBeZero'], string> = {
  invalidModelRequests: 'invalid requests seen by the model server',
  sideEffectsAppliedTwice: 'side effects applied more than once (or missing/inconsistent)',
  effectsOfCallsNotRun: 'side effects of calls reported as not run',
  decisionsLost: 'decisions lost',
  conversationsStuck: 'conversations stuck',
  brokenTranscripts: 'broken transcripts',
  transcriptRepairs: 'transcript repairs by the workflow',
  effectKeysFromProviderIds: 'side effects keyed by a provider id',
  lostToSizeLimits: 'messages, answers or results lost to a size limit',
  conversationsNotAnswering: 'conversations that no longer answer',
  decisionsWithoutIdentity: 'decisions recorded without an authenticated identity',
  reasoningNotSentBack: 'calls sent back without their reasoning (Responses API)',
};

/** The conversations and requests of one model API. */
function apiLine(use: ModelApiUse): string {
  return `${use.conversations} conversations, ${use.requests} requests (${use.invalid} invalid)`;
}

const seconds = (ms: number | undefined): string => (ms === undefined ? '–' : `${(ms / 1000).toFixed(1)} s`);

function counts(record: Record<string, number>): string {
  const entries = Object.entries(record).filter(([, n]) => n > 0);
  return entries.length === 0 ? 'none' : entries.map(([k, n]) => `${k} ${n}`).join(', ');
}

function recovery(label: string, stats: RecoveryStats, counted = 'fault(s)'): string {
  const slowest = stats.slowest
    .filter((m) => m.conversationId)
    .map(
      (m) =>
        `${seconds(m.recoveredMs)} at +${seconds(m.atMs)} (${m.inFlight} in flight, last: ${m.conversationId}${m.cause ? `, ${m.cause}` : ''})`,
    );
  const causes = Object.entries(stats.causes)
    .sort(([, a], [, b]) => b.count - a.count)
    .map(([cause, c]) => `${cause} ${c.count} (p50 ${seconds(c.p50Ms)})`);
  return (
    `${label}: p50 ${seconds(stats.p50Ms)}, p99 ${seconds(stats.p99Ms)}, max ${seconds(stats.maxMs)} ` +
    `(${stats.count} ${counted}, ${stats.withTurnsInFlight} with turns in flight` +
    (stats.cutShort > 0 ? `, ${stats.cutShort} cut short by a fault and left out` : '') +
    ')' +
    (stats.neverProgressed.length > 0
      ? `\n    never progressed after it (left out of the times): ${stats.neverProgressed.join(', ')}`
      : '') +
    (slowest.length > 0 ? `\n    slowest: ${slowest.join('; ')}` : '') +
    (causes.length > 0 ? `\n    what the last conversation waited for: ${causes.join(', ')}` : '') +
    (stats.heldUp.count > 0
      ? `\n    the conversations it held up (a timeout or a takeover in their wait): last of each fault p50 ${seconds(stats.heldUp.p50Ms)}, p99 ${seconds(stats.heldUp.p99Ms)} (${stats.heldUp.count} fault(s)); ` +
        `each conversation p50 ${seconds(stats.heldUpConversations.p50Ms)}, p99 ${seconds(stats.heldUpConversations.p99Ms)} (${stats.heldUpConversations.count})` +
        `\n    their held-up work ran again (retried attempt or next workflow task started): p50 ${seconds(stats.resumed.p50Ms)}, p99 ${seconds(stats.resumed.p99Ms)} (${stats.resumed.count})`
      : '')
  );
}

/** Formats the summary as printed by `npm run chaos`. */
export function formatSummary(s: ChaosSummary): string {
  const minutes = Math.floor(s.durationMs / 60_000);
  const secs = Math.round((s.durationMs % 60_000) / 1000);
  const verdict = s.passed ? 'PASS' : 'FAIL';
  const faultLine = FAULT_KINDS.map((k) => `${k} ${s.faults[k]}`);
  const reasoning = s.modelApis.responses;
  const lines = [
    '══════════════════ chaos run summary ══════════════════',
    `run ${s.runId} · seed ${s.seed} · ${minutes}m ${secs}s · ${s.conversations} conversations (concurrency ${s.options.concurrency}) · ${s.options.workers} worker processes` +
      (s.options.cluster
        ? ' · Temporal cluster (server binaries, PostgreSQL, 4 shards, mTLS)'
        : ' · Temporal dev server') +
      (s.options.lostWorkerTakeover ? '' : ' · lost-worker takeover off') +
      (s.hardStopped
        ? ` · HARD STOP after ${s.options.maxMinutes} min (${s.notStarted} conversation(s) never started)`
        : ''),
    `requested     ${s.options.kills} worker kills, ${s.options.serverRestarts} server restart(s), ${s.options.databaseRestarts} database restart(s)` +
      (s.continueAsNewAfterEvents ? `, continue as new after ${s.continueAsNewAfterEvents} events` : '') +
      (s.faults.worker_kill < s.options.kills ||
      s.faults.server_restart < s.options.serverRestarts ||
      s.faults.database_restart < s.options.databaseRestarts
        ? `; ONLY ${s.faults.worker_kill}, ${s.faults.server_restart} and ${s.faults.database_restart} happened before the conversations ended`
        : ''),
    `turns         ${s.turns} (${counts(s.turnOutcomes)}) for ${s.messagesSent} user messages; ${s.modelRequests} model requests; ` +
      `${s.continuedAsNew} continue-as-new; ${s.subAgentConversations} sub-agent conversations`,
    `model APIs    Chat Completions: ${apiLine(s.modelApis.chat)}; Responses (share ${s.options.responsesShare}): ` +
      apiLine(s.modelApis.responses),
    `  reasoning   ${reasoning.reasoningReplies} replies with reasoning; ${reasoning.reasoningItemsSentBack} reasoning items sent back; ` +
      `${reasoning.reasoningLedCallsSent} calls that followed reasoning sent back, ${reasoning.reasoningLost} without it; ` +
      `${reasoning.storedReasoning.answers} answers stored with ${reasoning.storedReasoning.items} reasoning items`,
    'faults injected',
    ...Array.from(
      { length: Math.ceil(faultLine.length / 6) },
      (_, row) => `  ${faultLine.slice(row * 6, row * 6 + 6).join(', ')}`,
    ),
    `tool results  ${counts(s.toolOutcomes)}`,
    `decisions     ${s.decisions.signalsSent} sent, ${s.decisions.acknowledged} decision ids acknowledged: ${s.decisions.applied} applied, ` +
      `${s.decisions.superseded} superseded (their calls had settled otherwise first), ${s.decisions.lost} lost; ${s.decisions.notAcknowledged} never acknowledged; ` +
      `${s.decisions.appliedInSubAgents} applied inside sub-agents`,
    `  by path     ${counts(s.decisions.byPath)}; ${s.decisions.unsignedSent} sent around the API (unsigned or malformed, to be refused); ` +
      `${s.decisions.apiRefusals} refused by the API (calls no longer waiting)`,
    `side effects  ${s.refundsApplied} refunds applied; ${s.effectsOfInterruptedCalls} effect(s) of calls reported "interrupted" (effect unknown by design); ` +
      `${s.effectsOfAbandonedRuns} effect(s) of abandoned runs (applied by a run a reset abandoned: real, kept)`,
    `going back    resets ${counts(s.goingBack.resets)}; ${s.goingBack.forks} forks (${s.goingBack.forksWhileWaiting} while calls waited, ` +
      `${s.goingBack.forksOfForks} of forks); ${s.decisions.reappliedByReset} decision(s) applied again by a reset`,
    ...s.decisions.reappliedByResetNotes.slice(0, 5).map((note) => `  ${note.slice(0, 400)}`),
    'recovery time',
    `  ${recovery('after a worker kill', s.recovery.workerKills)}`,
    `  ${recovery('after a server restart', s.recovery.serverRestarts)}`,
    `  ${recovery('after a database restart', s.recovery.databaseRestarts)}`,
    ...(s.options.controls
      ? [
          `  ${recovery('control, no fault (every worker up, earlier faults recovered): the floor under the times above', s.recovery.controls, 'moment(s)')}`,
        ]
      : []),
    `  measured as: ${s.recovery.definition}`,
    `workers       ${s.workers.started} processes started (first start-up p50 ${seconds(s.workers.startupP50Ms)}, bundling; ` +
      `${s.workers.restarts} restarts on their predecessors' data folders, ready p50 ${seconds(s.workers.restartP50Ms)}, max ${seconds(s.workers.restartMaxMs)}), ` +
      `${s.workers.unexpectedExits.length} exited without being killed; client calls retried ${s.clientRetries} times`,
  ];
  for (const exit of s.workers.unexpectedExits.slice(0, 5)) {
    lines.push(
      `  worker ${exit.workerId} exited on its own (code ${exit.code}, signal ${exit.signal}, ${exit.wasReady ? 'after' : 'before'} ready): ${lastWords(exit.tail)}`,
    );
  }
  const warnings = s.workers.loggedWarnings;
  lines.push(
    `worker logs   ${warnings.reduce((n, w) => n + w.count, 0)} warning/error lines${warnings.length > 0 ? ', most frequent:' : ''}`,
  );
  for (const w of warnings.slice(0, 6)) lines.push(`  ${w.count} × ${w.level}: ${w.message}`);
  lines.push('must be 0');
  for (const [key, label] of Object.entries(MUST_BE_ZERO_LABELS) as [keyof ChaosSummary['mustBeZero'], string][]) {
    const n = s.mustBeZero[key];
    lines.push(`  ${`${label} `.padEnd(66, '.')} ${n}${n === 0 ? '' : '  ✗'}`);
  }
  if (s.problems.length > 0) {
    lines.push(`problems (${s.problems.length}${s.problems.length > 20 ? ', first 20' : ''})`);
    for (const p of s.problems.slice(0, 20)) lines.push(`  - ${p}`);
  }
  if (s.keptFiles) lines.push(`files kept in ${s.keptFiles}`);
  lines.push(`result        ${verdict}`);
  return lines.join('\n');
}

/**
 * What a worker that exited on its own said last: the error line of an uncaught exception (Node prints its version
 * after it), else its last line.
 */
function lastWords(tail: string): string {
  const lines = tail.split('\n').filter(Boolean);
  const error = [...lines]
    .reverse()
    .find((line) => /\b\w*Error\b|uncaught|unhandled/i.test(line) && !/^Node\.js v/.test(line));
  const last = lines.at(-1) ?? '';
  return error && error !== last ? `${error.slice(0, 400)} … ${last}` : last;
}
