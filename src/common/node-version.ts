/**
 * The Node.js versions the project runs on. Node 20 reached its end of life
 * on 2026-04-30; the toolchain (`openai`, `ai`, `vitest`, Temporal's AI SDK
 * integration) needs 22.12 or later. The repository pins Node 24 as a
 * devDependency, so every npm script runs on it whatever the system's Node.
 */

/** The oldest Node.js release the worker, the API and the CLI start on. */
export const MIN_NODE_VERSION = '22.12.0';

/** Why `version` (e.g. `process.versions.node`) cannot run the project, or undefined when it can. */
export function describeUnsupportedNode(version: string): string | undefined {
  const [major, minor, patch] = version.replace(/^v/, '').split('.').map(Number);
  const [minMajor, minMinor, minPatch] = MIN_NODE_VERSION.split('.').map(Number);
  const parsed = [major, minor, patch].every((n) => Number.isInteger(n));
  const older =
    !parsed ||
    major < minMajor ||
    (major === minMajor && (minor < minMinor || (minor === minMinor && patch < minPatch)));
  if (!older) return undefined;
  return (
    `durable-agent-worker needs Node.js ${MIN_NODE_VERSION} or later; this is Node.js ${version}. ` +
    'Run it through npm (npm start, npm run cli, npm run api), which uses the Node.js 24 this repository pins ' +
    '(node_modules/.bin/node), or install Node.js 22.12+ or 24.'
  );
}
