// Core benchmark: ns per decision and heap growth, Portcullis side by side with the peer
// libraries' in-memory stores and a bare Map counter, in one process, alternating rounds.
// Run with: node --expose-gc bench/core/run.mjs  (after `npm run build`). Writes its chart to
// bench/charts/core.svg (BENCH_CHARTS: another directory, or 0 for none), BENCH_JSON a report.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { createFailureLimiter, createWindowLimiter } from '@portcullis/core';
import { writeChartFor } from '../chart.mjs';

const require = createRequire(import.meta.url);
const { RateLimiterMemory } = require('rate-limiter-flexible');
const { MemoryStore: ErlMemoryStore } = require('express-rate-limit');
const FastifyLocalStore = require('@fastify/rate-limit/store/LocalStore.js');

/** A positive integer from the environment, or `fallback`; anything else stops the run at once. */
function countFromEnv(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new Error(`bench/core: ${name} must be a positive integer, got "${raw}"`);
  return n;
}

const ROUNDS = countFromEnv('BENCH_ROUNDS', 7);
/**
 * Processes per timing scenario. One process's figures can sit 20–40 % above another's for the
 * same code (where V8 happened to inline and place it, measured: bench/README.md), for every
 * contender differently, so a scenario runs in several processes and each contender's figure is
 * the median of its per-process medians.
 */
