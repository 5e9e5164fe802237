// Usage: node scripts/build-if-stale.mjs [--check] [<package>…] — builds each publishable package (all of
// them without arguments) whose dist is missing or was built from other inputs than its current
// sources (see build-stamp.mjs), dependencies first, under the repository's build lock. The test
// setup runs it before any test, so the packed tarballs and the server processes the tests start
// always load a dist built from the sources under test; `npm test` needs no separate build.
// `--check` builds nothing: it lists the stale packages on stdout and exits 1 if there are any.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  dependenciesOf,
  isFresh,
  PACKAGES,
  packageDir,
  REPO,
  withBuildLock,
} from './build-stamp.mjs';

const BUILD_PACKAGE = fileURLToPath(new URL('./build-package.mjs', import.meta.url));

/** @param {string[]} names @returns {string[]} `names` and what they build against, in order */
function withDependencies(names) {
  /** @type {string[]} */
  const order = [];
  const visit = (/** @type {string} */ name) => {
    if (order.includes(name)) return;
    for (const dependency of dependenciesOf(name)) visit(dependency);
    order.push(name);
  };
  for (const name of names) visit(name);
  return order;
}

/**
 * Builds what is stale among `names` (default: every package), holding the build lock. Returns
 * the packages it built; throws when a build fails (the compiler's errors go to stderr).
 * @param {string[]} [names]
 * @param {{ log?: (line: string) => void }} [options]
 */
export function buildIfStale(names = PACKAGES, options = {}) {
  return withBuildLock(() => buildStaleLocked(names, options));
}

/**
 * `buildIfStale` for a caller that already holds the build lock (see pack.mjs).
 * @param {string[]} [names]
 * @param {{ log?: (line: string) => void }} [options]
 */
export function buildStaleLocked(names = PACKAGES, options = {}) {
  const log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  for (const name of names)
    if (!PACKAGES.includes(name)) throw new Error(`build-if-stale: no package ${name}`);
  /** @type {string[]} */
  const built = [];
  for (const name of withDependencies(names)) {
    if (isFresh(name)) continue;
    const started = Date.now();
    try {
      execFileSync(process.execPath, [BUILD_PACKAGE], {
        cwd: packageDir(name),
        stdio: ['ignore', 'inherit', 'inherit'],
      });
    } catch {
      throw new Error(`building @portcullis/${name} failed (the compiler's errors are above)`);
    }
    log(`built @portcullis/${name} (dist was missing or stale) in ${Date.now() - started} ms`);
    built.push(name);
  }
  return built;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.chdir(REPO);
  const check = process.argv[2] === '--check';
  const names = process.argv.slice(check ? 3 : 2);
  if (check) {
    const stale = (names.length > 0 ? names : PACKAGES).filter((name) => !isFresh(name));
    if (stale.length > 0) process.stdout.write(`${stale.join(' ')}\n`);
    process.exit(stale.length > 0 ? 1 : 0);
  }
  try {
    buildIfStale(names.length > 0 ? names : PACKAGES);
  } catch (error) {
    process.stderr.write(`build-if-stale: ${/** @type {Error} */ (error).message}\n`);
    process.exitCode = 1;
  }
}
