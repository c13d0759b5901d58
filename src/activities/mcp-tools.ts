/**
 * MCP tools as the activities use them: discovered per turn from the
 * conversation's servers, stored by reference (the SHA-256 of the list) so
 * history carries only the key, and turned into the worker's {@link Tool}s:
 * arguments checked against the server's JSON Schema (ajv), approval and
 * retries from the server's annotations and the worker's rules, each call
 * sent with its effect key.
 */
import { createHash } from 'node:crypto';
import type { CallToolResult, Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import { McpError, ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { ApplicationFailure } from '@temporalio/common';
import { compileJsonSchema } from '../common/json-schema';
import type { Pool } from 'pg';
import { z } from 'zod';
import { ToolEffectUnknownError, ToolError } from '../common/errors';
import type { AgentTables } from '../db/schema';
import { mcpIdempotent, mcpNeedsApproval, mcpToolName, type McpServers, type McpToolDescriptor } from '../mcp/protocol';
import { TOOL_DEFAULTS } from '../contract/tool-defaults';
import type { ToolRegistry } from '../tools/registry';
import type { Tool } from '../tools/tool';
import { withDatabaseRetry } from './database-retry';
import { toStorableValue } from '../contract/text';
import { ActivityErrorType } from '../contract/activities';
import { McpServerUnreachableError, UnknownMcpServerError, type McpConnections } from './mcp-connections';

/** How much longer than a call's own timeout the SDK waits: the activity's timeout decides, and reads as a cut-off. */
const SDK_TIMEOUT_MARGIN_MS = 60_000;
/** Toolsets kept in memory per worker (each is immutable, read by every model call and tool call of its turns). */
const CACHED_TOOLSETS = 200;

/** The key of a list of tools: the SHA-256 of its content, so the same list is stored once. */
export function toolsetRef(tools: readonly McpToolDescriptor[]): string {
  return `mcp-${createHash('sha256').update(JSON.stringify(tools)).digest('hex')}`;
}

/** The descriptor of a server's tool, or why it is not offered. */
export function describeMcpTool(
  server: string,
  tool: McpTool,
  effectKeys = false,
): { descriptor: McpToolDescriptor } | { problem: string } {
  const named = mcpToolName(server, tool.name);
  if ('problem' in named) return named;
  const a = tool.annotations ?? {};
  const hints = Object.fromEntries(
    (['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const).flatMap((k) =>
      typeof a[k] === 'boolean' ? [[k, a[k]]] : [],
    ),
  );
  return {
    descriptor: {
      name: named.name,
      server,
      tool: tool.name,
      description: tool.description ?? tool.title ?? `${tool.name} (from MCP server ${server})`,
      inputSchema: tool.inputSchema as Record<string, unknown>,
      hints,
      ...(effectKeys ? { effectKeys: true as const } : {}),
    },
  };
}

/** The text a call's result gives the model: the structured result when there is one, else its content parts. */
export function mcpResultText(result: CallToolResult): string {
  if (result.structuredContent && !result.isError) return JSON.stringify(result.structuredContent);
  const parts = (result.content ?? []).map((part) => {
    switch (part.type) {
      case 'text':
        return part.text;
      case 'image':
      case 'audio':
        return `[${part.type} ${part.mimeType}, ${Math.floor((part.data.length * 3) / 4)} bytes, not shown]`;
      case 'resource':
        return 'text' in part.resource
          ? part.resource.text
          : `[resource ${part.resource.uri}, ${part.resource.mimeType ?? 'binary'}, not shown]`;
      case 'resource_link':
        return `[resource ${part.uri}${part.name ? ` (${part.name})` : ''}]`;
      default:
        return `[${(part as { type: string }).type} content, not shown]`;
    }
  });
  return parts.join('\n\n');
}

/**
 * The MCP tools of a worker: lists of tools stored and read by reference,
 * and each list's tools as {@link Tool}s beside the worker's own.
 */
export class McpToolsets {
  private readonly cache = new Map<string, McpToolDescriptor[]>();

  constructor(
    private readonly pool: Pool,
    private readonly tables: AgentTables,
    readonly connections: McpConnections,
    private readonly servers: McpServers,
  ) {}

  /** Stores `tools` (once per content) and returns their reference. */
  async save(listed: McpToolDescriptor[]): Promise<string> {
    // A server's text PostgreSQL cannot store (in a description, a schema) is replaced with U+FFFD, as for tool
    // results.
    const tools = toStorableValue(listed).value;
    const ref = toolsetRef(tools);
    await this.pool.query(
      `INSERT INTO ${this.tables.mcpToolsets} (ref, tools) VALUES ($1, $2) ON CONFLICT (ref) DO NOTHING`,
      [ref, JSON.stringify(tools)],
    );
    this.remember(ref, tools);
    return ref;
  }

  /** The tools stored under `ref`. */
  async load(ref: string): Promise<McpToolDescriptor[]> {
    const cached = this.cache.get(ref);
    if (cached) return cached;
    const { rows } = await this.pool.query<{ tools: McpToolDescriptor[] }>(
      `SELECT tools FROM ${this.tables.mcpToolsets} WHERE ref = $1`,
      [ref],
    );
    if (rows.length === 0) throw new Error(`No MCP tool list is stored under ${ref} in ${this.tables.mcpToolsets}.`);
    this.remember(ref, rows[0].tools);
    return rows[0].tools;
  }

  /** `base` with the tools stored under `ref` (just `base` without one). */
  async registry(base: ToolRegistry, ref: string | undefined): Promise<ToolRegistry> {
    if (!ref) return base;
    return base.with((await this.load(ref)).map((d) => this.asTool(d)));
  }

  private remember(ref: string, tools: McpToolDescriptor[]): void {
    this.cache.set(ref, tools);
    if (this.cache.size > CACHED_TOOLSETS) this.cache.delete(this.cache.keys().next().value!);
  }

  /** A server's tool as one of the worker's: checked, planned and run by the same activities as any tool. */
  private asTool(descriptor: McpToolDescriptor): Tool {
    const config = this.servers[descriptor.server];
    const idempotent = mcpIdempotent(descriptor);
    const timeoutMs = config?.timeoutMs ?? TOOL_DEFAULTS.timeoutMs;
    let validate: ((args: unknown) => string | undefined) | undefined;
    const check = (args: unknown): string | undefined => {
      if (!validate) {
        try {
          validate = compileJsonSchema(descriptor.inputSchema, 'arguments');
        } catch (err) {
          validate = () =>
            `MCP server "${descriptor.server}" gave ${descriptor.tool} an input schema that cannot be used (${(err as Error).message}); the call was not sent.`;
        }
      }
      return validate(args);
    };
    return {
      kind: 'tool',
      name: descriptor.name,
      description: descriptor.description,
      jsonSchema: descriptor.inputSchema,
      parameters: z.record(z.string(), z.unknown()).superRefine((args, ctx) => {
        const problem = check(args);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      }),
      // A server this worker no longer has: asking a person costs nothing, and the call fails clearly when it runs.
      needsApproval: config ? mcpNeedsApproval(descriptor, config.approval) : true,
      ...(config?.approval?.decisions ? { decisions: config.approval.decisions } : {}),
      idempotent,
      timeoutMs,
      maxAttempts: idempotent ? TOOL_DEFAULTS.maxAttempts : 1,
      execute: async (args, context) => {
        let connected = false;
        try {
          const result = await this.connections.callTool(
            descriptor.server,
            descriptor.tool,
            args as Record<string, unknown>,
            {
              effectKey: context.idempotencyKey,
              signal: context.signal,
              timeoutMs: timeoutMs + SDK_TIMEOUT_MARGIN_MS,
              onConnected: () => (connected = true),
            },
          );
          const text = mcpResultText(result);
          if (result.isError) throw new ToolError(text || `${descriptor.name} failed (the MCP server gave no reason).`);
          return text;
        } catch (err) {
          // Never sent (a server this worker lacks, or one it cannot reach): a clear failure, whatever kind of tool it
          // is.
          if (err instanceof UnknownMcpServerError)
            throw new ToolError(`${descriptor.name} was not sent: ${err.message}`);
          if (err instanceof McpServerUnreachableError) throw new ToolError(err.message);
          // Sent, then the connection went (the server died mid-call): whether it acted is unknown.
          if (
            !idempotent &&
            connected &&
            err instanceof McpError &&
            err.code === ErrorCode.ConnectionClosed &&
            !context.signal.aborted
          ) {
            throw new ToolEffectUnknownError(
              `The connection to MCP server "${descriptor.server}" closed while ${descriptor.tool} ran: whether it took effect is unknown. Check before trying again.`,
            );
          }
          throw err;
        }
      },
    };
  }
}

/**
 * The tools a model call or tool call of a turn may use: the worker's own,
 * plus the MCP tools stored under the turn's `toolset`. A worker without MCP
 * servers given a turn that has some fails the call for good, saying so (the
 * rule: every worker of a task queue configures the same servers).
 */
export async function turnRegistry(
  tools: ToolRegistry,
  mcp: McpToolsets | undefined,
  toolset: string | undefined,
): Promise<ToolRegistry> {
  if (!toolset) return tools;
  if (!mcp) {
    throw ApplicationFailure.nonRetryable(
      `This turn uses tools of MCP servers (list ${toolset}), and this worker has no MCP servers. ` +
        "Every worker of a task queue must configure the same MCP servers (AGENT_MCP_SERVERS, or the plugin's mcp.servers).",
      ActivityErrorType.UnknownMcpServer,
    );
  }
  return withDatabaseRetry('read the MCP tool list', () => mcp.registry(tools, toolset));
}
