// Usage: node build-if-stale.mjs <package>… — builds packages/<package> (in the order given) when
// its dist is missing or older than its sources. Multi-process tests run it under the build lock
// (/tmp/portcullis-build.lock), so no two test files build the same package at once.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('..', import.meta.url));

/** @param {string} dir @returns {number} */
function newest(dir) {
  let t = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) t = Math.max(t, newest(path));
    else if (!entry.name.endsWith('.test.ts')) t = Math.max(t, statSync(path).mtimeMs);
  }
  return t;
}

for (const name of process.argv.slice(2)) {
  const pkg = join(repo, 'packages', name);
  const sources = newest(join(pkg, 'src'));
  const fresh = ['esm', 'cjs']
    .map((format) => join(pkg, 'dist', format, 'index.js'))
    .every((out) => existsSync(out) && statSync(out).mtimeMs >= sources);
  if (fresh) continue;
  process.stderr.write(`building @portcullis/${name} for the server processes\n`);
  execFileSync(process.execPath, [join(repo, 'scripts', 'build-package.mjs')], {
    cwd: pkg,
    stdio: 'inherit',
  });
}
