// Usage: node scripts/package-manifest.mjs [--check] — the one rule for what every publishable
// package's package.json says about publishing: where the project lives (repository with its
// directory, homepage, bugs), the license, the Node versions (engines), the prepack step that puts
// the root LICENSE into the package, and what the tarball holds (`files`). Without --check it
// writes those fields into packages/*/package.json; with --check it exits 1 naming every package
// whose fields differ (CI runs it in `npm run lint`). Versions and keywords stay per package.
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PACKAGES, packageDir } from './build-stamp.mjs';

export const REPOSITORY = 'https://github.com/portcullis/portcullis';

/**
 * What a tarball holds: the build (dist/, ESM and CommonJS with declarations and declaration
 * maps), the TypeScript sources those maps point at, and the changelog. npm adds package.json,
 * README.md and LICENSE by itself. Nothing that exists for tests ships, wherever it sits: test
 * files, type tests and the helpers tests import (`*.test-util.*`).
 */
export const FILES = [
  'dist',
  'src',
  'CHANGELOG.md',
  '!**/*.test.*',
  '!**/*.test-d.*',
  '!**/*.test-util.*',
];

/** The Node versions every package supports (the lowest is the one CI's `npm test` runs on). */
export const ENGINES = { node: '>=20.19.0' };

/** @param {string} name a directory under packages/ */
export function sharedFields(name) {
  return {
    license: 'MIT',
    repository: { type: 'git', url: `git+${REPOSITORY}.git`, directory: `packages/${name}` },
    homepage: `${REPOSITORY}/tree/main/packages/${name}#readme`,
    bugs: { url: `${REPOSITORY}/issues` },
    engines: ENGINES,
    files: FILES,
    // Scoped packages publish as restricted (paid, private) unless told otherwise.
    publishConfig: { access: 'public' },
  };
}

/** The scripts every package shares (prepack copies the root LICENSE next to package.json). */
export const SHARED_SCRIPTS = { prepack: 'node ../../scripts/prepack.mjs' };

// The order the fields are written in, after name, version, description and keywords.
const ORDER = ['license', 'repository', 'homepage', 'bugs'];

/** @param {Record<string, unknown>} manifest @param {string} name */
function apply(manifest, name) {
  const shared = sharedFields(name);
  const out = {};
  for (const key of ['name', 'version', 'description', 'keywords'])
    if (key in manifest) out[key] = manifest[key];
  for (const key of ORDER) out[key] = shared[key];
  for (const [key, value] of Object.entries(manifest)) if (!(key in out)) out[key] = value;
  out.engines = shared.engines;
  out.files = shared.files;
  out.publishConfig = shared.publishConfig;
  out.scripts = { ...SHARED_SCRIPTS, ...manifest.scripts };
  return out;
}

/** @param {string} name @returns {string[]} the fields of packages/<name>/package.json that differ */
export function differences(name) {
  const manifest = JSON.parse(readFileSync(join(packageDir(name), 'package.json'), 'utf8'));
  const wanted = apply(manifest, name);
  return Object.keys(wanted).filter(
    (key) => JSON.stringify(manifest[key]) !== JSON.stringify(wanted[key]),
  );
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes('--check');
  const wrong = [];
  for (const name of PACKAGES) {
    const path = join(packageDir(name), 'package.json');
    const manifest = JSON.parse(readFileSync(path, 'utf8'));
    const fields = differences(name);
    if (fields.length === 0) continue;
    if (check) wrong.push(`packages/${name}/package.json: ${fields.join(', ')}`);
    else writeFileSync(path, `${JSON.stringify(apply(manifest, name), null, 2)}\n`);
  }
  if (wrong.length > 0) {
    process.stderr.write(
      `These package.json fields differ from scripts/package-manifest.mjs (run \`node scripts/package-manifest.mjs\` to write them):\n${wrong.join('\n')}\n`,
    );
    process.exitCode = 1;
  }
}
