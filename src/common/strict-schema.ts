/**
 * OpenAI's strict mode for function parameters (`tools[].function.strict`)
 * and structured outputs (`response_format.json_schema.strict`, a typed
 * output's schema):
 * which JSON Schemas it takes, and, for one it does not, where the schema
 * breaks the rules in OpenAI's words ("In context=(...), ..."). The worker
 * sends `strict: true` only for schemas this accepts; the scripted model
 * server refuses a strict tool or response format whose schema it does not
 * accept, as OpenAI does.
 */

/**
 * Keywords strict mode does not take. OpenAI documents composition
 * (`allOf`, `not`, `if`/`then`/`else`, ...) and several object and array
 * keywords as unsupported; length limits and `default` are on the list too,
 * so that a schema in doubt is sent without `strict` rather than refused.
 */
export const STRICT_UNSUPPORTED_KEYWORDS = [
  'allOf',
  'oneOf',
  'not',
  'if',
  'then',
  'else',
  'dependentRequired',
  'dependentSchemas',
  'patternProperties',
  'unevaluatedProperties',
  'unevaluatedItems',
  'propertyNames',
  'minProperties',
  'maxProperties',
  'contains',
  'minContains',
  'maxContains',
  'uniqueItems',
  'minLength',
  'maxLength',
  'default',
] as const;

/**
 * Where `parameters` break strict mode, in OpenAI's words; undefined when
 * they keep it: the root is an object; every object node has `properties`,
 * lists each of them in `required` and sets `additionalProperties: false`;
 * no node uses a keyword of {@link STRICT_UNSUPPORTED_KEYWORDS}. Checked
 * through `properties`, `items`, `anyOf`, `$defs` and `definitions`.
 */
export function strictSchemaProblem(parameters: unknown): string | undefined {
  if (!isRecord(parameters) || !typesOf(parameters).includes('object'))
    return `schema must be a JSON Schema of 'type: "object"', got 'type: "${String(isRecord(parameters) ? parameters.type : parameters)}"'.`;
  return nodeProblem(parameters, []);
}

/** True when `parameters` may be sent with `strict: true` (see {@link strictSchemaProblem}). */
export function allowsStrict(parameters: unknown): boolean {
  return strictSchemaProblem(parameters) === undefined;
}

function nodeProblem(schema: unknown, at: readonly string[]): string | undefined {
  if (!isRecord(schema)) return undefined;
  const context = `In context=(${at.map((p) => `'${p}'`).join(', ')}${at.length === 1 ? ',' : ''})`;
  const unsupported = STRICT_UNSUPPORTED_KEYWORDS.find((k) => k in schema);
  if (unsupported) return `${context}, '${unsupported}' is not permitted.`;
  const properties = isRecord(schema.properties) ? schema.properties : undefined;
  if (typesOf(schema).includes('object') || properties) {
    if (!properties) return `${context}, object schema missing properties.`;
    if (schema.additionalProperties !== false)
      return `${context}, 'additionalProperties' is required to be supplied and to be false.`;
    const required = Array.isArray(schema.required) ? schema.required : [];
    const missing = Object.keys(properties).find((k) => !required.includes(k));
    if (missing !== undefined)
      return `${context}, 'required' is required to be supplied and to be an array including every key in properties. Missing '${missing}'.`;
    for (const [key, inner] of Object.entries(properties)) {
      const problem = nodeProblem(inner, [...at, 'properties', key]);
      if (problem) return problem;
    }
  }
  if (schema.items !== undefined) {
    const problem = nodeProblem(schema.items, [...at, 'items']);
    if (problem) return problem;
  }
  for (const group of ['anyOf', '$defs', 'definitions'] as const) {
    const branches = schema[group];
    const entries = Array.isArray(branches)
      ? branches.map((b, i) => [String(i), b] as const)
      : isRecord(branches)
        ? Object.entries(branches)
        : [];
    for (const [key, branch] of entries) {
      const problem = nodeProblem(branch, [...at, group, key]);
      if (problem) return problem;
    }
  }
  return undefined;
}

function typesOf(schema: Record<string, unknown>): unknown[] {
  return Array.isArray(schema.type) ? schema.type : [schema.type];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
