// HTTP benchmark: bare Express / Koa / Fastify / Hono (@hono/node-server) hello-world servers against the same apps with
// Portcullis `rateLimit`, with the framework's best-known peer limiter, with a minimal
// hand-written Map check that sets three headers, with Portcullis `headers: false`, with an
// empty middleware and with an empty middleware that sets two constant fields. Each server runs
// in its own child process so its CPU time can be measured alone; autocannon loads it from this
// process on 127.0.0.1; the variants' runs are interleaved in short cycles. See bench/README.md.
//
//   npm run build && node bench/http/run.mjs
//
// Environment: BENCH_HTTP_SECONDS (2) per run, BENCH_HTTP_SLICES (5 cycles per round),
// BENCH_HTTP_ROUNDS (3: fresh server processes each), BENCH_HTTP_WARMUP (1 s per server process), BENCH_HTTP_CONNECTIONS (50), BENCH_HTTP_FRAMEWORKS (express,koa,fastify,hono),
// BENCH_HTTP_VARIANTS (bare,portcullis,peer,map,quiet,noop,fields; also map-ietf and, Express only,
// map-ietf-prop), BENCH_HTTP_PIN (0 = no taskset
// pinning), BENCH_HTTP_MAX_OTHER (15: % of a core other programs may take during a run before it
// is repeated), BENCH_HTTP_RETRIES (2), BENCH_HTTP_PROF (a directory: the server children run
// with --cpu-prof and write their profiles there), BENCH_JSON (write the report there),
// BENCH_CHARTS (directory of the chart http.svg, default bench/charts; 0: no chart).
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { writeChartFor } from '../chart.mjs';
import {
  cpuMicros,
  machineBusyMicros,
  median,
  pinSelf,
  request,
  serveCpu,
  startChild,
  stopChild,
} from '../lib/child.mjs';

const require = createRequire(import.meta.url);
const SELF = fileURLToPath(import.meta.url);

/** A limit no run can reach: a 60 s window never refuses at these rates. */
const LIMIT = 1_000_000_000;
const WINDOW_MS = 60_000;
const BODY = 'hello world';

// ---------------------------------------------------------------------------------------------
// Servers (child side)

/**
 * The hand-written reference of the issue: a Map of fixed windows keyed by the peer address,
 * one clock read per request, three `X-RateLimit-*` headers. No proxy handling, no bounds.
 */
function mapCheck() {
  const windows = new Map();
  return function check(ip, setHeader) {
    const now = Date.now();
    let w = windows.get(ip);
    if (w === undefined || now >= w.start + WINDOW_MS) {
      w = { start: now, count: 0 };
      windows.set(ip, w);
    }
    w.count++;
    setHeader('X-RateLimit-Limit', String(LIMIT));
    setHeader('X-RateLimit-Remaining', String(Math.max(0, LIMIT - w.count)));
    setHeader('X-RateLimit-Reset', String(Math.ceil((w.start + WINDOW_MS - now) / 1000)));
    return w.count <= LIMIT;
  };
}

/** The same reference with exactly Portcullis's two IETF fields (optional variant `map-ietf`). */
function mapCheckIetf() {
  const windows = new Map();
  const policy = `"default";q=${LIMIT};w=${WINDOW_MS / 1000}`;
  return function check(ip, setHeader) {
    const now = Date.now();
    let w = windows.get(ip);
    if (w === undefined || now >= w.start + WINDOW_MS) {
      w = { start: now, count: 0 };
      windows.set(ip, w);
    }
    w.count++;
    const reset = Math.ceil((w.start + WINDOW_MS - now) / 1000);
    setHeader('RateLimit-Policy', policy);
    setHeader('RateLimit', `"default";r=${Math.max(0, LIMIT - w.count)};t=${reset}`);
    return w.count <= LIMIT;
  };
}

const mapChecks = { map: mapCheck, 'map-ietf': mapCheckIetf };

/** A decision-shaped object for variants that expose one on the request. */
const DECISION = Object.freeze({
  allowed: true,
  reason: 'allowed',
  limit: LIMIT,
  remaining: LIMIT - 1,
  retryAfterMs: 0,
  resetMs: WINDOW_MS,
  key: '127.0.0.1',
});

/**
 * Variant `fields`: no limiter at all, only Portcullis's two IETF fields with constant values of
 * the same length. What Node and the framework charge for advertising two fields is the floor
 * under every limiter that sends them.
 */
