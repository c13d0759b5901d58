/**
 * The worker's connections to its MCP servers (official TypeScript SDK):
 * stdio servers it starts, Streamable HTTP servers it reaches with their
 * headers. Used by the activities only.
 *
 * - Connected on first use, one client per server, shared by every activity
 *   of the worker. A stdio server that exits (or a connection that closes)
 *   is connected again, which restarts the program, at the next use.
 * - Tool lists are read with paging and kept until the server says they
 *   changed (`notifications/tools/list_changed`) or `listTtlMs` passes (a
 *   server that cannot notify still has its changes seen).
 * - A server that cannot be reached (the request never left: connection
 *   refused, host not found, a program that does not start) is tried again
 *   under its `reconnect` policy, then reported as
 *   {@link McpServerUnreachableError}.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type Tool as McpTool,
} from '@modelcontextprotocol/sdk/types.js';
import { logger } from '../common/logger';
import {
  DEFAULT_MCP_RECONNECT,
  isStdioServer,
  MCP_EFFECT_KEY_CAPABILITY,
  MCP_EFFECT_KEY_META,
  type McpServerConfig,
  type McpServers,
} from '../mcp/protocol';

/** How long a server's tool list is trusted without a change notification, by default. */
export const DEFAULT_MCP_LIST_TTL_MS = 60_000;
/** The most pages of `tools/list` read from one server (a server that pages forever is cut off). */
const MAX_LIST_PAGES = 50;

/** A server named in a conversation (or a call) that this worker does not have. */
export class UnknownMcpServerError extends Error {
  override name = 'UnknownMcpServerError';
}

/** A server that could not be reached under its reconnect policy: the request was never sent. */
export class McpServerUnreachableError extends Error {
  override name = 'McpServerUnreachableError';
}

/** Why a connection could not be made (the program did not start, the handshake failed): nothing was sent. */
class McpConnectError extends Error {
  override name = 'McpConnectError';
}

/** Error codes meaning a request never reached the server. */
const NOT_DELIVERED = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** The code of `err` or of one of its causes that says the request never left, if any. */
function notDeliveredCode(err: unknown): string | undefined {
  for (
    let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0;
    e && depth < 5;
    e = e.cause as typeof e, depth++
  ) {
    if (typeof e.code === 'string' && NOT_DELIVERED.has(e.code)) return e.code;
  }
  return undefined;
}

/** Options of a tool call. */
export interface McpCallOptions {
  /** The call instance's effect key, sent in `_meta` as {@link MCP_EFFECT_KEY_META}. */
  effectKey: string;
  /** Aborting sends `notifications/cancelled` to the server. */
  signal: AbortSignal;
  /** The SDK's own request timeout; set above the activity's, so the activity's timeout decides. */
  timeoutMs: number;
  /** Called for each progress notification. */
  onProgress?: () => void;
  /** Called once connected, just before the request is sent (what fails before it was never sent). */
  onConnected?: () => void;
}

interface Connection {
  client: Client;
  closed: boolean;
}

/** A server's tools as it listed them. */
export interface McpToolList {
  tools: McpTool[];
  /** The server declared {@link MCP_EFFECT_KEY_CAPABILITY}: it applies each effect key once. */
  effectKeys: boolean;
}

/** The connections of one worker to the servers of its configuration. */
export class McpConnections {
  private readonly connections = new Map<string, Promise<Connection>>();
  private readonly lists = new Map<string, McpToolList & { readAt: number }>();

  constructor(
    private readonly servers: McpServers,
    private readonly options: { listTtlMs?: number; clientName?: string } = {},
  ) {}

  /** The names of the configured servers. */
  names(): string[] {
    return Object.keys(this.servers);
  }

  /** The configuration of `server`; throws {@link UnknownMcpServerError} naming what this worker has. */
  config(server: string): McpServerConfig {
    const config = this.servers[server];
    if (!config) {
      const have = this.names();
      throw new UnknownMcpServerError(
        `This worker has no MCP server named "${server}" (it has ${have.length > 0 ? have.map((n) => `"${n}"`).join(', ') : 'none'}). ` +
          "Every worker of a task queue must configure the same MCP servers (AGENT_MCP_SERVERS, or the plugin's mcp.servers).",
      );
    }
    return config;
  }

  /** Every tool `server` offers (all pages), from the cache unless it changed or grew old. */
  async listTools(server: string): Promise<McpToolList> {
    const cached = this.lists.get(server);
    if (cached && Date.now() - cached.readAt < (this.options.listTtlMs ?? DEFAULT_MCP_LIST_TTL_MS)) return cached;
    return this.reaching(server, undefined, undefined, async ({ client }) => {
      const tools: McpTool[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < MAX_LIST_PAGES; page++) {
        const listed = await client.listTools(cursor ? { cursor } : undefined);
        tools.push(...listed.tools);
        cursor = listed.nextCursor;
        if (!cursor) break;
      }
      const list = {
        tools,
        effectKeys: client.getServerCapabilities()?.experimental?.[MCP_EFFECT_KEY_CAPABILITY] !== undefined,
      };
      this.lists.set(server, { ...list, readAt: Date.now() });
      return list;
    });
  }

