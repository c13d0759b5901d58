/** Tools: how they are declared, registered, and the back-office demo set. */
export { tool, ToolEffectUnknownError, ToolError, type Tool, type ToolContext, type ToolDefinition } from './tool';
export { ToolRegistry, type FunctionToolSpec } from './registry';
export { backofficeTools, REFUND_APPROVAL_THRESHOLD_CENTS } from './backoffice';
export { setupBackofficeDemo } from './backoffice-data';