const FIELDS = [
  ['RateLimit-Policy', `"default";q=${LIMIT};w=${WINDOW_MS / 1000}`],
  ['RateLimit', `"default";r=${LIMIT - 1};t=${WINDOW_MS / 1000}`],
];

async function expressApp(variant) {
  const express = require('express');
  const app = express();
  app.disable('x-powered-by');
  if (variant === 'portcullis' || variant === 'quiet') {
    const { rateLimit } = await import('@portcullis/express');
    app.use(rateLimit({ limit: LIMIT, headers: variant === 'portcullis' }));
  } else if (variant === 'noop') {
    app.use(function noop(_req, _res, next) {
      next();
    });
  } else if (variant === 'peer') {
    const { rateLimit } = await import('express-rate-limit');
    app.use(rateLimit({ windowMs: WINDOW_MS, limit: LIMIT }));
  } else if (variant === 'fields') {
    app.use(function fields(_req, res, next) {
      for (const [name, value] of FIELDS) res.setHeader(name, value);
      next();
    });
  } else if (variant in mapChecks) {
    const check = mapChecks[variant]();
    app.use(function mapLimit(req, res, next) {
      if (check(req.socket.remoteAddress, (n, v) => res.setHeader(n, v))) next();
      else res.status(429).end();
    });
  } else if (variant === 'map-ietf-prop') {
    // map-ietf plus one property added to every `req` after construction, as an adapter that
    // exposes its decision as `req.rateLimit` does: isolates what that shape change costs Express.
    const check = mapCheckIetf();
    app.use(function mapLimitProp(req, res, next) {
      const ok = check(req.socket.remoteAddress, (n, v) => res.setHeader(n, v));
      req.rateLimit = DECISION;
      if (ok) next();
      else res.status(429).end();
    });
  }
  app.get('/', (_req, res) => {
    res.send(BODY);
  });
  return () => listenNode(app.listen.bind(app));
}

async function koaApp(variant) {
  const { default: Koa } = await import('koa');
  const app = new Koa();
  if (variant === 'portcullis' || variant === 'quiet') {
    const { rateLimit } = await import('@portcullis/koa');
    app.use(rateLimit({ limit: LIMIT, headers: variant === 'portcullis' }));
  } else if (variant === 'noop') {
    app.use(function noop(_ctx, next) {
      return next();
    });
  } else if (variant === 'peer') {
    const { default: ratelimit } = await import('koa-ratelimit');
    app.use(
      ratelimit({
        driver: 'memory',
        db: new Map(),
        duration: WINDOW_MS,
        max: LIMIT,
        id: (ctx) => ctx.ip,
      }),
    );
  } else if (variant === 'fields') {
    app.use(function fields(ctx, next) {
      for (const [name, value] of FIELDS) ctx.res.setHeader(name, value);
      return next();
    });
  } else if (variant in mapChecks) {
    const check = mapChecks[variant]();
    app.use(function mapLimit(ctx, next) {
      if (check(ctx.req.socket.remoteAddress, (n, v) => ctx.set(n, v))) return next();
      ctx.status = 429;
    });
  }
  app.use((ctx) => {
    ctx.body = BODY;
  });
  return () => listenNode(app.listen.bind(app));
}

async function fastifyApp(variant) {
  const { default: Fastify } = await import('fastify');
  const app = Fastify({ logger: false });
  if (variant === 'portcullis' || variant === 'quiet') {
    const { portcullis } = await import('@portcullis/fastify');
    await app.register(portcullis, { limit: LIMIT, headers: variant === 'portcullis' });
  } else if (variant === 'noop') {
    app.addHook('onRequest', function noop(_request, _reply, done) {
      done();
    });
  } else if (variant === 'peer') {
    const { default: rateLimit } = await import('@fastify/rate-limit');
    await app.register(rateLimit, { max: LIMIT, timeWindow: WINDOW_MS });
  } else if (variant === 'fields') {
    app.addHook('onRequest', function fields(_request, reply, done) {
      for (const [name, value] of FIELDS) reply.header(name, value);
      done();
    });
  } else if (variant in mapChecks) {
    const check = mapChecks[variant]();
    app.addHook('onRequest', function mapLimit(request, reply, done) {
      if (check(request.raw.socket.remoteAddress, (n, v) => reply.header(n, v))) done();
      else reply.code(429).send();
    });
  }
  app.get('/', async () => BODY);
  await app.ready();
  return async () => {
    await app.listen({ port: 0, host: '127.0.0.1' });
    return app.server.address().port;
  };
}

