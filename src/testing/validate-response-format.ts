/**
 * The check of `response_format`, with the structured-outputs subset a
 * strict JSON schema must keep.
 *
 * @packageDocumentation
 */

import { invalidTypeMessage, invalidValueMessage, missingParameterMessage } from './provider-errors';
import type { ValidationFailure } from './types';
import { checkFunctionName, fail, isObject } from './validate-fields';

/** The `type`s `response_format` may have. */
const RESPONSE_FORMAT_TYPES = ['text', 'json_object', 'json_schema'] as const;

/**
 * `response_format`: a known type; for `json_schema`, a `json_schema` object
 * with a `name` (1-64 of `a-zA-Z0-9_-`) and, with `strict: true`, a schema
 * in the subset structured outputs take: every object node lists every
 * property in `required` and sets `additionalProperties: false` (OpenAI's
 * words, with the path where it found the fault).
 */
export function checkResponseFormat(format: unknown): ValidationFailure | null {
  if (format === undefined || format === null) return null;
  if (!isObject(format))
    return fail(invalidTypeMessage('response_format', 'an object', format), 'response_format', 'invalid_type');
  if (!RESPONSE_FORMAT_TYPES.includes(format.type as (typeof RESPONSE_FORMAT_TYPES)[number])) {
    return fail(invalidValueMessage(format.type, RESPONSE_FORMAT_TYPES), 'response_format.type', 'invalid_value');
  }
  if (format.type !== 'json_schema') return null;
  const spec = format.json_schema;
  if (!isObject(spec))
    return fail(
      missingParameterMessage('response_format.json_schema'),
      'response_format.json_schema',
      'missing_required_parameter',
    );
  const nameFailure = checkFunctionName(spec.name, 'response_format.json_schema.name');
  if (nameFailure) return nameFailure;
  if (spec.strict !== true) return null;
  const problem = strictSchemaProblem(spec.schema, []);
  return problem
    ? fail(`Invalid schema for response_format '${String(spec.name)}': ${problem}`, 'response_format', null)
    : null;
}

/** Where a strict schema breaks the structured-outputs subset, in OpenAI's words; undefined when it does not. */
function strictSchemaProblem(schema: unknown, at: string[]): string | undefined {
  if (!isObject(schema)) return undefined;
  const context = `In context=(${at.map((p) => `'${p}'`).join(', ')}${at.length === 1 ? ',' : ''})`;
  const isObjectNode =
    schema.type === 'object' ||
    (Array.isArray(schema.type) && schema.type.includes('object')) ||
    isObject(schema.properties);
  if (isObjectNode) {
    if (schema.additionalProperties !== false)
      return `${context}, 'additionalProperties' is required to be supplied and to be false.`;
    const keys = Object.keys(isObject(schema.properties) ? schema.properties : {});
    const required = Array.isArray(schema.required) ? schema.required : [];
    const missing = keys.filter((k) => !required.includes(k));
    if (missing.length > 0)
      return `${context}, 'required' is required to be supplied and to be an array including every key in properties. Missing '${missing[0]}'.`;
    for (const key of keys) {
      const inner = strictSchemaProblem((schema.properties as Record<string, unknown>)[key], [
        ...at,
        'properties',
        key,
      ]);
      if (inner) return inner;
    }
  }
  if (schema.items !== undefined) {
    const inner = strictSchemaProblem(schema.items, [...at, 'items']);
    if (inner) return inner;
  }
  for (const combinator of ['anyOf', '$defs'] as const) {
    const branches = schema[combinator];
    const entries = Array.isArray(branches)
      ? branches.map((b, i) => [String(i), b] as const)
      : isObject(branches)
        ? Object.entries(branches)
        : [];
    for (const [key, branch] of entries) {
      const inner = strictSchemaProblem(branch, [...at, combinator, key]);
      if (inner) return inner;
    }
  }
  return undefined;
}
