// WebSocket handshake benchmark: upgrades per second and server CPU per upgrade of a bare `ws`
// server against the same server with `guardUpgrade` (loopback client; remote client behind a
// trusted proxy), with a hand-written minimal check, with refused upgrades (429 during a lockout,
// 401 for wrong credentials), and of a first-frame protocol without and with `createConnectAuth`.
// Each server runs in its own child process (bench/ws/servers.mjs) so its CPU time can be
// measured alone; this process is the load generator: N clients on 127.0.0.1 that each connect,
// wait for the 101 (first-frame variants: send the hello and wait for the ok), close and wait for
// the server's close, in a closed loop. The variants' runs are interleaved in short cycles in
// alternating order, with fresh server processes each round, as in bench/http. At the end the
// servers' `upgrade` listeners are also timed in isolation (listener.mjs). See bench/README.md.
//
//   npm run build && node bench/ws/run.mjs
//
// Environment: BENCH_WS_SECONDS (1) per run, BENCH_WS_SLICES (4 cycles per round),
// BENCH_WS_ROUNDS (3: fresh server processes each), BENCH_WS_WARMUP (1 s per server process),
// BENCH_WS_CLIENTS (16 concurrent clients), BENCH_WS_CLIENT (raw: a hand-framed TCP client,
// raw-client.mjs, light enough that the server sets the pace; ws: the `ws` client, which here
// takes a whole core before the server does), BENCH_WS_VARIANTS (bare,guard,guard-proxy,
// hand-proxy,refused-429,refused-401,frame,connect; also hand-401, connect-proxy, frame-weakmap), BENCH_WS_PIN
// (0 = no taskset pinning), BENCH_WS_MAX_OTHER (15: % of a core other programs may take during a
// run before it is repeated), BENCH_WS_RETRIES (2), BENCH_WS_PROF (a directory: the server
// children run with --cpu-prof and write their profiles there), BENCH_WS_LISTENER_N (50 000) and
// BENCH_WS_LISTENER_ROUNDS (7; 0 skips the isolated listener timing), BENCH_JSON (write the report
// there), BENCH_CHARTS (directory of the chart ws.svg, default bench/charts; 0: no chart).
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';
import { writeChartFor } from '../chart.mjs';
import {
  cpuMicros,
  machineBusyMicros,
  median,
  pinSelf,
  request,
  startChild,
  stopChild,
} from '../lib/child.mjs';
import { measureListeners } from './listener.mjs';
import { rawHandshake } from './raw-client.mjs';
import { hello, LOCKED, OK_FRAME, REMOTE, TOKEN, WRONG } from './servers.mjs';

const SERVERS = fileURLToPath(new URL('./servers.mjs', import.meta.url));

const env = process.env;
const SECONDS = Number(env.BENCH_WS_SECONDS ?? 1);
const SLICES = Number(env.BENCH_WS_SLICES ?? 4);
const ROUNDS = Number(env.BENCH_WS_ROUNDS ?? 3);
const WARMUP = Number(env.BENCH_WS_WARMUP ?? 1);
const CLIENTS = Number(env.BENCH_WS_CLIENTS ?? 16);
const CLIENT = env.BENCH_WS_CLIENT ?? 'raw';
if (CLIENT !== 'ws' && CLIENT !== 'raw')
  throw new Error(`BENCH_WS_CLIENT: ws or raw, not ${CLIENT}`);
const ALL = [
  'bare',
  'guard',
  'guard-proxy',
  'hand-proxy',
  'refused-429',
  'refused-401',
  'hand-401',
  'frame',
  'connect',
  'connect-proxy',
  'frame-weakmap',
];
const OPTIONAL = ['hand-401', 'connect-proxy', 'frame-weakmap'];
const DEFAULT_VARIANTS = ALL.filter((v) => !OPTIONAL.includes(v));
const VARIANTS = (env.BENCH_WS_VARIANTS ?? DEFAULT_VARIANTS.join(',')).split(',');
const LISTENER_N = Number(env.BENCH_WS_LISTENER_N ?? 50_000);
const LISTENER_ROUNDS = Number(env.BENCH_WS_LISTENER_ROUNDS ?? 7);
for (const v of VARIANTS) if (!ALL.includes(v)) throw new Error(`BENCH_WS_VARIANTS: unknown ${v}`);
const PROF = env.BENCH_WS_PROF;
const MAX_OTHER = Number(env.BENCH_WS_MAX_OTHER ?? 15);
const RETRIES = Number(env.BENCH_WS_RETRIES ?? 2);
let PIN = false;