async function honoApp(variant) {
  const { Hono } = await import('hono');
  const { serve } = await import('@hono/node-server');
  const app = new Hono();
  if (variant === 'portcullis' || variant === 'quiet') {
    // No clientAddress: on @hono/node-server the client is the incoming request's socket.
    const { rateLimit } = await import('@portcullis/hono');
    app.use(rateLimit({ limit: LIMIT, headers: variant === 'portcullis' }));
  } else if (variant === 'noop') {
    app.use(async function noop(_c, next) {
      await next();
    });
  } else if (variant === 'peer') {
    // hono-rate-limiter has no default key: its documented Node setup keys by getConnInfo.
    const { rateLimiter } = await import('hono-rate-limiter');
    const { getConnInfo } = await import('@hono/node-server/conninfo');
    app.use(
      rateLimiter({
        windowMs: WINDOW_MS,
        limit: LIMIT,
        keyGenerator: (c) => getConnInfo(c).remote.address ?? '',
      }),
    );
  } else if (variant === 'fields') {
    app.use(async function fields(c, next) {
      for (const [name, value] of FIELDS) c.header(name, value);
      await next();
    });
  } else if (variant in mapChecks) {
    const check = mapChecks[variant]();
    app.use(async function mapLimit(c, next) {
      if (check(c.env.incoming.socket.remoteAddress, (n, v) => c.header(n, v))) await next();
      else return c.body(null, 429);
    });
  }
  app.get('/', (c) => c.text(BODY));
  return () =>
    new Promise((resolve) => {
      serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => resolve(info.port));
    });
}

/** Listens with a Node-style `listen(port, host, callback)` and resolves to the port. */
function listenNode(listen) {
  return new Promise((resolve, reject) => {
    const server = listen(0, '127.0.0.1', () => resolve(server.address().port));
    server.once('error', reject);
  });
}

const apps = { express: expressApp, koa: koaApp, fastify: fastifyApp, hono: honoApp };

async function serve(framework, variant) {
  const listen = await apps[framework](variant);
  const port = await listen();
  serveCpu();
  process.send({ port });
}

// ---------------------------------------------------------------------------------------------
// Driver (parent side)

const env = process.env;
const SECONDS = Number(env.BENCH_HTTP_SECONDS ?? 2);
const SLICES = Number(env.BENCH_HTTP_SLICES ?? 5);
const ROUNDS = Number(env.BENCH_HTTP_ROUNDS ?? 3);
const WARMUP = Number(env.BENCH_HTTP_WARMUP ?? 1);
const CONNECTIONS = Number(env.BENCH_HTTP_CONNECTIONS ?? 50);
const FRAMEWORKS = (env.BENCH_HTTP_FRAMEWORKS ?? 'express,koa,fastify,hono').split(',');
const VARIANTS = (env.BENCH_HTTP_VARIANTS ?? 'bare,portcullis,peer,map,quiet,noop,fields').split(
  ',',
);
const PROF = env.BENCH_HTTP_PROF;
const MAX_OTHER = Number(env.BENCH_HTTP_MAX_OTHER ?? 15);
const RETRIES = Number(env.BENCH_HTTP_RETRIES ?? 2);
let PIN = false;

const PEERS = {
  express: 'express-rate-limit 8.7.5',
  koa: 'koa-ratelimit 6.0.0 (memory)',
  fastify: '@fastify/rate-limit 11.2.0',
  hono: 'hono-rate-limiter 0.5.4',
};
const label = (framework, variant) =>
  ({
    bare: 'bare',
    portcullis: 'Portcullis rateLimit',
    peer: PEERS[framework],
    map: 'hand-written Map + 3 headers',
    'map-ietf': 'hand-written Map + 2 IETF headers',
    'map-ietf-prop': 'the same + req.rateLimit assigned',
    noop: 'empty middleware',
    quiet: 'Portcullis, headers: false',
    fields: 'empty middleware + 2 constant fields',
  })[variant];

/**
 * The most throughput Portcullis may cost against the bare server, in % (1 − req/s ratio), with
 * its headers on: the targets the adapters were built to. Hono has none of that kind: its target is the
 * hand-written Map limiter's cost and below hono-rate-limiter's, read from the table.
 */
