import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

/** Debian's Chromium: `.ci/run` installs it when missing. */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * Launches headless Debian Chromium for browser tests, or fails loudly (never skips) when it is
 * missing. The flags keep it from reaching for the network, which this machine does not have.
 */
export async function launchChromium(purpose: string): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${purpose} needs Debian's Chromium at ${CHROMIUM}, which is missing: apt-get install chromium (.ci/run does it).`,
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
