/** Loading the worker's tools from a module named in the configuration. */
import path from 'node:path';
import { ConfigError } from '../shared/errors';
import type { Tool } from '../tools/tool';

/**
 * Loads the tools exported by `modulePath` (as `tools`, or as the default
 * export): an array of values made with `tool(...)`.
 */
export async function loadToolsModule(modulePath: string): Promise<Tool[]> {
  const resolved = path.resolve(modulePath);
  let loaded: Record<string, unknown>;
  try {
    loaded = (await import(resolved)) as Record<string, unknown>;
  } catch (err) {
    throw new ConfigError(`AGENT_TOOLS_MODULE=${modulePath}: cannot load ${resolved} (${(err as Error).message}).`);
  }
  const nested = loaded.default as Record<string, unknown> | undefined;
  const tools = loaded.tools ?? nested?.tools ?? loaded.default;
  if (!Array.isArray(tools) || tools.some((t) => (t as Partial<Tool>)?.kind !== 'tool')) {
    throw new ConfigError(`AGENT_TOOLS_MODULE=${modulePath}: export an array of tools made with tool({...}), as "export const tools = [...]".`);
  }
  return tools as Tool[];
}
