/** The one place that builds the OpenAI client. */
import OpenAI from 'openai';

/** Connection settings of an OpenAI-compatible endpoint. */
export interface ModelEndpoint {
  apiKey: string;
  /** e.g. https://api.openai.com/v1; the SDK's default when unset. */
  baseUrl?: string;
  /** Per-request timeout until response headers arrive. Default 10 minutes. */
  timeoutMs?: number;
}

/**
 * Builds a client with the SDK's own retries off: Temporal's retry policy
 * owns retries, so a failed attempt is visible in the workflow history.
 */
export function createOpenAIClient(endpoint: ModelEndpoint): OpenAI {
  return new OpenAI({
    apiKey: endpoint.apiKey,
    baseURL: endpoint.baseUrl,
    maxRetries: 0,
    timeout: endpoint.timeoutMs ?? 10 * 60_000,
  });
}
