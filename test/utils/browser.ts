import { existsSync } from 'node:fs';
import { Browser, chromium } from 'playwright-core';

/** Debian's Chromium: playwright-core never downloads a browser. */
export const CHROMIUM = '/usr/bin/chromium';

/** Launches Debian's Chromium headless, or fails with what to install (never skips). */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `This test drives Debian's Chromium at ${CHROMIUM}, which is missing: install it with "apt-get install -y chromium" (.ci/run does).`,
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}
