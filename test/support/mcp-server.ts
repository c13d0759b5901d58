/**
 * An MCP server of the tests' own, on both transports: run as a process it
 * serves stdio (`node --import tsx test/support/mcp-server.ts`), and
 * {@link startHttpMcpServer} serves Streamable HTTP on 127.0.0.1 (behind a
 * bearer token, so a test shows the worker's configured headers reach it).
 *
 * Its tools, one of each kind the worker must treat differently:
 * - `lookup_order` (read-only): an order's status;
 * - `cancel_order` (destructive, not idempotent): records the cancellation
 *   as an effect, after `seconds` when given;
 * - `slow_report` (read-only): takes `seconds`, reporting progress, and stops
 *   when the call is cancelled.
 *
 * With `effectKeys` it declares the effect-key capability and applies each
 * effect key of `cancel_order` once: a repeat (logged as `replayed`) waits
 * for the first and gets its result. With `lab` it has two more tools:
 * `export_orders` (read-only, a result of `kilobytes` KB) and
 * `enable_refunds`, which adds `refund_order` to its list (so the server
 * sends `notifications/tools/list_changed`).
 *
 * Every call is written as a JSON line to the file in `MCP_TEST_LOG` (the
 * HTTP server's `logFile`): `{event: "start" | "end" | "cancelled", tool,
 * effectKey, args, pid}`, so tests count runs and effects, and see the
 * effect key the worker sent in `_meta`.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { MCP_EFFECT_KEY_CAPABILITY, MCP_EFFECT_KEY_META } from '../../src/mcp/protocol';

/** One line of the call log. */
export interface McpCallRecord {
  event: 'start' | 'end' | 'cancelled' | 'replayed';
  tool: string;
  effectKey?: string;
  args: Record<string, unknown>;
  pid: number;
  server: string;
}

/** Reads the call log (empty when nothing was called yet). */
export function readMcpCalls(logFile: string): McpCallRecord[] {
  if (!fs.existsSync(logFile)) return [];
  return fs
    .readFileSync(logFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as McpCallRecord);
}

/** What a test server does beyond its three tools. */
export interface TestMcpServerOptions {
  /** Declare the effect-key capability and apply each key of `cancel_order` once, remembering results here. */
  effects?: Map<string, Promise<CallToolResult>>;
  /** Offer `export_orders` and `enable_refunds`. */
  lab?: boolean;
  /** Offer `echo_text` (read-only), which answers with the text it is given, whatever characters it holds. */
  echo?: boolean;
}