  /** Calls `tool` of `server` with `args`; the server's result as it sent it (`isError` included). */
  async callTool(
    server: string,
    tool: string,
    args: Record<string, unknown>,
    options: McpCallOptions,
  ): Promise<CallToolResult> {
    return this.reaching(server, options.signal, options.onConnected, async ({ client }) => {
      const result = await client.callTool(
        { name: tool, arguments: args, _meta: { [MCP_EFFECT_KEY_META]: options.effectKey } },
        undefined,
        {
          signal: options.signal,
          timeout: options.timeoutMs,
          ...(options.onProgress ? { onprogress: options.onProgress, resetTimeoutOnProgress: false } : {}),
        },
      );
      return result as CallToolResult;
    });
  }

  /**
   * Runs `request` on the connection to `server`, connecting (again) and
   * trying again under the server's reconnect policy while the request
   * cannot reach it; any other failure is the request's own.
   */
  private async reaching<T>(
    server: string,
    signal: AbortSignal | undefined,
    onConnected: (() => void) | undefined,
    request: (c: Connection) => Promise<T>,
  ): Promise<T> {
    const config = this.config(server);
    const { attempts, delayMs } = { ...DEFAULT_MCP_RECONNECT, ...config.reconnect };
    const began = Date.now();
    let last: unknown;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      if (attempt > 1) {
        await sleep(delayMs * 2 ** (attempt - 2), undefined, { signal }).catch(() => undefined); // cut short by a cancel
        if (signal?.aborted) break;
      }
      let connection: Connection;
      try {
        connection = await this.connect(server);
      } catch (err) {
        last = err;
        continue;
      }
      onConnected?.();
      try {
        return await request(connection);
      } catch (err) {
        if (!notDeliveredCode(err)) throw err;
        // Never reached it: most likely stopped or restarting; the next try opens a new session.
        last = err;
        this.drop(server, connection);
      }
    }
    if (signal?.aborted) throw last ?? signal.reason;
    const where = isStdioServer(config) ? `the program ${config.command}` : config.url;
    const why =
      last instanceof McpConnectError
        ? last.message
        : `${(last as Error)?.message ?? 'no answer'}${notDeliveredCode(last) ? ` (${notDeliveredCode(last)})` : ''}`;
    throw new McpServerUnreachableError(
      `MCP server "${server}" (${where}) could not be reached: ${attempts} attempt${attempts === 1 ? '' : 's'} in ${((Date.now() - began) / 1000).toFixed(1)} s, the last: ${why}. ` +
        'Nothing was sent to it. Check that the server runs and answers at that address (its reconnect setting sets the attempts).',
      { cause: last },
    );
  }

  /** Forgets `connection` to `server` (closing it), so the next use connects again. */
  private drop(server: string, connection: Connection): void {
    connection.closed = true;
    this.lists.delete(server);
    void connection.client.close().catch(() => undefined);
  }

  /** Closes every connection (stdio servers are stopped). */
  async close(): Promise<void> {
    const open = [...this.connections.values()];
    this.connections.clear();
    await Promise.all(open.map(async (c) => (await c.catch(() => undefined))?.client.close().catch(() => undefined)));
  }

  /** The live connection to `server`, made (again) when there is none or it closed. */
  private async connect(server: string): Promise<Connection> {
    const config = this.config(server);
    const existing = this.connections.get(server);
    if (existing) {
      const connection = await existing.catch(() => undefined);
      if (connection && !connection.closed) return connection;
      if (this.connections.get(server) !== existing) return this.connect(server);
    }
    const made = this.open(server, config);
    this.connections.set(server, made);
    made.catch(() => {
      if (this.connections.get(server) === made) this.connections.delete(server);
    });
    return made;
  }

  private async open(server: string, config: McpServerConfig): Promise<Connection> {
    const client = new Client({ name: this.options.clientName ?? 'durable-agent-worker', version: '1' });
    const connection: Connection = { client, closed: false };
    client.onclose = () => {
      connection.closed = true;
      this.lists.delete(server);
      logger.info({ mcpServer: server }, 'MCP server connection closed; the next call connects again');
    };
    client.onerror = (err) => logger.warn({ mcpServer: server, err }, 'MCP server connection error');
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      this.lists.delete(server);
    });
    const transport = isStdioServer(config)
      ? new StdioClientTransport({
          command: config.command,
          args: config.args,
          env: { ...getDefaultEnvironment(), ...config.env },
          cwd: config.cwd,
          stderr: 'inherit',
        })
      : new StreamableHTTPClientTransport(new URL(config.url), { requestInit: { headers: config.headers ?? {} } });
    try {
      await client.connect(transport);
    } catch (err) {
      await client.close().catch(() => undefined);
      const code = notDeliveredCode(err);
      throw new McpConnectError(`could not connect: ${(err as Error).message}${code ? ` (${code})` : ''}`, {
        cause: err,
      });
    }
    return connection;
  }
}
