/**
 * The check of `response_format`, with the structured-outputs subset a
 * strict JSON schema must keep (the one strict tools keep).
 *
 * @packageDocumentation
 */

import { invalidTypeMessage, invalidValueMessage, missingParameterMessage } from './provider-errors';
import type { ValidationFailure } from './types';
import { checkFunctionName, fail, isObject } from './validate-fields';
import { strictSchemaProblem } from '../common/strict-schema';

/** The `type`s `response_format` may have. */
const RESPONSE_FORMAT_TYPES = ['text', 'json_object', 'json_schema'] as const;

/**
 * `response_format`: a known type; for `json_schema`, a `json_schema` object
 * with a `name` (1-64 of `a-zA-Z0-9_-`) and, with `strict: true`, a schema
 * in the subset structured outputs take, by the rules strict tools keep
 * (src/common/strict-schema.ts): an object at the root, every object node
 * with `properties`, listing each in `required` and setting
 * `additionalProperties: false`, no keyword strict mode refuses (OpenAI's
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
  const problem = strictSchemaProblem(spec.schema);
  return problem
    ? fail(`Invalid schema for response_format '${String(spec.name)}': ${problem}`, 'response_format', null)
    : null;
}
