import { setTimeout as sleep } from 'node:timers/promises';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/common/free-port';
import { EMBEDDED_DEV_SERVER, explainConnectionFailure } from '../../src/app/temporal-connection';
import { startDevServer, type DevServer } from '../../src/app/temporal-server';

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
    const waited = await explainConnectionFailure(EMBEDDED_DEV_SERVER, address, connect, { waitMs: 2_500 }).catch((err: Error) => err);
    expect((waited as Error).message).toContain(`Could not connect to Temporal at ${address} without TLS`);
    expect((waited as Error).message).toContain('check TEMPORAL_ADDRESS');
    expect(tries).toBeGreaterThan(1);
    tries = 0;
    await expect(explainConnectionFailure(EMBEDDED_DEV_SERVER, address, connect)).rejects.toThrow('and that the server is up');
    expect(tries).toBe(1);
  });
});
