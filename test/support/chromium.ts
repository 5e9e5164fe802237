import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium } from 'playwright-core';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

/**
 * The command that gives this platform a Chromium the tests find. On Linux x64 none is needed:
 * the Chromium inside the `@sparticuz/chromium` devDependency is the fallback there.
 */
export function installChromiumCommand(platform = process.platform): string {
  if (platform === 'darwin') return 'brew install --cask chromium';
  if (platform === 'win32') return 'winget install Google.Chrome';
  return 'apt-get install chromium';
}

/**
 * `PORTCULLIS_CHROMIUM` is a path to a Chromium or Chrome binary, or `none`: search no system
 * location, as on a machine without a browser (`.ci/run` proves the fallback that way).
 */
const setting = () => process.env.PORTCULLIS_CHROMIUM;

/**
 * Where browser tests look for a system Chromium (or Chrome), in order: `PORTCULLIS_CHROMIUM`,
 * then the usual install paths on Debian/Ubuntu, Fedora, snap, macOS and Windows, then a browser
 * that Playwright downloaded (`npx playwright install chromium`). None with
 * `PORTCULLIS_CHROMIUM=none`.
 */
export function chromiumCandidates(): string[] {
  const fromEnv = setting();
  if (fromEnv === 'none') return [];
  if (fromEnv) return [fromEnv];
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
  return [...usual, ...downloaded];
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** What a browser test launches: a binary and the flags it needs beyond Playwright's. */
export interface ChromiumLaunch {
  executablePath: string;
  args: string[];
  /** Where it came from: `system` or `@sparticuz/chromium <version>`. */
  source: string;
}

/** The flags every launch gets: keep the browser from reaching for a network CI may not have. */
const QUIET = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * The Chromium shipped (Brotli-compressed) inside `@sparticuz/chromium`, unpacked once per
 * version into node_modules/.cache/portcullis-chromium/<version>/ and launched with the flags
 * that package says its build needs (but one). It unpacks into `os.tmpdir()`, so TMPDIR points at a private
 * folder while it runs, which is then renamed into place: two test files unpacking at once never
 * write the same files, and a half-unpacked folder is never used.
 */
async function bundledChromium(): Promise<ChromiumLaunch> {
  // Its exports map hides package.json; the entry point is build/cjs/index.cjs under the root.
  const entry = createRequire(import.meta.url).resolve('@sparticuz/chromium');
  const manifest = join(dirname(entry), '..', '..', 'package.json');
  const { version } = JSON.parse(readFileSync(manifest, 'utf8')) as { version: string };
  const { default: Sparticuz } = await import('@sparticuz/chromium');
  const dir = join(REPO, 'node_modules', '.cache', 'portcullis-chromium', version);
  const binary = join(dir, 'chromium');
  if (!existsSync(binary)) {
    mkdirSync(dirname(dir), { recursive: true });
    const scratch = mkdtempSync(join(dirname(dir), `unpacking-${version}-`));
    const tmpdir = process.env.TMPDIR;
    process.env.TMPDIR = scratch;
    try {
      await Sparticuz.executablePath();
    } finally {
      if (tmpdir === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = tmpdir;
    }
    try {
      renameSync(scratch, dir);
    } catch (error) {
      // Another test process unpacked the same version first: use its copy.
      rmSync(scratch, { recursive: true, force: true });
      if (!existsSync(binary)) throw error;
    }
  }
  return { executablePath: binary, args: Sparticuz.args, source: `@sparticuz/chromium ${version}` };
}

/**
 * The Chromium the browser tests use: a system one when there is one, otherwise (Linux x64 only)
 * the one inside `@sparticuz/chromium`; or an error naming what was tried and the command that
 * fixes it. A `PORTCULLIS_CHROMIUM` path that is not executable is an error, never replaced.
 */
export async function findChromium(purpose: string): Promise<ChromiumLaunch> {
  const fromEnv = setting();
  const tried = chromiumCandidates();
  const found = tried.find(executable);
  if (found !== undefined) return { executablePath: found, args: QUIET, source: 'system' };
  if (fromEnv && fromEnv !== 'none')
    throw new Error(
      `${purpose} needs Chromium: PORTCULLIS_CHROMIUM=${fromEnv} is not an executable file. Point it at a Chromium or Chrome binary, or unset it.`,
    );
  if (process.platform === 'linux' && process.arch === 'x64') {
    const bundled = await bundledChromium();
    // Its --single-process suits AWS Lambda's sandbox; here it makes the browser exit when a
    // test closes its first context (the status page test's later tests then find it gone).
    const args = bundled.args.filter((arg) => arg !== '--single-process');
    return { ...bundled, args: [...QUIET, ...args] };
  }
  throw new Error(
    `${purpose} needs Chromium and found none (tried ${tried.length > 0 ? tried.join(', ') : 'no system location: PORTCULLIS_CHROMIUM=none'}; the Chromium of @sparticuz/chromium runs on Linux x64 only, this is ${process.platform} ${process.arch}). Fix: ${installChromiumCommand()} (or set PORTCULLIS_CHROMIUM to a Chromium or Chrome binary).`,
  );
}

/** Launches headless Chromium for browser tests, or fails loudly (never skips) when there is none. */
export async function launchChromium(purpose: string): Promise<Browser> {
  const { executablePath, args, source } = await findChromium(purpose);
  const browser = await chromium.launch({ executablePath, headless: true, args });
  // Said once per launch so a run shows which browser it tested (.ci/run checks this line).
  if (source !== 'system')
    process.stderr.write(
      `${purpose}: no system Chromium, using Chromium ${browser.version()} of ${source}\n`,
    );
  return browser;
}
