// CI's guard against copied code: `duplicates` (the tool library's pair finder) over packages/,
// keeping the pairs where neither side is a test or a test helper. Each pair of files it finds
// must be listed in scripts/duplicates-allowed.txt (the ones reviewed and kept on purpose); a new
// pair fails the run, and so does an allowed pair that is gone (the list must shrink with the
// code). `--write` rewrites the list from what is found now.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const ALLOWED = fileURLToPath(new URL('./duplicates-allowed.txt', import.meta.url));
const TEST = /\.test\.ts$|\.test-d\.ts$|test-util|\/test\/|\/testing\/|store-conformance/;

/** @returns {string[]} the sorted `a ~ b` file pairs of non-test source that share lines */
function pairs() {
  const run = spawnSync('duplicates', ['--repo', 'packages', '--most', '200', '--seconds', '300'], {
    cwd: REPO,
    encoding: 'utf8',
  });
  if (run.error !== undefined || run.status !== 0) {
    console.error(
      `check-duplicates: could not run \`duplicates\` (${run.error?.message ?? `exit ${run.status}`}); it comes with the tool library and CI needs it`,
    );
    process.exit(2);
  }
  const lines = run.stdout.split('\n');
  const incomplete = lines.filter((l) => l.startsWith('incomplete:'));
  if (incomplete.length > 0 || lines.some((l) => /^\(\+\d+ more pairs\)/.test(l))) {
    console.error(`check-duplicates: the listing is not whole:\n${incomplete.join('\n')}`);
    process.exit(2);
  }
  const found = new Set();
  for (const line of lines) {
    const m = /^D\d+\s+(\S+?):\d+-\d+\s+~\s+(\S+?):\d+-\d+/.exec(line);
    if (m === null) continue;
    const [a, b] = [m[1], m[2]];
    if (TEST.test(`/${a}`) || TEST.test(`/${b}`)) continue;
    found.add([a, b].sort().join(' ~ '));
  }
  return [...found].sort();
}

const now = pairs();
if (process.argv.includes('--write')) {
  writeFileSync(ALLOWED, `${now.join('\n')}\n`);
  console.log(`check-duplicates: ${now.length} pairs written to scripts/duplicates-allowed.txt`);
  process.exit(0);
}
const allowed = readFileSync(ALLOWED, 'utf8')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l !== '' && !l.startsWith('#'));
const added = now.filter((p) => !allowed.includes(p));
const gone = allowed.filter((p) => !now.includes(p));
for (const p of added) console.error(`check-duplicates: new copied code: ${p}`);
for (const p of gone)
  console.error(`check-duplicates: no longer copied, drop it from the list: ${p}`);
console.log(`check-duplicates: ${now.length} pairs in non-test source (${allowed.length} allowed)`);
process.exit(added.length === 0 && gone.length === 0 ? 0 : 1);