const PROCESSES = countFromEnv('BENCH_PROCESSES', 3);
const N = countFromEnv('BENCH_N', 300_000);
const KEYS = 100_000;
/** A limit no run reaches; limit × windowMs stays under 2^53, which Portcullis requires. */
const UNREACHED = 1e9;
const keys = Array.from(
  { length: KEYS },
  (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
);

/*
 * Every contender gets a timing loop of its own, compiled from source, so that no contender pays
 * for another's shapes: with one shared loop, V8's inline caches at `fn(i)` and at the promise test
 * of the result turn megamorphic, and a contender that returns an object (a decision) paid about
 * 15 ns per call for a promise test its own callers never make. A loop awaits only when its
 * contender returns promises (rate-limiter-flexible: that is how it is used).
 * The figure is CPU time (user + system, every thread of the process: GC included) per call, not
 * wall time: this machine runs other programs, and a preempted run otherwise counts their time.
 * Every sample starts after a full collection (`gc()`, the children run with --expose-gc) and a
 * 25 ms pause for the sweeping that goes on after it.
 */
const SYNC_LOOP =
  'return function (fn, keyOf, n) { const c = process.cpuUsage(); for (let i = 0; i < n; i++) fn(keyOf(i), i); const u = process.cpuUsage(c); return ((u.user + u.system) * 1000) / n; }';
const ASYNC_LOOP =
  'return async function (fn, keyOf, n) { const c = process.cpuUsage(); for (let i = 0; i < n; i++) await fn(keyOf(i), i); const u = process.cpuUsage(c); return ((u.user + u.system) * 1000) / n; }';
const loops = new WeakMap();

/** CPU ns per call of `fn(keyOf(i), i)` over `n` calls, in `fn`'s own timing loop. */
async function time(fn, keyOf, n) {
  let loop = loops.get(fn);
  if (loop === undefined) {
    const probe = fn(keyOf(0), 0);
    const isAsync = probe !== undefined && typeof probe.then === 'function';
    if (isAsync) await probe;
    loop = new Function(isAsync ? ASYNC_LOOP : SYNC_LOOP)();
    loops.set(fn, loop);
  }
  // A full collection first, and a pause for the sweeping V8 finishes on helper threads after it:
  // the figure is the whole process's CPU time, so a sample must not pay for the garbage the
  // previous contender left (rate-limiter-flexible leaves a rejected promise per refusal).
  globalThis.gc?.();
  await new Promise((resolve) => setTimeout(resolve, 25));
  return loop(fn, keyOf, n);
}

function bareMap(limit) {
  const m = new Map();
  return (key) => {
    const n = (m.get(key) ?? 0) + 1;
    m.set(key, n);
    return n <= limit;
  };
}

function bareMapWindow(limit, windowMs) {
  // The minimal honest counter: a Map of { start, count } reading the clock once per call.
  const m = new Map();
  return (key) => {
    const now = Date.now();
    let e = m.get(key);
    if (e === undefined || now >= e.start + windowMs) {
      e = { start: now, count: 0 };
      m.set(key, e);
    }
    return ++e.count <= limit;
  };
}

/**
 * The clocked Map window answering as a limiter that reports to its caller must: a new result
 * object per call with a decision's seven fields (allowed, reason, limit, remaining, retry, reset,
 * key), where the counters above answer a boolean and `LocalStore` hands back its own mutable
 * counter. The floor under any limiter that returns a fresh decision.
 */
function decisionMapWindow(limit, windowMs) {
  const m = new Map();
  return (key) => {
    const now = Date.now();
    let e = m.get(key);
    if (e === undefined || now >= e.start + windowMs) {
      e = { start: now, count: 0 };
      m.set(key, e);
    }
    const reset = e.start + windowMs - now;
    if (e.count >= limit)
      return {
        allowed: false,
        reason: 'limited',
        limit,
        remaining: 0,
        retryAfterMs: reset,
        resetMs: reset,
        key,
      };
    e.count++;
    return {
      allowed: true,
      reason: 'allowed',
      limit,
      remaining: limit - e.count,
      retryAfterMs: 0,
      resetMs: reset,
      key,
    };
  };
}

/**
 * The minimal honest *bounded* fixed window: the clocked Map window that holds at most `max` keys
 * and forgets the oldest (first in, first out) for each new one. On 100 000 keys through 10 000
 * entries every call is a miss, a delete and an insert: the floor under any bounded table.
 */
function boundedMapWindow(limit, windowMs, max) {
  const m = new Map();
  const ring = new Array(max);
  let head = 0;
  return (key) => {
    const now = Date.now();
    let e = m.get(key);
    if (e === undefined || now >= e.start + windowMs) {
      if (e === undefined) {
        if (m.size >= max) m.delete(ring[head]);
        ring[head] = key;
        head = (head + 1) % max;
      }
      e = { start: now, count: 0 };
      m.set(key, e);
    }
    return ++e.count <= limit;
  };
}

function contenders(limit, maxEntries) {
  const windowMs = 60_000;
  const portcullis = createWindowLimiter({ limit, windowMs, ...(maxEntries && { maxEntries }) });
  const flexible = new RateLimiterMemory({ points: limit, duration: windowMs / 1000 });
  const erl = new ErlMemoryStore();
  erl.init({ windowMs });
  const fastify = new FastifyLocalStore(false, false, 1_000_000);
  // The same store bounded like Portcullis (10 000 keys): on 100 000 keys it evicts on every call too.
  const fastifyBounded = new FastifyLocalStore(false, false, maxEntries ?? 10_000);
  const map = bareMap(limit);
  const mapWindow = bareMapWindow(limit, windowMs);
  const decisionWindow = decisionMapWindow(limit, windowMs);
  const boundedWindow = boundedMapWindow(limit, windowMs, maxEntries ?? 10_000);
  const noop = () => {};
  return {
    'bare Map counter': (k) => map(k),
    'bare Map window (Date.now)': (k) => mapWindow(k),
    'clocked Map window returning a decision': (k) => decisionWindow(k),
    [`bounded Map window (${(maxEntries ?? 10_000).toLocaleString('en-US')} keys, FIFO)`]: (k) =>
      boundedWindow(k),
    portcullis: (k) => portcullis.consume(k),
    'rate-limiter-flexible': (k) => flexible.consume(k).catch(noop),
    'express-rate-limit MemoryStore': (k) => erl.increment(k),
    '@fastify/rate-limit LocalStore': (k) => fastify.incr(k, noop, windowMs, limit),
    [`@fastify/rate-limit LocalStore, LRU ${(maxEntries ?? 10_000).toLocaleString('en-US')}`]: (
      k,
    ) => fastifyBounded.incr(k, noop, windowMs, limit),
  };
}

async function scenario(title, limit, keyOf, maxEntries) {
  const n = N;
  const impls = contenders(limit, maxEntries);
  const samples = Object.fromEntries(Object.keys(impls).map((k) => [k, []]));
  for (const fn of Object.values(impls)) await time(fn, keyOf, Math.min(n, 20_000)); // warm-up
  for (let r = 0; r < ROUNDS; r++) {
    const order = Object.entries(impls);
    if (r % 2) order.reverse();
    for (const [name, fn] of order) samples[name].push(await time(fn, keyOf, n));
  }
  const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const rows = Object.entries(samples).map(([name, xs]) => ({ name, ns: median(xs) }));
  return { title, rows };
}

/** Heap growth (V8 heap plus ArrayBuffer memory, which heapUsed leaves out) after `n` new keys. */
async function heap(title, make, n = 1_000_000) {
  globalThis.gc?.();
  const used = () => {
    const m = process.memoryUsage();
    return m.heapUsed + m.arrayBuffers;
  };
  const before = used();
  const fn = make();
  for (let i = 0; i < n; i++) {
    const r = fn(`u${i}`);
    if (r !== undefined && typeof r.then === 'function') await r;
  }
  globalThis.gc?.();
  const after = used();
  return { name: title, mb: (after - before) / 1024 / 1024, keep: fn };
}

/**
 * Gateway numbers (10 / 60 s); 100 000 clients each failing once per round, so none locks and
 * every call does the full work: parse the subject, prune the log, append, answer. With the default
 * bound of 10 000 every call is a new client that evicts the oldest (a distributed brute force).
 */
function failureBench(maxEntries) {
  const limiter = createFailureLimiter(maxEntries === undefined ? {} : { maxEntries });
  const flexible = new RateLimiterMemory({ points: 10, duration: 60 });
  const floor = boundedMapWindow(10, 60_000, maxEntries ?? 10_000);
  const noop = () => {};
  return {
    [`bounded Map window (${(maxEntries ?? 10_000).toLocaleString('en-US')} keys, FIFO)`]: (k) =>
      floor(k),
    'portcullis recordFailure': (k) => limiter.recordFailure(k),
    'rate-limiter-flexible consume': (k) => flexible.consume(k).catch(noop),
  };
}

/** A contender's name as the README tables and the chart show it. */
function displayName(name) {
  return name
    .replace(/^portcullis/, 'Portcullis')
    .replace(/^bare Map window/, 'clocked Map window');
}

/** What one child process measures: a timing scenario or one heap figure. */
function jobs() {
  const noop = () => {};
  const list = [
    ['hot-allowed', () => scenario('hot key, allowed (ns/decision)', UNREACHED, () => 'hot')],
    ['hot-denied', () => scenario('hot key, denied (ns/decision)', 10, () => 'hot')],
    [
      'round-robin-evicting',
      () =>
        scenario(
          '100 000 keys round robin, default maxEntries 10 000: evicting (ns/decision)',
          UNREACHED,
          (i) => keys[i % KEYS],
        ),
    ],
    [
      'round-robin-200k',
      () =>
        scenario(
          '100 000 keys round robin, maxEntries 200 000 (ns/decision)',
          UNREACHED,
          (i) => keys[i % KEYS],
          200_000,
        ),
    ],
    ['failure-evicting', () => failureScenario('default maxEntries 10 000: evicting', undefined)],
    ['failure-200k', () => failureScenario('maxEntries 200 000', 200_000)],
  ];
  const heaps = [
    [
      'portcullis (maxEntries 10 000)',
      () => {
        const l = createWindowLimiter({ limit: 100, windowMs: 60_000 });
        return (k) => l.consume(k);
      },
    ],
    [
      'portcullis failure limiter',
      () => {
        const l = createFailureLimiter();
        return (k) => l.recordFailure(k);
      },
    ],
    [
      'rate-limiter-flexible',
      () => {
        const l = new RateLimiterMemory({ points: 100, duration: 60 });
        return (k) => l.consume(k).catch(noop);
      },
    ],
    [
      'express-rate-limit MemoryStore',
      () => {
        const s = new ErlMemoryStore();
        s.init({ windowMs: 60_000 });
        return (k) => s.increment(k);
      },
    ],
    [
      '@fastify/rate-limit LocalStore (5 000 LRU)',
      () => {
        const s = new FastifyLocalStore(false, false, 5000);
        return (k) => s.incr(k, noop, 60_000, 100);
      },
    ],
    ['bare Map counter', () => bareMap(100)],
  ];
  for (const [name, make] of heaps) list.push([`heap:${name}`, () => heap(name, make)]);
  return list;
}

/**
 * Failure recording: every client fails at most 9 times in the run (once in the warm-up round, once
 * per timed round, plus the probe of its timing loop for client 0), so none reaches the 10 that
 * lock it out. The warm-up round is every contender's first meeting with the 100 000 clients (the
 * cold round: 4–6× a warm one for each of them, rate-limiter-flexible making a record and a timer
 * per client); without it the cold round was one of six samples and pulled the median of each
 * contender up by a different amount.
 */
async function failureScenario(label, maxEntries) {
  const fb = failureBench(maxEntries);
  const keyOf = (i) => keys[i % KEYS];
  const fsamples = Object.fromEntries(Object.keys(fb).map((k) => [k, []]));
  for (const fn of Object.values(fb)) await time(fn, keyOf, KEYS);
  for (let r = 0; r < Math.min(ROUNDS, 7); r++) {
    const order = Object.entries(fb);
    if (r % 2) order.reverse();
    for (const [name, fn] of order) fsamples[name].push(await time(fn, keyOf, KEYS));
  }
  return {
    title: `record a failure, 100 000 clients round robin, ${label} (ns/op)`,
    rows: Object.entries(fsamples).map(([name, xs]) => ({
      name,
      ns: xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)],
    })),
  };
}

