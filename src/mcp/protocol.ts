/**
 * Tools from Model Context Protocol servers: their configuration, their names
 * as the model sees them, and the rules that decide how a call of one runs
 * (approval, retries). Pure: no I/O, no Temporal; the activities connect and
 * call (`src/activities/mcp-*.ts`).
 */
import type { DecisionKind } from '../contract/decisions';

/**
 * The `_meta` key under which every `tools/call` carries the call's effect
 * key: the same for every attempt of one call instance, different for every
 * other call (even when the provider reuses its tool-call id). MCP has no
 * idempotency field; a server that keys its side effects by this value can
 * safely see a call twice.
 */
export const MCP_EFFECT_KEY_META = 'durable-agent-worker/effect-key';

/**
 * The capability (under `capabilities.experimental`) a server declares when
 * it applies each effect key ({@link MCP_EFFECT_KEY_META}) at most once and
 * answers a repeat with the first call's result. Its tools are then run again
 * after a cut-off (a lost worker, a timeout) instead of settling as
 * `effect_unknown`: the server confirms what happened. The value is an
 * object, `{}` (the form MCP gives experimental capabilities).
 */
export const MCP_EFFECT_KEY_CAPABILITY = MCP_EFFECT_KEY_META;

/** Between the server's name and the tool's in the name the model sees: `crm__find_customer`. */
export const MCP_NAME_SEPARATOR = '__';

/**
 * What a server's name may be: it becomes part of every tool name, which providers limit to `^[a-zA-Z0-9_-]{1,64}$`.
 */
export const MCP_SERVER_NAME = /^[a-zA-Z0-9-]{1,24}$/;

/** When a call of a server's tool needs a person's approval (before `require` and `skip`). */
export type McpApprovalMode =
  /** Every tool that does not declare `readOnlyHint: true` (the default: MCP presumes a tool may write). */
  | 'writes'
  /** Tools that may destroy: not read-only, and `destructiveHint` not false. */
  | 'destructive'
  | 'always'
  | 'never';

/** Which calls of a server's tools wait for a person. */
export interface McpApprovalRules {
  /** Default `writes`. */
  mode?: McpApprovalMode;
  /** Tool names (the server's, `*` matches any run of characters) that always need approval. Wins over `skip`. */
  require?: string[];
  /** Tool names that never need approval. */
  skip?: string[];
  /**
   * What a person may decide on a waiting call of the server's tools
   * (`approve`, `reject`, `edit`, `respond`). Default: all four, without
   * `respond` for tools not retried as idempotent (see {@link mcpIdempotent}).
   */
  decisions?: DecisionKind[];
}

/** What every server takes. */
interface McpServerCommon {
  /** Which calls need approval. */
  approval?: McpApprovalRules;
  /** Start-to-close timeout of one attempt of a call, in ms. Default 60 000. */
  timeoutMs?: number;
  /**
   * How a call tries again when the server cannot be reached (connection
   * refused, host not found, a stdio program that does not start): the call
   * was never sent, so any tool may. After the last attempt the call fails
   * with a tool error saying so.
   */
  reconnect?: McpReconnectPolicy;
}

/** Tries at reaching a server for one call (or one listing); the waits double. */
export interface McpReconnectPolicy {
  /** Attempts in all, at least 1. Default 4. */
  attempts?: number;
  /** The first wait, in ms. Default 500 (so 0.5 s, 1 s, 2 s: 3.5 s in all). */
  delayMs?: number;
}

/** The reconnect policy when a server's configuration sets none. */
export const DEFAULT_MCP_RECONNECT: Required<McpReconnectPolicy> = { attempts: 4, delayMs: 500 };

/** A server the worker starts and talks to over stdin/stdout. */
export interface McpStdioServerConfig extends McpServerCommon {
  command: string;
  args?: string[];
  /** Its environment: the SDK's safe defaults (PATH, HOME, …) plus these. */
  env?: Record<string, string>;
  cwd?: string;
}

/** A server reached over Streamable HTTP. */
export interface McpHttpServerConfig extends McpServerCommon {
  url: string;
  /** Sent with every request, e.g. `Authorization`. */
  headers?: Record<string, string>;
}

