/**
 * The conversation workflow's public surface: its input, signals, queries,
 * state and search attributes. Defined once here, imported by the workflow
 * and by clients. Workflow-safe: no I/O, no Node imports.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { MessageMeta } from '../transcript/messages';

/** Model parameters sent with every model call of a conversation. */
export interface ModelSettings {
  /** Model name; the worker's `OPENAI_MODEL` when unset. */
  model?: string;
  temperature?: number;
  maxTokens?: number;
}

/** Limits on the activities the conversation schedules. */
export interface ConversationTimeouts {
  /** Start-to-close timeout of one model call attempt. Default 5 minutes. */
  modelCallMs?: number;
  /** Attempts of a model call before the turn fails. Default 5. */
  modelCallAttempts?: number;
}

/** What a conversation is started with. Every field has a default. */
export interface ConversationInput {
  /** The system prompt, stored as message 0. */
  systemPrompt?: string;
  model?: ModelSettings;
  /** Names of the tools the model may call; every tool the worker has when unset. */
  tools?: string[];
  /**
   * Model calls with tools allowed in one turn. When reached, one last call is
   * made with `tool_choice: "none"` so the user still gets an answer. Default 10.
   */
  maxSteps?: number;
  timeouts?: ConversationTimeouts;
}

/** Defaults applied to a {@link ConversationInput}. */
export const CONVERSATION_DEFAULTS = {
  maxSteps: 10,
  modelCallMs: 5 * 60_000,
  modelCallAttempts: 5,
} as const;

/**
 * Lists what is wrong with a {@link ConversationInput}; empty when it is valid.
 * Checked by the client before starting, and by the workflow at start.
 */
export function describeInvalidInput(input: unknown): string[] {
  if (input === undefined) return [];
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return ['the input must be an object'];
  const i = input as Record<string, unknown>;
  const problems: string[] = [];
  const positiveInt = (value: unknown, name: string): void => {
    if (value !== undefined && !(Number.isInteger(value) && (value as number) > 0)) {
      problems.push(`${name} must be a positive integer, got ${JSON.stringify(value)}`);
    }
  };
  if (i.systemPrompt !== undefined && typeof i.systemPrompt !== 'string') problems.push('systemPrompt must be a string');
  if (i.tools !== undefined && !(Array.isArray(i.tools) && i.tools.every((t) => typeof t === 'string'))) {
    problems.push('tools must be a list of tool names, e.g. ["find_customer"]');
  }
  positiveInt(i.maxSteps, 'maxSteps');
  const timeouts = (i.timeouts ?? {}) as Record<string, unknown>;
  positiveInt(timeouts.modelCallMs, 'timeouts.modelCallMs');
  positiveInt(timeouts.modelCallAttempts, 'timeouts.modelCallAttempts');
  const model = (i.model ?? {}) as Record<string, unknown>;
  if (model.model !== undefined && (typeof model.model !== 'string' || model.model === '')) {
    problems.push('model.model must be a non-empty model name');
  }
  if (model.temperature !== undefined && typeof model.temperature !== 'number') problems.push('model.temperature must be a number');
  positiveInt(model.maxTokens, 'model.maxTokens');
  return problems;
}

/** A message from the user. */
export interface UserMessage {
  text: string;
  /**
   * Client-chosen id. A message whose id was already received is ignored, so
   * a client may resend safely; also how a client finds the turn that answered it.
   */
  messageId?: string;
}

/** Where the conversation stands. */
export type ConversationStatus = 'idle' | 'running' | 'awaiting_approval' | 'failed' | 'closed';

/** A finished turn, kept so clients can find the answer to their message. */
export interface TurnRecord {
  /** Ids of the user messages this turn answered. */
  messageIds: string[];
  outcome: 'answered' | 'failed';
  /** Seq of the final assistant message, when the turn answered. */
  answerSeq?: number;
  /** Why the turn failed. */
  error?: string;
  /** Model calls made in the turn. */
  steps: number;
}

/** The state returned by {@link stateQuery}. */
export interface ConversationState {
  conversationId: string;
  status: ConversationStatus;
  /** Model calls made so far, all turns together. */
  steps: number;
  /** The last error of a failed turn, cleared when a turn answers. */
  lastError?: string;
  /** The transcript's structure (bodies live in PostgreSQL). */
  messages: MessageMeta[];
  /** User messages received but not yet taken into a turn. */
  queuedMessages: number;
  /** The most recent turns, newest last (at most {@link RECENT_TURNS_KEPT}). */
  recentTurns: TurnRecord[];
  /**
   * Times the transcript had to be repaired before a model call. Should
   * always be 0: anything else is a bug, and is logged as a warning.
   */
  transcriptRepairs: number;
}

/** How many finished turns {@link ConversationState.recentTurns} keeps. */
export const RECENT_TURNS_KEPT = 50;

/** A user message. The client uses signal-with-start, so the first message also starts the conversation. */
export const userMessageSignal = defineSignal<[UserMessage]>('userMessage');

/** Ends the conversation once the current turn and queued messages are done. */
export const endConversationSignal = defineSignal<[]>('endConversation');

/** The conversation's state. */
export const stateQuery = defineQuery<ConversationState>('state');

/** Search attribute with the conversation's {@link ConversationStatus}. */
export const AgentStatusAttribute = defineSearchAttributeKey('AgentStatus', SearchAttributeType.KEYWORD);

/** Search attribute with the number of tool calls waiting for a person's decision. */
export const PendingApprovalsAttribute = defineSearchAttributeKey('PendingApprovals', SearchAttributeType.INT);

/** Every custom search attribute the workflow sets; the dev server registers these at start. */
export const SEARCH_ATTRIBUTES = [AgentStatusAttribute, PendingApprovalsAttribute];

/** The workflow type name, for clients that start it by name. */
export const CONVERSATION_WORKFLOW_TYPE = 'conversationWorkflow';
