// `npm run bench`: every benchmark, one after another, each in its own Node process.
// Builds nothing: run `npm run build` first (the benchmarks import the packages' dist).
// BENCH_* variables pass through to every benchmark (see bench/README.md). Each writes its chart
// to bench/charts/<name>.svg unless BENCH_CHARTS names another directory (or is 0: no charts).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const benches = [
  { name: 'core', script: join(here, 'core/run.mjs'), node: ['--expose-gc'] },
  { name: 'core-login', script: join(here, 'core/login.mjs'), node: ['--expose-gc'] },
  { name: 'http', script: join(here, 'http/run.mjs'), node: [] },
  { name: 'ws', script: join(here, 'ws/run.mjs'), node: [] },
  { name: 'redis', script: join(here, 'redis/run.mjs'), node: [], optional: true },
  { name: 'redis-login', script: join(here, 'redis/login-commands.mjs'), node: [], optional: true },
];

/** Where every benchmark writes its SVG chart (bench/chart.mjs); `0` writes none. */
const chartsDir = process.env.BENCH_CHARTS || join(here, 'charts');

/** BENCH_JSON=out.json gives each benchmark its own file: out.core.json, out.http.json, … */
function jsonFor(name) {
  const path = process.env.BENCH_JSON;
  if (!path) return {};
  const dot = path.lastIndexOf('.');
  const slash = path.lastIndexOf('/');
  return {
    BENCH_JSON:
      dot > slash + 1 ? `${path.slice(0, dot)}.${name}${path.slice(dot)}` : `${path}.${name}`,
  };
}

function run({ name, script, node }) {
  return new Promise((resolve) => {
    const env = { ...process.env, BENCH_CHARTS: chartsDir, ...jsonFor(name) };
    const child = spawn(process.execPath, [...node, script], { stdio: 'inherit', env });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

console.log(
  `Portcullis benchmarks — Node ${process.version}, load ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}\n` +
    'This builds nothing: `npm run build` must have run (the benchmarks load each package from dist).',
);
const bench = Object.keys(process.env)
  .filter((k) => k.startsWith('BENCH_'))
  .map((k) => `${k}=${process.env[k]}`);
if (bench.length > 0) console.log(`passing through: ${bench.join(' ')}`);
console.log(
  chartsDir === '0' ? 'charts: none (BENCH_CHARTS=0)' : `charts: ${chartsDir}/<name>.svg`,
);

let failed = 0;
for (const b of benches) {
  if (!existsSync(b.script)) {
    if (b.optional) console.log(`\n== ${b.name}: ${b.script} not present, skipped`);
    else failed++;
    continue;
  }
  const json = jsonFor(b.name).BENCH_JSON;
  console.log(
    `\n== ${b.name}: node ${[...b.node, join('bench', relative(here, b.script))].join(' ')}${json ? ` (JSON: ${json})` : ''}\n`,
  );
  const code = await run(b);
  if (code !== 0) {
    console.error(`== ${b.name} failed (exit ${code})`);
    failed++;
  }
}
process.exit(failed > 0 ? 1 : 0);
