// The prepack step of every publishable package (npm runs it for `npm pack` and `npm publish`,
// dry runs included, in the package's directory): copies the repository's LICENSE next to the
// package.json, because npm packs only files inside the package directory. The copies are
// ignored by git; the root LICENSE is the only one anyone edits. Also refuses to pack a package
// whose publishing fields have drifted from scripts/package-manifest.mjs.
import { copyFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { differences } from './package-manifest.mjs';
import { REPO } from './build-stamp.mjs';

const name = basename(process.cwd());
const drift = differences(name);
if (drift.length > 0) {
  process.stderr.write(
    `prepack: packages/${name}/package.json differs from scripts/package-manifest.mjs in ${drift.join(', ')}; run \`node scripts/package-manifest.mjs\`\n`,
  );
  process.exit(1);
}
copyFileSync(join(REPO, 'LICENSE'), 'LICENSE');
