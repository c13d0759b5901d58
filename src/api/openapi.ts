/**
 * The API's OpenAPI 3.1 document at `GET /openapi.json`: built by
 * `@fastify/swagger` from each route's zod schemas, with the refusals' body
 * as one shared component and links between operations (which is what lets
 * schemathesis chain calls in its stateful phase).
 */
import fastifySwagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { API_ERROR_COMPONENT, apiErrorBody } from './replies';

/** Registers the document on `app`; call before the routes it describes. */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Durable agent worker API',
        version: '1',
        description:
          'Every refusal is {"error": {"code", "message"}} with a stable code, and each operation lists the statuses it answers. ' +
          'Limits (id lengths, integer bounds, refused characters, how long events are followed) are stated on each parameter.',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    },
    transform: jsonSchemaTransform,
    transformObject: ({ openapiObject }: { openapiObject: unknown }) =>
      shareErrorBody(openapiObject as OpenApiDocument),
  } as Parameters<typeof fastifySwagger>[1]);
}

type Json = Record<string, unknown>;
interface OpenApiDocument extends Json {
  paths?: Record<
    string,
    Record<string, { responses?: Record<string, { content?: Record<string, { schema?: unknown }> }> }>
  >;
  components?: Json & { schemas?: Json };
}

/**
 * The document with every refusal's body replaced by a reference to one
 * component. Each body replaced must be the component's schema exactly, so
 * the reference never says something other than the route validates.
 */
function shareErrorBody(document: OpenApiDocument): OpenApiDocument {
  const { $schema: _, ...component } = z.toJSONSchema(apiErrorBody, { io: 'output' }) as Json;
  const expected = JSON.stringify(component);
  const ref = { $ref: `#/components/schemas/${API_ERROR_COMPONENT}` };
  for (const [path, operations] of Object.entries(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(operations)) {
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        const json = response.content?.['application/json'];
        if (Number(status) < 400 || !json) continue;
        if (JSON.stringify(json.schema) !== expected)
          throw new Error(
            `${method.toUpperCase()} ${path} answers ${status} with a body other than ${API_ERROR_COMPONENT}.`,
          );
        json.schema = ref;
      }
    }
  }
  return {
    ...document,
    components: {
      ...document.components,
      schemas: { ...document.components?.schemas, [API_ERROR_COMPONENT]: component },
    },
  };
}
