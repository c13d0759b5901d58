/**
 * Every patch of the conversation workflow, in one list. Pure data,
 * workflow-safe.
 *
 * From 1.0 on, conversations run for weeks across deploys, so a change to the
 * workflow or the core that alters the commands a recorded history issues is
 * made behind `patched(id)` (the core asks through `CoreEnvironment.allows`):
 * a run that began before the change replays as it ran, a run that begins
 * after takes the new path. Each patch is listed here with what it guards,
 * the recorded history that proves the old path still replays, and when it
 * may be deprecated (`deprecatePatch(id)`, once no run that began before it
 * can still be open), then removed. See docs/changing-workflow-code.md.
 *
 * 1.0 started with none: the pre-1.0 compatibility paths were removed and
 * every recorded history was recorded again at 1.0.
 */

/** One patch of the conversation workflow. */
export interface WorkflowPatch {
  /** The id given to `patched()`; never reused. */
  id: string;
  /** What it guards: the rule or command order that changed, and what a run begun before keeps. */
  guards: string;
  /** The recorded history (test/fixtures/histories, without `.json`) begun before the change and replayed after it. */
  fixture: string;
  /** When it may be deprecated: e.g. "once every conversation begun before 1.1 has ended or continued as new". */
  deprecateWhen: string;
}

/** The patches in force, oldest first. */
export const WORKFLOW_PATCHES = [
  {
    id: 'decision-keeps-its-calls',
    guards:
      'A decision checked again after its verification decides only the call instances it was checked against. Before: a decision ' +
      'without a call id (or with a provider id reused by a later response), verified while its turn ended and a new turn asked ' +
      'for approval, applied to the new calls; a run begun before keeps that.',
    fixture: 'decision-verified-after-deadline',
    deprecateWhen:
      'once no run begun before this patch was deployed is still open (docs/changing-workflow-code.md, Retiring a patch)',
  },
  {
    id: 'worker-lost-is-cut-off',
    guards:
      'A tool call whose last attempt failed as WorkerLost (its worker was killed; another worker failed the attempt) was cut off, like a heartbeat timeout: a tool that is not idempotent settles as effect_unknown. Before: it settled as tool_failed, though its effect may have applied; a run begun before keeps that.',
    fixture: 'lost-worker-send-letter',
    deprecateWhen:
      'once no run begun before this patch was deployed is still open (docs/changing-workflow-code.md, Retiring a patch)',
  },
  {
    id: 'idempotent-call-runs-again-after-lost-worker',
    guards:
      'An idempotent tool call whose last attempt lost its worker (heartbeat timeout or WorkerLost) is run once more under the same key: its effect may have applied, and `once` reports the recorded result (or applies it once). Before: it settled as tool_failed, its applied effect read as not run; a run begun before keeps that.',
    fixture: 'lost-worker-post-invoice',
    deprecateWhen:
      'once no run begun before this patch was deployed is still open (docs/changing-workflow-code.md, Retiring a patch)',
  },
  {
    id: 'cancel-while-turn-ends-stops-next-turn',
    guards:
      'A cancel that arrives while a turn that already has its outcome writes its end, with a message waiting for the next turn, makes that turn start cancelled. Before: it was applied to the ending turn and lost, and the waiting message was answered; a run begun before keeps that.',
    fixture: 'cancel-while-turn-ends',
    deprecateWhen:
      'once no run begun before this patch was deployed is still open (docs/changing-workflow-code.md, Retiring a patch)',
  },
  {
    id: 'final-answer-written-by-model-call',
    guards:
      "A model call is asked to write its final answer itself (the request's answerSeq), so a turn's end schedules no write of its own; a turn stopped while its model call ran, or whose model call failed, supersedes what the call may have written (reason stopped). Before: the turn's end wrote the answer with an appendMessages activity; a run begun before keeps that.",
    fixture: 'two-turns-approved',
    deprecateWhen:
      'once no run begun before this patch was deployed is still open (docs/changing-workflow-code.md, Retiring a patch)',
  },
  {
    id: 'called-agents-spend',
    guards:
      "What an agent called as a tool spent (its child conversation's tokens and cost, its own agents' included) is added to the caller's turn and conversation when the child ends, so the caller's budget, state and published usage count it. Before: a caller counted only its own model calls; a run begun before keeps that.",
    fixture: 'called-agents-spend',
    deprecateWhen:
      'once no run begun before this patch was deployed is still open (docs/changing-workflow-code.md, Retiring a patch)',
  },
  {
    id: 'turn-end-notification',
    guards:
      "A turn some of whose calls waited for a person announces its end with an announceTurnEnd activity (a turn.ended_after_wait notification), scheduled after its end is written and before its record shows. Before: a turn's end scheduled nothing of its own after a wait; a run begun before keeps that (the patch is asked only at the end of a turn that waited).",
    fixture: 'approval-policy-two-people',
    deprecateWhen:
      'once no run begun before this patch was deployed is still open (docs/changing-workflow-code.md, Retiring a patch)',
  },
] as const satisfies readonly WorkflowPatch[];

/** The id of a patch in force: the only ids the core may ask about (`CoreEnvironment.allows`). */
export type PatchId = (typeof WORKFLOW_PATCHES)[number]['id'];