/**
 * What each variant's clients do and expect, what it is compared with (`twin`: the server that
 * does the same on the wire without Portcullis; its ratio is taken within the same cycle) and
 * whether it is Portcullis.
 */
const SPEC = {
  bare: {
    label: 'bare ws (handleUpgrade)',
    twin: 'bare',
    token: TOKEN,
    expect: 101,
    portcullis: false,
  },
  guard: {
    label: 'guardUpgrade, loopback client',
    twin: 'bare',
    token: TOKEN,
    expect: 101,
    portcullis: true,
  },
  'guard-proxy': {
    label: 'guardUpgrade, remote via trusted proxy',
    twin: 'bare',
    token: TOKEN,
    xff: REMOTE,
    expect: 101,
    portcullis: true,
  },
  'hand-proxy': {
    label: 'hand-written check, remote via proxy',
    twin: 'bare',
    token: TOKEN,
    xff: REMOTE,
    expect: 101,
    portcullis: false,
  },
  'refused-429': {
    label: 'guardUpgrade, locked out → 429',
    twin: 'bare',
    token: WRONG,
    xff: LOCKED,
    expect: 429,
    portcullis: true,
  },
  'refused-401': {
    label: 'guardUpgrade, wrong token → 401',
    twin: 'bare',
    token: WRONG,
    xff: REMOTE,
    expect: 401,
    portcullis: true,
  },
  'hand-401': {
    label: 'hand-written check, wrong token → 401',
    twin: 'bare',
    token: WRONG,
    xff: REMOTE,
    expect: 401,
    portcullis: false,
  },
  frame: {
    label: 'first-frame auth, no limiter',
    twin: 'frame',
    token: TOKEN,
    frame: true,
    expect: 101,
    portcullis: false,
  },
  connect: {
    label: 'createConnectAuth, loopback client',
    twin: 'frame',
    token: TOKEN,
    frame: true,
    expect: 101,
    portcullis: true,
  },
  'frame-weakmap': {
    label: 'first-frame, + a WeakMap entry per socket',
    twin: 'frame',
    token: TOKEN,
    frame: true,
    expect: 101,
    portcullis: false,
  },
  'connect-proxy': {
    label: 'createConnectAuth, remote via proxy',
    twin: 'frame',
    token: TOKEN,
    xff: REMOTE,
    frame: true,
    expect: 101,
    portcullis: true,
  },
};

/** The target: right credentials cost at most 5 % of the handshakes a bare server completes. */
const TARGET_PCT = 5;
const CASE_ACCEPTED = (x) => SPEC[x.variant].expect === 101;
/** What a refused upgrade is compared with: the accepted one of the same client and guard. */
const ACCEPTED_TWIN = { 'refused-429': 'guard-proxy', 'refused-401': 'guard-proxy' };

// ---------------------------------------------------------------------------------------------
// Load generator

const noop = () => {};

