// Bundles the example chat page (examples/chat-page/app.tsx: React and the AI
// SDK's useChat) into one script the API serves at /chat/app.js.
// Usage: node scripts/build-chat-page.mjs [out-file]
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
/** Where `npm run build:chat-page` writes the bundle, and where `npm start` looks for it. */
export const CHAT_PAGE_BUNDLE = path.join(ROOT, 'examples', 'chat-page', 'dist', 'app.js');

/** Bundles the page into `outFile` (minified, for browsers). */
export async function buildChatPage(outFile = CHAT_PAGE_BUNDLE) {
  await build({
    entryPoints: [path.join(ROOT, 'examples', 'chat-page', 'app.tsx')],
    outfile: outFile,
    bundle: true,
    minify: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2022',
    jsx: 'automatic',
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'warning',
  });
  return outFile;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(`wrote ${await buildChatPage(process.argv[2])}`);
}
