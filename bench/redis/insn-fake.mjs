// The store's own share of an allowed decision: `node bench/redis/insn-fake.mjs <decisions>` runs
// <decisions> allowed fixed-window consumes from 64 closed-loop workers through a sendCommand that
// answers as the script would, at once (a resolved promise, no client, no socket), and prints
// process.cpuUsage() per decision: the limiter and the store alone. See insn.mjs for valgrind use.
import { createWindowLimiter } from '@portcullis/core';
import { execFileSync } from 'node:child_process';
import { RedisStore } from '@portcullis/redis';

const n = Number(process.argv[2] ?? 200_000);
let clock = 1_800_000_000_000;
const counts = new Map();
const store = new RedisStore({
  sendCommand: (args) => {
    // An allowed fixed-window consume, as the script answers it: the window never ends.
    const key = args[3];
    const count = (counts.get(key) ?? 0) + 1;
    counts.set(key, count);
    const now = clock++;
    const limit = Number(args[5]);
    return Promise.resolve([1, limit - count, 0, 60_000, 0, now]);
  },
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
await run(Number(process.env.WARMUP ?? 20_000));
// Under `valgrind --tool=callgrind --instr-atstart=no`, CALLGRIND=1 counts the measured part only.
const callgrind = process.env.CALLGRIND === '1';
if (callgrind) execFileSync('callgrind_control', ['-i', 'on', String(process.pid)]);
const cpu = process.cpuUsage();
await run(n);
const used = process.cpuUsage(cpu);
if (callgrind) execFileSync('callgrind_control', ['-i', 'off', String(process.pid)]);
console.log(`${n} decisions: ${((used.user + used.system) / n).toFixed(3)} µs CPU each`);
store.close();