/** One handshake as the variant's client does it; resolves when it is over, rejects on a surprise. */
function handshake(url, spec) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url}/?token=${spec.token}`, {
      perMessageDeflate: false,
      headers: spec.xff ? { 'X-Forwarded-For': spec.xff } : undefined,
    });
    const fail = (why) => {
      clearTimeout(timer);
      ws.terminate();
      reject(new Error(`${url}: ${why}`));
    };
    const timer = setTimeout(() => fail('no answer within 10 s'), 10_000);
    ws.on('error', (error) => fail(error.message));
    ws.on('unexpected-response', (req, res) => {
      if (res.statusCode !== spec.expect) {
        req.destroy();
        fail(`status ${res.statusCode}, expected ${spec.expect}`);
        return;
      }
      res.resume();
      res.once('end', () => {
        clearTimeout(timer);
        req.destroy();
        resolve();
      });
      res.once('error', noop);
    });
    if (spec.expect !== 101) return;
    ws.on('close', () => {
      clearTimeout(timer);
      resolve();
    });
    if (spec.frame) {
      ws.on('open', () => ws.send(hello(spec.token)));
      ws.on('message', (data) => {
        if (String(data) === OK_FRAME) ws.close(1000);
        else fail(`unexpected frame ${String(data).slice(0, 80)}`);
      });
    } else ws.on('open', () => ws.close(1000));
  });
}

/**
 * One measured run: CLIENTS clients in a closed loop for `seconds`; a client starts no new
 * handshake after the deadline and the run ends when the last one is over. Server CPU is read
 * over IPC before and after.
 */
async function measure(server, spec, seconds) {
  const before = await request(server.child, 'cpu', 'cpu');
  const self0 = cpuMicros(process.cpuUsage());
  const machine0 = machineBusyMicros();
  const t0 = performance.now();
  const deadline = t0 + seconds * 1000;
  let done = 0;
  const once =
    CLIENT === 'raw'
      ? rawHandshake(server.port, spec, { hello, okFrame: OK_FRAME })
      : () => handshake(server.url, spec);
  async function client() {
    while (performance.now() < deadline) {
      await once();
      done++;
    }
  }
  await Promise.all(Array.from({ length: CLIENTS }, client));
  const wallUs = (performance.now() - t0) * 1000;
  const machine1 = machineBusyMicros();
  const self = cpuMicros(process.cpuUsage()) - self0;
  const after = await request(server.child, 'cpu', 'cpu');
  const cpuUs = cpuMicros(after) - cpuMicros(before);
  return {
    ups: done / (wallUs / 1e6),
    cpuUsPerUpgrade: cpuUs / done,
    // User time alone: what the server's JavaScript (Portcullis included) and V8 spent, without
    // the kernel's TCP work, part of which is charged to whichever process the softirq interrupts.
    userUsPerUpgrade: (after.user - before.user) / done,
    // Server CPU per wall second: near 100 % means the server, not the load generator, is the limit.
    serverCpuPct: (cpuUs / wallUs) * 100,
    clientCpuPct: (self / wallUs) * 100,
    // Everything else the machine did meanwhile (other programs, and interrupts), in % of one core.
    otherCpuPct:
      machine0 === undefined
        ? undefined
        : Math.max(0, ((machine1 - machine0 - cpuUs - self) / wallUs) * 100),
  };
}

/** A run disturbed by other programs (over BENCH_WS_MAX_OTHER %) is repeated; the quietest is kept. */
async function load(server, spec, seconds) {
  let best;
  for (let attempt = 0; attempt <= RETRIES; attempt++) {
    const run = await measure(server, spec, seconds);
    run.attempts = attempt + 1;
    if (best === undefined || (run.otherCpuPct ?? 0) < (best.otherCpuPct ?? 0)) best = run;
    if ((run.otherCpuPct ?? 0) <= MAX_OTHER) break;
  }
  return best;
}

async function start(variant) {
  const execArgv = PROF ? ['--cpu-prof', '--cpu-prof-dir', PROF] : [];
  const child = startChild(SERVERS, [variant], { pin: PIN, execArgv });
  const port = await request(child, undefined, 'port');
  return { child, port, url: `ws://127.0.0.1:${port}` };
}

/**
 * One round: a fresh server process per variant, each warmed up, then SLICES cycles in which
 * every variant gets one run of SECONDS, forward on even cycles and backward on odd ones.
 */
