// Usage: node scripts/pack.mjs [--json] [<destination>] (`npm run tarballs`) — builds what is stale
// and packs the seven publishable packages with `npm pack` into <destination> (default
// ./tarballs), under the build lock so no build rewrites a dist while it is packed. Prints the
// tarballs' paths, or npm's JSON report with --json. Until the packages are on the registry, this
// is how to use them elsewhere: `npm install /path/to/tarballs/portcullis-express-1.0.0.tgz …`.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { buildStaleLocked } from './build-if-stale.mjs';
import { PACKAGES, REPO, withBuildLock } from './build-stamp.mjs';

const json = process.argv.includes('--json');
const destination = resolve(process.argv.slice(2).find((a) => a !== '--json') ?? 'tarballs');
mkdirSync(destination, { recursive: true });

try {
  const report = withBuildLock(() => {
    buildStaleLocked(PACKAGES);
    return execFileSync(
      'npm',
      [
        'pack',
        '--json',
        '--pack-destination',
        destination,
        ...PACKAGES.flatMap((p) => ['--workspace', `packages/${p}`]),
      ],
      { cwd: REPO, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 32 << 20 },
    );
  });
  if (json) process.stdout.write(report);
  else
    for (const { filename } of JSON.parse(report))
      process.stdout.write(`${join(destination, filename)}\n`);
} catch (error) {
  process.stderr.write(`pack: ${/** @type {Error} */ (error).message}\n`);
  process.exitCode = 1;
}
