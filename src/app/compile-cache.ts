/**
 * Node's compile cache for the worker, the API and the CLI: V8's code cache of
 * every module they load, kept on disk, so a start after the first reads
 * compiled code instead of compiling the sources again (most of a start is
 * loading modules: docs/performance.md, "Start-up"). It also covers `npm
 * start`'s tsx, which compiles its transformed sources through the same
 * CommonJS loader.
 *
 * The cache lives in `<data folder>/compile-cache`, mode 0700, rather than
 * Node's default `<os.tmpdir()>/node-compile-cache`: Node makes that folder
 * with the umask's mode (0755 here) in a directory every user can write, so
 * another user could list it, or create it first and plant code for our
 * processes to run.
 */
import fs from 'node:fs';
import nodeModule from 'node:module';
import path from 'node:path';

/** The folder, under the data folder, that holds the compile cache. */
export const COMPILE_CACHE_FOLDER = 'compile-cache';

/** What {@link enablePrivateCompileCache} did. */
export type CompileCacheOutcome = { enabled: true; directory: string } | { enabled: false; reason: string };

/** `module.enableCompileCache`'s answer (Node 22.1+; the types of Node 20 do not declare it). */
interface EnableResult {
  status: number;
  directory?: string;
  message?: string;
}

interface CompileCacheApi {
  enableCompileCache?: (directory?: string) => EnableResult;
  flushCompileCache?: () => void;
  constants?: { compileCacheStatus?: Record<'FAILED' | 'ENABLED' | 'ALREADY_ENABLED' | 'DISABLED', number> };
}

/**
 * The data folder as `loadConfig` resolves it (`AGENT_DATA_DIR`, else `.data`
 * in the checkout), without loading the configuration's modules, which the
 * cache is there to speed up.
 */
export function dataFolder(env: NodeJS.ProcessEnv = process.env): string {
  const configured = env.AGENT_DATA_DIR?.trim();
  return path.resolve(configured || path.join(__dirname, '..', '..', '.data'));
}

/**
 * Enables Node's compile cache in `<data folder>/compile-cache`, made private
 * (0700) first. Does nothing when `NODE_DISABLE_COMPILE_CACHE` is set (Node's
 * own switch, whatever its value), and leaves a cache that
 * `NODE_COMPILE_CACHE` enabled at launch where it is. A folder that cannot be
 * made private (another user's, a read-only disk) leaves the cache off: a
 * start never fails for want of it.
 */
export function enablePrivateCompileCache(env: NodeJS.ProcessEnv = process.env): CompileCacheOutcome {
  const api = nodeModule as unknown as CompileCacheApi;
  if (env.NODE_DISABLE_COMPILE_CACHE !== undefined) return { enabled: false, reason: 'NODE_DISABLE_COMPILE_CACHE' };
  if (!api.enableCompileCache) return { enabled: false, reason: 'this Node.js has no module.enableCompileCache' };
  if (env.NODE_COMPILE_CACHE) {
    return { enabled: true, directory: api.enableCompileCache().directory ?? env.NODE_COMPILE_CACHE };
  }
  const directory = path.join(dataFolder(env), COMPILE_CACHE_FOLDER);
  try {
    // The data folder keeps the mode it always had (embedded PostgreSQL, run as another user under root, needs to
    // enter it); only the cache's own folder is private.
    fs.mkdirSync(path.dirname(directory), { recursive: true });
    fs.mkdirSync(directory, { recursive: true, mode: 0o700 });
    const stat = fs.statSync(directory);
    if (process.getuid && stat.uid !== process.getuid()) {
      return { enabled: false, reason: `${directory} belongs to another user` };
    }
    if ((stat.mode & 0o077) !== 0) fs.chmodSync(directory, 0o700);
  } catch (err) {
    return { enabled: false, reason: `${directory}: ${err instanceof Error ? err.message : String(err)}` };
  }
  const result = api.enableCompileCache(directory);
  const status = api.constants?.compileCacheStatus;
  if (status && (result.status === status.ENABLED || result.status === status.ALREADY_ENABLED)) {
    // Node writes the cache as the process exits; a worker killed (SIGKILL, out of memory) would never leave one. The
    // entry point's static imports all load before this timer fires, so they are written once they are compiled.
    if (api.flushCompileCache) setTimeout(api.flushCompileCache, 0).unref();
    return { enabled: true, directory: result.directory ?? directory };
  }
  return { enabled: false, reason: result.message ?? `status ${result.status}` };
}
