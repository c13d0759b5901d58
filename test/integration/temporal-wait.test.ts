import { setTimeout as sleep } from 'node:timers/promises';
import { msToTs } from '@temporalio/common/lib/time';
import { NativeConnection } from '@temporalio/worker';
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../src/common/free-port';
import { EMBEDDED_DEV_SERVER, explainConnectionFailure, waitForNamespace } from '../../src/app/temporal-connection';
import { startDevServer, type DevServer } from '../../src/app/temporal-server';
import { ensureSearchAttributes } from '../../src/worker/search-attributes';
import { refusePreReleaseConversations } from '../../src/worker/pre-release-conversations';

// A worker starting while its Temporal server restarts waits for it (npm
// start waits up to 60 s) instead of exiting: a dev server of the test's own
// starts on the address after the worker began to connect.

let server: DevServer | undefined;
afterAll(async () => {
  await server?.stop();
});

describe('a starting worker waits for Temporal', () => {
  it('connects once a server answers at the address, having tried while none did', async () => {
    const port = await freePort();
    const address = `127.0.0.1:${port}`;
    let tries = 0;
    const connecting = explainConnectionFailure(
      EMBEDDED_DEV_SERVER,
      address,
      () => {
        tries++;
        return NativeConnection.connect({ address });
      },
      { waitMs: 60_000 },
    );
    await sleep(1_500);
    expect(tries).toBeGreaterThan(1);
    server = await startDevServer({ port });
    const connection = await connecting;
    await connection.close();
  });

  it('gives up after its wait with what to check; without a wait it fails at the first refusal', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    let tries = 0;
    const connect = () => {
      tries++;
      return NativeConnection.connect({ address });
    };
    const waited = await explainConnectionFailure(EMBEDDED_DEV_SERVER, address, connect, { waitMs: 2_500 }).catch(
      (err: Error) => err,
    );
    expect((waited as Error).message).toContain(`Could not connect to Temporal at ${address} without TLS`);
    expect((waited as Error).message).toContain('check TEMPORAL_ADDRESS');
    expect(tries).toBeGreaterThan(1);
    tries = 0;
    await expect(explainConnectionFailure(EMBEDDED_DEV_SERVER, address, connect)).rejects.toThrow(
      'and that the server is up',
    );
    expect(tries).toBe(1);
  });
});

// A cluster that has just started, or whose database was down a moment, answers "Namespace … is not
// found" until its namespace registry loads (seen in the chaos run on the cluster: a worker started then
// exited). npm start waits for the namespace as it waits for the server; here a namespace is registered
// on the run's dev server while the wait runs.
/** Runs `use` with a connection to the run's dev server, closed afterwards. */
async function withConnection(use: (connection: NativeConnection, address: string) => Promise<void>): Promise<void> {
  const address = inject('temporalAddress');
  const connection = await NativeConnection.connect({ address });
  try {
    await use(connection, address);
  } finally {
    await connection.close();
  }
}

describe('a starting worker waits for its namespace', () => {
  it('asks until the namespace exists, then goes on', async () => {
    await withConnection(async (connection, address) => {
      const namespace = `late-${randomUUID().slice(0, 8)}`;
      let asked = 0;
      const lookup = {
        workflowService: {
          describeNamespace: (request: { namespace: string }) => {
            asked++;
            return connection.workflowService.describeNamespace(request);
          },
        },
      };
      const waiting = waitForNamespace(lookup, namespace, address, 60_000);
      await sleep(1_500);
      expect(asked).toBeGreaterThan(1);
      await connection.workflowService.registerNamespace({
        namespace,
        workflowExecutionRetentionPeriod: msToTs('1 day'),
      });
      await waiting;
    });
  });

  it("registers the conversation's search attributes on a namespace the server learns of while the worker starts", async () => {
    await withConnection(async (connection) => {
      const namespace = `late-sa-${randomUUID().slice(0, 8)}`;
      const registering = ensureSearchAttributes(connection, namespace);
      const checking = refusePreReleaseConversations(connection, namespace, 'agent');
      await sleep(1_500);
      await connection.workflowService.registerNamespace({
        namespace,
        workflowExecutionRetentionPeriod: msToTs('1 day'),
      });
      const registration = await registering;
      expect(registration.on).toContain('status');
      expect(registration.added).toContain('AgentStatus');
      // The start's visibility count (conversations of a build before 1.0) waited too, and found none.
      await checking;
    });
  });

  it('gives up after its wait, naming the namespace and how to create it', async () => {
    await withConnection(async (connection, address) => {
      const namespace = `missing-${randomUUID().slice(0, 8)}`;
      const started = Date.now();
      const err = (await waitForNamespace(connection, namespace, address, 1_500).catch((e: Error) => e)) as Error;
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
      expect(err.message).toBe(
        `Temporal at ${address} has no namespace "${namespace}" (asked for 2 s). Create it (temporal operator namespace create --namespace ${namespace}), or set TEMPORAL_NAMESPACE to one that exists.`,
      );
    });
  });
});
