/**
 * Imported first by every entry point (`npm start`, `npm run api`, the CLI):
 * on a Node.js older than `MIN_NODE_VERSION` (22.12.0) the process says which
 * version it needs and exits with status 1, before anything else loads. On a
 * Node.js it runs on, it then enables the compile cache (./compile-cache),
 * before the modules it speeds up load.
 */
import { describeUnsupportedNode } from '../common/node-version';
import { enablePrivateCompileCache } from './compile-cache';

const problem = describeUnsupportedNode(process.versions.node);
if (problem) {
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}
enablePrivateCompileCache();