/*
 * Each scenario and each heap figure runs in a process of its own: a contender's leftovers (the
 * peers keep every key, rate-limiter-flexible with a live timer per key for 60 s) would otherwise
 * stay on the heap into the next scenario, where every collection must mark them again, and
 * charge that to whoever allocates most there.
 */
async function runJob(id) {
  const job = jobs().find(([name]) => name === id);
  if (job === undefined) throw new Error(`bench/core: no job ${id}`);
  await instrumentFromEnv();
  const out = await job[1]();
  const { keep: _, ...plain } = out;
  process.stdout.write(`${JSON.stringify(plain)}\n`);
  process.exit(0);
}

function spawnJob(id) {
  const r = spawnSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url)], {
    env: { ...process.env, BENCH_CORE_JOB: id },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 1 << 24,
  });
  if (r.status !== 0) throw new Error(`bench/core: job ${id} failed (${r.status ?? r.signal})`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

/**
 * BENCH_OTEL: what listens on Portcullis's diagnostics channels while the job runs. `off` (the
 * default): nothing, the hot path reads one getter. `noop`: `instrument()` on the global provider
 * of @opentelemetry/api with no SDK registered (metrics disabled), so every decision is published
 * and dropped by a no-op counter. `no-reader`: an SDK MeterProvider without a reader. `reader`: an
 * SDK MeterProvider with a reader that is never collected (what a scraped process pays per call).
 */
async function instrumentFromEnv() {
  const mode = process.env.BENCH_OTEL ?? 'off';
  if (mode === 'off') return;
  const { instrument } = await import('@portcullis/otel');
  if (mode === 'noop') return instrument();
  const { MeterProvider, MetricReader } = await import('@opentelemetry/sdk-metrics');
  if (mode === 'no-reader') return instrument({ meterProvider: new MeterProvider() });
  if (mode !== 'reader')
    throw new Error(`bench/core: BENCH_OTEL must be off, noop, no-reader or reader, got "${mode}"`);
  class Idle extends MetricReader {
    async onForceFlush() {}
    async onShutdown() {}
  }
  return instrument({ meterProvider: new MeterProvider({ readers: [new Idle()] }) });
}

/** BENCH_CORE_JOBS: a comma-separated list of job ids to run (default: all of them). */
function selectedJobs() {
  const only = process.env.BENCH_CORE_JOBS;
  const all = jobs();
  if (only === undefined || only === '') return all;
  const ids = only.split(',');
  for (const id of ids)
    if (!all.some(([name]) => name === id)) throw new Error(`bench/core: no job ${id}`);
  return all.filter(([name]) => ids.includes(name));
}

/** One scenario's figures from several processes: per contender, the median of their medians. */
function mergeProcesses(outs) {
  const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return {
    title: outs[0].title,
    rows: outs[0].rows.map(({ name }) => ({
      name,
      ns: median(outs.map((o) => o.rows.find((r) => r.name === name).ns)),
      perProcess: outs.map((o) => Number(o.rows.find((r) => r.name === name).ns.toFixed(1))),
    })),
  };
}

async function main() {
  if (process.env.BENCH_CORE_JOB) return runJob(process.env.BENCH_CORE_JOB);
  const results = [];
  const heaps = [];
  for (const [id] of selectedJobs()) {
    process.stderr.write(`bench/core: ${id}\n`);
    if (id.startsWith('heap:')) heaps.push(spawnJob(id));
    else results.push(mergeProcesses(Array.from({ length: PROCESSES }, () => spawnJob(id))));
  }

  const report = {
    date: new Date().toISOString(),
    node: process.version,
    rounds: ROUNDS,
    processes: PROCESSES,
    n: N,
    // The measurements: ns per call of every contender, per scenario.
    timings: [],
    heap: [],
    // The same in the shape of the charts (bench/chart.mjs): per scenario, every contender's ns
    // divided by Portcullis's (Portcullis = 1; 3 = Portcullis is 3× faster than that contender);
    // then the heap growth in MB.
    scenarios: [],
  };
  for (const { title, rows } of results) {
    const map = rows.find((r) => r.name === 'bare Map counter')?.ns;
    const clocked = rows.find((r) => r.name.startsWith('bare Map window'))?.ns;
    const us = rows.find((r) => r.name.startsWith('portcullis')).ns;
    console.log(`\n${title}`);
    for (const r of rows) {
      const vsMap = map ? `  ${(r.ns / map).toFixed(2)}× bare Map` : '';
      const vsClocked = clocked ? `  ${(r.ns / clocked).toFixed(2)}× clocked Map` : '';
      const vsUs = r.name.startsWith('portcullis')
        ? ''
        : `  (Portcullis ${(r.ns / us).toFixed(2)}× faster)`;
      console.log(
        `  ${r.name.padEnd(34)} ${r.ns.toFixed(1).padStart(8)} ns${vsMap}${vsClocked}${vsUs}`,
      );
    }
    report.timings.push({ title, rows });
    report.scenarios.push({
      name: title.replace(/ \(ns\/(decision|op)\)$/, ''),
      unit: '×',
      higherIsBetter: false,
      rows: rows.map((r) => ({
        contender: displayName(r.name),
        value: Number((r.ns / us).toFixed(3)),
        isPortcullis: r.name.startsWith('portcullis'),
      })),
    });
  }
  console.log('\nheap growth (V8 heap + ArrayBuffers) after 1 000 000 unique keys');
  for (const h of heaps) {
    console.log(`  ${h.name.padEnd(44)} ${h.mb.toFixed(1).padStart(8)} MB`);
    report.heap.push({ name: h.name, mb: Number(h.mb.toFixed(2)) });
  }
  if (globalThis.gc && report.heap.length > 0)
    report.scenarios.push({
      name: 'heap growth after 1 000 000 unique keys',
      unit: 'MB',
      higherIsBetter: false,
      rows: report.heap.map((h) => ({
        contender: displayName(h.name),
        value: h.mb,
        isPortcullis: h.name.startsWith('portcullis'),
      })),
    });
  if (process.env.BENCH_JSON)
    (await import('node:fs')).writeFileSync(
      process.env.BENCH_JSON,
      `${JSON.stringify(report, null, 2)}\n`,
    );
  writeChartFor('core', report.scenarios, {
    title: 'bench/core: time per decision relative to Portcullis',
    subtitle:
      "Each bar: the contender's ns per call divided by Portcullis's (dashed line: 1×, Portcullis). " +
      'A bar at 3× is a contender 3× slower than Portcullis; below 1× it is faster. ' +
      `Median of ${PROCESSES} process${PROCESSES === 1 ? '' : 'es'} × ${ROUNDS} round${ROUNDS === 1 ? '' : 's'} of ${N.toLocaleString('en-US')} calls` +
      `${globalThis.gc ? '; heap growth in MB' : ''}; ` +
      `Node ${process.version}, ${report.date.slice(0, 10)}.`,
  });
  process.exit(0);
}

main();