async function oneRound(round) {
  const servers = {};
  try {
    for (const variant of VARIANTS) servers[variant] = await start(variant);
    if (WARMUP > 0)
      for (const variant of VARIANTS) await measure(servers[variant], SPEC[variant], WARMUP);
    const slices = Object.fromEntries(VARIANTS.map((v) => [v, []]));
    for (let cycle = 0; cycle < SLICES; cycle++) {
      const order = (round * SLICES + cycle) % 2 ? [...VARIANTS].reverse() : VARIANTS;
      for (const variant of order) {
        const run = await load(servers[variant], SPEC[variant], SECONDS);
        slices[variant].push(run);
        process.stderr.write(
          `  round ${round + 1}/${ROUNDS} cycle ${cycle + 1}/${SLICES} ${variant.padEnd(13)} ${run.ups.toFixed(0).padStart(6)} upgrades/s ${run.cpuUsPerUpgrade.toFixed(1).padStart(6)} µs CPU/upgrade (user ${run.userUsPerUpgrade.toFixed(1)}; server ${run.serverCpuPct.toFixed(0)} %, client ${run.clientCpuPct.toFixed(0)} %, others ${run.otherCpuPct?.toFixed(0) ?? '?'} %${run.attempts > 1 ? `, attempt ${run.attempts}` : ''})\n`,
        );
      }
    }
    return slices;
  } finally {
    for (const server of Object.values(servers)) await stopChild(server.child);
  }
}

// ---------------------------------------------------------------------------------------------
// Summary

/**
 * `variant`'s figure over `reference`'s in the same cycle; a round's ratio is the median of its
 * cycles, the reported ratio the median of the rounds' ratios. Undefined if either did not run.
 */
function ratio(rounds, variant, reference, field) {
  if (!VARIANTS.includes(variant) || !VARIANTS.includes(reference)) return undefined;
  return median(
    rounds.map((slices) =>
      median(slices[variant].map((x, i) => x[field] / slices[reference][i][field])),
    ),
  );
}

function summarise(rounds) {
  return VARIANTS.map((variant) => {
    const spec = SPEC[variant];
    const xs = rounds.flatMap((slices) => slices[variant]);
    const upsRatio = ratio(rounds, variant, spec.twin, 'ups');
    const accepted = ACCEPTED_TWIN[variant];
    return {
      variant,
      name: spec.label,
      twin: spec.twin,
      isPortcullis: spec.portcullis,
      status: spec.expect,
      ups: median(xs.map((x) => x.ups)),
      cpuUsPerUpgrade: median(xs.map((x) => x.cpuUsPerUpgrade)),
      serverCpuPct: median(xs.map((x) => x.serverCpuPct)),
      clientCpuPct: median(xs.map((x) => x.clientCpuPct)),
      otherCpuPct:
        xs[0].otherCpuPct === undefined ? undefined : median(xs.map((x) => x.otherCpuPct)),
      upsRatio,
      cpuRatio: ratio(rounds, variant, spec.twin, 'cpuUsPerUpgrade'),
      userUsPerUpgrade: median(xs.map((x) => x.userUsPerUpgrade)),
      userRatio: ratio(rounds, variant, spec.twin, 'userUsPerUpgrade'),
      costPct: upsRatio === undefined ? undefined : (1 - upsRatio) * 100,
      acceptedTwin: accepted,
      cpuRatioToAccepted: accepted && ratio(rounds, variant, accepted, 'cpuUsPerUpgrade'),
      // One cost % per round: how far the rounds scatter.
      roundCostPct: VARIANTS.includes(spec.twin)
        ? rounds.map((slices) =>
            Number(
              (
                (1 - median(slices[variant].map((x, i) => x.ups / slices[spec.twin][i].ups))) *
                100
              ).toFixed(1),
            ),
          )
        : undefined,
      runs: xs.map((x) => ({
        ups: Math.round(x.ups),
        cpuUsPerUpgrade: Number(x.cpuUsPerUpgrade.toFixed(2)),
        userUsPerUpgrade: Number(x.userUsPerUpgrade.toFixed(2)),
        serverCpuPct: Math.round(x.serverCpuPct),
        clientCpuPct: Math.round(x.clientCpuPct),
        otherCpuPct: x.otherCpuPct === undefined ? null : Math.round(x.otherCpuPct),
        attempts: x.attempts,
      })),
    };
  });
}

