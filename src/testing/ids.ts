/**
 * The ids the scripted model server makes, spelled as OpenAI spells them:
 * request ids, completion ids and tool call ids under a {@link ToolCallIdScheme}.
 *
 * @packageDocumentation
 */

import { randomInt } from 'node:crypto';

import type { ToolCallIdScheme } from './types';

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const TOOL_CALL_ID_SCHEMES: readonly ToolCallIdScheme[] = ['unique', 'per-response', 'empty', 'duplicated'];

/** `length` random characters of `[A-Za-z0-9]`, the alphabet of OpenAI's ids. */
export function randomAlphanumeric(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHANUMERIC[randomInt(ALPHANUMERIC.length)];
  return out;
}

/**
 * Returns the id maker for the tool calls of ONE response under `scheme`;
 * called with the call's function name and its position in the response.
 */
export function toolCallIdMaker(scheme: ToolCallIdScheme): (name: string, index: number) => string {
  switch (scheme) {
    case 'per-response':
      return (name, index) => `functions.${name}:${index}`;
    case 'empty':
      return () => '';
    case 'duplicated': {
      const shared = `call_${randomAlphanumeric(24)}`;
      return () => shared;
    }
    default:
      return () => `call_${randomAlphanumeric(24)}`;
  }
}

/**
 * Returns `scheme` when it is a known {@link ToolCallIdScheme}.
 *
 * @throws when it is not, naming the known ones
 */
export function checkToolCallIdScheme(scheme: ToolCallIdScheme): ToolCallIdScheme {
  if (!TOOL_CALL_ID_SCHEMES.includes(scheme)) {
    throw new Error(
      `Unknown tool call id scheme '${String(scheme)}'; expected one of: ${TOOL_CALL_ID_SCHEMES.join(', ')}.`,
    );
  }
  return scheme;
}
