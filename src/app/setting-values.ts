/** Helpers of the configuration table: local origins, origins, variables expanded in the MCP configuration. */
import { ConfigError } from '../common/errors';
import type { McpServers } from '../mcp/protocol';

/** The origins a browser gives a page of this machine on `port`, by either of its local names. */
export function localOrigins(port: number): string[] {
  return [`http://127.0.0.1:${port}`, `http://localhost:${port}`];
}

/**
 * Replaces `${NAME}` in every string of the MCP configuration with the
 * variable's value, so secrets (an `Authorization` header, a server's key)
 * stay in the environment, never in the JSON. A missing variable is an error.
 */
export function expandVariables(servers: McpServers, env: NodeJS.ProcessEnv): McpServers {
  const expand = (value: unknown): unknown => {
    if (typeof value === 'string') {
      return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
        const found = env[name];
        if (found === undefined)
          throw new ConfigError(
            `AGENT_MCP_SERVERS names \${${name}}, and ${name} is not set. Set it, or write the value in its place.`,
          );
        return found;
      });
    }
    if (Array.isArray(value)) return value.map(expand);
    if (value && typeof value === 'object')
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expand(v)]));
    return value;
  };
  return expand(servers) as McpServers;
}

/** True for `scheme://host[:port]`, as browsers send it in `Origin`. */
export function isOrigin(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === value;
  } catch {
    return false;
  }
}