const TARGET_PCT = { express: 5, koa: 8, fastify: 5 };

async function start(framework, variant) {
  const execArgv = PROF ? ['--cpu-prof', '--cpu-prof-dir', PROF] : [];
  const child = startChild(SELF, ['--server', framework, variant], { pin: PIN, execArgv });
  const port = await request(child, undefined, 'port');
  return { child, port, url: `http://127.0.0.1:${port}/` };
}

function stop({ child }) {
  return stopChild(child);
}

async function measure(server, seconds) {
  const { default: autocannon } = await import('autocannon');
  const before = cpuMicros(await request(server.child, 'cpu', 'cpu'));
  const self0 = cpuMicros(process.cpuUsage());
  const machine0 = machineBusyMicros();
  const r = await autocannon({
    url: server.url,
    connections: CONNECTIONS,
    pipelining: 1,
    duration: seconds,
  });
  const machine1 = machineBusyMicros();
  const self = cpuMicros(process.cpuUsage()) - self0;
  const after = cpuMicros(await request(server.child, 'cpu', 'cpu'));
  const ok = r['2xx'];
  if (r.non2xx > 0 || r.errors > 0 || ok === 0)
    throw new Error(`${server.url}: ${r.non2xx} non-2xx, ${r.errors} errors, ${ok} 2xx`);
  const cpuUs = after - before;
  const wallUs = r.duration * 1e6;
  return {
    rps: ok / r.duration,
    cpuUsPerReq: cpuUs / ok,
    // Server CPU per wall second: near 100 % means the server, not the load generator, is the limit.
    serverCpuPct: (cpuUs / wallUs) * 100,
    // Everything else the machine did meanwhile (other programs, and interrupts), in % of one core.
    otherCpuPct:
      machine0 === undefined
        ? undefined
        : Math.max(0, ((machine1 - machine0 - cpuUs - self) / wallUs) * 100),
  };
}

/**
 * One measured run. Other engineers' jobs share this 2-core machine: a run during which other
 * programs took more than BENCH_HTTP_MAX_OTHER % of a core is repeated (at most
 * BENCH_HTTP_RETRIES times) and the quietest attempt is kept.
 */
async function load(server, seconds) {
  let best;
  for (let attempt = 0; attempt <= RETRIES; attempt++) {
    const run = await measure(server, seconds);
    run.attempts = attempt + 1;
    if (best === undefined || (run.otherCpuPct ?? 0) < (best.otherCpuPct ?? 0)) best = run;
    if ((run.otherCpuPct ?? 0) <= MAX_OTHER) break;
  }
  return best;
}

/**
 * One round: a fresh server process per variant (a process keeps its own luck, code and heap
 * layout and JIT choices, for its whole life: measured here as a steady ±15 % per process), each
 * warmed up, then SLICES cycles in which every variant gets one run of SECONDS, forward on even
 * cycles and backward on odd ones. A cycle's variants run within seconds of each other, so a
 * change of machine speed (this virtual machine's speed was seen to halve for minutes at a time,
 * without showing as steal time) hits the variant and its bare twin alike.
 */
async function oneRound(framework, round) {
  const servers = {};
  try {
    for (const variant of VARIANTS) servers[variant] = await start(framework, variant);
    if (WARMUP > 0) for (const variant of VARIANTS) await measure(servers[variant], WARMUP);
    const slices = Object.fromEntries(VARIANTS.map((v) => [v, []]));
    for (let cycle = 0; cycle < SLICES; cycle++) {
      const order = (round * SLICES + cycle) % 2 ? [...VARIANTS].reverse() : VARIANTS;
      for (const variant of order) {
        const run = await load(servers[variant], SECONDS);
        slices[variant].push(run);
        process.stderr.write(
          `  ${framework} round ${round + 1}/${ROUNDS} cycle ${cycle + 1}/${SLICES} ${variant.padEnd(10)} ${run.rps.toFixed(0).padStart(7)} req/s ${run.cpuUsPerReq.toFixed(1).padStart(6)} µs CPU/req (server ${run.serverCpuPct.toFixed(0)} % CPU, others ${run.otherCpuPct?.toFixed(0) ?? '?'} %${run.attempts > 1 ? `, attempt ${run.attempts}` : ''})\n`,
        );
      }
    }
    return slices;
  } finally {
    for (const server of Object.values(servers)) await stop(server);
  }
}

