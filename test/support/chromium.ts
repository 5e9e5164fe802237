import { accessSync, constants } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

/** The one command that installs a Chromium the tests find (`.ci/run` runs it on a bare machine). */
export const INSTALL_CHROMIUM = 'apt-get install chromium';

/**
 * Where browser tests look for Chromium (or Chrome), in order: `PORTCULLIS_CHROMIUM`, then the
 * usual install paths on Debian/Ubuntu, Fedora, snap, macOS and Windows, then a browser that
 * Playwright downloaded (`npx playwright install chromium`).
 */
export function chromiumCandidates(): string[] {
  const fromEnv = process.env.PORTCULLIS_CHROMIUM;
  const usual = [
    '/usr/bin/chromium',
    '/usr/bin/chromium-browser',
    '/usr/lib/chromium/chromium',
    '/snap/bin/chromium',
    '/usr/bin/google-chrome',
    '/usr/bin/google-chrome-stable',
    '/opt/google/chrome/chrome',
    '/Applications/Chromium.app/Contents/MacOS/Chromium',
    '/Applications/Google Chrome.app/Contents/MacOS/Google Chrome',
    'C:\\Program Files\\Google\\Chrome\\Application\\chrome.exe',
  ];
  let downloaded: string[] = [];
  try {
    downloaded = [chromium.executablePath()];
  } catch {
    // Playwright knows no browser of its own here
  }
  return fromEnv ? [fromEnv] : [...usual, ...downloaded];
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The Chromium the browser tests use, or an error naming what was tried and the one command that
 * fixes it. A `PORTCULLIS_CHROMIUM` that is not executable is an error, never silently replaced.
 */
export function findChromium(purpose: string): string {
  const fromEnv = process.env.PORTCULLIS_CHROMIUM;
  const found = chromiumCandidates().find(executable);
  if (found !== undefined) return found;
  throw new Error(
    fromEnv
      ? `${purpose} needs Chromium: PORTCULLIS_CHROMIUM=${fromEnv} is not an executable file. Point it at a Chromium or Chrome binary, or unset it.`
      : `${purpose} needs Chromium and found none (tried PORTCULLIS_CHROMIUM and ${chromiumCandidates().join(', ')}). Fix: ${INSTALL_CHROMIUM} (or set PORTCULLIS_CHROMIUM to a Chromium or Chrome binary).`,
  );
}

/**
 * Launches headless Chromium for browser tests, or fails loudly (never skips) when there is none.
 * The flags keep it from reaching for the network, which a CI machine may not have.
 */
export async function launchChromium(purpose: string): Promise<Browser> {
  return chromium.launch({
    executablePath: findChromium(purpose),
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
