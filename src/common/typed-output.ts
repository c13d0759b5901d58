/**
 * Typed final output: a zod schema or a JSON Schema made into what the
 * model call needs (the `response_format` to send) and a check of the
 * answer's text that says, in words for the model, what is wrong with it.
 */
import { z } from 'zod';
import type { OutputSpec } from '../contract/conversation-input';
import { FUNCTION_NAME_PATTERN, OUTPUT_RETRIES, OUTPUT_SCHEMA_MAX_BYTES, utf8Bytes } from '../contract/limits';
import { describeUnsendableOutputSchema } from '../contract/provider-rules';
import { compileJsonSchema } from './json-schema';
import { allowsStrict } from './strict-schema';

/** What an agent's `outputType` may be: a zod schema, or a JSON Schema object. */
export type OutputType = z.ZodType | Record<string, unknown>;

/** How an answer fared: its parsed value, or what is wrong with it. */
export type OutputVerdict = { ok: true; value: unknown } | { ok: false; problem: string };

/** A typed output ready for model calls. */
export interface ResolvedOutput {
  /** `response_format.json_schema.name`. */
  name: string;
  /** The JSON Schema sent (without `$schema`). */
  schema: Record<string, unknown>;
  /**
   * Whether it is in the strict subset, and so sent with `strict: true`: the rules strict tools keep
   * (`allowsStrict`: an object at the root, every object closed with all its properties required, no keyword strict
   * mode refuses), so that a schema sent strict is one providers take.
   */
  strict: boolean;
  /** Re-asks a turn allows after a mismatch. */
  retries: number;
  /** Parses and checks an answer's text. */
  check(text: string): OutputVerdict;
}

/** True for a zod schema (anything with `safeParse`), false for a JSON Schema object. */
export function isZodSchema(type: OutputType): type is z.ZodType {
  return typeof (type as { safeParse?: unknown }).safeParse === 'function';
}

/**
 * Resolves an output type. Throws a `TypeError` saying what to fix when the
 * name is not allowed, the JSON Schema cannot be compiled or is larger than
 * {@link OUTPUT_SCHEMA_MAX_BYTES}.
 */
export function resolveOutput(
  type: OutputType,
  options: { name?: string; retries?: number; what: string },
): ResolvedOutput {
  const name = options.name ?? 'output';
  if (!FUNCTION_NAME_PATTERN.test(name))
    throw new TypeError(`${options.what}: output name "${name}" is not allowed: use 1-64 letters, digits, "_" or "-".`);
  const retries = options.retries ?? OUTPUT_RETRIES.default;
  if (!(Number.isInteger(retries) && retries >= 0 && retries <= OUTPUT_RETRIES.max)) {
    throw new TypeError(
      `${options.what}: output retries must be an integer from 0 to ${OUTPUT_RETRIES.max}, got ${retries}.`,
    );
  }
  const zod = isZodSchema(type) ? type : undefined;
  const json: Record<string, unknown> = zod
    ? (z.toJSONSchema(zod, { io: 'output', unrepresentable: 'any' }) as Record<string, unknown>)
    : (type as Record<string, unknown>);
  const bytes = utf8Bytes(JSON.stringify(json));
  if (bytes > OUTPUT_SCHEMA_MAX_BYTES) {
    throw new TypeError(
      `${options.what}: the output schema is ${bytes} bytes as JSON; it may be at most ${OUTPUT_SCHEMA_MAX_BYTES} (it travels with every model call).`,
    );
  }
  let validate: (value: unknown) => OutputVerdict;
  if (zod) {
    validate = (value) => {
      const parsed = zod.safeParse(value);
      return parsed.success ? { ok: true, value: parsed.data } : { ok: false, problem: z.prettifyError(parsed.error) };
    };
  } else {
    let compiled: (value: unknown) => string | undefined;
    try {
      compiled = compileJsonSchema(json, 'output');
    } catch (err) {
      throw new TypeError(
        `${options.what}: the output schema cannot be compiled as JSON Schema: ${(err as Error).message}.`,
        { cause: err },
      );
    }
    validate = (value) => {
      const problem = compiled(value);
      return problem === undefined ? { ok: true, value } : { ok: false, problem };
    };
  }
  const { $schema: _dialect, ...schema } = json;
  return {
    name,
    schema,
    strict: allowsStrict(schema),
    retries,
    check(text) {
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch (err) {
        const what = text.trim() === '' ? 'is empty' : `is not JSON (${(err as Error).message})`;
        return { ok: false, problem: `The answer ${what}.` };
      }
      return validate(value);
    },
  };
}

/**
 * Resolves a typed final answer's type (an agent's `outputType`, a
 * conversation's `output`): {@link resolveOutput}, then what a provider would
 * refuse of it (`describeUnsendableOutputSchema`: an object at its root).
 * Throws a `TypeError` saying what to fix.
 */
export function resolveTypedOutput(
  type: OutputType,
  options: { name?: string; retries?: number; what: string },
): ResolvedOutput {
  const resolved = resolveOutput(type, options);
  const problems = describeUnsendableOutputSchema(resolved.schema, 'the output schema');
  if (problems.length > 0) throw new TypeError(`${options.what}: ${problems.join('; ')}.`);
  return resolved;
}

/**
 * Resolves a conversation's {@link OutputSpec} (a JSON Schema), saying which input field is wrong when it cannot be
 * used.
 */
export function resolveOutputSpec(spec: OutputSpec): ResolvedOutput {
  return resolveTypedOutput(spec.schema, { name: spec.name, retries: spec.retries, what: 'ConversationInput.output' });
}

/**
 * What makes an {@link OutputSpec}'s schema unusable, as `at` (e.g.
 * `input.output`) names it: what a provider would refuse of it, else that it
 * does not compile. Empty when it is usable. The HTTP API's and the client's
 * check; the worker resolves the spec.
 */
export function describeUnusableOutputSchema(spec: { schema: Record<string, unknown> }, at: string): string[] {
  const refused = describeUnsendableOutputSchema(spec.schema, `${at}.schema`);
  if (refused.length > 0) return refused;
  try {
    compileJsonSchema(spec.schema, 'output');
    return [];
  } catch (err) {
    return [`${at}.schema cannot be compiled as JSON Schema: ${(err as Error).message}`];
  }
}