/** One MCP server of the worker. */
export type McpServerConfig = McpStdioServerConfig | McpHttpServerConfig;

/** The MCP servers of a worker, by name. */
export type McpServers = Record<string, McpServerConfig>;

/** The hints a server gives about a tool (MCP `ToolAnnotations`); absent ones take MCP's defaults. */
export interface McpToolHints {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** A server's tool as a conversation was offered it (a snapshot, stored by reference). */
export interface McpToolDescriptor {
  /** The name the model sees: `server__tool`. */
  name: string;
  server: string;
  /** The server's own name for it. */
  tool: string;
  description: string;
  /** Its arguments' JSON Schema, as the server gave it. */
  inputSchema: Record<string, unknown>;
  hints: McpToolHints;
  /** Present when the server declared {@link MCP_EFFECT_KEY_CAPABILITY}: it applies each effect key once. */
  effectKeys?: true;
}

/** True for a stdio server's configuration. */
export function isStdioServer(config: McpServerConfig): config is McpStdioServerConfig {
  return 'command' in config;
}

/**
 * The name the model sees for `server`'s tool `tool`, or why there is none:
 * providers take `^[a-zA-Z0-9_-]{1,64}$`.
 */
export function mcpToolName(server: string, tool: string): { name: string } | { problem: string } {
  const name = `${server}${MCP_NAME_SEPARATOR}${tool}`;
  if (!/^[a-zA-Z0-9_-]+$/.test(tool)) {
    return {
      problem: `MCP server "${server}" has a tool named "${tool}": providers accept only letters, digits, "_" and "-" in tool names, so it is not offered.`,
    };
  }
  if (name.length > 64) {
    return {
      problem: `MCP tool "${name}" is ${name.length} characters; providers accept at most 64, so it is not offered. Give the server a shorter name.`,
    };
  }
  return { name };
}

/** Splits a model-facing name into server and tool, if it is an MCP tool's name. */
export function parseMcpToolName(name: string): { server: string; tool: string } | undefined {
  const at = name.indexOf(MCP_NAME_SEPARATOR);
  if (at <= 0) return undefined;
  const server = name.slice(0, at);
  const tool = name.slice(at + MCP_NAME_SEPARATOR.length);
  return MCP_SERVER_NAME.test(server) && tool !== '' ? { server, tool } : undefined;
}

/** `*` matches any run of characters; everything else itself. */
function matches(pattern: string, name: string): boolean {
  const regex = new RegExp(
    `^${pattern
      .split('*')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );
  return regex.test(name);
}

/** Whether a call of `tool` needs approval under `rules` (see {@link McpApprovalRules}). */
export function mcpNeedsApproval(
  tool: Pick<McpToolDescriptor, 'tool' | 'hints'>,
  rules: McpApprovalRules | undefined,
): boolean {
  if (rules?.require?.some((p) => matches(p, tool.tool))) return true;
  if (rules?.skip?.some((p) => matches(p, tool.tool))) return false;
  const readOnly = tool.hints.readOnlyHint === true;
  switch (rules?.mode ?? 'writes') {
    case 'always':
      return true;
    case 'never':
      return false;
    case 'destructive':
      return !readOnly && tool.hints.destructiveHint !== false;
    case 'writes':
      return !readOnly;
  }
}

/**
 * Whether running a call again is safe: the tool only reads, the server says
 * a repeat has no further effect (`idempotentHint`), or the server applies
 * each effect key once ({@link MCP_EFFECT_KEY_CAPABILITY}). Other calls run
 * once, and one cut off (timeout, lost worker) settles as `effect_unknown`.
 */
export function mcpIdempotent(tool: Pick<McpToolDescriptor, 'hints' | 'effectKeys'>): boolean {
  return tool.hints.readOnlyHint === true || tool.hints.idempotentHint === true || tool.effectKeys === true;
}

/**
 * Problems with a worker's MCP configuration, in words for the person who
 * wrote it (empty when there are none). `where` names the setting.
 */
export function describeBadMcpServers(value: unknown, where: string): string[] {
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    return [
      `${where} must be a JSON object of servers by name, e.g. {"crm": {"command": "node", "args": ["crm-mcp.js"]}, "tickets": {"url": "https://tickets.example.com/mcp"}}`,
    ];
  }
  const problems: string[] = [];
  for (const [name, raw] of Object.entries(value as Record<string, unknown>)) {
    const at = `${where}: server "${name}"`;
    if (!MCP_SERVER_NAME.test(name))
      problems.push(`${at}: a name is 1-24 letters, digits or "-" (it starts every tool name, server__tool)`);
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
      problems.push(`${at} must be an object with "command" (stdio) or "url" (Streamable HTTP)`);
      continue;
    }
    const s = raw as Record<string, unknown>;
    const stdio = typeof s.command === 'string' && s.command !== '';
    const remote = typeof s.url === 'string';
    if (stdio === remote)
      problems.push(
        `${at} needs exactly one of "command" (a program the worker starts) and "url" (a Streamable HTTP endpoint)`,
      );
    if (remote) {
      try {
        const url = new URL(s.url as string);
        if (url.protocol !== 'http:' && url.protocol !== 'https:') problems.push(`${at}: url must be http(s)`);
      } catch {
        problems.push(`${at}: url "${String(s.url)}" is not a URL`);
      }
    }
    if (s.args !== undefined && !(Array.isArray(s.args) && s.args.every((a) => typeof a === 'string')))
      problems.push(`${at}: args must be a list of strings`);
    for (const field of ['env', 'headers'] as const) {
      const map = s[field];
      if (
        map !== undefined &&
        (!map || typeof map !== 'object' || Array.isArray(map) || Object.values(map).some((v) => typeof v !== 'string'))
      ) {
        problems.push(`${at}: ${field} must be an object of strings`);
      }
    }
    if (s.timeoutMs !== undefined && !(Number.isInteger(s.timeoutMs) && (s.timeoutMs as number) >= 100))
      problems.push(`${at}: timeoutMs must be a whole number of milliseconds, at least 100`);
    const reconnect = s.reconnect as Record<string, unknown> | undefined;
    if (reconnect !== undefined) {
      if (!reconnect || typeof reconnect !== 'object' || Array.isArray(reconnect))
        problems.push(`${at}: reconnect must be an object ({"attempts": 4, "delayMs": 500})`);
      else {
        const { attempts, delayMs } = reconnect;
        if (
          attempts !== undefined &&
          !(Number.isInteger(attempts) && (attempts as number) >= 1 && (attempts as number) <= 20)
        )
          problems.push(`${at}: reconnect.attempts must be a whole number from 1 to 20`);
        if (
          delayMs !== undefined &&
          !(Number.isInteger(delayMs) && (delayMs as number) >= 0 && (delayMs as number) <= 60_000)
        )
          problems.push(`${at}: reconnect.delayMs must be a whole number of milliseconds from 0 to 60000`);
      }
    }
    const approval = s.approval as Record<string, unknown> | undefined;
    if (approval !== undefined) {
      if (!approval || typeof approval !== 'object')
        problems.push(`${at}: approval must be an object ({"mode": "writes", "require": [...], "skip": [...]})`);
      else {
        if (
          approval.mode !== undefined &&
          !['writes', 'destructive', 'always', 'never'].includes(approval.mode as string)
        ) {
          problems.push(`${at}: approval.mode must be "writes", "destructive", "always" or "never"`);
        }
        const kinds = ['approve', 'reject', 'edit', 'respond'];
        if (
          approval.decisions !== undefined &&
          !(Array.isArray(approval.decisions) && approval.decisions.every((k) => kinds.includes(k as string)))
        ) {
          problems.push(`${at}: approval.decisions must be a list of ${kinds.join(', ')}`);
        }
        for (const list of ['require', 'skip'] as const) {
          const v = approval[list];
          if (v !== undefined && !(Array.isArray(v) && v.every((p) => typeof p === 'string')))
            problems.push(`${at}: approval.${list} must be a list of tool names (with * for any characters)`);
        }
      }
    }
  }
  return problems;
}
