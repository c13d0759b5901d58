/**
 * The contract: everything that crosses the workflow boundary, in one
 * module, imported by the core, the workflow, the activities, the store and
 * clients; it imports nothing of the project's outside it. Workflow-safe: no
 * I/O, no Node imports.
 *
 * - `conversation`: the conversation's input and defaults, its state, user
 *   messages, decisions, turn records, and the validators that say what is
 *   wrong with each;
 * - `messages`: the transcript's messages and their structure;
 * - `text`: the one rule for text PostgreSQL cannot store;
 * - `workflow`: the workflow's type name, signals, update, query and search
 *   attributes;
 * - `activities`: the activities' names, inputs, results and failure types;
 * - `tool-defaults`, `metrics`: defaults and the metric catalog both sides use;
 * - `patches`: the one list of the workflow's patches.
 */
export * from './activities';
export * from './conversation';
export * from './messages';
export * from './metrics';
export * from './patches';
export * from './text';
export * from './tool-defaults';
export * from './workflow';
