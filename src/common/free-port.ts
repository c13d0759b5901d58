/** Free TCP ports on loopback. */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** Whether `port` on loopback can be listened on now (a probe: another process may take it right after). */
export async function isPortFree(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** Asks the OS for a free TCP port on loopback. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Options of {@link startOnPreferredPorts}. */
export interface PreferredPortOptions {
  /** Folder of the machine-wide lock files; `/tmp` (ports are the machine's, whatever `TMPDIR` says). */
  lockDir?: string;
  /** How long to wait for another start holding the lock before going on without it (30 s). */
  waitMs?: number;
  /**
   * How many more times to run `start` when it fails, with the ports probed
   * again (2). A port found free can still be taken before the server binds
   * it, by any process on the machine; the next try picks another.
   */
  retries?: number;
  /** Called before each retry with the failure, to say why it starts again. */
  onRetry?: (error: unknown, ports: readonly number[]) => void;
}

/**
 * Runs `start` with each of `ports` where it is free and any free port in
 * place of each taken one (0 stays 0: "none"). Starts of other processes on
 * this machine that prefer the same first port take turns through a lock
 * file, held until `start` resolves (its server listens).
 *
 * A probe alone leaves a gap between it and the server's bind: two `npm
 * start`s at once both found 7233 free, the second dev server could not
 * bind it, and its worker ran against the first one's server. The lock
 * covers only starts of this project; any other process may take a port
 * in that gap (a test run saw the dev server's UI port taken), so a failed
 * start runs again on ports probed again, up to `retries` times, and the
 * last failure is thrown.
 */
export async function startOnPreferredPorts<T>(
  ports: readonly number[],
  start: (ports: number[]) => Promise<T>,
  options: PreferredPortOptions = {},
): Promise<T> {
  const lockDir = options.lockDir ?? (process.platform === 'win32' ? os.tmpdir() : '/tmp');
  const lockFile = path.join(lockDir, `durable-agent-worker-port-${ports[0]}.lock`);
  const held = await takeLock(lockFile, options.waitMs ?? 30_000);
  try {
    const retries = options.retries ?? 2;
    for (let attempt = 0; ; attempt++) {
      const chosen: number[] = [];
      for (const port of ports) chosen.push(port === 0 ? 0 : (await isPortFree(port)) ? port : await freePort());
      try {
        return await start(chosen);
      } catch (err) {
        if (attempt >= retries) throw err;
        options.onRetry?.(err, chosen);
      }
    }
  } finally {
    if (held) fs.rmSync(lockFile, { force: true });
  }
}

/** Creates `file` with this process's id, waiting while a live process holds it; false when the wait ran out. */
async function takeLock(file: string, waitMs: number): Promise<boolean> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      fs.writeFileSync(file, String(process.pid), { flag: 'wx', mode: 0o644 });
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') return false;
    }
    const owner = Number(readOrEmpty(file));
    if (Number.isInteger(owner) && owner > 0 && !isAlive(owner)) {
      fs.rmSync(file, { force: true });
      continue;
    }
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function readOrEmpty(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
