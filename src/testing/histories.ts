/**
 * Reading recorded workflow histories (JSON, as `historyToJSON` or
 * `temporal workflow show --output json` writes them) for replay.
 */
import fs from 'node:fs';

/** A history ready for `Worker.runReplayHistories`, under its conversation's own id. */
export interface RecordedHistory {
  /**
   * The id the workflow ran under, from its start event (else the file name).
   * Replaying under another id changes what the conversation computes from it
   * (its calls' effect keys), so a decision that names a call by key would be
   * refused on replay and report nondeterminism where there is none.
   */
  workflowId: string;
  history: unknown;
}

/** Reads a history file. */
export function readHistoryFile(file: string): RecordedHistory {
  const history = JSON.parse(fs.readFileSync(file, 'utf8')) as {
    events?: { workflowExecutionStartedEventAttributes?: { workflowId?: string } }[];
  };
  return { workflowId: history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowId ?? file, history };
}
