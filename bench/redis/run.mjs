// Redis-backed rate limiting, side by side on one Redis: @portcullis/redis (RedisStore through a
// core window limiter), express-rate-limit with rate-limit-redis, and rate-limiter-flexible's
// RateLimiterRedis, each through three client settings, the same for every library: ioredis as it
// comes, ioredis with `enableAutoPipelining: true`, and node-redis as it comes (it writes the
// commands of one tick together). The ceiling row is redis-benchmark driving the store's own script.
//
//   npm run build && node bench/redis/run.mjs [--scenario all|allowed|flood] [--seconds 2]
//     [--rounds 7] [--concurrency 64] [--processes 4] [--port 6379]
//
// Two scenarios (both by default):
// - allowed: one process, every decision an ordinary allowed one (a limit that never bites), and
//   the ceiling: redis-benchmark sending the store's own fixed-window call (EVALSHA with the real
//   script and arguments, 1 000 keys, the same concurrency), unpipelined and with -P 16;
// - flood: `processes` gateway processes (bench/redis/flood-worker.mjs, each with its own clients)
//   on one Redis, 90 % of the login attempts from one locked-out attacker, 10 % from legitimate
//   clients under their limit; Portcullis with its local deny table (default) and without it,
//   rate-limiter-flexible with and without inMemoryBlockOnConsumed, express-rate-limit +
//   rate-limit-redis. Decisions/s over all processes and Redis commands per request.
//
// Without --port it starts a private redis-server on a free port (so INFO commandstats counts only
// this run). Measures:
// - decisions/s: closed-loop workers, `concurrency` decisions in flight, rounds interleaved
//   (A B C A B C …, the ceiling's two runs in each round too), median round reported;
// - client CPU per decision: this process's CPU time (user + system) over a round / its decisions;
// - round trips per decision: decisions run one at a time while every write the client makes to
//   the Redis socket is counted (one write = one request/response exchange);
// - Redis commands per decision: the INFO commandstats delta over the same sequential run (a
//   script counts once for EVALSHA plus once per redis.call inside it).
import { fork, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createWindowLimiter } from '@portcullis/core';
import { RedisStore } from '@portcullis/redis';
import { rateLimit } from 'express-rate-limit';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { RedisStore as RateLimitRedisStore } from 'rate-limit-redis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { writeChartFor } from '../chart.mjs';

// Flags win over the environment (BENCH_REDIS_SCENARIO, BENCH_REDIS_SECONDS, BENCH_REDIS_ROUNDS,
// BENCH_REDIS_CONCURRENCY, BENCH_REDIS_PROCESSES, BENCH_REDIS_PORT), which `npm run bench` passes
// through; BENCH_JSON names a file for the report as JSON.
const env = process.env;
const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: env.BENCH_REDIS_SECONDS ?? '2' },
    rounds: { type: 'string', default: env.BENCH_REDIS_ROUNDS ?? '7' },
    scenario: { type: 'string', default: env.BENCH_REDIS_SCENARIO ?? 'all' },
    concurrency: { type: 'string', default: env.BENCH_REDIS_CONCURRENCY ?? '64' },
    processes: { type: 'string', default: env.BENCH_REDIS_PROCESSES ?? '4' },
    keys: { type: 'string', default: '1000' },
    sequential: { type: 'string', default: '2000' },
    port: { type: 'string', ...(env.BENCH_REDIS_PORT && { default: env.BENCH_REDIS_PORT }) },
  },
});
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const CONCURRENCY = Number(values.concurrency);
const KEYS = Number(values.keys);
const SEQUENTIAL = Number(values.sequential);
const PROCESSES = Number(values.processes);
const SCENARIO = values.scenario;
if (!['all', 'allowed', 'flood'].includes(SCENARIO))
  throw new Error(`--scenario must be all, allowed or flood, got ${SCENARIO}`);
