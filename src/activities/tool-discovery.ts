/**
 * The `discoverTools` activity: the tools of a conversation's MCP servers for
 * one turn, listed by the worker's connections and stored by reference
 * (`McpToolsets`, `mcp-tools.ts`).
 */
import { ApplicationFailure } from '@temporalio/common';
import type { McpToolDescriptor } from '../mcp/protocol';
import { MAX_TOOLS } from '../tools/registry';
import { ActivityErrorType, type ToolDiscoveryInput, type ToolDiscoveryResult } from '../contract/activities';
import { withDatabaseRetry } from './database-retry';
import type { ToolDiscoveryDeps } from './deps';
import { McpServerUnreachableError, UnknownMcpServerError } from './mcp-connections';
import { describeMcpTool } from './mcp-tools';

/**
 * Builds the `discoverTools` activity: the tools of a conversation's MCP
 * servers for one turn, stored by reference. A server this worker lacks, or
 * more tools than providers accept, fails it for good with what to change; a
 * server that cannot be reached fails the attempt (retried).
 */
export function createToolDiscoveryActivity(
  deps: ToolDiscoveryDeps,
): (input: ToolDiscoveryInput) => Promise<ToolDiscoveryResult> {
  return async function discoverTools(input: ToolDiscoveryInput): Promise<ToolDiscoveryResult> {
    const mcp = deps.mcp;
    const descriptors: McpToolDescriptor[] = [];
    const skipped: string[] = [];
    const fromServers: Record<string, number> = {};
    for (const server of input.servers) {
      if (!mcp) {
        throw ApplicationFailure.nonRetryable(
          `The conversation uses MCP server "${server}", and this worker has no MCP servers. Every worker of a task queue must configure the same MCP servers (AGENT_MCP_SERVERS, or the plugin's mcp.servers).`,
          ActivityErrorType.UnknownMcpServer,
        );
      }
      try {
        mcp.connections.config(server);
      } catch (err) {
        if (err instanceof UnknownMcpServerError)
          throw ApplicationFailure.nonRetryable(err.message, ActivityErrorType.UnknownMcpServer);
        throw err;
      }
      let listed;
      try {
        listed = await mcp.connections.listTools(server);
      } catch (err) {
        // Already tried under the server's reconnect policy: the turn fails now, saying so, rather than after more
        // retries.
        if (err instanceof McpServerUnreachableError)
          throw ApplicationFailure.nonRetryable(err.message, ActivityErrorType.McpServerUnreachable);
        throw err;
      }
      fromServers[server] = 0;
      for (const tool of listed.tools) {
        const described = describeMcpTool(server, tool, listed.effectKeys);
        if ('problem' in described) skipped.push(described.problem);
        else if (deps.tools.get(described.descriptor.name))
          skipped.push(
            `MCP tool "${described.descriptor.name}" has the name of one of the worker's own tools, so it is not offered.`,
          );
        else {
          descriptors.push(described.descriptor);
          fromServers[server]++;
        }
      }
    }
    const own = deps.tools.specsFor(input.tools).length;
    const offered = own + descriptors.length;
    if (offered > MAX_TOOLS) {
      throw ApplicationFailure.nonRetryable(
        `This conversation would offer ${offered} tools (${own} of the worker's own, ${descriptors.length} from MCP servers ${input.servers.join(', ')}); ` +
          `providers accept at most ${MAX_TOOLS}. Select fewer MCP servers (ConversationInput.mcpServers) or fewer tools (ConversationInput.tools).`,
        ActivityErrorType.TooManyTools,
      );
    }
    const toolset = await withDatabaseRetry('store the MCP tool list', () => mcp!.save(descriptors));
    return { toolset, offered, fromServers, skipped };
  };
}
