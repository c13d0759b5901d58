import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { freePort, startOnPreferredPorts } from '../../src/common/free-port';

let lockDir: string;
const servers: net.Server[] = [];

beforeEach(() => {
  lockDir = fs.mkdtempSync(path.join(os.tmpdir(), 'port-lock-'));
});

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
  fs.rmSync(lockDir, { recursive: true, force: true });
});

/** A server that, like the dev server, binds its port a while after it was chosen. */
async function slowServer(port: number): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, 200));
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  servers.push(server);
  return port;
}

describe('startOnPreferredPorts', () => {
  it('gives two starts at once a port each: the preferred one to the first, a free one to the second', async () => {
    const preferred = await freePort();
    const first = startOnPreferredPorts([preferred], ([port]) => slowServer(port), { lockDir });
    // The second probes once the first probe is done and before the first server binds.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const second = startOnPreferredPorts([preferred], ([port]) => slowServer(port), { lockDir });
    const [a, b] = await Promise.all([first, second]);
    expect([a, b]).toContain(preferred);
    expect(a).not.toBe(b);
    expect(fs.readdirSync(lockDir)).toEqual([]);
  });

  it('moves each taken port and keeps 0 as none', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    servers.push(taken);
    const takenPort = (taken.address() as net.AddressInfo).port;
    const free = await freePort();
    const chosen = await startOnPreferredPorts([free, takenPort, 0], async (ports) => ports, { lockDir });
    expect(chosen[0]).toBe(free);
    expect(chosen[1]).not.toBe(takenPort);
    expect(chosen[1]).toBeGreaterThan(0);
    expect(chosen[2]).toBe(0);
  });

  it("takes over the lock of a process that died, and leaves a live process's lock in place after the wait", async () => {
    const preferred = await freePort();
    const lockFile = path.join(lockDir, `durable-agent-worker-port-${preferred}.lock`);
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString();
    fs.writeFileSync(lockFile, dead);
    const started = Date.now();
    await startOnPreferredPorts([preferred], async (ports) => ports, { lockDir, waitMs: 5_000 });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(fs.existsSync(lockFile)).toBe(false);

    fs.writeFileSync(lockFile, String(process.pid));
    const [port] = await startOnPreferredPorts([preferred], async (ports) => ports, { lockDir, waitMs: 300 });
    expect(port).toBe(preferred);
    expect(fs.readFileSync(lockFile, 'utf8')).toBe(String(process.pid));
  });

  it('starts again on ports probed again when another process takes a chosen port before the server binds it', async () => {
    const preferred = await freePort();
    const tried: number[] = [];
    const retried: string[] = [];
    const port = await startOnPreferredPorts(
      [preferred],
      async ([chosen]) => {
        tried.push(chosen);
        // Another process takes the port between the probe and the first bind.
        if (tried.length === 1) await listenOn(chosen);
        return slowServer(chosen);
      },
      { lockDir, onRetry: (err) => retried.push((err as NodeJS.ErrnoException).code ?? String(err)) },
    );
    expect(tried[0]).toBe(preferred);
    expect(retried).toEqual(['EADDRINUSE']);
    expect(port).not.toBe(preferred);
    expect(tried).toEqual([preferred, port]);
  });

  it('throws the last failure once its retries are spent, and frees the lock', async () => {
    const preferred = await freePort();
    let calls = 0;
    const start = startOnPreferredPorts(
      [preferred],
      async () => {
        calls++;
        throw new Error(`bind failed (try ${calls})`);
      },
      { lockDir, retries: 2 },
    );
    await expect(start).rejects.toThrow('bind failed (try 3)');
    expect(calls).toBe(3);
    expect(fs.readdirSync(lockDir)).toEqual([]);
  });
});

async function listenOn(port: number): Promise<void> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  servers.push(server);
}
