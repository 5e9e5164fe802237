// Client CPU per allowed decision of @portcullis/redis, for comparing builds on a noisy machine:
// `node bench/redis/insn.mjs <decisions> [port | fake] [autopipelining]` runs a warm-up, then
// <decisions> allowed fixed-window consumes from 64 closed-loop workers (the bench's allowed
// scenario), and prints process.cpuUsage() per decision. Through ioredis to the Redis on `port`
// (default 6379), or with `fake` through a sendCommand that answers as the script would, at once (a
// resolved promise, no client, no socket): the limiter and the store alone. Under
// `valgrind --tool=callgrind`, the difference of two runs' instruction counts (say 20 000 and
// 40 000 decisions) is the cost of the extra decisions alone, free of start-up and of other
// processes' load; with `--instr-atstart=no`, CALLGRIND=1 counts the measured part only.
import { createWindowLimiter } from '@portcullis/core';
import { execFileSync } from 'node:child_process';
import { RedisStore } from '@portcullis/redis';
import { Redis } from 'ioredis';

const [n = '20000', port = '6379', pipelining = ''] = process.argv.slice(2);
const fake = port === 'fake';

/** A sendCommand answering an allowed fixed-window consume as the script does: the window never ends. */
function fakeSend() {
  let clock = 1_800_000_000_000;
  const counts = new Map();
  return (args) => {
    const key = args[3];
    const count = (counts.get(key) ?? 0) + 1;
    counts.set(key, count);
    return Promise.resolve([1, Number(args[5]) - count, 0, 60_000, 0, clock++]);
  };
}

const client = fake
  ? undefined
  : new Redis({
      host: '127.0.0.1',
      port: Number(port),
      lazyConnect: true,
      enableAutoPipelining: pipelining === 'autopipelining',
    });
await client?.connect();
const store = new RedisStore({
  sendCommand: client === undefined ? fakeSend() : (args) => client.call(args[0], ...args.slice(1)),
  prefix: 'insn:',
});
const limiter = createWindowLimiter({
  store,
  limit: 1e9,
  windowMs: 60_000,
  name: 'bench',
});
let next = 0;
async function run(total) {
  let left = total;
  const worker = async () => {
    while (left > 0) {
      left--;
      const d = await limiter.consume(`client-${next++ % 1000}`);
      if (!d.allowed) throw new Error('refused');
    }
  };
  await Promise.all(Array.from({ length: 64 }, worker));
}
await run(Number(process.env.WARMUP ?? (fake ? 20_000 : 5000)));
const callgrind = process.env.CALLGRIND === '1';
if (callgrind) execFileSync('callgrind_control', ['-i', 'on', String(process.pid)]);
const cpu = process.cpuUsage();
await run(Number(n));
const used = process.cpuUsage(cpu);
if (callgrind) execFileSync('callgrind_control', ['-i', 'off', String(process.pid)]);
console.log(`${n} decisions: ${((used.user + used.system) / Number(n)).toFixed(3)} µs CPU each`);
store.close();
client?.disconnect();
