/**
 * The contract: everything that crosses the workflow boundary, in one
 * module, imported by the core, the workflow, the activities, the store and
 * clients; it imports nothing of the project's outside it. Workflow-safe: no
 * I/O, no Node imports.
 *
 * - `conversation-input`: what a conversation is started with;
 *   `conversation-input-checks`: what is wrong with an input;
 * - `limits`: the conversation's defaults and limits;
 * - `conversation-state`: the state it shows and the summary it ends with;
 *   `turn-records`: finished turns, tokens and cost; `turn-ends`: the end of a turn that waited, announced; `waiting-calls`: calls
 *   waiting for a person; `carried-conversation`: what continue-as-new carries;
 * - `user-messages`, `decisions`, `regenerate`: what people send it, and the checks on each;
 *   `message-files`: the files a user message carries, by reference;
 * - `search-attribute-names`: the names its search attributes have;
 * - `messages`: the transcript's messages and their structure;
 * - `text`: the one rule for text PostgreSQL cannot store;
 * - `workflow`: the workflow's type name, signals, update, query and search
 *   attributes;
 * - `activities`: the activities' names, inputs, results and failure types;
 * - `tool-defaults`, `metrics`: defaults and the metric catalog both sides use;
 * - `model-api`: the model APIs a worker speaks (Chat Completions, Responses);
 *   `provider-rules`: what providers refuse for certain in model settings and
 *   typed outputs;
 * - `patches`: the one list of the workflow's patches.
 */
export * from './activities';
export * from './carried-conversation';
export * from './comebacks';
export * from './conversation-input';
export * from './conversation-input-checks';
export * from './conversation-state';
export * from './decisions';
export * from './events';
export * from './grants';
export * from './guardrail-results';
export * from './limits';
export * from './message-files';
export * from './messages';
export * from './metrics';
export * from './model-api';
export * from './patches';
export * from './policies';
export * from './provider-rules';
export * from './regenerate';
export * from './search-attribute-names';
export * from './text';
export * from './tool-defaults';
export * from './turn-ends';
export * from './turn-records';
export * from './user-messages';
export * from './waiting-calls';
export * from './workflow';