const LIMIT = 1_000_000_000; // every decision is an ordinary allowed one, for every contender
const WINDOW_MS = 60_000;

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function startRedis() {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: 'ignore',
    },
  );
  for (let attempt = 0; ; attempt++) {
    const probe = new Redis({
      port,
      lazyConnect: true,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
    });
    probe.on('error', () => {});
    try {
      await probe.connect();
      await probe.ping();
      probe.disconnect();
      break;
    } catch (error) {
      probe.disconnect();
      if (attempt > 100) throw error;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return { port, stop: () => child.kill('SIGKILL') };
}

const server = values.port ? { port: Number(values.port), stop() {} } : await startRedis();
const PORT = server.port;
/** ioredis, as it comes or with auto-pipelining. */
const connect = async ({ autoPipelining = false } = {}) => {
  const client = new Redis({
    host: '127.0.0.1',
    port: PORT,
    lazyConnect: true,
    enableAutoPipelining: autoPipelining,
  });
  await client.connect();
  return client;
};
/** node-redis as it comes: it writes every command issued in one tick in one go. */
const connectNodeRedis = async () => {
  const client = createClient({ socket: { host: '127.0.0.1', port: PORT } });
  client.on('error', () => {});
  await client.connect();
  return client;
};

// Counts client → Redis writes while `counting` is on.
let counting = false;
let writes = 0;
const write = Socket.prototype.write;
Socket.prototype.write = function countedWrite(...args) {
  if (counting && this.remotePort === PORT) writes++;
  return write.apply(this, args);
};

const key = (i) => `client-${i % KEYS}`;

/** The client settings every library runs with: ioredis, ioredis auto-pipelining, node-redis. */
const VIAS = ['ioredis', 'ioredis, enableAutoPipelining', 'node-redis'];
const clientFor = (via) =>
  via === 'node-redis'
    ? connectNodeRedis()
    : connect({ autoPipelining: via === 'ioredis, enableAutoPipelining' });

async function portcullis(via) {
  const node = via === 'node-redis';
  const client = await clientFor(via);
  const store = new RedisStore({
    sendCommand: node
      ? (args) => client.sendCommand(args)
      : (args) => client.call(args[0], ...args.slice(1)),
    prefix: 'bench-pc:',
  });
  const limiter = createWindowLimiter({ store, limit: LIMIT, windowMs: WINDOW_MS, name: 'bench' });
  return {
    name: `@portcullis/redis (${via})`,
    via,
    ours: true,
    decide: async (i) => (await limiter.consume(key(i))).allowed,
    close: () => (node ? client.destroy() : client.disconnect()),
  };
}

async function expressRateLimit(via) {
  const node = via === 'node-redis';
  const client = await clientFor(via);
  const middleware = rateLimit({
    windowMs: WINDOW_MS,
    limit: LIMIT,
    standardHeaders: false,
    legacyHeaders: false,
    validate: false,
    keyGenerator: (req) => req.key,
    store: new RateLimitRedisStore({
      sendCommand: node ? (...args) => client.sendCommand(args) : (...args) => client.call(...args),
      prefix: 'bench-rlr:',
    }),
  });
  const res = {
    statusCode: 200,
    headersSent: false,
    writableEnded: false,
    setHeader() {},
    append() {},
    status() {
      return this;
    },
    send() {},
    once() {},
  };
  return {
    name: `express-rate-limit + rate-limit-redis (${via})`,
    via,
    ours: false,
    decide: (i) =>
      new Promise((resolve, reject) => {
        const req = { key: key(i), ip: '127.0.0.1', headers: {}, app: { get: () => false } };
        middleware(req, res, (error) => (error ? reject(error) : resolve(true))).catch(reject);
      }),
    close: () => (node ? client.destroy() : client.disconnect()),
  };
}

async function flexible(via) {
  const node = via === 'node-redis';
  const client = await clientFor(via);
  const limiter = new RateLimiterRedis({
    storeClient: client,
    ...(node && { useRedisPackage: true }),
    points: LIMIT,
    duration: WINDOW_MS / 1000,
    keyPrefix: 'bench-rlf',
  });
  return {
    name: `rate-limiter-flexible RateLimiterRedis (${via})`,
    via,
    ours: false,
    decide: async (i) => {
      try {
        await limiter.consume(key(i));
        return true;
      } catch (res) {
        if (res instanceof Error) throw res;
        return false;
      }
    },
    close: () => (node ? client.destroy() : client.disconnect()),
  };
}

/**
 * The ceiling: redis-benchmark sends exactly the call the store makes for an allowed fixed-window
 * decision (`EVALSHA <the store's script> 1 <key> cf <limit> <windowMs> 1`) over 1 000 keys
 * (`__rand_int__` with -r), from CONCURRENCY connections, `pipeline` commands per write. Its rate is
 * what Redis itself sustains for the store's script on this machine, with no limiter in front.
 */
async function ceiling(pipeline, sha, seconds, guess) {
  const n = Math.max(10_000, Math.round(guess * seconds));
  const args = [
    ...['-h', '127.0.0.1', '-p', String(PORT), '-c', String(CONCURRENCY), '-n', String(n)],
    ...['-r', String(KEYS), '-P', String(pipeline), '--csv'],
    ...['EVALSHA', sha, '1', 'bench-ceiling:bench:client-__rand_int__', 'cf', String(LIMIT)],
    ...[String(WINDOW_MS), '1'],
  ];
  const child = spawn('redis-benchmark', args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk) => {
    out += chunk;
  });
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`redis-benchmark exited ${code}: ${out}`);
  const row = out.trim().split('\n').at(-1) ?? '';
  const rate = Number(JSON.parse(`[${row}]`)[1]);
  if (!Number.isFinite(rate) || rate <= 0)
    throw new Error(`redis-benchmark: no rate in ${JSON.stringify(out)}`);
  return rate;
}

