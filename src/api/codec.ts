/**
 * The codec server: Temporal's remote codec protocol (`POST /codec/decode`,
 * `POST /codec/encode`, payloads as protobuf JSON) on the API's Fastify app,
 * so the Temporal UI and `temporal workflow show` can read encrypted
 * conversations for the people allowed to.
 *
 * - Who: the `operator` role, by bearer token (the API's static tokens or
 *   OIDC/JWT: the CLI's `--codec-auth`, the UI's "pass the user access
 *   token") or by the inbox's session cookie (the UI's "include cross-origin
 *   credentials", after signing in at `/inbox` on the same host). A cookie is
 *   honoured only from an allowed origin.
 * - Which browsers: the origins in `corsOrigins` (the Temporal UI's), with
 *   credentials; others get no CORS headers, so their pages cannot read a
 *   decoded payload.
 * - What: the namespace the API serves (a request naming another, in
 *   `X-Namespace`, is refused). Each decode is logged with the subject and
 *   the number of payloads, never their content.
 */
import cors from '@fastify/cors';
import type { Payload, PayloadCodec } from '@temporalio/common';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { EncryptedPayloadError } from '../common/errors';
import { logger } from '../common/logger';
import { foreignOrigin, type BrowserSessions } from './sessions';
import type { ApiPrincipal } from './tokens';

/** Where the codec server answers, below the API's base URL. */
export const CODEC_PATH = '/codec';
/** The largest request the codec server reads: a batch of payloads, each up to Temporal's 2 MiB blob limit. */
export const CODEC_BODY_LIMIT_BYTES = 16 * 1024 * 1024;
/** The most payloads one request may carry. */
export const CODEC_MAX_PAYLOADS = 1000;

/** Options of {@link codecRoutes}. */
export interface CodecOptions {
  /** The payload codec with the workers' keys; unset: the routes answer 501 and say which setting is missing. */
  codec?: PayloadCodec;
  /** The Temporal namespace the API serves. */
  namespace: string;
  /** Browser origins allowed to call the codec with credentials (e.g. `http://127.0.0.1:8233`, the Temporal UI). */
  corsOrigins: readonly string[];
}

/** What {@link codecRoutes} needs from the API around it. */
interface CodecContext extends CodecOptions {
  authenticate: (token: string) => Promise<ApiPrincipal | undefined>;
  /** The inbox's sessions, when the inbox is served. */
  sessions?: BrowserSessions;
  /** The API's error for `code` (its status comes with it), to throw. */
  refusal: (code: CodecRefusal, message: string) => Error;
}

/** The API error codes the codec server answers with. */
export type CodecRefusal = 'unauthorized' | 'forbidden' | 'invalid_request' | 'codec_off' | 'payload_undecodable';

const base64 = z.string().regex(/^[A-Za-z0-9+/_-]*={0,2}$/, 'must be base64');
const payloadJson = z.object({ metadata: z.record(z.string(), base64).optional(), data: base64.optional() });
const payloadsBody = z.object({ payloads: z.array(payloadJson).max(CODEC_MAX_PAYLOADS) });
type PayloadJson = z.infer<typeof payloadJson>;

const fromJson = (p: PayloadJson): Payload => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([k, v]) => [k, new Uint8Array(Buffer.from(v, 'base64'))]),
  ),
  data: new Uint8Array(Buffer.from(p.data ?? '', 'base64')),
});
const toJson = (p: Payload): PayloadJson => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? new Uint8Array()).toString('base64')]),
  ),
  data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
});