/** Builds the server: `name` tells the servers apart in the log. */
export function buildTestMcpServer(name: string, logFile: string, options: TestMcpServerOptions = {}): McpServer {
  const server = new McpServer(
    { name, version: '1.0.0' },
    options.effects ? { capabilities: { experimental: { [MCP_EFFECT_KEY_CAPABILITY]: {} } } } : undefined,
  );
  const log = (record: Omit<McpCallRecord, 'pid' | 'server'>) =>
    fs.appendFileSync(logFile, `${JSON.stringify({ ...record, pid: process.pid, server: name })}\n`);
  const effectKeyOf = (meta: Record<string, unknown> | undefined) =>
    typeof meta?.[MCP_EFFECT_KEY_META] === 'string' ? (meta[MCP_EFFECT_KEY_META] as string) : undefined;

  server.registerTool(
    'lookup_order',
    {
      description: "Looks up an order's status by its id.",
      inputSchema: {
        order_id: z
          .string()
          .regex(/^ord_\w+$/)
          .describe('The order id, e.g. ord_1001'),
      },
      annotations: { readOnlyHint: true },
    },
    async (args, extra) => {
      log({ event: 'start', tool: 'lookup_order', effectKey: effectKeyOf(extra._meta), args });
      if (args.order_id === 'ord_missing') {
        log({ event: 'end', tool: 'lookup_order', args });
        return { isError: true, content: [{ type: 'text', text: `No order ${args.order_id}.` }] };
      }
      const order = { order_id: args.order_id, status: 'shipped', total_cents: 4200 };
      log({ event: 'end', tool: 'lookup_order', args });
      return { content: [{ type: 'text', text: JSON.stringify(order) }], structuredContent: order };
    },
  );

  server.registerTool(
    'cancel_order',
    {
      description: 'Cancels an order. Cannot be undone.',
      inputSchema: {
        order_id: z.string(),
        reason: z.string(),
        seconds: z.number().min(0).max(600).optional().describe('How long the cancellation takes (tests)'),
      },
      annotations: { destructiveHint: true, idempotentHint: false },
    },
    async (args, extra) => {
      const effectKey = effectKeyOf(extra._meta);
      log({ event: 'start', tool: 'cancel_order', effectKey, args });
      const earlier = effectKey ? options.effects?.get(effectKey) : undefined;
      if (earlier) {
        log({ event: 'replayed', tool: 'cancel_order', effectKey, args });
        return earlier;
      }
      const applied = (async (): Promise<CallToolResult> => {
        if (args.seconds) await new Promise((resolve) => setTimeout(resolve, args.seconds! * 1000));
        log({ event: 'end', tool: 'cancel_order', effectKey, args });
        return { content: [{ type: 'text', text: `Order ${args.order_id} cancelled (${args.reason}).` }] };
      })();
      if (effectKey) options.effects?.set(effectKey, applied);
      return applied;
    },
  );

  server.registerTool(
    'slow_report',
    {
      description: 'Builds a sales report; takes `seconds`.',
      inputSchema: { seconds: z.number().min(0).max(600) },
      annotations: { readOnlyHint: true },
    },
    async (args, extra) => {
      log({ event: 'start', tool: 'slow_report', effectKey: effectKeyOf(extra._meta), args });
      const token = extra._meta?.progressToken;
      for (let elapsed = 0; elapsed < args.seconds * 1000; elapsed += 250) {
        if (extra.signal.aborted) {
          log({ event: 'cancelled', tool: 'slow_report', args });
          throw new Error('cancelled');
        }
        if (token !== undefined && elapsed % 1000 === 0) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken: token, progress: elapsed, total: args.seconds * 1000 },
          });
        }
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      log({ event: 'end', tool: 'slow_report', args });
      return { content: [{ type: 'text', text: `Report ready after ${args.seconds} s: 12 orders.` }] };
    },
  );

  if (options.echo) {
    server.registerTool(
      'echo_text',
      {
        description: 'Answers with the text it is given.',
        inputSchema: { text: z.string() },
        annotations: { readOnlyHint: true },
      },
      async (args, extra) => {
        log({ event: 'start', tool: 'echo_text', effectKey: effectKeyOf(extra._meta), args });
        log({ event: 'end', tool: 'echo_text', args });
        return { content: [{ type: 'text', text: `echo: ${args.text}` }] };
      },
    );
  }

  if (options.lab) {
    let refundsEnabled = false;
    server.registerTool(
      'export_orders',
      {
        description: 'Exports orders as CSV lines; `kilobytes` long.',
        inputSchema: { kilobytes: z.number().int().min(1).max(20_000) },
        annotations: { readOnlyHint: true },
      },
      async (args, extra) => {
        log({ event: 'start', tool: 'export_orders', effectKey: effectKeyOf(extra._meta), args });
        const lines: string[] = [];
        for (let i = 0, size = 0; size < args.kilobytes * 1024; i++) {
          const line = `ord_${String(i).padStart(7, '0')},shipped,${(i * 37) % 100000}\n`;
          lines.push(line);
          size += line.length;
        }
        const csv = lines.join('').slice(0, args.kilobytes * 1024);
        log({ event: 'end', tool: 'export_orders', args });
        return { content: [{ type: 'text', text: csv }] };
      },
    );
    server.registerTool(
      'enable_refunds',
      {
        description: 'Adds the refund_order tool to this server.',
        inputSchema: {},
        annotations: { readOnlyHint: true },
      },
      async (_args, extra) => {
        log({ event: 'start', tool: 'enable_refunds', effectKey: effectKeyOf(extra._meta), args: {} });
        if (!refundsEnabled) {
          refundsEnabled = true;
          // Registering a tool on a connected server sends notifications/tools/list_changed.
          server.registerTool(
            'refund_order',
            {
              description: 'Refunds an order.',
              inputSchema: { order_id: z.string() },
              annotations: { destructiveHint: true },
            },
            async (args) => ({ content: [{ type: 'text', text: `Refunded ${args.order_id}.` }] }),
          );
        }
        return { content: [{ type: 'text', text: 'refund_order is available from the next turn.' }] };
      },
    );
  }
  return server;
}

/** A running Streamable HTTP server. */
export interface HttpMcpServer {
  /** Its MCP endpoint, e.g. http://127.0.0.1:PORT/mcp. */
  url: string;
  /** The bearer token it requires. */
  token: string;
  /** Stops accepting requests and closes open connections. */
  close(): Promise<void>;
}

/**
 * Serves the test tools over Streamable HTTP (stateless: a server per
 * request) on 127.0.0.1, requiring `Authorization: Bearer <token>`. With
 * `effectKeys`, effects are remembered across requests, as one server would.
 */
export async function startHttpMcpServer(options: {
  name?: string;
  logFile: string;
  token?: string;
  port?: number;
  effectKeys?: boolean;
  /** Offer `echo_text` (see {@link TestMcpServerOptions.echo}). */
  echo?: boolean;
}): Promise<HttpMcpServer> {
  const token = options.token ?? 'mcp-test-token-0123456789abcdef';
  const effects = options.effectKeys ? new Map<string, Promise<CallToolResult>>() : undefined;
  const httpServer = http.createServer(async (req, res) => {
    if (req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'unauthorized' }));
      return;
    }
    if (new URL(req.url ?? '/', 'http://x').pathname !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    const server = buildTestMcpServer(options.name ?? 'http', options.logFile, { effects, echo: options.echo });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve) => httpServer.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = httpServer.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    token,
    close: () =>
      new Promise((resolve) => {
        httpServer.closeAllConnections();
        httpServer.close(() => resolve());
      }),
  };
}

// Run as a program: serve stdio.
if (require.main === module) {
  const logFile = process.env.MCP_TEST_LOG;
  if (!logFile) {
    process.stderr.write('Set MCP_TEST_LOG to the file the call log goes to.\n');
    process.exit(2);
  }
  const server = buildTestMcpServer(process.env.MCP_TEST_NAME ?? 'stdio', logFile, {
    lab: process.env.MCP_TEST_LAB === '1',
    effects: process.env.MCP_TEST_EFFECT_KEYS === '1' ? new Map() : undefined,
  });
  void server.connect(new StdioServerTransport());
}
