/** The worker's set of tools, with their JSON schemas for the model. */
import { z } from 'zod';
import type { Tool } from './tool';
import { checkGuardrails } from './guardrails';
import { FUNCTION_NAME_PATTERN } from '../contract/limits';
import { allowsStrict } from '../common/strict-schema';

/** The most tools providers accept in one request. */
export const MAX_TOOLS = 128;

/** A tool in the shape the Chat Completions API takes. */
export interface FunctionToolSpec {
  type: 'function';
  function: {
    name: string;
    description: string;
    parameters: Record<string, unknown>;
    /**
     * OpenAI's strict mode: the model's arguments always match `parameters`.
     * True when the schema allows it (src/common/strict-schema.ts: every object
     * closed with `additionalProperties: false`, every property required, no
     * keyword strict mode refuses), false otherwise.
     */
    strict?: boolean;
  };
}

/** Looks tools up by name and describes them to the model. */
export class ToolRegistry {
  private readonly tools = new Map<string, Tool>();
  private readonly specs = new Map<string, FunctionToolSpec>();

  /** `checkLimit: false` when the caller checks what is offered itself (a conversation may offer a part). */
  constructor(
    private readonly all: readonly Tool[],
    checkLimit = true,
  ) {
    if (checkLimit && all.length > MAX_TOOLS) {
      throw new Error(`A worker can offer at most ${MAX_TOOLS} tools to the model; got ${all.length}.`);
    }
    for (const t of all) {
      if (!FUNCTION_NAME_PATTERN.test(t.name)) {
        throw new Error(
          `Tool name "${t.name}" is not allowed: use 1-64 letters, digits, "_" or "-" (e.g. "issue_refund").`,
        );
      }
      if (this.tools.has(t.name)) throw new Error(`Two tools are named "${t.name}"; tool names must be unique.`);
      checkGuardrails(t.guardrails, `Tool "${t.name}"`, ['tool']);
      this.tools.set(t.name, t);
      const { $schema: _ignored, ...parameters } =
        t.jsonSchema ?? (z.toJSONSchema(t.parameters) as Record<string, unknown>);
      this.specs.set(t.name, {
        type: 'function',
        function: { name: t.name, description: t.description, parameters, strict: allowsStrict(parameters) },
      });
    }
  }

  /**
   * This registry with `more` tools beside its own (e.g. a turn's MCP tools,
   * whose discovery checked what the conversation is offered against the
   * providers' limit). Throws when names clash.
   */
  with(more: readonly Tool[]): ToolRegistry {
    return more.length === 0 ? this : new ToolRegistry([...this.all, ...more], false);
  }

  /** The tool called `name`, if registered. */
  get(name: string): Tool | undefined {
    return this.tools.get(name);
  }

  /** Names of every registered tool. */
  names(): string[] {
    return [...this.tools.keys()];
  }

  /** Specs for the model: the named tools (registered ones only), or all when `names` is unset. */
  specsFor(names?: readonly string[]): FunctionToolSpec[] {
    const wanted = names ?? this.names();
    return wanted.flatMap((name) => {
      const spec = this.specs.get(name);
      return spec ? [spec] : [];
    });
  }
}
