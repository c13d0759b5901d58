/** The real browser of the page tests: Debian's Chromium, driven by playwright-core. */
import fs from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Where Debian's chromium package installs it (.ci/run installs it when missing). */
export const CHROMIUM = '/usr/bin/chromium';

/** Launches headless Chromium; throws, saying how to install it, when it is missing. */
export async function launchChromium(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM))
    throw new Error(
      `This test drives Debian's Chromium at ${CHROMIUM}; install it (apt-get install chromium; .ci/run does).`,
    );
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
}
