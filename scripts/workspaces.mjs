// The one list of the publishable packages: the directories the root package.json's `workspaces`
// names under packages/, each after the @portcullis packages it depends on. Everything that needs
// the list (the build stamps, vitest's aliases and projects, CI's per-Node runs, the snippets)
// reads it here, so a new package is one new directory.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('..', import.meta.url));

/** @param {string} dir @returns {Record<string, unknown>} */
const manifest = (dir) => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));

/** @returns {string[]} the package directories' names under each `packages/*` workspace glob */
function workspacePackages() {
  const globs = /** @type {string[]} */ (manifest(REPO).workspaces ?? []);
  /** @type {string[]} */
  const names = [];
  for (const glob of globs) {
    const match = /^packages\/\*$/.exec(glob);
    if (match === null) continue;
    const root = join(REPO, 'packages');
    for (const entry of readdirSync(root, { withFileTypes: true }).sort((a, b) =>
      a.name < b.name ? -1 : 1,
    ))
      if (entry.isDirectory() && existsSync(join(root, entry.name, 'package.json')))
        names.push(entry.name);
  }
  return names;
}

/** @param {string} name @returns {string[]} the @portcullis packages `name` depends on */
export function dependenciesOf(name) {
  const m = manifest(join(REPO, 'packages', name));
  const all = {
    .../** @type {object} */ (m.dependencies),
    .../** @type {object} */ (m.peerDependencies),
  };
  return Object.keys(all)
    .filter((d) => d.startsWith('@portcullis/'))
    .map((d) => d.slice('@portcullis/'.length));
}

/** @param {string[]} names @returns {string[]} `names`, each after the ones it depends on */
function dependencyOrder(names) {
  /** @type {string[]} */
  const out = [];
  const seen = new Set();
  const visit = (/** @type {string} */ name) => {
    if (seen.has(name) || !names.includes(name)) return;
    seen.add(name);
    for (const d of dependenciesOf(name)) visit(d);
    out.push(name);
  };
  // core first, then the rest in directory order: every package depends on core.
  for (const name of ['core', ...names]) visit(name);
  return out;
}

/** The publishable packages (directory names under packages/), each after its dependencies. */
export const PACKAGES = dependencyOrder(workspacePackages());

/** @returns {string[]} what the root tsconfig.json's references miss or name in excess */
function referenceProblems() {
  const tsconfig = JSON.parse(readFileSync(join(REPO, 'tsconfig.json'), 'utf8'));
  const named = new Set(
    tsconfig.references
      .map((/** @type {{ path: string }} */ r) => r.path)
      .filter((/** @type {string} */ p) => p.startsWith('packages/'))
      .map((/** @type {string} */ p) => p.slice('packages/'.length)),
  );
  return [
    ...PACKAGES.filter((p) => !named.has(p)).map(
      (p) => `tsconfig.json does not reference packages/${p}`,
    ),
    ...[...named]
      .filter((p) => !PACKAGES.includes(p))
      .map((p) => `tsconfig.json references packages/${p}, no workspace`),
  ];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [flag, ...rest] = process.argv.slice(2);
  if (flag === '--check') {
    // tsc -b needs its references written out: they are checked against the list instead.
    const problems = referenceProblems();
    for (const p of problems) console.error(`workspaces: ${p}`);
    process.exit(problems.length === 0 ? 0 : 1);
  } else if (flag === '--projects') {
    // `--projects [--except a,b]`: `--project <name>` for each, for vitest's CLI.
    const except = rest[0] === '--except' ? (rest[1] ?? '').split(',') : [];
    console.log(
      PACKAGES.filter((p) => !except.includes(p))
        .map((p) => `--project ${p}`)
        .join(' '),
    );
  } else console.log(PACKAGES.join(' '));
}