/** Registers `POST /codec/decode` and `POST /codec/encode` (and their CORS preflights) on the API's app. */
export async function codecRoutes(app: FastifyInstance, options: CodecContext): Promise<void> {
  const { refusal } = options;
  const allowed = new Set(options.corsOrigins);
  // A scope under /codec: the CORS plugin's hooks and its preflight route (OPTIONS /codec/*) reach no other route.
  await app.register(
    async (scope) => {
      // Only these routes answer browsers of other origins, and only the configured ones.
      await scope.register(cors, {
        origin: (origin, done) => done(null, origin !== undefined && allowed.has(origin)),
        credentials: true,
        methods: ['POST'],
        allowedHeaders: ['content-type', 'x-namespace', 'authorization', 'authorization-extras'],
        maxAge: 600,
      });

      /** The caller: an operator by bearer token, else by the inbox's session from an allowed page. */
      const operator = async (request: FastifyRequest): Promise<{ subject: string; via: 'token' | 'session' }> => {
        const header = request.headers.authorization;
        if (header) {
          const match = /^Bearer (\S+)$/i.exec(header);
          const principal = match ? await options.authenticate(match[1]) : undefined;
          if (!principal)
            throw refusal(
              'unauthorized',
              'The token is not valid (unknown, expired, or not for this API). Send "Authorization: Bearer <token>" with an operator\'s token.',
            );
          if (!principal.roles.has('operator')) {
            throw refusal(
              'forbidden',
              `Decoding payloads needs the operator role; the token of ${principal.subject} has ${[...principal.roles].join(', ')}.`,
            );
          }
          return { subject: principal.subject, via: 'token' };
        }
        const session = options.sessions?.of(request);
        if (!session) {
          throw refusal(
            'unauthorized',
            'Send an operator\'s token ("Authorization: Bearer <token>"; the temporal CLI: --codec-auth), or sign in at /inbox and let the Temporal UI include cross-origin credentials.',
          );
        }
        const origin = foreignOrigin(request);
        if (origin !== undefined && !allowed.has(origin)) {
          throw refusal(
            'forbidden',
            `A signed-in session is honoured only from the API's own pages and the origins in AGENT_CODEC_CORS_ORIGINS; ${origin} is not one of them.`,
          );
        }
        if (!session.roles.includes('operator'))
          throw refusal(
            'forbidden',
            `Decoding payloads needs the operator role; ${session.subject} has ${session.roles.join(', ')}.`,
          );
        return { subject: session.subject, via: 'session' };
      };

      const route = (direction: 'decode' | 'encode') =>
        scope.post(`/${direction}`, { bodyLimit: CODEC_BODY_LIMIT_BYTES, schema: { hide: true } }, async (request) => {
          const caller = await operator(request);
          const codec = options.codec;
          if (!codec) {
            throw refusal(
              'codec_off',
              "This API holds no payload keys, so it has nothing to decode or encode with. Set AGENT_PAYLOAD_KEYS to the workers' keys.",
            );
          }
          const namespace = request.headers['x-namespace'];
          if (typeof namespace === 'string' && namespace !== '' && namespace !== options.namespace) {
            throw refusal(
              'invalid_request',
              `This codec server serves namespace "${options.namespace}", not "${namespace}".`,
            );
          }
          const parsed = payloadsBody.safeParse(request.body);
          if (!parsed.success) {
            throw refusal(
              'invalid_request',
              `The body must be {"payloads": [{"metadata": {name: base64}, "data": base64}]} with at most ${CODEC_MAX_PAYLOADS} payloads: ${parsed.error.issues[0]?.message}.`,
            );
          }
          const payloads = parsed.data.payloads.map(fromJson);
          let result: Payload[];
          try {
            result = direction === 'decode' ? await codec.decode(payloads) : await codec.encode(payloads);
          } catch (err) {
            if (err instanceof EncryptedPayloadError) throw refusal('payload_undecodable', (err as Error).message);
            throw err;
          }
          logger.info(
            { subject: caller.subject, via: caller.via, namespace: options.namespace, payloads: payloads.length },
            `codec: ${direction}d payloads`,
          );
          return { payloads: result.map(toJson) };
        });
      route('decode');
      route('encode');
    },
    { prefix: CODEC_PATH },
  );
}
