/**
 * `GET /v1/audit`: every decision on tool calls made in a time range (a
 * person's, an approval policy's rule's own), as JSON Lines
 * (`application/x-ndjson`, one `AuditRecord` a line, `src/audit/record.ts`),
 * streamed a page at a time so neither side holds the whole export. For
 * operators; `cli audit verify` checks the signatures of what it wrote.
 */
import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AUDIT_MAX_RANGE_DAYS, auditRange, describeBadAuditRange } from '../audit/range';
import { auditRecordSchema } from '../audit/record';
import type { AgentClient } from '../client/client';
import { refuseOtherMethods } from './refusals';
import { refusals } from './replies';
import type { ApiRole } from './tokens';

/** Options of {@link auditRoutes}. */
export interface AuditRoutesOptions {
  client: AgentClient;
  /** The server's onRequest hook for a `/v1` route: a valid bearer token with one of the roles. */
  allow: (...roles: ApiRole[]) => (request: FastifyRequest) => Promise<void>;
}

const time = (field: 'from' | 'to', description: string) =>
  z.iso
    .datetime({
      offset: true,
      error: (issue) =>
        `${field} ${issue.input === undefined ? 'is missing: give' : 'must be'} an ISO 8601 date-time with Z or an offset, e.g. 2026-01-01T00:00:00Z`,
    })
    .meta({
      description: `${description} ISO 8601 (RFC 3339) with Z or an offset, e.g. 2026-01-01T00:00:00Z; read to the millisecond.`,
    });

/** `GET /v1/audit`: the range, `from` included, `to` excluded, at most {@link AUDIT_MAX_RANGE_DAYS} days. */
export const auditQuery = z
  .object({
    from: time('from', 'The first time of the range, included.'),
    to: time(
      'to',
      `The end of the range, excluded: after from, at most ${AUDIT_MAX_RANGE_DAYS} days later (else 400 invalid_request naming the rule).`,
    ),
  })
  .superRefine(({ from, to }, ctx) => {
    const problem = describeBadAuditRange(from, to);
    if (problem) ctx.addIssue({ code: 'custom', message: problem, path: ['to'] });
  });

/** Registers the audit route on `app`. */
export function auditRoutes(app: FastifyInstance, { client, allow }: AuditRoutesOptions): void {
  app.withTypeProvider<ZodTypeProvider>().get(
    '/v1/audit',
    {
      onRequest: allow('operator'),
      schema: {
        operationId: 'exportAudit',
        summary:
          `Every decision on tool calls made from "from" to "to" (at most ${AUDIT_MAX_RANGE_DAYS} days): each person's and each approval policy rule's own, ` +
          "with who, when, the calls (tool, the model's arguments, edited arguments), the verdict, the rule and the decision as its sender signed it. " +
          'JSON Lines, one record a line, oldest first, streamed; a body cut short (the connection closed without its end) is an export that failed midway.',
        security: [{ bearer: [] }],
        querystring: auditQuery,
        response: {
          200: {
            description: 'The records, one JSON object a line (none when nothing was decided in the range).',
            content: { 'application/x-ndjson': { schema: auditRecordSchema } },
          },
          ...refusals(400, 401, 403, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const pages = client.auditRecords(auditRange(request.query.from, request.query.to));
      // The first page is read before the answer starts, so a database that fails now is refused as usual.
      let page = await pages.next();
      reply.hijack();
      const out = reply.raw;
      out.writeHead(200, { 'content-type': 'application/x-ndjson; charset=utf-8', 'cache-control': 'no-store' });
      try {
        while (!page.done && !out.destroyed) {
          const chunk = page.value.map((record) => `${JSON.stringify(record)}\n`).join('');
          if (!out.write(chunk)) await drainedOrClosed(out);
          page = await pages.next();
        }
        out.end();
      } catch (err) {
        request.log.error({ err }, 'exporting audit records failed');
        // Cut short, not ended: the reader sees an export that failed midway, never one that looks whole.
        out.destroy(err as Error);
      } finally {
        await pages.return(undefined);
      }
    },
  );
  refuseOtherMethods(app, '/v1/audit', ['GET']);
}

/** Resolves when `out` takes more, or is closed (the reader went away). */
function drainedOrClosed(out: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      out.off('drain', done);
      out.off('close', done);
      resolve();
    };
    out.once('drain', done);
    out.once('close', done);
  });
}
