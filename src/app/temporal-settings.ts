/**
 * Settings of the Temporal connection that other settings' defaults read: the embedded dev server's UI port and the
 * connection from Temporal's environment configuration.
 */
import { z } from 'zod';
import { group, setting, text } from './settings';
import { loadTemporalConnection } from './temporal-connection';

/** The embedded dev server's web UI port by default. */
export const DEFAULT_TEMPORAL_UI_PORT = 8233;

/** TEMPORAL_UI_PORT: the embedded dev server's web UI port; the codec server's default origins follow it. */
export const temporalUiPort = setting({
  variable: 'TEMPORAL_UI_PORT',
  parse: text.pipe(z.string().regex(/^\d+$/, 'must be a port number').transform(Number).optional()),
  default: DEFAULT_TEMPORAL_UI_PORT,
  deployment: false,
  doc: "the embedded dev server's web UI port (a free one when it is taken)",
});

/**
 * The variables `@temporalio/envconfig` reads besides TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE (see
 * `temporal-connection.ts`).
 */
export const temporalConnection = group({
  passedThrough: [
    'TEMPORAL_API_KEY',
    'TEMPORAL_TLS',
    'TEMPORAL_TLS_CLIENT_CERT_PATH',
    'TEMPORAL_TLS_CLIENT_KEY_PATH',
    'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
    'TEMPORAL_TLS_SERVER_NAME',
    'TEMPORAL_PROFILE',
    'TEMPORAL_CONFIG_FILE',
  ],
  doc: "TLS, API key and metadata from Temporal's environment configuration (a profile of its config file, overridden by the variables)",
  build: (_, { env }) => loadTemporalConnection(env),
});