function printTable(rows) {
  const fmt = (x, d = 2) => (x === undefined ? '—' : x.toFixed(d));
  const head = [
    'server',
    'answer',
    'vs',
    'upgrades/s',
    'ratio',
    'cost %',
    'CPU µs/upgrade',
    'ratio',
    'user µs',
    'ratio',
    'srv CPU',
    'client',
    'others',
  ];
  const table = rows.map((r) => [
    r.name,
    String(r.status),
    r.variant === r.twin ? '—' : r.twin,
    r.ups.toFixed(0),
    r.variant === r.twin ? '—' : fmt(r.upsRatio, 3),
    r.variant === r.twin ? '—' : fmt(r.costPct, 1),
    fmt(r.cpuUsPerUpgrade, 1),
    r.variant === r.twin ? '—' : fmt(r.cpuRatio, 3),
    fmt(r.userUsPerUpgrade, 1),
    r.variant === r.twin ? '—' : fmt(r.userRatio, 3),
    `${r.serverCpuPct.toFixed(0)} %`,
    `${r.clientCpuPct.toFixed(0)} %`,
    r.otherCpuPct === undefined ? '—' : `${r.otherCpuPct.toFixed(0)} %`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...table.map((row) => row[i].length)));
  const left = (i) => i < 3;
  const line = (cells) =>
    `| ${cells.map((c, i) => (left(i) ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ')} |`;
  console.log(line(head));
  console.log(
    `|${widths.map((w, i) => `${left(i) ? ':' : '-'}${'-'.repeat(w)}${left(i) ? '-' : ':'}`).join('|')}|`,
  );
  for (const row of table) console.log(line(row));
}

/** The chart writer's shape (bench/chart.mjs): one entry per figure, one row per contender. */
function scenarios(rows, isolated) {
  const measured = (pick) => rows.filter(pick);
  const row = (r, value) => ({ contender: r.name, value, isPortcullis: r.isPortcullis });
  const out = [];
  const vsBare = measured(
    (r) => r.twin === 'bare' && r.variant !== 'bare' && r.cpuRatio !== undefined,
  );
  if (vsBare.length > 0)
    out.push({
      name: 'server CPU per upgrade, × bare ws',
      unit: '×',
      higherIsBetter: false,
      rows: vsBare.map((r) => row(r, Number(r.cpuRatio.toFixed(3)))),
    });
  const accepted = measured(
    (r) => r.twin === 'bare' && r.variant !== 'bare' && r.status === 101 && r.costPct !== undefined,
  );
  if (accepted.length > 0)
    out.push({
      name: 'upgrades per second lost against bare ws (right credentials)',
      unit: '%',
      higherIsBetter: false,
      rows: accepted.map((r) => row(r, Number(r.costPct.toFixed(1)))),
    });
  const vsFrame = measured(
    (r) => r.twin === 'frame' && r.variant !== 'frame' && r.cpuRatio !== undefined,
  );
  if (vsFrame.length > 0)
    out.push({
      name: 'first-frame auth: server CPU per connection, × the same protocol without a limiter',
      unit: '×',
      higherIsBetter: false,
      rows: vsFrame.map((r) => row(r, Number(r.cpuRatio.toFixed(3)))),
    });
  out.push({
    name: 'server CPU per upgrade',
    unit: 'µs',
    higherIsBetter: false,
    rows: rows.map((r) => row(r, Number(r.cpuUsPerUpgrade.toFixed(1)))),
  });
  if (isolated.length > 0)
    out.push({
      name: 'the listener alone: µs added over bare ws (first-frame: over no limiter), isolated, no I/O',
      unit: 'µs',
      higherIsBetter: false,
      rows: isolated
        .filter((x) => x.variant !== x.twin)
        .map((x) => ({
          contender: SPEC[x.variant].label,
          value: Number((x.addedNs / 1000).toFixed(2)),
          isPortcullis: SPEC[x.variant].portcullis,
        })),
    });
  const refused = measured((r) => r.cpuRatioToAccepted !== undefined);
  if (refused.length > 0)
    out.push({
      name: 'refused upgrade: server CPU, × an accepted one (guardUpgrade, remote via proxy)',
      unit: '×',
      higherIsBetter: false,
      rows: refused.map((r) => row(r, Number(r.cpuRatioToAccepted.toFixed(3)))),
    });
  return out;
}

