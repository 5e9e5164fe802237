// Builds the package in the current directory twice with tsc: ESM (dist/esm) and CommonJS
// (dist/cjs, marked with its own package.json), each with its own declarations so that both
// `import` and `require` users get types that match what they load.
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
rmSync('dist', { recursive: true, force: true });
const run = (...args) => execFileSync(process.execPath, [tsc, ...args], { stdio: 'inherit' });
run('-p', 'tsconfig.build.json');
run(
  '-p',
  'tsconfig.build.json',
  '--outDir',
  'dist/cjs',
  '--module',
  'commonjs',
  '--moduleResolution',
  'node10',
  '--verbatimModuleSyntax',
  'false',
);
mkdirSync('dist/cjs', { recursive: true });
writeFileSync('dist/cjs/package.json', '{ "type": "commonjs" }\n');
