// How @portcullis/redis throughput scales with gateway processes and with Redis shards: decisions
// per second from 1, 3 and 6 processes against one Redis primary and against a Redis Cluster of 3
// primaries, all on this machine.
//
//   npm run build && node bench/redis/cluster.mjs [--seconds 3] [--rounds 3] [--processes 1,3,6]
//                                                [--concurrency 64] [--keys 1000] [--replicas 0]
//
// It starts its own servers on free ports of 127.0.0.1 (nothing persisted, stopped at the end): a
// plain `redis-server`, and a cluster created with `redis-cli --cluster create`
// (test/redis-cluster/servers.mjs; `--replicas 1` gives each primary a replica). Each process has
// its own ioredis client (`Redis` or `Cluster`) and RedisStore, and runs `concurrency` closed-loop
// workers of `createWindowLimiter(…).consume(key)` over `keys` keys (a fixed window whose limit
// never bites). All processes start together; a round's figure is the sum of their decisions over
// the measured seconds. Rounds are interleaved (one primary, cluster, one primary, …) and the
// table reports the median round. BENCH_JSON names a file for the report as JSON.
import { fork, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
    processes: { type: 'string', default: '1,3,6' },
    concurrency: { type: 'string', default: '64' },
    keys: { type: 'string', default: '1000' },
    replicas: { type: 'string', default: '0' },
    child: { type: 'string' },
  },
});
const SECONDS = Number(values.seconds);
const CONCURRENCY = Number(values.concurrency);
const KEYS = Number(values.keys);

if (values.child !== undefined) await child(JSON.parse(values.child));
else await main();

/** One benchmark process: connects, reports ready, runs when told, reports its count. */
async function child({ nodes, cluster }) {
  const { createWindowLimiter } = await import('@portcullis/core');
  const { RedisStore } = await import('@portcullis/redis');
  const { Cluster, Redis } = await import('ioredis');
  const client = cluster
    ? new Cluster(nodes, { lazyConnect: true })
    : new Redis({ ...nodes[0], lazyConnect: true });
  await client.connect();
  const store = new RedisStore({
    sendCommand: (args) => client.call(args[0], ...args.slice(1)),
    prefix: `bench-scale:${process.pid}:`,
  });
  const limiter = createWindowLimiter({ store, limit: 1e9, windowMs: 60_000, name: 'bench' });
  const run = async (ms) => {
    let done = 0;
    let refused = 0;
    let next = Math.floor(Math.random() * KEYS);
    const end = performance.now() + ms;
    const worker = async () => {
      while (performance.now() < end) {
        const d = await limiter.consume(`client-${next++ % KEYS}`);
        if (d.reason !== 'allowed') refused++;
        done++;
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    return { done, refused };
  };
  await run(300); // warm-up: the script loaded on every primary, the JIT warm
  process.send({ ready: true });
  process.on('message', async (message) => {
    if (message.stop) {
      store.close();
      client.disconnect();
      process.disconnect();
      return;
    }
    // Start together at the instant the parent named.
    await new Promise((r) => setTimeout(r, Math.max(0, message.at - Date.now())));
    const started = Date.now();
    const { done, refused } = await run(SECONDS * 1000);
    process.send({ done, refused, ms: Date.now() - started });
  });
}

async function main() {
  const { startCluster, freePorts, command, until } = await import(
    '../../test/redis-cluster/servers.mjs'
  );
  const counts = values.processes.split(',').map(Number);
  const [port] = await freePorts(1);
  const single = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  await until(async () => (await command(port, ['PING'])) === 'PONG', 10_000, 'redis-server');
  const cluster = await startCluster({ primaries: 3, replicas: Number(values.replicas) });
  const targets = [
    { name: 'one primary', nodes: [{ host: '127.0.0.1', port }], cluster: false },
    {
      name: `3-primary cluster${Number(values.replicas) ? ` (+${values.replicas} replica each)` : ''}`,
      nodes: cluster.seeds,
      cluster: true,
    },
  ];
  const self = fileURLToPath(import.meta.url);
  /** Decisions per second of `n` processes against `target`, one round. */
  async function round(target, n) {
    const children = Array.from({ length: n }, () =>
      fork(self, ['--child', JSON.stringify(target), ...process.argv.slice(2)], {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      }),
    );
    const exits = children.map((c) => new Promise((r) => c.once('exit', r)));
    const next = (c) =>
      new Promise((resolve, reject) => {
        c.once('message', resolve);
        c.once('exit', (code) => reject(new Error(`a benchmark process exited (${code})`)));
      });
    await Promise.all(children.map(next));
    const at = Date.now() + 200;
    for (const c of children) c.send({ at });
    const results = await Promise.all(children.map(next));
    for (const c of children) c.send({ stop: true });
    await Promise.all(exits);
    const refused = results.reduce((s, r) => s + r.refused, 0);
    if (refused > 0) throw new Error(`${refused} decisions were not 'allowed' by Redis`);
    return results.reduce((s, r) => s + r.done / (r.ms / 1000), 0);
  }
  const rates = new Map(); // `${target}|${n}` → rates
  try {
    for (let r = 0; r < Number(values.rounds); r++) {
      for (const n of counts) {
        for (const target of targets) {
          const k = `${target.name}|${n}`;
          rates.set(k, [...(rates.get(k) ?? []), await round(target, n)]);
        }
      }
    }
  } finally {
    single.kill('SIGKILL');
    await cluster.stop();
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const fmt = (x) => Math.round(x).toLocaleString('en-US');
  const redisVersion = /redis_version:(\S+)/.exec(
    await new Promise((resolve) => {
      const p = spawn('redis-server', ['--version']);
      let out = '';
      p.stdout.on('data', (d) => {
        out += d;
      });
      p.on('close', () => resolve(out.replace('v=', 'redis_version:')));
    }),
  )?.[1];
  console.log(
    `Redis ${redisVersion}, Node ${process.version}, ${availableParallelism()} CPUs, load ${loadavg()[0].toFixed(1)}; ` +
      `${CONCURRENCY} in flight per process, ${KEYS} keys, ${values.rounds} × ${SECONDS}s rounds (median)`,
  );
  console.log('');
  console.log(`| processes | ${targets.map((t) => t.name).join(' | ')} | cluster / one primary |`);
  console.log(`|---:|${targets.map(() => '---:').join('|')}|---:|`);
  const rows = counts.map((n) => {
    const [a, b] = targets.map((t) => median(rates.get(`${t.name}|${n}`)));
    console.log(`| ${n} | ${fmt(a)} | ${fmt(b)} | ${(b / a).toFixed(2)}× |`);
    return {
      processes: n,
      onePrimary: a,
      cluster: b,
      rates: targets.map((t) => rates.get(`${t.name}|${n}`)),
    };
  });
  if (process.env.BENCH_JSON) {
    writeFileSync(
      process.env.BENCH_JSON,
      `${JSON.stringify({ node: process.version, redis: redisVersion, cpus: availableParallelism(), concurrency: CONCURRENCY, keys: KEYS, seconds: SECONDS, rows }, null, 2)}\n`,
    );
  }
}
