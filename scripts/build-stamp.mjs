// What decides whether a package's dist is current: a SHA-256 of everything its build reads (its
// non-test sources, package.json, tsconfig files, the build script, the TypeScript version, and
// the stamps of the @portcullis packages it depends on). build-package.mjs records the stamp of
// what it built; build-if-stale.mjs rebuilds a package whose recorded stamp differs. Stamps live
// in node_modules/.cache/portcullis-build/ so they are never packed. Also the build lock, so two
// test files (or two test runs) never build or pack the same package at once.
import { createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('..', import.meta.url));
const CACHE = join(REPO, 'node_modules', '.cache', 'portcullis-build');

import { dependenciesOf, PACKAGES } from './workspaces.mjs';

export { dependenciesOf, PACKAGES };

/** @param {string} name */
export const packageDir = (name) => join(REPO, 'packages', name);

/** @param {string} dir @returns {string[]} every file under `dir`, sorted */
function files(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...files(path));
    else if (!/\.test(-d)?\.ts$/.test(entry.name)) out.push(path);
  }
  return out.sort();
}

/** @type {Map<string, string>} */
const memo = new Map();

/** @param {string} name @returns {string} the stamp of the current inputs of packages/<name> */
export function inputStamp(name) {
  const known = memo.get(name);
  if (known !== undefined) return known;
  const dir = packageDir(name);
  const hash = createHash('sha256');
  const add = (/** @type {string} */ path) => {
    hash.update(`${relative(REPO, path)}\0`);
    hash.update(readFileSync(path));
    hash.update('\0');
  };
  for (const path of files(join(dir, 'src'))) add(path);
  for (const file of readdirSync(dir).sort())
    if (file === 'package.json' || /^tsconfig.*\.json$/.test(file)) add(join(dir, file));
  add(join(REPO, 'tsconfig.base.json'));
  add(join(REPO, 'scripts', 'build-package.mjs'));
  const tsc = createRequire(import.meta.url).resolve('typescript/package.json');
  hash.update(`typescript ${JSON.parse(readFileSync(tsc, 'utf8')).version}\0`);
  for (const dependency of dependenciesOf(name))
    hash.update(`${dependency} ${inputStamp(dependency)}\0`);
  const stamp = hash.digest('hex');
  memo.set(name, stamp);
  return stamp;
}

/** @param {string} name */
const stampFile = (name) => join(CACHE, `${name}.sha256`);

/** Records that packages/<name>/dist was built from its current inputs. */
export function writeStamp(name) {
  mkdirSync(CACHE, { recursive: true });
  writeFileSync(stampFile(name), `${inputStamp(name)}\n`);
}

/** Forgets the stamp (before a build starts, so a failed build never looks current). */
export function clearStamp(name) {
  rmSync(stampFile(name), { force: true });
}

/** @param {string} name @returns {boolean} dist exists and was built from the current inputs */
export function isFresh(name) {
  const dist = join(packageDir(name), 'dist');
  if (!existsSync(join(dist, 'esm', 'index.js')) || !existsSync(join(dist, 'cjs', 'index.js')))
    return false;
  try {
    return readFileSync(stampFile(name), 'utf8').trim() === inputStamp(name);
  } catch {
    return false;
  }
}

/** @param {number} pid */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return /** @type {NodeJS.ErrnoException} */ (error).code === 'EPERM';
  }
}

/**
 * Runs `fn` holding the repository's build lock (a file created exclusively, holding the owner's
 * PID; a lock whose owner is gone is taken over). Waits up to `timeoutMs` for it.
 * @template T
 * @param {() => T} fn
 * @param {number} [timeoutMs]
 * @returns {T}
 */
export function withBuildLock(fn, timeoutMs = 300_000) {
  mkdirSync(CACHE, { recursive: true });
  const lock = join(CACHE, 'lock');
  const deadline = Date.now() + timeoutMs;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    try {
      const fd = openSync(lock, 'wx');
      writeFileSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (error) {
      if (/** @type {NodeJS.ErrnoException} */ (error).code !== 'EEXIST') throw error;
      let owner = Number.NaN;
      try {
        owner = Number(readFileSync(lock, 'utf8'));
      } catch {
        continue; // released meanwhile
      }
      // No PID yet means the owner is between creating and writing the file: wait.
      if (Number.isInteger(owner) && owner > 0 && !alive(owner)) {
        rmSync(lock, { force: true });
        continue;
      }
      if (Date.now() > deadline)
        throw new Error(`the build lock ${lock} is still held by pid ${owner}`);
      Atomics.wait(pause, 0, 0, 100);
    }
  }
  try {
    return fn();
  } finally {
    rmSync(lock, { force: true });
  }
}