async function benchFramework(framework) {
  const rounds = [];
  for (let round = 0; round < ROUNDS; round++) rounds.push(await oneRound(framework, round));
  return summarise(framework, rounds);
}

/** Pins this process (all its threads) to core 0; false when that is not possible here. */
/**
 * Ratios are taken per cycle against the bare run of the same cycle; a round's ratio is the
 * median of its cycles, and the reported ratio the median of the rounds' ratios.
 */
function summarise(framework, rounds) {
  const ratio = (variant, field) =>
    median(
      rounds.map((slices) =>
        median(slices[variant].map((x, i) => x[field] / slices.bare[i][field])),
      ),
    );
  return VARIANTS.map((variant) => {
    const xs = rounds.flatMap((slices) => slices[variant]);
    const hasBare = VARIANTS.includes('bare');
    const rpsRatio = hasBare ? ratio(variant, 'rps') : undefined;
    return {
      framework,
      variant,
      name: label(framework, variant),
      rps: median(xs.map((x) => x.rps)),
      cpuUsPerReq: median(xs.map((x) => x.cpuUsPerReq)),
      serverCpuPct: median(xs.map((x) => x.serverCpuPct)),
      otherCpuPct:
        xs[0].otherCpuPct === undefined ? undefined : median(xs.map((x) => x.otherCpuPct)),
      rpsRatio,
      cpuRatio: hasBare ? ratio(variant, 'cpuUsPerReq') : undefined,
      overheadPct: rpsRatio === undefined ? undefined : (1 - rpsRatio) * 100,
      // One cost % per round: how far the rounds scatter.
      roundCostPct: hasBare
        ? rounds.map((slices) =>
            Number(
              (
                (1 - median(slices[variant].map((x, i) => x.rps / slices.bare[i].rps))) *
                100
              ).toFixed(1),
            ),
          )
        : undefined,
      runs: xs.map((x) => ({
        rps: Math.round(x.rps),
        cpuUsPerReq: Number(x.cpuUsPerReq.toFixed(2)),
        serverCpuPct: Math.round(x.serverCpuPct),
        otherCpuPct: x.otherCpuPct === undefined ? null : Math.round(x.otherCpuPct),
        attempts: x.attempts,
      })),
    };
  });
}

/** Variants the chart shows, in this order: Portcullis, the peer, the hand-written limiters. */
const CHART_VARIANTS = ['portcullis', 'peer', 'map', 'map-ietf', 'map-ietf-prop'];

/**
 * The report's `scenarios` (the shape bench/chart.mjs draws): per framework, the server CPU per
 * request of each charted variant divided by bare's (lower is better; 1 = no limiter).
 */
function chartScenarios(rows) {
  return FRAMEWORKS.map((framework) => ({
    name: framework,
    unit: '×',
    higherIsBetter: false,
    rows: CHART_VARIANTS.flatMap((variant) => {
      const r = rows.find((x) => x.framework === framework && x.variant === variant);
      return r?.cpuRatio === undefined
        ? []
        : [
            {
              contender: r.name,
              value: Number(r.cpuRatio.toFixed(3)),
              isPortcullis: variant === 'portcullis',
            },
          ];
    }),
  })).filter((s) => s.rows.length > 0);
}

function printTable(rows) {
  const fmt = (x, d = 2) => (x === undefined ? '—' : x.toFixed(d));
  const head = [
    'framework',
    'server',
    'req/s',
    'ratio',
    'cost %',
    'CPU µs/req',
    'ratio',
    'srv CPU',
    'others',
  ];
  const table = rows.map((r) => [
    r.framework,
    r.name,
    r.rps.toFixed(0),
    fmt(r.rpsRatio, 3),
    r.variant === 'bare' ? '—' : fmt(r.overheadPct, 1),
    fmt(r.cpuUsPerReq, 1),
    fmt(r.cpuRatio, 3),
    `${r.serverCpuPct.toFixed(0)} %`,
    r.otherCpuPct === undefined ? '—' : `${r.otherCpuPct.toFixed(0)} %`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...table.map((row) => row[i].length)));
  const line = (cells) =>
    `| ${cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ')} |`;
  console.log(line(head));
  console.log(
    `|${widths.map((w, i) => `${i < 2 ? ':' : '-'}${'-'.repeat(w)}${i < 2 ? '-' : ':'}`).join('|')}|`,
  );
  for (const row of table) console.log(line(row));
}

