// Builds the package in the current directory twice with tsc: ESM (dist/esm) and CommonJS
// (dist/cjs, marked with its own package.json), each with its own declarations so that both
// `import` and `require` users get types that match what they load. Then records the stamp of
// the inputs it built from (build-stamp.mjs), which is how the test setup knows dist is current.
// Declarations are emitted with --stripInternal: a member marked `@internal` (MemoryStore's
// failureTable(), sibling()) is for the packages' own code and never part of the published types.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename } from 'node:path';
import { clearStamp, PACKAGES, writeStamp } from './build-stamp.mjs';

const name = basename(process.cwd());
const stamped = PACKAGES.includes(name);
if (stamped) clearStamp(name);
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
rmSync('dist', { recursive: true, force: true });
const run = (...args) => {
  try {
    execFileSync(process.execPath, [tsc, ...args], { stdio: 'inherit' });
  } catch {
    process.exit(1); // tsc has printed its errors
  }
};
run('-p', 'tsconfig.build.json', '--stripInternal');
// CommonJS is built only for the entry points that offer `require` (the compiler follows their
// imports): an ESM-only entry point (core's ./testing, which imports vitest) or the CLI's ESM
// binary would otherwise leave CommonJS files in the tarball that nothing can load.
const manifest = JSON.parse(readFileSync('package.json', 'utf8'));
const entries = Object.values(manifest.exports).filter((e) => typeof e === 'object');
const files = entries
  .filter((e) => e.require)
  .map((e) => {
    if (typeof e.source !== 'string')
      throw new Error('an entry point offering require has no source');
    return `.${e.source}`;
  });
const cjsConfig = 'dist/tsconfig.cjs.json';
writeFileSync(cjsConfig, JSON.stringify({ extends: '../tsconfig.build.json', include: [], files }));
run(
  '-p',
  cjsConfig,
  '--stripInternal',
  '--outDir',
  'dist/cjs',
  '--module',
  'commonjs',
  '--moduleResolution',
  'node10',
  '--verbatimModuleSyntax',
  'false',
);
rmSync('dist/tsconfig.cjs.json', { force: true });
mkdirSync('dist/cjs', { recursive: true });
writeFileSync('dist/cjs/package.json', '{ "type": "commonjs" }\n');
if (stamped) writeStamp(name);