/**
 * The servers' `upgrade` listeners timed in isolation (listener.mjs), and what they add as a share
 * of a bare upgrade's server CPU measured end to end above.
 */
async function isolatedListeners(rows) {
  const isolated = await measureListeners({ n: LISTENER_N, rounds: LISTENER_ROUNDS });
  console.log(
    `\nThe upgrade listener alone (listener.mjs: ${LISTENER_N} calls per sample, median of ${LISTENER_ROUNDS}; fresh request and socket per call, handleUpgrade a no-op):`,
  );
  for (const x of isolated) {
    const twin = rows.find((r) => r.variant === x.twin);
    x.sharePct = twin === undefined ? undefined : (x.addedNs / 1000 / twin.cpuUsPerUpgrade) * 100;
    console.log(
      `  ${SPEC[x.variant].label.padEnd(40)} ${(x.nsPerCall / 1000).toFixed(2).padStart(6)} µs per call, ${(x.addedNs / 1000).toFixed(2).padStart(5)} µs over ${x.twin}` +
        (x.sharePct === undefined || x.variant === x.twin
          ? ''
          : ` = ${x.sharePct.toFixed(1)} % of a ${x.twin} handshake's server CPU (${rows.find((r) => r.variant === x.twin).cpuUsPerUpgrade.toFixed(1)} µs)`),
    );
  }
  return isolated;
}

/** The chart (bench/chart.mjs): the ratio scenarios and the isolated listener, after the JSON report. */
function chart(rows, isolated) {
  const drawn = scenarios(rows, isolated).filter((s) => s.unit === '×' || s.name.includes('alone'));
  if (drawn.length === 0) return;
  writeChartFor('ws', drawn, {
    title: 'bench/ws: server CPU per WebSocket handshake, relative',
    subtitle:
      'Server CPU time per upgrade (first-frame rows: per connection) divided by that of the server ' +
      'named in each group, in the same cycle (dashed line: 1×); 1.10× spends 10 % more. Median of ' +
      `${SLICES} cycles of ${SECONDS} s, then of ${ROUNDS} rounds; ${CLIENTS} ${CLIENT} clients. The µs group: ` +
      'what each upgrade listener adds to the bare one, timed alone without I/O. ' +
      `Node ${process.version}, ${new Date().toISOString().slice(0, 10)}.`,
  });
}