async function main() {
  PIN = pinSelf(env.BENCH_HTTP_PIN === '0');
  const perRound = VARIANTS.length * (2 + WARMUP + SLICES * (1 + SECONDS * (1 + RETRIES)));
  const budgetS = FRAMEWORKS.length * ROUNDS * perRound * 2 + 60;
  // Everything is bounded: a stuck server or load generator ends the run with an error.
  const guard = setTimeout(() => {
    console.error(`bench/http: no result after ${budgetS} s, giving up`);
    process.exit(1);
  }, budgetS * 1000);
  guard.unref();

  const load1 = loadavg()[0];
  console.log(
    `HTTP benchmark: ${FRAMEWORKS.join(', ')}; ${ROUNDS} rounds, each with fresh server processes (${WARMUP} s ` +
      `of warm-up) and ${SLICES} cycles of one ${SECONDS} s run per server; ${CONNECTIONS} connections, pipelining 1, 127.0.0.1; ` +
      `${PIN ? 'server pinned to core 1, load generator to core 0' : 'no CPU pinning'}; Node ${process.version}; load ${load1.toFixed(2)}`,
  );
  const quietMin =
    FRAMEWORKS.length * VARIANTS.length * ROUNDS * (1 + WARMUP + SLICES * (0.3 + SECONDS));
  console.log(
    `(about ${Math.ceil(quietMin / 60)} min; a run during which other programs take over ${MAX_OTHER} % of a core is repeated, at most ${RETRIES} times)`,
  );
  const rows = [];
  for (const framework of FRAMEWORKS) rows.push(...(await benchFramework(framework)));

  console.log('');
  printTable(rows);
  console.log(
    '\nratio: the server against the bare server of the same framework in the same cycle; median of each' +
      "\nround's cycles, then median over rounds" +
      '\n(req/s ratio < 1 is slower; CPU ratio > 1 spends more server CPU per request). cost % = 1 − req/s ratio.' +
      '\nsrv CPU: server CPU time per wall second; below ~95 % the load generator or other programs set the pace.' +
      '\nothers: CPU taken meanwhile by everything but the server and the load generator (% of one core, median).',
  );
  const verdicts = [];
  for (const r of rows.filter((r) => r.variant === 'portcullis' && r.rpsRatio !== undefined)) {
    const target = TARGET_PCT[r.framework];
    if (target === undefined) continue;
    const met = r.overheadPct <= target;
    verdicts.push({ framework: r.framework, targetPct: target, costPct: r.overheadPct, met });
    console.log(
      `target ${r.framework}: ≤ ${target} % throughput cost; Portcullis ${r.overheadPct.toFixed(1)} % → ${met ? 'met' : 'NOT met'}`,
    );
  }
  const scenarios = chartScenarios(rows);
  if (env.BENCH_JSON) {
    const report = {
      date: new Date().toISOString(),
      node: process.version,
      loadavg1: load1,
      loadavg1End: loadavg()[0],
      seconds: SECONDS,
      rounds: ROUNDS,
      warmupSeconds: WARMUP,
      pinned: PIN,
      maxOtherCpuPct: MAX_OTHER,
      retries: RETRIES,
      connections: CONNECTIONS,
      pipelining: 1,
      rows,
      targets: verdicts,
      scenarios,
    };
    writeFileSync(env.BENCH_JSON, `${JSON.stringify(report, null, 2)}\n`);
  }
  if (scenarios.length > 0)
    writeChartFor('http', scenarios, {
      title: 'bench/http: server CPU per request relative to the bare server',
      subtitle:
        "Each bar: the server's CPU time per request divided by the bare server's of the same " +
        'framework in the same cycle (dashed line: 1×, no limiter); 1.10× spends 10 % more. ' +
        `Median of ${SLICES} cycle${SLICES === 1 ? '' : 's'} of ${SECONDS} s, then of ${ROUNDS} ` +
        `round${ROUNDS === 1 ? '' : 's'}; Node ${process.version}, ${new Date().toISOString().slice(0, 10)}.`,
    });
  else console.log('no chart: it needs the bare variant and one of portcullis, peer, map*');
  clearTimeout(guard);
}

if (process.argv[2] === '--server') {
  serve(process.argv[3], process.argv[4]).catch((error) => {
    console.error(error);
    process.exit(1);
  });
} else {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
