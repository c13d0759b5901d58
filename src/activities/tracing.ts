/**
 * The activities' own spans (a model call, a tool run), through the
 * OpenTelemetry API: children of the activity's span when a tracer provider
 * is registered and Temporal's OpenTelemetry interceptors run (the
 * `OpenTelemetryPlugin` of `@temporalio/interceptors-opentelemetry`), and
 * free no-ops otherwise.
 */
import { SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';

/** The tracer's name, as spans report their instrumentation scope. */
export const TRACER_NAME = 'durable-agent-worker';

/** Runs `fn` in a span named `name`: its outcome sets the span's status, a failure is recorded on it. */
export async function inSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>): Promise<T> {
  return trace.getTracer(TRACER_NAME).startActiveSpan(name, { attributes }, async (span) => {
    try {
      const result = await fn(span);
      span.setStatus({ code: SpanStatusCode.OK });
      return result;
    } catch (err) {
      span.recordException(err instanceof Error ? err : String(err));
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
      throw err;
    } finally {
      span.end();
    }
  });
}