async function main() {
  PIN = pinSelf(env.BENCH_WS_PIN === '0');
  const perRound = VARIANTS.length * (2 + WARMUP + SLICES * (1 + SECONDS * (1 + RETRIES)));
  const budgetS = ROUNDS * perRound * 2 + 60;
  // Everything is bounded: a stuck server or client ends the run with an error.
  const guard = setTimeout(() => {
    console.error(`bench/ws: no result after ${budgetS} s, giving up`);
    process.exit(1);
  }, budgetS * 1000);
  guard.unref();

  const load1 = loadavg()[0];
  console.log(
    `WebSocket handshake benchmark: ${ROUNDS} rounds, each with fresh server processes (${WARMUP} s of warm-up) ` +
      `and ${SLICES} cycles of one ${SECONDS} s run per server; ${CLIENTS} ${CLIENT === 'raw' ? 'raw-socket' : 'ws'} clients in a closed loop ` +
      `(connect, open, close), 127.0.0.1; ${PIN ? 'server pinned to core 1, load generator to core 0' : 'no CPU pinning'}; ` +
      `Node ${process.version}; load ${load1.toFixed(2)}`,
  );
  const quietS = VARIANTS.length * ROUNDS * (1 + WARMUP + SLICES * (0.2 + SECONDS));
  console.log(
    `(about ${Math.ceil(quietS / 60)} min; a run during which other programs take over ${MAX_OTHER} % of a core is repeated, at most ${RETRIES} times)`,
  );
  const rounds = [];
  for (let round = 0; round < ROUNDS; round++) rounds.push(await oneRound(round));
  const rows = summarise(rounds);

  console.log('');
  printTable(rows);
  console.log(
    '\nratio: against the server named under "vs" in the same cycle (bare ws for the handshake variants,' +
      "\nthe first-frame protocol without a limiter for createConnectAuth); median of each round's cycles," +
      '\nthen median over rounds. upgrades/s ratio < 1 is slower; CPU ratio > 1 spends more server CPU per' +
      '\nupgrade. cost % = 1 − upgrades/s ratio. A refused upgrade counts as one upgrade (answered 401/429).' +
      '\nsrv CPU / client: CPU time per wall second of the server / the load generator; others: CPU taken' +
      '\nmeanwhile by everything else (% of one core, median).',
  );
  const isolated = LISTENER_ROUNDS > 0 ? await isolatedListeners(rows) : [];
  const verdicts = [];
  for (const r of rows.filter(
    (r) => r.isPortcullis && r.status === 101 && r.costPct !== undefined,
  )) {
    const met = r.costPct <= TARGET_PCT;
    verdicts.push({ variant: r.variant, targetPct: TARGET_PCT, costPct: r.costPct, met });
    console.log(
      `target ${r.variant}: ≤ ${TARGET_PCT} % throughput cost with right credentials; ${r.costPct.toFixed(1)} % (CPU ${r.cpuRatio.toFixed(3)}× ${r.twin}) → ${met ? 'met' : 'NOT met'}`,
    );
  }
  for (const r of rows.filter((r) => r.cpuRatioToAccepted !== undefined)) {
    const met = r.cpuRatioToAccepted < 1;
    verdicts.push({
      variant: r.variant,
      target: `refused cheaper than accepted (${r.acceptedTwin})`,
      cpuRatioToAccepted: r.cpuRatioToAccepted,
      met,
    });
    console.log(
      `target ${r.variant}: a refused upgrade cheaper than an accepted one; CPU ${r.cpuRatioToAccepted.toFixed(3)}× ${r.acceptedTwin} → ${met ? 'met' : 'NOT met'}`,
    );
  }
  for (const x of isolated.filter((x) => SPEC[x.variant].portcullis && CASE_ACCEPTED(x))) {
    if (x.sharePct === undefined) continue;
    const met = x.sharePct <= TARGET_PCT;
    verdicts.push({
      variant: x.variant,
      target: `listener alone ≤ ${TARGET_PCT} % of a ${x.twin} handshake's server CPU`,
      sharePct: x.sharePct,
      met,
    });
    console.log(
      `target ${x.variant} (isolated): adds ${(x.addedNs / 1000).toFixed(2)} µs = ${x.sharePct.toFixed(1)} % of a ${x.twin} handshake's server CPU → ${met ? 'met' : 'NOT met'}`,
    );
  }
  if (env.BENCH_JSON) {
    const report = {
      date: new Date().toISOString(),
      node: process.version,
      loadavg1: load1,
      loadavg1End: loadavg()[0],
      seconds: SECONDS,
      slices: SLICES,
      rounds: ROUNDS,
      warmupSeconds: WARMUP,
      clients: CLIENTS,
      client: CLIENT,
      pinned: PIN,
      maxOtherCpuPct: MAX_OTHER,
      retries: RETRIES,
      scenarios: scenarios(rows, isolated),
      isolated,
      rows,
      targets: verdicts,
    };
    writeFileSync(env.BENCH_JSON, `${JSON.stringify(report, null, 2)}\n`);
  }
  chart(rows, isolated);
  clearTimeout(guard);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
