// `npm start`: runs every snippet (node <file>, one after another), shows what each printed, and
// exits 1 when one failed. The snippets load the packages' dist: `prestart` builds what is stale.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PACKAGES } from '../../scripts/workspaces.mjs';

/** A snippet file: `<package>-<topic>.mjs`, shown in packages/<package>/README.md. */
export const SNIPPET = new RegExp(`^(${PACKAGES.join('|')})-[a-z0-9-]+\\.mjs$`);

/** This directory. */
export const DIR = fileURLToPath(new URL('.', import.meta.url));

/** @returns {string[]} the snippet files, sorted */
export function snippetFiles() {
  return readdirSync(DIR)
    .filter((file) => SNIPPET.test(file))
    .sort();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const failed = [];
  for (const file of snippetFiles()) {
    process.stdout.write(`\n── ${file}\n`);
    const { status, signal } = spawnSync(process.execPath, [file], { cwd: DIR, stdio: 'inherit' });
    if (status !== 0) failed.push(`${file} (${signal ?? `exit ${status}`})`);
  }
  process.stdout.write(
    failed.length === 0
      ? `\nall ${snippetFiles().length} snippets ran\n`
      : `\nfailed: ${failed.join(', ')}\n`,
  );
  process.exitCode = failed.length === 0 ? 0 : 1;
}