async function commandCalls(admin) {
  const info = await admin.info('commandstats');
  let calls = 0;
  for (const m of info.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm))
    if (m[1] !== 'info') calls += Number(m[2]);
  return calls;
}

async function throughput(c, seconds) {
  let done = 0;
  let refused = 0;
  const end = performance.now() + seconds * 1000;
  let next = 0;
  async function worker() {
    while (performance.now() < end) {
      if (!(await c.decide(next++))) refused++;
      done++;
    }
  }
  const start = performance.now();
  const cpu = process.cpuUsage();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const elapsed = (performance.now() - start) / 1000;
  const used = process.cpuUsage(cpu);
  if (refused > 0)
    throw new Error(`${c.name}: ${refused} refused decisions (limit should never bite)`);
  return { rate: done / elapsed, cpuUsPerDecision: (used.user + used.system) / done };
}

const admin = await connect();
const redisVersion = (await admin.info('server')).match(/redis_version:(\S+)/)?.[1];
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const report = {
  node: process.version,
  redis: redisVersion,
  concurrency: CONCURRENCY,
  keys: KEYS,
  rounds: ROUNDS,
  seconds: SECONDS,
  // The shape bench/chart.mjs draws: one entry per measured quantity.
  scenarios: [],
};

/** The script's SHA1, as the store sends it (seen through a sendCommand that records it). */
async function storeScriptSha() {
  const client = await connect();
  let sha;
  const store = new RedisStore({
    sendCommand: (args) => {
      if (args[0] === 'EVALSHA') sha = args[1];
      return client.call(args[0], ...args.slice(1));
    },
    prefix: 'bench-sha:',
  });
  // Loads the script too (NOSCRIPT, then EVAL once), as redis-benchmark's EVALSHA needs.
  await createWindowLimiter({ store, limit: LIMIT, windowMs: WINDOW_MS, name: 'bench' }).consume(
    'x',
  );
  store.close();
  client.disconnect();
  return sha;
}

