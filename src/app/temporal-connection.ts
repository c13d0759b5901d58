/**
 * How the worker and the CLI reach Temporal: Temporal's standard environment
 * configuration (`@temporalio/envconfig`), the same the `temporal` CLI and
 * every SDK read. `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`,
 * `TEMPORAL_TLS_*` (certificates by path or inline), `TEMPORAL_GRPC_META_*`,
 * and profiles in the config file (`TEMPORAL_CONFIG_FILE`, default
 * `~/.config/temporalio/temporal.toml`, chosen with `TEMPORAL_PROFILE`);
 * environment variables override the profile. An API key turns TLS on, as
 * Temporal Cloud needs.
 */
import { loadClientConnectConfig } from '@temporalio/envconfig';
import type { NativeConnectionOptions } from '@temporalio/worker';
import { ConfigError } from '../common/errors';
import { isTemporalNotReady, waitForServer } from '../common/wait-for-server';

/** Connection settings of a Temporal frontend, as the SDK's connection options take them. */
export interface TemporalConnectionSettings {
  /** host:port; unset when nothing configures one (the worker then starts the embedded dev server). */
  address?: string;
  namespace?: string;
  /** Temporal Cloud API key (sent as a bearer token; turns TLS on). */
  apiKey?: string;
  /** TLS: `true` for the system's CAs, an object for certificates, unset or `false` for none. */
  tls?: NativeConnectionOptions['tls'];
  /** gRPC metadata sent with every call. */
  metadata?: Record<string, string>;
  /** The profile read. */
  profile: string;
}

/** Reads the standard Temporal environment configuration from `env`. */
export function loadTemporalConnection(env: NodeJS.ProcessEnv = process.env): TemporalConnectionSettings {
  const named = env.TEMPORAL_PROFILE?.trim() || undefined;
  const profile = named ?? 'default';
  const overrideEnvVars = Object.fromEntries(
    Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined),
  );
  let loaded: ReturnType<typeof loadClientConnectConfig>;
  try {
    // A named profile must exist; the default one may be absent (then only the variables count).
    loaded = loadClientConnectConfig({ ...(named ? { profile: named } : {}), overrideEnvVars });
  } catch (err) {
    throw new ConfigError(
      `Could not read Temporal's connection configuration (profile "${profile}"${env.TEMPORAL_CONFIG_FILE ? `, file ${env.TEMPORAL_CONFIG_FILE}` : ''}): ` +
        `${(err as Error).message}. See https://docs.temporal.io/develop/environment-configuration for the variables and the file format.`,
    );
  }
  const { connectionOptions, namespace } = loaded;
  return {
    address: connectionOptions.address?.trim() || undefined,
    namespace: namespace?.trim() || undefined,
    apiKey: typeof connectionOptions.apiKey === 'string' ? connectionOptions.apiKey : undefined,
    tls: connectionOptions.tls,
    metadata: connectionOptions.metadata as Record<string, string> | undefined,
    profile,
  };
}

/** The embedded dev server: plain connections, whatever the environment configures for other servers. */
export const EMBEDDED_DEV_SERVER: TemporalConnectionSettings = { profile: 'embedded dev server' };

/**
 * TLS, API key and metadata, as `Connection.connect`, `NativeConnection.connect` and `AgentClient.connect` take them.
 */
export function connectionOptions(
  settings: TemporalConnectionSettings,
): Pick<TemporalConnectionSettings, 'tls' | 'apiKey' | 'metadata'> {
  return { tls: settings.tls, apiKey: settings.apiKey, metadata: settings.metadata };
}

/** True when a connection failure says nothing answered at the address (so a server restarting there may soon). */
function isServerUnreachable(err: unknown): boolean {
  const message = err instanceof Error ? err.message : String(err);
  return /connection refused|tcp connect error|connection reset/i.test(message);
}

/**
 * Runs `connect`, turning a failure into an error that says where it tried,
 * how (TLS, client certificate, API key) and what to check. With `waitMs`,
 * a server that does not answer (connection refused: restarting, say) is
 * waited for that long (`waitForServer`).
 */
export async function explainConnectionFailure<T>(
  settings: TemporalConnectionSettings,
  address: string,
  connect: () => Promise<T>,
  options: { waitMs?: number } = {},
): Promise<T> {
  try {
    return await waitForServer(`Temporal at ${address}`, connect, isServerUnreachable, options.waitMs ?? 0);
  } catch (err) {
    const cause = err instanceof Error ? err.message : String(err);
    const tls = settings.tls;
    const withCert = typeof tls === 'object' && tls !== null && tls.clientCertPair !== undefined;
    const how = tls
      ? `over TLS${withCert ? ' with a client certificate' : ' without a client certificate'}`
      : 'without TLS';
    const hints = [
      tls
        ? withCert
          ? "if the server refused the certificate, check that TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH (or the profile's tls.client_cert_path and tls.client_key_path) name a certificate signed by a CA the server trusts, and its key"
          : 'if the server requires a client certificate (mTLS), set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH'
        : 'if the server expects TLS, set TEMPORAL_TLS=true (or TLS certificates, or TEMPORAL_API_KEY)',
      tls
        ? 'to trust a private CA, set TEMPORAL_TLS_SERVER_CA_CERT_PATH; TEMPORAL_TLS_SERVER_NAME when the certificate names another host'
        : undefined,
      "check TEMPORAL_ADDRESS (or the profile's address) and that the server is up",
    ].filter(Boolean);
    throw new ConfigError(
      `Could not connect to Temporal at ${address} ${how} (profile "${settings.profile}"): ${cause}\n  - ${hints.join('\n  - ')}`,
    );
  }
}

/** The part of a connection {@link waitForNamespace} uses (`NativeConnection` and `Connection` both have it). */
export interface NamespaceLookup {
  workflowService: { describeNamespace(request: { namespace: string }): Promise<unknown> };
}

/**
 * Waits until Temporal knows `namespace`, for at most `waitMs`. A server
 * that has just started, or whose database was down a moment, answers
 * "Namespace … is not found" until its namespace registry has loaded (the
 * dev server never does; a cluster on PostgreSQL does, seconds long), and a
 * server whose database is down answers "unavailable"; a worker starting
 * then waits instead of exiting. A namespace that still does
 * not exist after the wait is a `ConfigError` saying how to create it.
 */
export async function waitForNamespace(
  connection: NamespaceLookup,
  namespace: string,
  address: string,
  waitMs: number,
): Promise<void> {
  try {
    await waitForServer(
      `namespace "${namespace}" on Temporal at ${address}`,
      () => connection.workflowService.describeNamespace({ namespace }),
      isTemporalNotReady,
      waitMs,
    );
  } catch (err) {
    // Still unavailable: the error says so; still not found: the namespace is missing.
    if ((err as { code?: unknown }).code !== 5) throw err;
    throw new ConfigError(
      `Temporal at ${address} has no namespace "${namespace}" (asked for ${Math.round(waitMs / 1000)} s). ` +
        `Create it (temporal operator namespace create --namespace ${namespace}), or set TEMPORAL_NAMESPACE to one that exists.`,
      { cause: err },
    );
  }
}
