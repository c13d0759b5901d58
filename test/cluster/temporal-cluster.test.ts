/**
 * The `cluster` project's server is Temporal's own, not the dev server: the
 * version built from source, PostgreSQL persistence and visibility, 4 history
 * shards, and a frontend that takes only TLS clients with a certificate its
 * CA signed (test/support/temporal-cluster.ts, deploy/temporal/config.yaml).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectionOptions, loadTemporalConnection } from '../../src/app/temporal-connection';

const env = inject('temporalEnv');
const address = env.TEMPORAL_ADDRESS;
let connection: Connection;

beforeAll(async () => {
  connection = await Connection.connect({ address, ...connectionOptions(loadTemporalConnection(env)) });
});
afterAll(async () => {
  await connection?.close();
});

describe('the cluster the cluster project runs on', () => {
  it('is the pinned server version on PostgreSQL with 4 history shards', async () => {
    const info = await connection.workflowService.getClusterInfo({});
    const pinned = (
      JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
        config: { temporalServerVersion: string };
      }
    ).config.temporalServerVersion;
    expect(info.serverVersion).toBe(pinned);
    expect(info.historyShardCount).toBe(4);
    expect(info.persistenceStore).toMatch(/^postgres/);
    expect(info.visibilityStore).toMatch(/^postgres/);
  });

  it('refuses a client without TLS, and a TLS client without a certificate', async () => {
    await expect(
      (async () => {
        const plain = await Connection.connect({ address, connectTimeout: 3_000 });
        try {
          await plain.workflowService.getSystemInfo({});
        } finally {
          await plain.close();
        }
      })(),
    ).rejects.toThrow();
    await expect(
      (async () => {
        const noCert = await Connection.connect({
          address,
          connectTimeout: 3_000,
          tls: {
            serverRootCACertificate: fs.readFileSync(env.TEMPORAL_TLS_SERVER_CA_CERT_PATH),
            serverNameOverride: 'localhost',
          },
        });
        try {
          await noCert.workflowService.getSystemInfo({});
        } finally {
          await noCert.close();
        }
      })(),
    ).rejects.toThrow();
  });
});