async function runAllowed() {
  // The ceiling needs redis-benchmark (it ships with redis-server: Debian's redis-tools).
  const probe = spawnSync('redis-benchmark', ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0)
    throw new Error(
      `redis-benchmark not found (${probe.error?.message ?? probe.stderr}): the ceiling row needs it. Install Redis: apt-get install redis-server (redis-tools comes with it) or brew install redis`,
    );
  const contenders = [];
  for (const make of [portcullis, expressRateLimit, flexible])
    for (const via of VIAS) contenders.push(await make(via));
  const results = new Map(
    contenders.map((c) => [c.name, { rates: [], cpu: [], roundTrips: 0, commands: 0 }]),
  );
  const sha = await storeScriptSha();
  const ceilings = { 1: [], 16: [] };

  // Warm-up (loads scripts, JIT) and the sequential round-trip count.
  for (const c of contenders) {
    for (let i = 0; i < 200; i++) await c.decide(i);
    const before = await commandCalls(admin);
    writes = 0;
    counting = true;
    for (let i = 0; i < SEQUENTIAL; i++) await c.decide(i);
    counting = false;
    const after = await commandCalls(admin);
    const r = results.get(c.name);
    r.roundTrips = writes / SEQUENTIAL;
    r.commands = (after - before) / SEQUENTIAL;
  }

  for (let round = 0; round < ROUNDS; round++) {
    for (const c of contenders) {
      const { rate, cpuUsPerDecision } = await throughput(c, SECONDS);
      results.get(c.name).rates.push(rate);
      results.get(c.name).cpu.push(cpuUsPerDecision);
    }
    for (const p of [1, 16])
      ceilings[p].push(
        await ceiling(p, sha, SECONDS, ceilings[p].at(-1) ?? (p === 1 ? 60e3 : 180e3)),
      );
  }

  const rows = contenders.map((c) => {
    const r = results.get(c.name);
    return {
      name: c.name,
      via: c.via,
      ours: c.ours,
      rate: median(r.rates),
      cpuUsPerDecision: median(r.cpu),
      roundTrips: r.roundTrips,
      commands: r.commands,
    };
  });
  const ceiling1 = median(ceilings[1]);
  const ceiling16 = median(ceilings[16]);
  const ours = rows.filter((r) => r.ours);
  const peers = rows.filter((r) => !r.ours);
  const best = ours.reduce((a, b) => (b.rate > a.rate ? b : a));
  const bestPeer = peers.reduce((a, b) => (b.rate > a.rate ? b : a));

  console.log(
    `Allowed: Redis ${redisVersion} on 127.0.0.1:${PORT}, Node ${process.version}, ` +
      `${CONCURRENCY} in flight, ${KEYS} keys, ${ROUNDS} × ${SECONDS}s rounds (median), fixed window`,
  );
  console.log('');
  console.log(
    '| contender | decisions/s | vs ceiling (-P 16) | vs best peer | client CPU µs / decision | round trips / decision | Redis commands / decision (incl. inside scripts) |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  const f = (n) => Math.round(n).toLocaleString('en-US');
  for (const r of rows) {
    console.log(
      `| ${r.name} | ${f(r.rate)} | ${(r.rate / ceiling16).toFixed(2)}× | ${(r.rate / bestPeer.rate).toFixed(2)}× | ${r.cpuUsPerDecision.toFixed(1)} | ${r.roundTrips.toFixed(2)} | ${r.commands.toFixed(2)} |`,
    );
  }
  for (const [p, rate] of [
    [1, ceiling1],
    [16, ceiling16],
  ]) {
    console.log(
      `| ceiling: redis-benchmark, the store's EVALSHA, ${p === 1 ? 'unpipelined' : '-P 16'} | ${f(rate)} | ${(rate / ceiling16).toFixed(2)}× | ${(rate / bestPeer.rate).toFixed(2)}× | | ${p === 1 ? '1.00' : (1 / 16).toFixed(2)} | 4.00 |`,
    );
  }
  console.log('');
  for (const via of VIAS) {
    const mine = rows.find((r) => r.ours && r.via === via);
    const peer = Math.max(...rows.filter((r) => !r.ours && r.via === via).map((r) => r.rate));
    console.log(
      `${via}: @portcullis/redis / best peer with the same client ${(mine.rate / peer).toFixed(2)}×`,
    );
  }
  console.log(
    `best @portcullis/redis (${best.name}): ${(best.rate / ceiling16).toFixed(2)}× the pipelined ceiling ` +
      `(target ≥ 0.50), ${(best.rate / bestPeer.rate).toFixed(2)}× the best peer (${bestPeer.name}; target ≥ 1.00); ` +
      `ceiling rounds: unpipelined ${ceilings[1].map(f).join(' ')}, -P 16 ${ceilings[16].map(f).join(' ')}`,
  );
  console.log('');

  report.contenders = rows.map((r) => ({
    ...r,
    rates: results.get(r.name).rates,
    cpuUsPerDecisionRounds: results.get(r.name).cpu,
  }));
  report.ceiling = { unpipelined: ceiling1, pipelined16: ceiling16, rounds: ceilings };
  report.ratioToCeiling = best.rate / ceiling16;
  report.ratioToFasterPeer = best.rate / bestPeer.rate;
  report.scenarios.push(
    {
      name: 'allowed decisions/s (fixed window, 1 process)',
      unit: 'decisions/s',
      higherIsBetter: true,
      rows: [
        ...rows.map((r) => ({
          contender: r.name,
          value: Math.round(r.rate),
          isPortcullis: r.ours,
        })),
        {
          contender: 'ceiling: redis-benchmark -P 16',
          value: Math.round(ceiling16),
          isPortcullis: false,
        },
        {
          contender: 'ceiling: redis-benchmark unpipelined',
          value: Math.round(ceiling1),
          isPortcullis: false,
        },
      ],
    },
    {
      name: 'allowed: client CPU µs per decision',
      unit: 'µs',
      higherIsBetter: false,
      rows: rows.map((r) => ({
        contender: r.name,
        value: Number(r.cpuUsPerDecision.toFixed(2)),
        isPortcullis: r.ours,
      })),
    },
  );
  for (const c of contenders) c.close();
}

// The flood: one attacker locked out, legitimate clients under their limit, `PROCESSES` gateways.
const FLOOD = [
  { id: 'portcullis-default', name: '@portcullis/redis (default: local deny table)', ours: true },
  { id: 'portcullis-no-deny', name: '@portcullis/redis, localDeny: false', ours: true },
  { id: 'rlf-in-memory', name: 'rate-limiter-flexible + inMemoryBlockOnConsumed', ours: false },
  { id: 'rlf-plain', name: 'rate-limiter-flexible RateLimiterRedis', ours: false },
  { id: 'erl-rlr', name: 'express-rate-limit + rate-limit-redis', ours: false },
];

function startWorker(index) {
  const child = fork(fileURLToPath(new URL('./flood-worker.mjs', import.meta.url)), [], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const waiting = [];
  child.on('message', (m) => {
    const w = waiting.shift();
    if (m.type === 'error') w?.reject(new Error(`flood worker ${index}: ${m.message}`));
    else w?.resolve(m);
  });
  return {
    ask(message) {
      return new Promise((resolve, reject) => {
        waiting.push({ resolve, reject });
        child.send(message);
      });
    },
    close() {
      child.send({ type: 'close' });
    },
  };
}

async function runFlood() {
  const workers = Array.from({ length: PROCESSES }, (_, i) => startWorker(i));
  await Promise.all(
    workers.map((w, index) =>
      w.ask({
        type: 'init',
        port: PORT,
        index,
        concurrency: CONCURRENCY,
        legit: 250,
        contenders: FLOOD.map((c) => c.id),
      }),
    ),
  );
  // Warm-up: locks each contender's attacker out in every process, loads scripts, JIT.
  for (const c of FLOOD)
    await Promise.all(workers.map((w) => w.ask({ type: 'warm', name: c.id, ms: 300 })));
  const results = new Map(
    FLOOD.map((c) => [
      c.id,
      { rates: [], decisions: 0, commands: 0, attackerPassed: 0, legitRefused: 0 },
    ]),
  );
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of FLOOD) {
      const before = await commandCalls(admin);
      const startAt = Date.now() + 50;
      const done = await Promise.all(
        workers.map((w) => w.ask({ type: 'run', name: c.id, ms: SECONDS * 1000, startAt })),
      );
      // Replies already sent but not yet counted (express-rate-limit refunds on 'finish').
      await new Promise((r) => setTimeout(r, 50));
      const after = await commandCalls(admin);
      const r = results.get(c.id);
      let decisions = 0;
      let rate = 0;
      for (const d of done) {
        decisions += d.decisions;
        rate += d.decisions / d.seconds;
        r.attackerPassed += d.attackerPassed;
        r.legitRefused += d.legitRefused;
      }
      r.rates.push(rate);
      r.decisions += decisions;
      r.commands += after - before;
    }
  }
  for (const w of workers) w.close();

  const rows = FLOOD.map((c) => {
    const r = results.get(c.id);
    return {
      id: c.id,
      name: c.name,
      ours: c.ours,
      rate: median(r.rates),
      rates: r.rates.map(Math.round),
      commandsPerRequest: r.commands / r.decisions,
      attackerPassed: r.attackerPassed,
      legitRefused: r.legitRefused,
    };
  });
  const peers = rows.filter((r) => !r.ours);
  const bestRate = Math.max(...peers.map((r) => r.rate));
  const bestCommands = Math.min(...peers.map((r) => r.commandsPerRequest));
  console.log(
    `Flood: ${PROCESSES} processes × ${CONCURRENCY} login attempts in flight, 90 % from one locked-out attacker, ` +
      `10 % from ${PROCESSES * 250} legitimate clients; ${ROUNDS} × ${SECONDS}s rounds (median decisions/s; commands over all rounds)`,
  );
  console.log('');
  console.log(
    '| contender | decisions/s | vs best peer | Redis commands / request | vs best peer | attacker attempts let through | legitimate refused |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    console.log(
      `| ${r.name} | ${Math.round(r.rate).toLocaleString('en-US')} | ${(r.rate / bestRate).toFixed(2)}× | ${r.commandsPerRequest.toFixed(3)} | ${(r.commandsPerRequest / bestCommands).toFixed(2)}× | ${r.attackerPassed} | ${r.legitRefused} |`,
    );
  }
  console.log('');
  report.flood = {
    processes: PROCESSES,
    concurrencyPerProcess: CONCURRENCY,
    attackerShare: 0.9,
    legitimateClients: PROCESSES * 250,
    rows,
    bestPeerRate: bestRate,
    bestPeerCommandsPerRequest: bestCommands,
  };
  report.scenarios.push(
    {
      name: `flood decisions/s (${PROCESSES} processes, 90 % locked-out attacker)`,
      unit: 'decisions/s',
      higherIsBetter: true,
      rows: rows.map((r) => ({
        contender: r.name,
        value: Math.round(r.rate),
        isPortcullis: r.ours,
      })),
    },
    {
      name: 'flood: Redis commands per request',
      unit: 'commands',
      higherIsBetter: false,
      rows: rows.map((r) => ({
        contender: r.name,
        value: Number(r.commandsPerRequest.toFixed(3)),
        isPortcullis: r.ours,
      })),
    },
  );
}

if (SCENARIO !== 'flood') await runAllowed();
if (SCENARIO !== 'allowed') await runFlood();

if (env.BENCH_JSON) writeFileSync(env.BENCH_JSON, `${JSON.stringify(report, null, 2)}\n`);
writeChartFor('redis', report.scenarios, {
  title: 'bench/redis: Redis-backed limiting side by side',
  subtitle:
    `Allowed: 1 process, every decision allowed. Flood: ${PROCESSES} processes, 90 % of login attempts ` +
    `from one locked-out attacker. Median of ${ROUNDS} rounds of ${SECONDS}s.`,
});

admin.disconnect();
server.stop();
await Promise.race([once(process, 'beforeExit'), new Promise((r) => setTimeout(r, 100).unref())]);
