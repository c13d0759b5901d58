/**
 * `GET /v1/conversations/{id}/files/{fileId}`: the bytes of a file a user
 * message of the conversation carries (the transcript names it as
 * `files[].fileId`), with its media type, so a page shows what was sent.
 * Registered with the chat routes: the example page reads it with its
 * session cookie, an API client with its token.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AgentClient } from '../client/client';
import { ApiError, refuseOtherMethods } from './refusals';
import { idText } from './schemas';

/** Registers the route; `signedIn` checks who reads (a token or a browser session of one of the reading roles). */
export function messageFileRoutes(
  app: FastifyInstance,
  client: AgentClient,
  signedIn: (request: FastifyRequest) => Promise<void>,
): void {
  app.withTypeProvider<ZodTypeProvider>().get(
    '/v1/conversations/:id/files/:fileId',
    {
      onRequest: signedIn,
      schema: {
        hide: true,
        params: z.object({
          id: idText('id', 'The conversation id.'),
          fileId: z.string().regex(/^[0-9a-f]{64}$/, 'a file id is the SHA-256 of its bytes, in lowercase hex'),
        }),
      },
    },
    async (request, reply) => {
      const { id, fileId } = request.params;
      const file = await client.readMessageFile(id, fileId);
      if (!file)
        throw new ApiError(
          'not_found',
          `No user message of conversation ${id} carries file ${fileId}: take the id from a user message's files in its transcript.`,
        );
      return reply
        .header('content-type', file.mediaType)
        .header('cache-control', 'private, max-age=31536000, immutable')
        .header('x-content-type-options', 'nosniff')
        .send(file.bytes);
    },
  );
  refuseOtherMethods(app, '/v1/conversations/:id/files/:fileId', ['GET']);
}
