/**
 * JSON Schema at the worker's edges: compiling a schema someone else wrote
 * (an MCP server's input schema, a conversation's typed output) into a check
 * that says what is wrong in words. Whether a schema is in the subset
 * providers accept as `strict` is `src/contract/strict-schema.ts`'s.
 */
import Ajv from 'ajv';
import Ajv2020 from 'ajv/dist/2020';

/** JSON Schema draft 2020-12 (the default of MCP and of zod) and draft-07 (what most SDKs still write). */
const validators = {
  draft2020: new Ajv2020({ strict: false, allErrors: true }),
  draft07: new Ajv({ strict: false, allErrors: true }),
};

/** Checks a value: undefined when it matches, else what is wrong, naming it `dataVar`. */
export type JsonSchemaCheck = (value: unknown) => string | undefined;

/**
 * Compiles `schema` for its draft: 2020-12 when it says so or says nothing,
 * draft-07 when it names draft-07 or an older draft (whose `$schema` is
 * dropped: the keywords such schemas use mean the same). Throws when the
 * schema cannot be compiled.
 */
export function compileJsonSchema(schema: Record<string, unknown>, dataVar: string): JsonSchemaCheck {
  const declared = typeof schema.$schema === 'string' ? schema.$schema : undefined;
  const { $schema: _older, ...rest } = schema;
  const [ajv, usable] =
    !declared || declared.includes('2020-12')
      ? [validators.draft2020, schema]
      : [validators.draft07, declared.includes('draft-07') ? schema : rest];
  const compiled = ajv.compile(usable);
  return (value) => (compiled(value) ? undefined : ajv.errorsText(compiled.errors, { dataVar }));
}
