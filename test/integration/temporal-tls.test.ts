import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentClient } from '../../src/client';
import { loadTemporalConnection } from '../../src/app/temporal-connection';
import { startHarness, type Harness } from '../support/harness';
import { makeCertificates, startTlsProxy, type TestCertificates, type TlsProxy } from '../support/tls';
import { startWorkerProcess } from '../support/worker-process';

// Reaching a secured Temporal cluster with Temporal's standard environment configuration: the dev
// server behind a TLS proxy that requires a client certificate (mutual TLS), with certificates the
// test makes. The worker process and the client read TEMPORAL_ADDRESS and TEMPORAL_TLS_* as every
// Temporal SDK and the temporal CLI do.

let h: Harness;
let certs: TestCertificates;
let proxy: TlsProxy;
beforeAll(async () => {
  h = await startHarness({ worker: false });
  certs = makeCertificates();
  proxy = await startTlsProxy(h.temporalAddress, certs);
});
afterAll(async () => {
  await proxy?.close();
  await h?.stop();
  if (certs) fs.rmSync(certs.dir, { recursive: true, force: true });
});

const tlsEnv = (cert?: { cert: string; key: string }) => ({
  TEMPORAL_ADDRESS: `127.0.0.1:${proxy.port}`,
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.ca,
  TEMPORAL_TLS_SERVER_NAME: 'localhost',
  ...(cert ? { TEMPORAL_TLS_CLIENT_CERT_PATH: cert.cert, TEMPORAL_TLS_CLIENT_KEY_PATH: cert.key } : {}),
});

describe('a Temporal cluster that requires mutual TLS', () => {
  it('a worker and a client configured by TEMPORAL_TLS_* connect through it and run a conversation', async () => {
    const env = tlsEnv({ cert: certs.clientCert, key: certs.clientKey });
    const worker = await startWorkerProcess({ ...h.workerEnv(), ...env });
    const settings = loadTemporalConnection(env);
    const client = await AgentClient.connect({
      temporalAddress: settings.address!,
      tls: settings.tls,
      databaseUrl: h.databaseUrl,
      taskQueue: h.taskQueue,
    });
    try {
      expect(worker.output()).toContain(`Temporal     127.0.0.1:${proxy.port}  (configured (profile "default", TLS))`);
      h.model.enqueue({ content: 'Hello over TLS.' });
      const { answer } = await client.ask(h.newConversationId('tls'), 'hello');
      expect(answer).toBe('Hello over TLS.');
      expect(proxy.authorized.length).toBeGreaterThanOrEqual(2); // worker and client both came through the proxy
      expect(new Set(proxy.authorized)).toEqual(new Set(['agent-worker']));
    } finally {
      await client.close();
      await worker.stop();
    }
  });

  it('a worker with a certificate from another CA says the connection failed and what to check', async () => {
    const error = await startWorkerProcess({
      ...h.workerEnv(),
      ...tlsEnv({ cert: certs.rogueCert, key: certs.rogueKey }),
    }).catch((err: Error) => err);
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message).toContain(
      `The worker cannot start: Could not connect to Temporal at 127.0.0.1:${proxy.port} over TLS with a client certificate (profile "default")`,
    );
    expect(message).toContain('check that TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH');
  });

  it('a worker without a client certificate says the server may require one and how to give it', async () => {
    const error = await startWorkerProcess({ ...h.workerEnv(), ...tlsEnv() }).catch((err: Error) => err);
    const message = (error as Error).message;
    expect(message).toContain(
      `Could not connect to Temporal at 127.0.0.1:${proxy.port} over TLS without a client certificate`,
    );
    expect(message).toContain(
      'if the server requires a client certificate (mTLS), set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH',
    );
  });
});

describe("Temporal's environment configuration", () => {
  it('passes an API key to the connection options and turns TLS on, as Temporal Cloud needs', () => {
    const settings = loadTemporalConnection({
      TEMPORAL_ADDRESS: 'my-ns.a1b2c.tmprl.cloud:7233',
      TEMPORAL_NAMESPACE: 'my-ns.a1b2c',
      TEMPORAL_API_KEY: 'key-123',
    });
    expect(settings).toMatchObject({
      address: 'my-ns.a1b2c.tmprl.cloud:7233',
      namespace: 'my-ns.a1b2c',
      apiKey: 'key-123',
      tls: true,
    });
  });

  it('reads a profile from the config file, with environment variables overriding it', () => {
    const file = path.join(certs.dir, 'temporal.toml');
    fs.writeFileSync(
      file,
      [
        '[profile.prod]',
        'address = "prod.example.com:7233"',
        'namespace = "backoffice"',
        '',
        '[profile.prod.tls]',
        `client_cert_path = "${certs.clientCert}"`,
        `client_key_path = "${certs.clientKey}"`,
        '',
      ].join('\n'),
    );
    const settings = loadTemporalConnection({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'prod' });
    expect(settings).toMatchObject({ address: 'prod.example.com:7233', namespace: 'backoffice', profile: 'prod' });
    const pair = (settings.tls as { clientCertPair?: { crt: Uint8Array } }).clientCertPair;
    expect(Buffer.from(pair!.crt).equals(fs.readFileSync(certs.clientCert))).toBe(true);
    expect(
      loadTemporalConnection({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'prod', TEMPORAL_NAMESPACE: 'other' })
        .namespace,
    ).toBe('other');
    expect(() => loadTemporalConnection({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'staging' })).toThrow(
      `Could not read Temporal's connection configuration (profile "staging", file ${file}): Profile 'staging' not found in config data.`,
    );
  });
});
