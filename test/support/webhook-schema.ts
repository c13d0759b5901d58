/**
 * The webhook payload's JSON Schema (docs/webhook-payload.schema.json),
 * compiled in Ajv's strict mode, with its two formats checked: what the
 * tests hold every payload to.
 */
import fs from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';

/** The schema, as the docs hold it. */
export const WEBHOOK_PAYLOAD_SCHEMA = JSON.parse(
  fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'webhook-payload.schema.json'), 'utf8'),
) as Record<string, unknown> & { properties: { type: { enum: string[] } } };

const ajv = new Ajv2020({ strict: true, allErrors: true });
ajv.addFormat('uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
ajv.addFormat('date-time', (text: string) => !Number.isNaN(Date.parse(text)));
const validate = ajv.compile(WEBHOOK_PAYLOAD_SCHEMA);

/** Undefined when `payload` matches the schema, else what does not. */
export function webhookPayloadProblem(payload: unknown): string | undefined {
  return validate(payload) ? undefined : ajv.errorsText(validate.errors, { dataVar: 'payload' });
}
